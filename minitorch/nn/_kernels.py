"""Helpers shared by the layers of stage A4: tensors ↔ NumPy arrays, and library kernels.

The functions of `conv`, `pooling`, `softmax` and `embedding` are `minitorch.Function`s
whose forward and backward work on plain NumPy arrays (the contiguous storage of their
tensors, seen with the tensor's shape) and call Numba kernels on them. These helpers do the
conversions both ways without copying when they can:

    array(t)            the values of tensor t as an ndarray of t's shape (a view of its
                        storage when t is contiguous, else a contiguous copy)
    wrap(a, like)       a new tensor holding ndarray a, on the backend of tensor `like`

This module also holds the kernels that are library code rather than a student task (the
embedding scatter-add).
"""

from __future__ import annotations

from typing import Any, Optional

import numba
import numpy as np

from ..tensor import Tensor
from ..tensor_ops import result_dtype


def array(t: Tensor, dtype: Optional[Any] = None) -> np.ndarray:
    """The values of `t` as an ndarray of shape `t.shape` (shares storage when contiguous).

    A non-contiguous tensor (a permuted view, a broadcast) is copied into a contiguous
    array by NumPy. With `dtype`, the values are converted (copied) when `t` has another dtype.
    """
    data = t._tensor
    if data.is_contiguous():
        a = data._storage[: data.size].reshape(data.shape)
    else:
        itemsize = data._storage.itemsize
        view = np.lib.stride_tricks.as_strided(
            data._storage, shape=data.shape, strides=tuple(s * itemsize for s in data.strides), writeable=False
        )
        a = np.ascontiguousarray(view)
    if dtype is not None and a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    return a


def wrap(a: np.ndarray, like: Tensor, dtype: Optional[Any] = None) -> Tensor:
    """A tensor holding the values of ndarray `a` (made contiguous) on `like`'s backend."""
    if dtype is not None and a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    a = np.ascontiguousarray(a)
    return Tensor.make(a.reshape(-1), a.shape, backend=like.backend)


def matmul(a: np.ndarray, b: np.ndarray, like: Tensor) -> np.ndarray:
    """a @ b for 2-D arrays a [n, k] and b [k, m], computed by the matrix multiplication of
    `like`'s backend when that is the parallel CPU backend (stage A3's Numba kernel: no
    second thread pool competes with Numba's), else by NumPy."""
    if like.backend.name != "fast":
        return a @ b
    n, k = a.shape
    m = b.shape[1]
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b, dtype=a.dtype)
    ta = Tensor.make(a.reshape(-1), (1, n, k), backend=like.backend)
    tb = Tensor.make(b.reshape(-1), (1, k, m), backend=like.backend)
    out = like.backend.matrix_multiply(ta, tb)
    return out._tensor._storage[: n * m].reshape(n, m)


def common_dtype(*tensors: Optional[Tensor]) -> np.dtype:
    """The dtype a function of these tensors computes in: float32 if all are float32, else float64."""
    return result_dtype(*(t.dtype for t in tensors if t is not None))


def check_float(name: str, **tensors: Optional[Tensor]) -> None:
    """Raise a TypeError naming `name` when an argument is not a floating-point tensor."""
    for arg, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {arg} must be a minitorch Tensor, got {type(t).__name__}")
        if not np.issubdtype(t.dtype, np.floating):
            raise TypeError(f"{name}: {arg} must be a float32 or float64 tensor, got dtype {t.dtype}")


# ---------------------------------------------------------------------------------------
# Embedding lookup: the backward is a scatter-add (library code, not a student task)


@numba.njit(cache=True)
def embedding_backward_kernel(grad_weight: np.ndarray, indices: np.ndarray, grad_output: np.ndarray) -> None:
    """grad_weight[indices[i], :] += grad_output[i, :] for every i (repeated indices add up).

    grad_weight [num_embeddings, dim] (zeroed by the caller), indices [M] int64,
    grad_output [M, dim]. Sequential on purpose: two rows with the same index would race if
    the loop over i ran in parallel.
    """
    m, dim = grad_output.shape
    for i in range(m):
        row = indices[i]
        for j in range(dim):
            grad_weight[row, j] += grad_output[i, j]
