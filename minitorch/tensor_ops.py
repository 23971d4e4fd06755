"""Stage A2: the readable tensor backend, and the interface every backend implements.

A *backend* turns a scalar function from `operators` into a tensor operation:

* ``map(fn)(a)``            out[i] = fn(a[i])                     (a broadcast to out)
* ``zip(fn)(a, b)``         out[i] = fn(a[i], b[i])               (a, b broadcast together)
* ``reduce(fn, start)(a, dim)``  out[…, 0, …] = fn(… fn(fn(start, a[…, 0, …]), a[…, 1, …]) …)
* ``matrix_multiply(a, b)`` out[n, i, j] = Σ_k a[n, i, k] · b[n, k, j]   (3-D, batch broadcast)

Each is built from a *kernel*: a function over raw storage, shape and strides that fills a
preallocated output. The kernels here are plain Python loops (slow, but every line is the
definition). `fast_ops` compiles the same kernels with Numba and runs them in parallel
(the reference's `minitorch.accel` adds faster loops for common layouts); `cuda_ops` runs
them on a GPU.
Tensors call backends only through `TensorBackend`, so a new backend plugs in by providing
the four kernels (or the four ops).

Kernel signatures (shared by all backends)::

    map_kernel(out, out_shape, out_strides, in_storage, in_shape, in_strides)
    zip_kernel(out, out_shape, out_strides, a_storage, a_shape, a_strides,
               b_storage, b_shape, b_strides)
    reduce_kernel(out, out_shape, out_strides, a_storage, a_shape, a_strides, reduce_dim)
    matmul_kernel(out, out_shape, out_strides, a_storage, a_shape, a_strides,
                  b_storage, b_shape, b_strides)

`out` is written in place. For reduce, `out` arrives filled with `start` and
`out_shape[reduce_dim] == 1`. For matmul all three are 3-D, `a` is [B or 1, n, k], `b` is
[B or 1, k, m] and `out` is [B, n, m].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TypeVar

import numpy as np

from . import operators
from .tensor_data import (
    INDEX_DTYPE,
    ShapeError,
    broadcast_index,
    index_to_position,
    shape_broadcast,
    to_index,
)

if TYPE_CHECKING:
    from .tensor import Tensor
    from .tensor_data import Shape, Storage, Strides


class MapProto(Protocol):
    def __call__(self, a: "Tensor", out: Optional["Tensor"] = None) -> "Tensor": ...


def result_dtype(*dtypes: np.dtype) -> np.dtype:
    """The dtype a kernel writes: float64 if any operand is float64 (or an integer or bool
    type), else float32. (Tensor operations convert their operands to PyTorch's promoted
    dtype first, see `dtypes.result_type`, and integer / bool results back afterwards.)"""
    for d in dtypes:
        if d != _FLOAT32:
            return _FLOAT64
    return _FLOAT32


_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


class TensorOps:
    """Builds tensor operations from the four kernels; backends override the factories."""

    cuda = False

    @staticmethod
    def map_kernel(fn: Callable[[float], float]) -> Callable[..., None]:
        raise NotImplementedError

    @staticmethod
    def zip_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        raise NotImplementedError

    @staticmethod
    def reduce_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        raise NotImplementedError

    @staticmethod
    def matmul_kernel() -> Callable[..., None]:
        raise NotImplementedError

    @staticmethod
    def compile_kernel(kernel: Callable[..., None], name: str) -> Callable[..., None]:
        """How this backend runs a library kernel written like the four above (a loop over
        raw storages, shapes and strides that fills `out`), e.g. stage A4's im2col.

        The simple backend runs it as Python, the fast backend compiles it with Numba;
        a backend that cannot run such kernels raises a NotImplementedError naming `name`.
        """
        raise NotImplementedError(f"{name} is not available on this backend")

    @classmethod
    def new_output(cls, like: "Tensor", shape: tuple[int, ...], dtype: np.dtype) -> "Tensor":
        """The tensor a map, zip or matmul kernel writes every element of, on `like`'s
        backend: zeros here (a backend whose kernels always write every element may skip
        the fill)."""
        return like.new_zeros(shape, dtype)

    @classmethod
    def map(cls, fn: Callable[[float], float]) -> MapProto:
        kernel = cls.map_kernel(fn)

        def ret(a: "Tensor", out: Optional["Tensor"] = None) -> "Tensor":
            if out is None:
                out = a.new_zeros(a.shape, result_dtype(a.dtype))
            kernel(*out.tuple(), *a.tuple())
            return out

        return ret

    @classmethod
    def zip(cls, fn: Callable[[float, float], float]) -> Callable[["Tensor", "Tensor"], "Tensor"]:
        kernel = cls.zip_kernel(fn)

        def ret(a: "Tensor", b: "Tensor") -> "Tensor":
            shape = shape_broadcast(a.shape, b.shape)
            out = a.new_zeros(shape, result_dtype(a.dtype, b.dtype))
            kernel(*out.tuple(), *a.tuple(), *b.tuple())
            return out

        return ret

    @classmethod
    def reduce(
        cls, fn: Callable[[float, float], float], start: float = 0.0
    ) -> Callable[["Tensor", int], "Tensor"]:
        kernel = cls.reduce_kernel(fn)

        def ret(a: "Tensor", dim: int) -> "Tensor":
            shape = list(a.shape)
            shape[dim] = 1
            out = a.new_full(tuple(shape), start, result_dtype(a.dtype))
            kernel(*out.tuple(), *a.tuple(), dim)
            return out

        return ret

    @classmethod
    def matrix_multiply(cls, a: "Tensor", b: "Tensor") -> "Tensor":
        """Batched matrix product of 3-D tensors [B|1, n, k] @ [B|1, k, m] → [B, n, m]."""
        if a.dims != 3 or b.dims != 3:
            raise ShapeError(f"matrix_multiply expects 3-D tensors, got {a.shape} and {b.shape}")
        if a.shape[2] != b.shape[1]:
            raise ShapeError(f"matmul: inner sizes differ, {a.shape} @ {b.shape}")
        if a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
            raise ShapeError(f"matmul: batch sizes {a.shape[0]} and {b.shape[0]} cannot broadcast")
        batch = a.shape[0] if a.shape[0] != 1 else b.shape[0]
        out = cls.new_output(a, (batch, a.shape[1], b.shape[2]), result_dtype(a.dtype, b.dtype))
        cls.matmul_kernel()(*out.tuple(), *a.tuple(), *b.tuple())
        return out


def _lazy(build: Callable[[type[TensorOps]], Any]) -> Any:
    """A backend operation built on first use (compiling kernels only when needed)."""

    class LazyOp:
        def __set_name__(self, owner: type, name: str) -> None:
            self.name = name

        def __get__(self, backend: "TensorBackend", owner: type) -> Any:
            if backend is None:
                return self
            op = build(backend.ops)
            setattr(backend, self.name, op)  # cache on the instance
            return op

    return LazyOp()


class _OnGPU:
    """`backend.cuda`: whether the backend's kernels run on a GPU. Read from its ops on first
    use, then kept on the backend as a plain attribute (`Tensor.tuple` asks on every launch)."""

    def __get__(self, backend: "TensorBackend", owner: type) -> Any:
        if backend is None:
            return self
        flag = backend.__dict__["cuda"] = bool(backend.ops.cuda)
        return flag


class TensorBackend:
    """The named tensor operations a `Tensor` uses, built from one `TensorOps`.

    Operations are compiled lazily on first use: importing minitorch compiles nothing, and a
    release whose kernels are still stubs imports fine.
    """

    # maps
    neg_map = _lazy(lambda ops: ops.map(operators.neg))
    sigmoid_map = _lazy(lambda ops: ops.map(operators.sigmoid))
    relu_map = _lazy(lambda ops: ops.map(operators.relu))
    log_map = _lazy(lambda ops: ops.map(operators.log))
    exp_map = _lazy(lambda ops: ops.map(operators.exp))
    id_map = _lazy(lambda ops: ops.map(operators.id))
    inv_map = _lazy(lambda ops: ops.map(operators.inv))
    tanh_map = _lazy(lambda ops: ops.map(operators.tanh))
    gelu_map = _lazy(lambda ops: ops.map(operators.gelu))
    gelu_tanh_map = _lazy(lambda ops: ops.map(operators.gelu_tanh))
    gelu_back_zip = _lazy(lambda ops: ops.zip(operators.gelu_back))
    gelu_tanh_back_zip = _lazy(lambda ops: ops.zip(operators.gelu_tanh_back))
    # zips
    add_zip = _lazy(lambda ops: ops.zip(operators.add))
    mul_zip = _lazy(lambda ops: ops.zip(operators.mul))
    lt_zip = _lazy(lambda ops: ops.zip(operators.lt))
    eq_zip = _lazy(lambda ops: ops.zip(operators.eq))
    is_close_zip = _lazy(lambda ops: ops.zip(operators.is_close))
    relu_back_zip = _lazy(lambda ops: ops.zip(operators.relu_back))
    log_back_zip = _lazy(lambda ops: ops.zip(operators.log_back))
    inv_back_zip = _lazy(lambda ops: ops.zip(operators.inv_back))
    pow_zip = _lazy(lambda ops: ops.zip(operators.pow))
    # reductions
    add_reduce = _lazy(lambda ops: ops.reduce(operators.add, 0.0))
    mul_reduce = _lazy(lambda ops: ops.reduce(operators.mul, 1.0))
    max_reduce = _lazy(lambda ops: ops.reduce(operators.max, -float("inf")))
    max_zip = _lazy(lambda ops: ops.zip(operators.max))
    # Stage A4's library kernels (im2col, pooling, embedding: nn/conv.py, nn/pooling.py,
    # nn/embedding.py) add themselves here when their module is imported (`backend_kernel`).

    def __init__(self, ops: type[TensorOps] | Callable[[], type[TensorOps]], name: str):
        """`ops` is a `TensorOps` class, or a function returning one (imported on first use,
        so that e.g. the CUDA backend costs nothing until a tensor asks for it)."""
        self._ops = ops
        self.name = name
        _NAMED.setdefault(name, self)

    @property
    def ops(self) -> type[TensorOps]:
        if not (isinstance(self._ops, type) and issubclass(self._ops, TensorOps)):
            self._ops = self._ops()
        return self._ops

    cuda = _OnGPU()

    def matrix_multiply(self, a: "Tensor", b: "Tensor") -> "Tensor":
        return self.ops.matrix_multiply(a, b)

    def __repr__(self) -> str:
        return f"<{self.name} backend>"

    def __reduce__(self) -> tuple:
        """Pickle a backend by name (its compiled kernels cannot be pickled), so tensors and
        modules holding them can be saved."""
        return (backend_named, (self.name,))


K = TypeVar("K", bound=Callable[..., None])

#: The library kernels registered with `backend_kernel`, by name (filled as their modules import).
LIBRARY_KERNELS: dict[str, Callable[..., None]] = {}


def backend_kernel(label: str) -> Callable[[K], K]:
    """Decorator for a library kernel over raw storages (stage A4's im2col, pooling and
    embedding loops): every backend gets an operation of the kernel's name,
    ``backend.<name>``, run as its `compile_kernel` makes it: Python on the simple backend,
    Numba on the fast one, a NotImplementedError naming `label` and the backend where the
    backend has no way to run it (the CUDA backend runs a CUDA twin of the kernel where
    the tree has one). The kernel itself is returned unchanged."""

    def register(kernel: K) -> K:
        LIBRARY_KERNELS[kernel.__name__] = kernel
        op = _lazy(lambda ops: ops.compile_kernel(kernel, label))
        op.__set_name__(TensorBackend, kernel.__name__)
        setattr(TensorBackend, kernel.__name__, op)
        return kernel

    return register


#: Each backend by its name (the first one made with that name): how unpickling finds it.
_NAMED: dict[str, TensorBackend] = {}


def backend_named(name: str) -> TensorBackend:
    """The backend called `name` (e.g. "fast"), as a pickled backend names it."""
    if name not in _NAMED:
        raise ValueError(f"unknown backend {name!r}: choose one of {sorted(_NAMED)}")
    return _NAMED[name]


# ## Task 2.3: tensor map / zip / reduce / matmul kernels (pure Python)


def tensor_map(fn: Callable[[float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(in[broadcast(i)]) for every index i of `out`.

    `in_shape` must broadcast to `out_shape` (it may be smaller or have 1s). Both tensors
    may have any strides. For each ordinal of out: ordinal → out index → input index by
    `broadcast_index` → positions by `index_to_position` in each storage.
    """

    def _map(
        out: "Storage",
        out_shape: "Shape",
        out_strides: "Strides",
        in_storage: "Storage",
        in_shape: "Shape",
        in_strides: "Strides",
    ) -> None:
        # BEGIN SOLUTION 2.3
        out_index = np.zeros(len(out_shape), dtype=INDEX_DTYPE)
        in_index = np.zeros(len(in_shape), dtype=INDEX_DTYPE)
        size = int(np.prod(out_shape))
        for ordinal in range(size):
            to_index(ordinal, out_shape, out_index)
            broadcast_index(out_index, out_shape, in_shape, in_index)
            value = in_storage[index_to_position(in_index, in_strides)]
            out[index_to_position(out_index, out_strides)] = fn(value)
        # END SOLUTION 2.3

    return _map


