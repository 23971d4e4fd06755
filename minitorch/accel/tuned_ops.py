"""The reference's fast CPU backend: `FastOps` with the loops of `tuned_kernels` where the
layout of a call fits them, and the task kernels of `fast_ops` for every other layout.

`TunedOps` registers itself as the replacement of `FastOps` (`fast_paths.replacement`):
`minitorch.FastBackend` runs it wherever this module ships (from stage A4 on), and runs
the plain `FastOps` — every call reaching the student's kernels — in an A3 release.

What it changes, per operation:

* **Outputs without a fill.** Every kernel here writes each output element, so an output
  is `np.empty` over a row-major layout: no pass over memory to zero it. (`FastOps`
  keeps `TensorOps`' zeros, so that a student's kernel that skips elements shows zeros,
  the same on every run, rather than whatever the memory held.)
* **One path choice per call.** Each kernel factory returns a small Python function that
  looks at the layouts of the call (a few compiled comparisons of shapes and strides,
  about a microsecond) and runs the tuned kernel that fits them, or the task's kernel.
* **One thread for small work** (`tuned_kernels.launch`).
* **Scalar functions on SIMD lanes.** A map runs the faster form of its function that a
  module of this package registered (`fast_paths.scalar_form`): eˣ where the tree has
  `fast_exp`, whose loop LLVM vectorises (a 100 × 100 float64 `exp()` took 61–73 µs calling
  the C library once per value, 20–24 µs so).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numba
import numpy as np

from .. import fast_ops, fast_paths, tensor_data
from ..fast_ops import FastOps
from ..tensor_data import Shape, Storage, Strides, TensorData
from . import tuned_kernels as tuned

__all__ = ["TunedOps"]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _small_and_dense(data: TensorData) -> bool:
    """Whether a tensor is small enough for one thread (`tuned_kernels.PARALLEL_MIN`) and
    row-major: element i at position i, so a flat loop over a row-major output of its shape
    reads it with no index arithmetic, and no layout check needs to run in Numba (each such
    call costs about a microsecond, as much as the loop over a 100×100 tensor). (A map or
    zip compares the operands' strides with its new row-major output's instead: cheaper.)"""
    return data.size < tuned.PARALLEL_MIN and data.is_contiguous()


class TunedOps(FastOps):
    """`FastOps` with the tuned loops (see the module docstring)."""

    @classmethod
    def new_output(cls, like: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        storage = np.empty(math.prod(shape), dtype=dtype)
        return like._view(TensorData.row_major(storage, shape))

    # ---- the lean path: no re-checks, outputs without a fill ----------------------------

    @classmethod
    def map(cls, fn: Callable[[float], float]) -> Any:
        fn = fast_paths.scalar_form(fn)  # eˣ as plain arithmetic, where this tree has it
        kernel, dense = cls.map_kernel(fn), tuned.tensor_map_dense(fn)

        def ret(a: Any, out: Any = None) -> Any:
            ad = a._tensor
            if out is None:
                out = cls.new_output(a, ad.shape, _F32 if ad.dtype == _F32 else _F64)
                od = out._tensor
                if ad.size < tuned.PARALLEL_MIN and ad.strides == od.strides:  # a row-major too
                    dense(od._buffer, ad._storage)  # one flat loop; out: new, on the host only
                    return out
            kernel(*out.tuple(), *a.tuple())
            return out

        return ret

    @classmethod
    def zip(cls, fn: Callable[[float, float], float]) -> Any:
        kernel, dense = cls.zip_kernel(fn), tuned.tensor_zip_dense(fn)

        def ret(a: Any, b: Any) -> Any:
            ad, bd = a._tensor, b._tensor
            shape = ad.shape
            same = shape == bd.shape
            if not same:
                shape = tensor_data.shape_broadcast(shape, bd.shape)
            out = cls.new_output(a, shape, _F32 if ad.dtype == _F32 and bd.dtype == _F32 else _F64)
            od = out._tensor
            if same and ad.size < tuned.PARALLEL_MIN and ad.strides == od.strides == bd.strides:
                dense(od._buffer, ad._storage, bd._storage)  # all row-major; out: new, host only
            else:
                kernel(*out.tuple(), *a.tuple(), *b.tuple())
            return out

        return ret

    @classmethod
    def reduce(cls, fn: Callable[[float, float], float], start: float = 0.0) -> Any:
        kernel, dense = cls.reduce_kernel(fn), tuned.tensor_reduce_dense(fn)

        def ret(a: Any, dim: int) -> Any:
            ad = a._tensor
            a_shape = ad.shape
            dim = dim + len(a_shape) if dim < 0 else dim
            shape = a_shape[:dim] + (1,) + a_shape[dim + 1 :]
            dtype = _F32 if ad.dtype == _F32 else _F64
            size = math.prod(shape)
            if _small_and_dense(ad):  # row-major in and out: a = [outer, R, inner]
                out = a._view(TensorData.row_major(np.empty(size, dtype=dtype), shape))
                inner = math.prod(a_shape[dim + 1 :])
                outer = size // inner if inner else 0
                dense(out._tensor._buffer, ad._storage, outer, a_shape[dim], inner, start)  # out: new
                return out
            out = a._view(TensorData.row_major(np.full(size, start, dtype=dtype), shape))
            kernel(*out.tuple(), *a.tuple(), dim)
            return out

        return ret

    # ---- the kernels: the tuned loop that fits the layouts, else the task's kernel --------

    @staticmethod
    def map_kernel(fn: Callable[[float], float]) -> Callable[..., None]:
        kernel, fast = fast_ops.tensor_map(fn), tuned.tensor_map_fast(fn)

        def run(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            in_storage: Storage,
            in_shape: Shape,
            in_strides: Strides,
        ) -> None:
            path = tuned.map_path_code(out_shape, out_strides, in_shape, in_strides)
            work = max(len(out), len(in_storage))
            args = (out, out_shape, out_strides, in_storage, in_shape, in_strides)
            if path == tuned.GENERAL:
                tuned.launch(kernel, work, tuned.PARALLEL_MIN, *args)
            else:
                tuned.launch(fast, work, tuned.PARALLEL_MIN, *args, path == tuned.FLAT)

        return run

    @staticmethod
    def zip_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        kernel, fast = fast_ops.tensor_zip(fn), tuned.tensor_zip_fast(fn)

        def run(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            a_storage: Storage,
            a_shape: Shape,
            a_strides: Strides,
            b_storage: Storage,
            b_shape: Shape,
            b_strides: Strides,
        ) -> None:
            path = tuned.zip_path_code(out_shape, out_strides, a_shape, a_strides, b_shape, b_strides)
            work = max(len(out), len(a_storage), len(b_storage))
            args = (out, out_shape, out_strides, a_storage, a_shape, a_strides, b_storage, b_shape, b_strides)
            if path == tuned.GENERAL:
                tuned.launch(kernel, work, tuned.PARALLEL_MIN, *args)
            else:
                tuned.launch(fast, work, tuned.PARALLEL_MIN, *args, path == tuned.FLAT)

        return run

    @staticmethod
    def reduce_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        kernel, fast = fast_ops.tensor_reduce(fn), tuned.tensor_reduce_fast(fn)

        def run(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            a_storage: Storage,
            a_shape: Shape,
            a_strides: Strides,
            reduce_dim: int,
        ) -> None:
            fits = tuned.reduce_fits(out_shape, out_strides, a_shape, a_strides)
            tuned.launch(
                fast if fits else kernel,
                max(len(out), len(a_storage)),
                tuned.PARALLEL_MIN,
                out,
                out_shape,
                out_strides,
                a_storage,
                a_shape,
                a_strides,
                reduce_dim,
            )

        return run

    @staticmethod
    def matmul_kernel() -> Callable[..., None]:
        return matmul

    @classmethod
    def matrix_multiply(cls, a: Any, b: Any) -> Any:
        """`TensorOps.matrix_multiply` on the layouts' Python tuples: its output and the
        kernel's choice without the properties, the three `tuple()`s and the NumPy scalars
        (they took 4 µs of a 64 × 64 float64 product's 18, the kernel 14). A call it does
        not accept goes to `TensorOps.matrix_multiply`, whose error says what is wrong."""
        ad, bd = a._tensor, b._tensor
        if ad.dims != 3 or bd.dims != 3:
            return super().matrix_multiply(a, b)
        (a_batch, rows, inner), (b_batch, inner_b, cols) = ad.shape, bd.shape
        if inner != inner_b or (a_batch != b_batch and a_batch != 1 and b_batch != 1):
            return super().matrix_multiply(a, b)
        batch = a_batch if a_batch != 1 else b_batch
        dtype = _F32 if ad.dtype == _F32 and bd.dtype == _F32 else _F64
        out = cls.new_output(a, (batch, rows, cols), dtype)
        od = out._tensor
        args = (
            od._buffer,
            od._shape,
            od._strides,
            ad._storage,
            ad._shape,
            ad._strides,
            bd._storage,
            bd._shape,
            bd._strides,
        )
        tiled = tuned.tiled_applies(
            od._buffer, od.shape, od.strides, ad.shape, ad.strides, bd.shape, bd.strides
        )
        _run_matmul(args, tiled, batch * rows * cols * inner)
        return out

    @staticmethod
    def compile_kernel(kernel: Callable[..., None], name: str) -> Callable[..., None]:
        """A library kernel (e.g. A4's im2col), compiled with parallel loops and cached; a
        call whose largest array is small runs the kernel's serial twin."""
        parallel = numba.njit(parallel=True, cache=True)(kernel)

        def run(*args: Any) -> None:
            work = max((a.size for a in args if isinstance(a, np.ndarray)), default=0)
            tuned.launch(parallel, work, tuned.PARALLEL_MIN, *args)

        return run


def matmul(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    a_storage: Storage,
    a_shape: Shape,
    a_strides: Strides,
    b_storage: Storage,
    b_shape: Shape,
    b_strides: Strides,
) -> None:
    """The matmul kernel of `TunedOps` (the kernel contract: NumPy arrays for the layouts);
    `TunedOps.matrix_multiply` runs the same choice on the layouts' Python tuples."""
    args = (out, out_shape, out_strides, a_storage, a_shape, a_strides, b_storage, b_shape, b_strides)
    tiled = tuned.tiled_applies(out, out_shape, out_strides, a_shape, a_strides, b_shape, b_strides)
    _run_matmul(args, tiled, int(out_shape[0]) * int(out_shape[1]) * int(out_shape[2]) * int(a_shape[2]))


def _run_matmul(args: tuple, tiled: bool, work: int) -> None:
    """The tiled kernel where `tiled` (large float products of row- or column-major
    operands, `tuned_kernels.tiled_applies`), the task's `tensor_matmul` for the rest; on one
    thread below `tuned_kernels.MATMUL_PARALLEL_MIN` multiply-adds (`work`)."""
    if tiled:
        out = args[0]
        tuned.launch(
            tuned.tiled_kernel_for(out.dtype), work, tuned.MATMUL_PARALLEL_MIN, *args, tuned.not_packed(out)
        )
    else:
        tuned.launch(fast_ops.tensor_matmul, work, tuned.MATMUL_PARALLEL_MIN, *args)


fast_paths.register("FastOps", TunedOps)
