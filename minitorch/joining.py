"""Joining tensors: `cat` (along an existing dimension) and `stack` (along a new one), with
PyTorch's names, arguments and errors. Both are differentiable.

    cat([a [2, 3], b [2, 5]], dim=1)     → [2, 8]     out[:, 0:3] = a, out[:, 3:8] = b
    stack([a [2, 3], b [2, 3]], dim=0)   → [2, 2, 3]  out[0] = a, out[1] = b

How `cat` works on any backend: the output is allocated once; each input is copied (the
backend's `id_map`) into the *region* of the output it occupies — a view with the output's
strides whose storage starts `offset · stride[dim]` elements in. Backward cuts the same
regions out of ∂L/∂out: each input's gradient is its slice.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .autodiff import Context
from .function import Function
from .tensor import Tensor
from .tensor_data import ShapeError, TensorData

__all__ = ["cat", "stack"]


def _region(t: Tensor, dim: int, start: int, shape: tuple[int, ...]) -> Tensor:
    """The part of `t` from index `start` along `dim`, of shape `shape`: a view sharing
    t's storage (NumPy slices the storage without copying)."""
    strides = t._tensor.strides
    offset = start * strides[dim]
    return t._view(TensorData(t._tensor._buffer[offset:], shape, strides))


class Cat(Function):
    """out = the inputs joined along `dim` (all other sizes equal)."""

    @staticmethod
    def forward(ctx: Context, dim: int, *tensors: Tensor) -> Tensor:
        sizes = [t.shape[dim] for t in tensors]
        ctx.save_for_backward(dim, sizes, [t.shape for t in tensors], [t.dtype for t in tensors])
        shape = list(tensors[0].shape)
        shape[dim] = sum(sizes)
        dtype = np.result_type(*(t.dtype for t in tensors))
        out = tensors[0].new_zeros(tuple(shape), dtype=dtype)
        start = 0
        for t, size in zip(tensors, sizes):
            if size:
                t.backend.id_map(t, _region(out, dim, start, t.shape))
            start += size
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        """∂L/∂input_i = the slice of ∂L/∂out that input i filled."""
        dim, sizes, shapes, dtypes = ctx.saved_values
        grads: list = [None]  # no gradient for `dim`
        start = 0
        for size, shape, dtype in zip(sizes, shapes, dtypes):
            grad = grad_output.new_zeros(shape, dtype=dtype)
            if size:
                grad_output.backend.id_map(_region(grad_output, dim, start, shape), grad)
            grads.append(grad)
            start += size
        return tuple(grads)


def _check_dim(name: str, dim: int, dims: int) -> int:
    if not -dims <= dim < dims:
        raise IndexError(
            f"{name}: dimension out of range (expected to be in range of [{-dims}, {dims - 1}], but got {dim})"
        )
    return dim % dims


def _tensor_list(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    """The tensors as a list, checked: not empty, tensors only."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected a list of Tensors, but element {i} is {type(t).__name__}")
    return tensors


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along the existing dimension `dim` (as `torch.cat`).

    Every tensor has the same number of dimensions and the same sizes except along `dim`.
    The result has the common dtype (float64 if float32 and float64 are mixed).
    """
    tensors = _tensor_list("cat()", tensors)
    first = tensors[0]
    if first.dims == 0:
        raise ShapeError("cat(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _check_dim("cat()", dim, first.dims)
    for i, t in enumerate(tensors[1:], start=1):
        if t.dims != first.dims:
            raise ShapeError(
                f"cat(): tensors must have same number of dimensions: got {first.dims} and {t.dims} "
                f"(tensor number {i} in the list has shape {t.shape})"
            )
        for k in range(first.dims):
            if k != d and t.shape[k] != first.shape[k]:
                raise ShapeError(
                    f"cat(): sizes of tensors must match except in dimension {d}. Expected size "
                    f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list"
                )
    return Cat.apply(d, *tensors)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dimension `dim` (as `torch.stack`):
    stack(ts, dim) = cat([t.unsqueeze(dim) for t in ts], dim)."""
    tensors = _tensor_list("stack()", tensors)
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise ShapeError(
                f"stack(): expects each tensor to be equal size, but got {list(tensors[0].shape)} "
                f"at entry 0 and {list(t.shape)} at entry {i}"
            )
    d = _check_dim("stack()", dim, tensors[0].dims + 1)
    return Cat.apply(d, *(t.unsqueeze(d) for t in tensors))
