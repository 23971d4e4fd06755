"""The tensor operations as functions of the package, as PyTorch has them: `minitorch.exp(x)`
is `x.exp()`, `minitorch.matmul(a, b)` is `a @ b`, `minitorch.softmax(x, 1)` is
`F.softmax(x, 1)`. Nothing here computes: each function names the method or layer that
does, so the gradient of each is that method's.

Also the constructors PyTorch code reaches for beside `zeros` and `rand`: `zeros_like`,
`ones_like`, `full`, `full_like`, `eye`, `linspace`.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from . import gathering
from .constructors import tensor as _tensor
from .tensor import MaxResult, Tensor
from .tensor_data import ShapeError

__all__ = [
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "relu",
    "sin",
    "cos",
    "sqrt",
    "abs",
    "pow",
    "sum",
    "mean",
    "var",
    "std",
    "max",
    "min",
    "maximum",
    "minimum",
    "argmax",
    "argmin",
    "norm",
    "gather",
    "topk",
    "multinomial",
    "matmul",
    "bmm",
    "t",
    "transpose",
    "permute",
    "reshape",
    "flatten",
    "narrow",
    "squeeze",
    "unsqueeze",
    "softmax",
    "log_softmax",
    "clone",
    "numel",
    "is_tensor",
    "zeros_like",
    "ones_like",
    "full",
    "full_like",
    "eye",
    "linspace",
]

# ---- element-wise ---------------------------------------------------------------------------


def exp(input: Tensor) -> Tensor:
    return input.exp()


def log(input: Tensor) -> Tensor:
    return input.log()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def relu(input: Tensor) -> Tensor:
    return input.relu()


def sin(input: Tensor) -> Tensor:
    return input.sin()


def cos(input: Tensor) -> Tensor:
    return input.cos()


def sqrt(input: Tensor) -> Tensor:
    return input.sqrt()


def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    return input.abs()


def pow(input: Tensor, exponent: float) -> Tensor:  # noqa: A001 - PyTorch's name
    """`input ** exponent` for a Python number exponent (a tensor exponent is not supported)."""
    return input**exponent


# ---- reductions -----------------------------------------------------------------------------


def sum(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return input.sum(dim, keepdim)


def mean(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return input.mean(dim, keepdim)


def var(input: Tensor, dim: Optional[int] = None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    return input.var(dim, unbiased=unbiased, keepdim=keepdim)


def std(input: Tensor, dim: Optional[int] = None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    return input.std(dim, unbiased=unbiased, keepdim=keepdim)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The element-wise larger of two tensors (broadcast), as `torch.maximum`.

    Composed from `where`, so the gradient is where's: all of it to the larger input, and
    at a tie half to each (as PyTorch), through the mean (a + b) / 2, which equals both
    there. A NaN in either input gives NaN (both comparisons are False).
    """
    return _pick(input, other, input > other, input < other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """The element-wise smaller of two tensors (broadcast), as `torch.minimum` (see `maximum`)."""
    return _pick(input, other, input < other, input > other)


def _pick(a: Tensor, b: Tensor, take_a: Tensor, take_b: Tensor) -> Tensor:
    from .selection import where

    if not isinstance(b, Tensor):
        b = a.new_tensor(b)
    if not (a.dtype.kind == "f" or b.dtype.kind == "f"):  # integers: no gradient, no halves
        return where(take_b, b, a)
    return where(take_a, a, where(take_b, b, (a + b) / 2))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Union[Tensor, MaxResult]:  # noqa: A001
    """max(x) → the largest element; max(x, dim) → (values, indices), as `Tensor.max`;
    max(a, b) of two tensors → `maximum(a, b)`, as PyTorch."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    return input.max(dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Union[Tensor, MaxResult]:  # noqa: A001
    """min(x) → the smallest element; min(x, dim) → (values, indices), as `Tensor.min`;
    min(a, b) of two tensors → `minimum(a, b)`, as PyTorch."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    return input.min(dim, keepdim)


def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return input.argmax(dim, keepdim)


def argmin(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return input.argmin(dim, keepdim)


def norm(input: Tensor, p: Union[float, str] = 2, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return input.norm(p, dim, keepdim)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return gathering.gather(input, dim, index)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> gathering.TopK:  # noqa: A002
    return gathering.topk(input, k, dim, largest, sorted)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    return gathering.multinomial(input, num_samples, replacement)


# ---- shapes and products --------------------------------------------------------------------


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return input @ other


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of [b, n, k] and [b, k, m] (no broadcasting, as PyTorch's `bmm`)."""
    if input.dims != 3 or mat2.dims != 3:
        raise ShapeError(f"bmm: both operands must be 3-D, got shapes {input.shape} and {mat2.shape}")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise ShapeError(
            f"bmm: shapes {input.shape} and {mat2.shape} cannot be multiplied ([b, n, k] @ [b, k, m])"
        )
    return input @ mat2


def t(input: Tensor) -> Tensor:
    return input.t()


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def permute(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    return input.permute(*dims)


def reshape(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    return input.reshape(*shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return input.flatten(start_dim, end_dim)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return input.narrow(dim, start, length)


def squeeze(input: Tensor, dim: Optional[int] = None) -> Tensor:
    return input.squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def softmax(input: Tensor, dim: int) -> Tensor:
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    return input.log_softmax(dim)


def clone(input: Tensor) -> Tensor:
    return input.clone()


def numel(input: Tensor) -> int:
    return input.numel()


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


# ---- constructors ---------------------------------------------------------------------------


def _like(input: Tensor, values: np.ndarray, dtype: Any, requires_grad: bool, device: Any) -> Tensor:
    backend = input.backend if device is None else None
    return _tensor(
        values,
        dtype=input.dtype if dtype is None else dtype,
        requires_grad=requires_grad,
        backend=backend,
        device=device,
    )


def zeros_like(input: Tensor, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Zeros of `input`'s shape, dtype and backend (unless `dtype` / `device`)."""
    return _like(input, np.zeros(input.shape), dtype, requires_grad, device)


def ones_like(input: Tensor, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Ones of `input`'s shape, dtype and backend (unless `dtype` / `device`)."""
    return _like(input, np.ones(input.shape), dtype, requires_grad, device)


def full_like(
    input: Tensor, fill_value: float, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    """`fill_value` in `input`'s shape, dtype and backend (unless `dtype` / `device`)."""
    return _like(input, np.full(input.shape, fill_value), dtype, requires_grad, device)


def full(
    size: Any,
    fill_value: Union[bool, int, float],
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Any = None,
    device: Any = None,
) -> Tensor:
    """A tensor of shape `size` holding `fill_value`; its dtype, unless given, follows the
    value (bool, int64, or the default float), as PyTorch's `full`."""
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return _tensor(
        np.full(shape, fill_value), dtype=dtype, requires_grad=requires_grad, backend=backend, device=device
    )


def eye(
    n: int,
    m: Optional[int] = None,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Any = None,
    device: Any = None,
) -> Tensor:
    """The identity matrix [n, m] (m = n by default): ones on the diagonal."""
    return _tensor(
        np.eye(n, n if m is None else m),
        dtype=dtype,
        requires_grad=requires_grad,
        backend=backend,
        device=device,
    )


def linspace(
    start: float,
    end: float,
    steps: int,
    dtype: Any = None,
    requires_grad: bool = False,
    backend: Any = None,
    device: Any = None,
) -> Tensor:
    """`steps` evenly spaced values from start to end, both included."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    return _tensor(
        np.linspace(start, end, steps),
        dtype=dtype,
        requires_grad=requires_grad,
        backend=backend,
        device=device,
    )
