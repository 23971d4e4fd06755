"""Picking values element by element: `where`, `masked_fill`, `tril` / `triu`, `clamp`.

    where(cond, a, b)[i] = a[i] if cond[i] else b[i]        cond, a, b broadcast together

The others are `where` with a particular condition:

    masked_fill(x, mask, v) = where(mask, v, x)             (attention: mask with −inf)
    tril(x, k)              = where(j − i ≤ k, x, 0)        on the last two dims [.., i, j]
    triu(x, k)              = where(j − i ≥ k, x, 0)
    clamp(x, lo, hi)        = where(x < lo, lo, where(x > hi, hi, x))

Backward: the gradient goes to the operand that was picked (and is summed back to each
operand's shape when it was broadcast),

    ∂L/∂a = ∂L/∂out ⊙ cond,    ∂L/∂b = ∂L/∂out ⊙ (1 − cond)

so `clamp` passes the gradient where lo ≤ x ≤ hi (PyTorch's convention at the bounds).

The forward *picks* values rather than computing a·cond + b·(1 − cond), which would turn an
unpicked ±inf or nan into nan (`masked_fill(mask, -inf)` must give −inf, not nan). No
backend op picks between two tensors, so on the CPU the forward uses NumPy's `np.where` on
the values, and on the CUDA backend a kernel of `cuda_ops` (`where`), so that the values
stay in GPU memory; the condition is data, not part of the graph. The backward is backend
arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .autodiff import Context
from .dtypes import bool_, result_type
from .function import Function, is_tensor
from .tensor_data import ShapeError, shape_broadcast

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Where", "clamp", "masked_fill", "tril", "triu", "where"]

Value = Union["Tensor", float, int, bool]


class Where(Function):
    """out = a where cond else b (cond a bool tensor; a, b of one dtype; broadcasting)."""

    @staticmethod
    def forward(ctx: Context, cond: "Tensor", a: "Tensor", b: "Tensor") -> "Tensor":
        shape = shape_broadcast(shape_broadcast(cond.shape, a.shape), b.shape)
        if a.backend.cuda:  # a kernel picks on the GPU: the values stay there
            from .cuda_ops import where

            out = a.new_zeros(shape)
            where(out, cond, a, b)
            if a.requires_grad or b.requires_grad:
                mask = a.new_zeros(cond.shape)  # 1.0 / 0.0 in the operands' float dtype
                a.backend.id_map(cond, mask)
                ctx.save_for_backward(mask)
            return out
        picked = np.broadcast_to(np.where(cond.numpy(), a.numpy(), b.numpy()), shape)
        if a.requires_grad or b.requires_grad:
            mask = a.new_tensor(cond.numpy())  # 1.0 / 0.0 in the operands' float dtype
            ctx.save_for_backward(mask)
        return a.new_tensor(picked)

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple[None, "Tensor", "Tensor"]:
        """∂L/∂a = ∂L/∂out ⊙ cond, ∂L/∂b = ∂L/∂out ⊙ (1 − cond)."""
        (mask,) = ctx.saved_values
        be = grad_output.backend
        unpicked = be.add_zip(be.neg_map(mask), mask.new_ones(()))
        return None, be.mul_zip(grad_output, mask), be.mul_zip(grad_output, unpicked)


def _like(value: Value, like: "Tensor", dtype: np.dtype) -> "Tensor":
    """`value` (tensor or Python number) as a tensor of `dtype` on `like`'s backend."""
    if is_tensor(value):
        return value.to(dtype)  # type: ignore[union-attr]
    if not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise TypeError(f"expected a tensor or a Python number, got {type(value).__name__}")
    return like.new_tensor(value, dtype=dtype)


def _check_condition(name: str, condition: Any) -> None:
    if not is_tensor(condition):
        raise TypeError(f"{name}: the condition / mask must be a bool tensor, got {type(condition).__name__}")
    if condition.dtype != bool_:
        raise RuntimeError(
            f"{name}: expected the condition / mask to be a bool tensor, got dtype {condition.dtype} "
            "(compare, e.g. x > 0, or convert with .bool())"
        )


def where(condition: "Tensor", input: Value, other: Value) -> "Tensor":
    """`input` where `condition` is True, else `other` (as `torch.where`).

    condition: bool tensor; input, other: tensors or Python numbers. All three broadcast
    together; the result has their promoted dtype. Differentiable in input and other.
    """
    _check_condition("where()", condition)
    dtype = result_type(input, other)
    a, b = _like(input, condition, dtype), _like(other, condition, dtype)
    try:
        shape_broadcast(shape_broadcast(condition.shape, a.shape), b.shape)
    except ShapeError:
        raise ShapeError(
            f"where(): condition {condition.shape}, input {a.shape} and other {b.shape} do not broadcast"
        ) from None
    return Where.apply(condition, a, b)


def masked_fill(input: "Tensor", mask: "Tensor", value: Value) -> "Tensor":
    """A copy of `input` with `value` wherever `mask` (bool, broadcastable to input's shape)
    is True (as `torch.Tensor.masked_fill`); the result keeps input's shape and dtype."""
    _check_condition("masked_fill()", mask)
    if is_tensor(value) and value.dims != 0:  # type: ignore[union-attr]
        raise RuntimeError(
            f"masked_fill(): value must be a Python number or a 0-d tensor, got a tensor of shape {value.shape}"  # type: ignore[union-attr]
        )
    try:
        fits = shape_broadcast(mask.shape, input.shape) == input.shape
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(
            f"masked_fill(): mask of shape {mask.shape} does not broadcast to the input's shape {input.shape}"
        )
    return Where.apply(mask, _like(value, input, input.dtype), input)


def _triangle(name: str, input: "Tensor", diagonal: int, lower: bool) -> "Tensor":
    if input.dims < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got shape {input.shape}")
    n, m = input.shape[-2:]
    rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
    keep = (cols - rows <= diagonal) if lower else (cols - rows >= diagonal)
    return Where.apply(input.new_tensor(keep, dtype=bool_), input, input.new_zeros(()))


def tril(input: "Tensor", diagonal: int = 0) -> "Tensor":
    """The lower triangle of the last two dimensions [..., n, m]: out[..., i, j] = x[..., i, j]
    where j − i ≤ diagonal, else 0 (as `torch.tril`; diagonal > 0 keeps more, < 0 fewer)."""
    return _triangle("tril()", input, diagonal, lower=True)


def triu(input: "Tensor", diagonal: int = 0) -> "Tensor":
    """The upper triangle of the last two dimensions: x[..., i, j] where j − i ≥ diagonal,
    else 0 (as `torch.triu`)."""
    return _triangle("triu()", input, diagonal, lower=False)


def clamp(input: "Tensor", min: Optional[Value] = None, max: Optional[Value] = None) -> "Tensor":
    """Values limited to [min, max] (as `torch.clamp`; either bound may be None, a number or
    a broadcastable tensor). The gradient flows where min ≤ x ≤ max; if min > max every
    value becomes max."""
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = where(out < min, min, out)
    if max is not None:
        out = where(out > max, max, out)
    return out
