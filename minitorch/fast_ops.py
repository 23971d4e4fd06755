"""Stage A3, tasks 3.1 and 3.2: the parallel CPU backend — the kernels of `tensor_ops`,
compiled with Numba and run on every core.

What you write
==============
Four kernels with the signatures and the mathematics of the A2 kernels (read the module
docstring of `tensor_ops`):

* task 3.1 — `tensor_map`, `tensor_zip`, `tensor_reduce` (each a factory: it takes the
  scalar function `fn` and returns the compiled kernel);
* task 3.2 — `tensor_matmul`.

They must work for **every** layout: any strides (permuted views), operands that
broadcast, empty tensors, float32 and float64 (and int64 inputs, whose results are
float64). `FastOps` at the bottom turns them into the operations of
`minitorch.FastBackend`; the grader runs your kernels on every layout, contiguous
included, and times them against the reference's kernels (limit: 3× its time).

What changes from A2
====================
* **Compiled.** `njit` (``numba.njit`` with an on-disk cache) turns a kernel into machine
  code; inside it, only NumPy arrays, numbers and other compiled functions may be used.
  The scalar function `fn` is compiled too (`jit_scalar`), and the index helpers of
  `tensor_data` are compiled with ``inline="always"`` (`to_index`, `broadcast_index`,
  `index_to_position` below) so their arithmetic lands inside your loops.
* **Parallel.** Write the outer loop as ``for … in prange(n)``: Numba splits its
  iterations between threads. Iterations must be independent — each writes its own
  outputs, none reads what another writes.

What makes a kernel fast
========================
* **Chunked prange.** Give threads chunks of `CHUNK` output elements
  (``for chunk in prange(number_of_chunks)``, then a plain ``range`` over the chunk's
  ordinals), not one element per iteration: every parallel iteration has a cost.
* **No allocation per element.** ``np.empty`` inside the per-element loop costs more than
  the arithmetic: allocate the index buffers once per chunk, before its inner loop.
* **Positions, not indices, in the inner loop.** ordinal → index → position arithmetic
  costs 2–8× the work itself: do it once per output element (map / zip), once per output
  for the R steps of a reduce (then step by ``a_strides[reduce_dim]``), once per row for
  the matmul (then step by a stride: no index arrays at all).
* **Accumulate in a local variable and write the output once** (reduce, matmul): a local
  stays in a register; a store to `out` goes to memory.
* **No shared accumulators.** Parallelise over outputs, so no two threads ever fold into
  the same value (no races, no partial results to combine).

Compiled kernels are cached on disk (in ``__pycache__``, or ``NUMBA_CACHE_DIR``): the first
run of a kernel compiles it (seconds), later processes load it in milliseconds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numba
import numpy as np
from numba import prange

from . import tensor_data
from .jit import jit_scalar, njit
from .tensor_data import Shape, Storage, Strides
from .tensor_ops import TensorOps

__all__ = ["FastOps", "tensor_map", "tensor_zip", "tensor_reduce", "tensor_matmul", "CHUNK"]

#: Output elements per parallel chunk: each chunk allocates its index buffers once.
CHUNK = 1024

# The index helpers of stage A2, compiled to be inlined into the kernels' loops.
to_index = numba.njit(inline="always")(tensor_data.to_index)
index_to_position = numba.njit(inline="always")(tensor_data.index_to_position)
broadcast_index = numba.njit(inline="always")(tensor_data.broadcast_index)


# ## Task 3.1: parallel map / zip / reduce


@lru_cache(maxsize=None)
def tensor_map(fn: Callable[[float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(in[broadcast(i)]) for every index i of `out`, in parallel.

    `in_shape` broadcasts to `out_shape` (shapes [d_in] and [d_out], d_in ≤ d_out); both
    tensors may have any strides.

    Parallel decomposition: the output ordinals 0 … size−1 are cut into chunks of `CHUNK`
    and `prange` hands the chunks to threads. Each chunk allocates its index buffers once,
    then for each ordinal: ordinal → out index (`to_index`) → input index
    (`broadcast_index`) → the two storage positions (`index_to_position`). Every ordinal
    writes a different output position, so chunks never interfere.
    """
    fn = jit_scalar(fn)

    def _map(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        in_storage: Storage,
        in_shape: Shape,
        in_strides: Strides,
    ) -> None:
        # BEGIN SOLUTION 3.1
        size = int(np.prod(out_shape))
        chunks = (size + CHUNK - 1) // CHUNK
        for chunk in prange(chunks):
            out_index = np.empty(len(out_shape), np.int64)
            in_index = np.empty(len(in_shape), np.int64)
            for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK)):
                to_index(ordinal, out_shape, out_index)
                broadcast_index(out_index, out_shape, in_shape, in_index)
                value = in_storage[index_to_position(in_index, in_strides)]
                out[index_to_position(out_index, out_strides)] = fn(value)
        # END SOLUTION 3.1

    return njit(_map, parallel=True)


