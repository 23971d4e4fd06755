"""Making tensors: from data (`tensor`, `from_numpy`), filled (`zeros`, `ones`), random
(`rand`, `randn`) and ranges (`arange`) — PyTorch's names, arguments and default dtypes.

Shapes are given as `zeros(2, 3)` or `zeros((2, 3))`. A new tensor lives on `backend`
(default: `minitorch.get_default_backend()`) and is a leaf; with `requires_grad=True` it
accumulates a gradient in `.grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .rng import generator
from .tensor import Tensor
from .tensor_data import normalize_shape

if TYPE_CHECKING:
    from .tensor_ops import TensorBackend

__all__ = ["arange", "from_numpy", "ones", "rand", "randn", "tensor", "zeros"]

#: The dtypes a tensor can hold.
DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64))


def _make(
    array: np.ndarray,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
) -> Tensor:
    """A tensor holding a copy of `array` converted to `dtype` (float64 when None)."""
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype not in DTYPES:
        raise TypeError(f"unsupported dtype {dtype}: use minitorch.float64, float32 or int64")
    array = np.array(array, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
    out = Tensor.make(array.reshape(-1).copy(), array.shape, backend=backend)
    if requires_grad:
        out.requires_grad_(True)
    return out


def tensor(
    data: Any, dtype: Any = None, requires_grad: bool = False, backend: Optional["TensorBackend"] = None
) -> Tensor:
    """A tensor from nested lists, a number or an array (float64 unless `dtype` is given)."""
    if isinstance(data, Tensor):
        data = data.numpy()
    array = np.asarray(data)
    if array.dtype == object:
        raise TypeError("tensor(): data must be a number or a rectangular nested list of numbers")
    return _make(array, dtype, requires_grad, backend)


def from_numpy(array: np.ndarray, backend: Optional["TensorBackend"] = None) -> Tensor:
    """A tensor holding a copy of a NumPy array (float64, float32 or int64 kept)."""
    array = np.asarray(array)
    if array.dtype not in DTYPES:
        array = array.astype(np.float64)
    return _make(array, array.dtype, False, backend)


def zeros(*shape: Any, dtype: Any = None, requires_grad: bool = False, backend: Optional["TensorBackend"] = None) -> Tensor:
    """A tensor of zeros: zeros(2, 3) or zeros((2, 3))."""
    return _make(np.zeros(normalize_shape(shape)), dtype, requires_grad, backend)


def ones(*shape: Any, dtype: Any = None, requires_grad: bool = False, backend: Optional["TensorBackend"] = None) -> Tensor:
    """A tensor of ones."""
    return _make(np.ones(normalize_shape(shape)), dtype, requires_grad, backend)


def rand(*shape: Any, dtype: Any = None, requires_grad: bool = False, backend: Optional["TensorBackend"] = None) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _make(generator().random(normalize_shape(shape)), dtype, requires_grad, backend)


def randn(*shape: Any, dtype: Any = None, requires_grad: bool = False, backend: Optional["TensorBackend"] = None) -> Tensor:
    """Standard normal samples."""
    return _make(generator().standard_normal(normalize_shape(shape)), dtype, requires_grad, backend)


def arange(
    start: float, end: Optional[float] = None, step: float = 1, dtype: Any = None,
    requires_grad: bool = False, backend: Optional["TensorBackend"] = None,
) -> Tensor:
    """Values start, start + step, … below end (arange(n) = 0 … n−1), float64 by default."""
    if end is None:
        start, end = 0, start
    return _make(np.arange(start, end, step), dtype, requires_grad, backend)