def tensor_zip(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(a[broadcast(i)], b[broadcast(i)]) for every index i of out.

    `a_shape` and `b_shape` both broadcast to `out_shape`; any strides.
    """

    def _zip(
        out: "Storage",
        out_shape: "Shape",
        out_strides: "Strides",
        a_storage: "Storage",
        a_shape: "Shape",
        a_strides: "Strides",
        b_storage: "Storage",
        b_shape: "Shape",
        b_strides: "Strides",
    ) -> None:
        # BEGIN SOLUTION 2.3
        out_index = np.zeros(len(out_shape), dtype=INDEX_DTYPE)
        a_index = np.zeros(len(a_shape), dtype=INDEX_DTYPE)
        b_index = np.zeros(len(b_shape), dtype=INDEX_DTYPE)
        size = int(np.prod(out_shape))
        for ordinal in range(size):
            to_index(ordinal, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            broadcast_index(out_index, out_shape, b_shape, b_index)
            a_value = a_storage[index_to_position(a_index, a_strides)]
            b_value = b_storage[index_to_position(b_index, b_strides)]
            out[index_to_position(out_index, out_strides)] = fn(a_value, b_value)
        # END SOLUTION 2.3

    return _zip


def tensor_reduce(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: fold dimension `reduce_dim` of `a` into `out` with fn.

    `out_shape` equals `a_shape` except `out_shape[reduce_dim] == 1`, and `out` arrives
    filled with the start value. For each out index o:
        out[o] = fn(… fn(fn(out[o], a[o with reduce_dim = 0]), a[… = 1]) …)
    """

    def _reduce(
        out: "Storage",
        out_shape: "Shape",
        out_strides: "Strides",
        a_storage: "Storage",
        a_shape: "Shape",
        a_strides: "Strides",
        reduce_dim: int,
    ) -> None:
        # BEGIN SOLUTION 2.3
        out_index = np.zeros(len(out_shape), dtype=INDEX_DTYPE)
        size = int(np.prod(out_shape))
        for ordinal in range(size):
            to_index(ordinal, out_shape, out_index)
            out_pos = index_to_position(out_index, out_strides)
            acc = out[out_pos]
            a_pos = index_to_position(out_index, a_strides)  # out_index[reduce_dim] is 0
            for _ in range(a_shape[reduce_dim]):
                acc = fn(acc, a_storage[a_pos])
                a_pos += a_strides[reduce_dim]
            out[out_pos] = acc
        # END SOLUTION 2.3

    return _reduce


def tensor_matmul(
    out: "Storage",
    out_shape: "Shape",
    out_strides: "Strides",
    a_storage: "Storage",
    a_shape: "Shape",
    a_strides: "Strides",
    b_storage: "Storage",
    b_shape: "Shape",
    b_strides: "Strides",
) -> None:
    """Kernel: batched matrix product out[n, i, j] = Σ_k a[n, i, k] · b[n, k, j].

    Shapes: a [B or 1, I, K], b [B or 1, K, J], out [B, I, J]. A batch size of 1 broadcasts
    (use batch stride 0 for it).
    """
    # BEGIN SOLUTION 2.3
    a_batch_stride = a_strides[0] if a_shape[0] > 1 else 0
    b_batch_stride = b_strides[0] if b_shape[0] > 1 else 0
    for n in range(out_shape[0]):
        for i in range(out_shape[1]):
            for j in range(out_shape[2]):
                acc = 0.0
                a_pos = n * a_batch_stride + i * a_strides[1]
                b_pos = n * b_batch_stride + j * b_strides[2]
                for _ in range(a_shape[2]):
                    acc += a_storage[a_pos] * b_storage[b_pos]
                    a_pos += a_strides[2]
                    b_pos += b_strides[1]
                out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
    # END SOLUTION 2.3


class SimpleOps(TensorOps):
    """The pure-Python backend: the kernels above, run as they are."""

    map_kernel = staticmethod(tensor_map)
    zip_kernel = staticmethod(tensor_zip)
    reduce_kernel = staticmethod(tensor_reduce)

    @staticmethod
    def matmul_kernel() -> Callable[..., None]:
        return tensor_matmul

    @staticmethod
    def compile_kernel(kernel: Callable[..., None], name: str) -> Callable[..., None]:
        return kernel