@lru_cache(maxsize=None)
def tensor_zip(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(a[broadcast(i)], b[broadcast(i)]) for every index i of out.

    `a_shape` and `b_shape` both broadcast to `out_shape`; any strides.

    Parallel decomposition as in `tensor_map`: chunks of output ordinals go to threads;
    each chunk allocates one index buffer per tensor; index arithmetic once per element.
    """
    fn = jit_scalar(fn)

    def _zip(
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
        # BEGIN SOLUTION 3.1
        size = int(np.prod(out_shape))
        chunks = (size + CHUNK - 1) // CHUNK
        for chunk in prange(chunks):
            out_index = np.empty(len(out_shape), np.int64)
            a_index = np.empty(len(a_shape), np.int64)
            b_index = np.empty(len(b_shape), np.int64)
            for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK)):
                to_index(ordinal, out_shape, out_index)
                broadcast_index(out_index, out_shape, a_shape, a_index)
                broadcast_index(out_index, out_shape, b_shape, b_index)
                a_value = a_storage[index_to_position(a_index, a_strides)]
                b_value = b_storage[index_to_position(b_index, b_strides)]
                out[index_to_position(out_index, out_strides)] = fn(a_value, b_value)
        # END SOLUTION 3.1

    return njit(_zip, parallel=True)


@lru_cache(maxsize=None)
def tensor_reduce(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: fold dimension `reduce_dim` of `a` into `out` with fn, in parallel.

    `out_shape` equals `a_shape` except `out_shape[reduce_dim] == 1`, and `out` arrives
    filled with the start value. For every out index o (with o[reduce_dim] = 0):

        out[o] = fn(… fn(fn(out[o], a[o]), a[o + e]) …, a[o + (R−1)·e])

    where R = a_shape[reduce_dim] and e steps one along `reduce_dim`.

    Parallel decomposition: chunks of output ordinals go to threads; each output element is
    one sequential fold (its R inputs sit `a_strides[reduce_dim]` apart in storage), so no
    two threads touch the same output and no partial results need combining. The fold
    runs in a local variable, written to `out` once.
    """
    fn = jit_scalar(fn)

    def _reduce(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        reduce_dim: int,
    ) -> None:
        # BEGIN SOLUTION 3.1
        size = int(np.prod(out_shape))
        reduce_size = a_shape[reduce_dim]
        reduce_stride = a_strides[reduce_dim]
        chunks = (size + CHUNK - 1) // CHUNK
        for chunk in prange(chunks):
            out_index = np.empty(len(out_shape), np.int64)
            for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK)):
                to_index(ordinal, out_shape, out_index)
                out_pos = index_to_position(out_index, out_strides)
                a_pos = index_to_position(out_index, a_strides)  # out_index[reduce_dim] == 0
                acc = out[out_pos]
                for r in range(reduce_size):
                    acc = fn(acc, a_storage[a_pos + r * reduce_stride])
                out[out_pos] = acc
        # END SOLUTION 3.1

    return njit(_reduce, parallel=True)


# ## Task 3.2: parallel matrix multiplication


@njit(parallel=True)
def tensor_matmul(
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
    """Kernel: batched matrix product out[n, i, j] = Σ_k a[n, i, k] · b[n, k, j], in parallel.

    Shapes: a [B or 1, I, K], b [B or 1, K, J], out [B, I, J]; any strides. A batch size of
    1 broadcasts: its batch stride is taken as 0, so every n reads batch 0.

    Parallel decomposition: `prange` over the B·I output rows (n, i). Each row is computed
    by one thread: for each column j, a dot product of row i of a[n] (step a_strides[2])
    with column j of b[n] (step b_strides[1]), accumulated in a local variable and written
    once. Rows are independent, so threads never write the same output. Positions are
    computed once per row and advanced by a stride per step — no index arrays at all.
    """
    a_batch_stride = a_strides[0] if a_shape[0] > 1 else 0
    b_batch_stride = b_strides[0] if b_shape[0] > 1 else 0
    # BEGIN SOLUTION 3.2
    rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
    for row in prange(out_shape[0] * rows):
        n = row // rows
        i = row % rows
        a_row = n * a_batch_stride + i * a_strides[1]
        out_row = n * out_strides[0] + i * out_strides[1]
        for j in range(cols):
            b_col = n * b_batch_stride + j * b_strides[2]
            acc = 0.0
            for k in range(inner):
                acc += a_storage[a_row + k * a_strides[2]] * b_storage[b_col + k * b_strides[1]]
            out[out_row + j * out_strides[2]] = acc
    # END SOLUTION 3.2


# ## The backend


class FastOps(TensorOps):
    """The parallel CPU backend (`FastBackend = TensorBackend(FastOps)`): the operations of
    `TensorOps`, with the kernels above in place of the Python loops of stage A2."""

    map_kernel = staticmethod(tensor_map)
    zip_kernel = staticmethod(tensor_zip)
    reduce_kernel = staticmethod(tensor_reduce)

    @staticmethod
    def matmul_kernel() -> Callable[..., None]:
        return tensor_matmul

    @staticmethod
    def compile_kernel(kernel: Callable[..., None], name: str) -> Callable[..., None]:
        """A library kernel (e.g. A4's im2col), compiled with parallel loops and cached."""
        return numba.njit(parallel=True, cache=True)(kernel)
