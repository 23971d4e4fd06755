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
from .dtypes import DEFAULT_FLOAT, canonical_dtype, infer_dtype
from .tensor_data import normalize_shape

if TYPE_CHECKING:
    from .tensor_ops import TensorBackend

__all__ = ["arange", "from_numpy", "ones", "rand", "randn", "tensor", "zeros"]


def _make(
    array: np.ndarray,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
    name: str = "tensor",
) -> Tensor:
    """A tensor holding a copy of `array` converted to `dtype` (float64 when None), on
    `backend` or the backend of `device` (`device.py`; both given must agree)."""
    if device is not None:
        from .device import resolve_backend

        backend = resolve_backend(name, backend, device)
    dtype = DEFAULT_FLOAT if dtype is None else canonical_dtype(dtype)
    array = np.array(array, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
    out = Tensor.make(array.reshape(-1).copy(), array.shape, backend=backend)
    if requires_grad:
        out.requires_grad_(True)
    return out


def tensor(
    data: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """A tensor from nested lists, a number or an array, as `torch.tensor`.

    Without `dtype` the data decide: Python / NumPy bools → bool_, integers → int64,
    float32 arrays stay float32, other floats → float64 (our default float).
    """
    if isinstance(data, Tensor):
        data = data.numpy()
    try:
        array = np.asarray(data)
    except ValueError:  # NumPy's "inhomogeneous shape": rows of different lengths
        _check_rectangular(data, 0)
        raise

    if array.dtype == object:
        raise TypeError("tensor(): data must be a number or a rectangular nested list of numbers")
    return _make(array, infer_dtype(array) if dtype is None else dtype, requires_grad, backend, device)


def _check_rectangular(data: Any, dim: int) -> None:
    """Raise PyTorch's ValueError naming the first dimension whose rows differ in length."""
    if not isinstance(data, (list, tuple)):
        return
    lengths = [len(row) if isinstance(row, (list, tuple)) else None for row in data]
    if None in lengths and any(length is not None for length in lengths):
        raise TypeError(
            f"tensor(): numbers and lists mixed at dim {dim + 1}: the nested lists must be rectangular"
        )
    first = lengths[0] if lengths else None
    for length in lengths:
        if length != first:
            raise ValueError(
                f"tensor(): expected sequence of length {first} at dim {dim + 1} (got {length}): "
                f"the nested lists must be rectangular"
            )
    for row in data:
        _check_rectangular(row, dim + 1)


def from_numpy(array: np.ndarray, backend: Optional["TensorBackend"] = None) -> Tensor:
    """A tensor holding a copy of a NumPy array: float64, float32, int64 and bool kept, other
    integers → int64, other floats → float64."""
    array = np.asarray(array)
    return _make(array, infer_dtype(array), False, backend)


def zeros(
    *shape: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """A tensor of zeros: zeros(2, 3) or zeros((2, 3))."""
    return _make(np.zeros(normalize_shape(shape)), dtype, requires_grad, backend, device, "zeros")


def ones(
    *shape: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """A tensor of ones."""
    return _make(np.ones(normalize_shape(shape)), dtype, requires_grad, backend, device, "ones")


def rand(
    *shape: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _make(generator().random(normalize_shape(shape)), dtype, requires_grad, backend, device, "rand")


def randn(
    *shape: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """Standard normal samples."""
    return _make(
        generator().standard_normal(normalize_shape(shape)), dtype, requires_grad, backend, device, "randn"
    )


def arange(
    start: float,
    end: Optional[float] = None,
    step: float = 1,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Optional["TensorBackend"] = None,
    device: Any = None,
) -> Tensor:
    """Values start, start + step, … below end (arange(n) = 0 … n−1), as `torch.arange`:
    int64 when start, end and step are all integers, else float64."""
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    return _make(
        values, infer_dtype(values) if dtype is None else dtype, requires_grad, backend, device, "arange"
    )
