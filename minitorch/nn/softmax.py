"""Stage A4, task 4.4: softmax, log-softmax and max with its argmax gradient.

    softmax(x)_i     = e^{x_i} / Σ_j e^{x_j}                       (along one dimension)
    log_softmax(x)_i = x_i − log Σ_j e^{x_j}

Computed as written, e^{x} overflows for x ≳ 89 (float32) or 710 (float64). Both are
unchanged when a constant is subtracted from every x_j, so subtract m = max_j x_j first:

    log_softmax(x)_i = (x_i − m) − log Σ_j e^{x_j − m}

Now every exponent is ≤ 0 and the sum is ≥ 1 (the largest term is e^0 = 1), so nothing
overflows and the log never sees 0. m is a constant for the gradient: the result does not
depend on it. Gradients, with g = ∂L/∂out (Σ over the softmax dimension):

    softmax:      ∂L/∂x_i = s_i · (g_i − Σ_j g_j s_j)
    log_softmax:  ∂L/∂x_i = g_i − softmax(x)_i · Σ_j g_j

`max(x, dim)` returns (values, indices) like `torch.max(x, dim)`; its gradient goes
entirely to the position of the maximum. When several positions tie, it goes to the
*first* one (the index `argmax` returns), as with `torch.max(x, dim)`.

The functions work on the NumPy arrays of their tensors (vectorised along the softmax
dimension), so they are fast on large inputs such as a language model's [tokens, vocab]
logits.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ..autodiff import Context
from ..tensor import MaxResult, Tensor
from ..function import Function
from ._kernels import array, check_float, wrap

__all__ = ["softmax", "log_softmax", "max", "argmax"]


def _dim(name: str, input: Tensor, dim: Optional[int]) -> int:
    if dim is None:
        raise TypeError(f"{name}: give the dimension to normalise over, e.g. {name}(x, dim=-1)")
    if input.dims == 0:
        raise ValueError(f"{name}: the input needs at least one dimension, got a 0-d tensor")
    n = input.dims
    if not -n <= dim < n:
        raise IndexError(f"{name}: dimension {dim} is out of range for a tensor of shape {input.shape}")
    return dim % n


class Softmax(Function):
    """out = softmax(input) along `dim`."""

    @staticmethod
    def forward(ctx: Context, input: Tensor, dim: int) -> Tensor:
        x = array(input)
        # BEGIN SOLUTION 4.4
        z = x - x.max(axis=dim, keepdims=True)
        e = np.exp(z)
        s = e / e.sum(axis=dim, keepdims=True)
        ctx.save_for_backward(s, dim)
        # END SOLUTION 4.4
        return wrap(s, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        """∂L/∂x = s · (g − Σ_dim g·s)."""
        # BEGIN SOLUTION 4.4
        s, dim = ctx.saved_values
        g = array(grad_output, s.dtype)
        grad = s * (g - (g * s).sum(axis=dim, keepdims=True))
        # END SOLUTION 4.4
        return wrap(grad, grad_output, s.dtype), None


class LogSoftmax(Function):
    """out = log_softmax(input) along `dim`."""

    @staticmethod
    def forward(ctx: Context, input: Tensor, dim: int) -> Tensor:
        x = array(input)
        # BEGIN SOLUTION 4.4
        z = x - x.max(axis=dim, keepdims=True)
        out = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        ctx.save_for_backward(out, dim)
        # END SOLUTION 4.4
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        """∂L/∂x = g − softmax(x) · Σ_dim g."""
        # BEGIN SOLUTION 4.4
        out, dim = ctx.saved_values
        g = array(grad_output, out.dtype)
        grad = g - np.exp(out) * g.sum(axis=dim, keepdims=True)
        # END SOLUTION 4.4
        return wrap(grad, grad_output, out.dtype), None


def softmax(input: Tensor, dim: Optional[int] = None) -> Tensor:
    """softmax(x)_i = e^{x_i} / Σ_j e^{x_j} along `dim` (stable for any finite logits)."""
    check_float("softmax", input=input)
    return Softmax.apply(input, _dim("softmax", input, dim))


def log_softmax(input: Tensor, dim: Optional[int] = None) -> Tensor:
    """log_softmax(x)_i = x_i − log Σ_j e^{x_j} along `dim` (stable for any finite logits)."""
    check_float("log_softmax", input=input)
    return LogSoftmax.apply(input, _dim("log_softmax", input, dim))


# ---------------------------------------------------------------------------------------
# max along a dimension, with the gradient sent to the argmax


def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index (int64) of the first maximum along `dim` (of the flattened tensor when None)."""
    x = array(input)
    if dim is None:
        # BEGIN SOLUTION 4.4
        idx = np.asarray(np.argmax(x.reshape(-1)), dtype=np.int64)
        # END SOLUTION 4.4
        if keepdim:
            idx = idx.reshape((1,) * input.dims)
        return wrap(idx, input)
    d = _dim("argmax", input, dim)
    # BEGIN SOLUTION 4.4
    idx = np.argmax(x, axis=d, keepdims=keepdim).astype(np.int64)
    # END SOLUTION 4.4
    return wrap(idx, input)


class Max(Function):
    """values = max of input along `dim` (kept, size 1), given the argmax indices.

    Backward: ∂L/∂input is 0 everywhere except at the argmax of each slice, which receives
    ∂L/∂values of that slice.
    """

    @staticmethod
    def forward(ctx: Context, input: Tensor, dim: int, indices: np.ndarray) -> Tensor:
        """`indices`: the argmax along dim, with dim kept (size 1)."""
        x = array(input)
        # BEGIN SOLUTION 4.4
        values = np.take_along_axis(x, indices, axis=dim)
        ctx.save_for_backward(x.shape, dim, indices)
        # END SOLUTION 4.4
        return wrap(values, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None, None]:
        # BEGIN SOLUTION 4.4
        shape, dim, indices = ctx.saved_values
        grad = np.zeros(shape, dtype=grad_output.dtype)
        np.put_along_axis(grad, indices, array(grad_output), axis=dim)
        # END SOLUTION 4.4
        return wrap(grad, grad_output), None, None


def max(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Union[Tensor, MaxResult]:
    """As `torch.max`: max(x) → the largest element; max(x, dim) → (values, indices).

    Along a dimension the gradient goes to the first maximal element of each slice (the one
    `indices` names). Without `dim` this is `Tensor.max()` (its gradient is shared among
    tied maxima).
    """
    check_float("max", input=input)
    if dim is None:
        return input.max()
    d = _dim("max", input, dim)
    indices = argmax(input, d, keepdim=True)
    values = Max.apply(input, d, array(indices))
    if not keepdim:
        shape = tuple(s for k, s in enumerate(input.shape) if k != d)
        values = values.view(*shape)
        indices = indices.view(*shape)
    return MaxResult(values, indices)
