"""Basic indexing: `x[i]`, `x[:, t]`, `x[..., a:b]`, `x[::2]`, `x[None]` — views, as in PyTorch.

An index picks, in each dimension, a start and a step, so the result is the same storage
seen with another shape and strides — no data moves:

    dimension k indexed by an int i   → removed; the view starts i · stride_k further in
    by a slice start:stop:step         → size ⌈(stop − start) / step⌉, stride step · stride_k,
                                         the view starts start · stride_k further in
    by None                            → a new dimension of size 1 (stride 0)
    by ...                             → as many full slices as the other entries leave

    offset = Σ_k start_k · stride_k          (the position of the view's first element)

The view's storage is the tensor's storage from `offset` on (a NumPy slice: no copy).
Negative indices count from the end; slice bounds are clipped like Python's; a step must
be positive (as in PyTorch).

Backward: ∂L/∂x is zero except on the picked elements, which receive ∂L/∂out — the
gradient is ∂L/∂out written into the same view of a zero tensor of x's shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .autodiff import Context
from .function import Function
from .tensor_data import TensorData

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Index", "getitem", "normalize_key"]

#: One entry of a key after normalisation: an int (the dimension is removed), a slice with
#: explicit start/stop/step, or None (a new dimension of size 1).
Entry = Union[int, slice, None]


def normalize_key(key: Any, shape: tuple[int, ...]) -> tuple[Entry, ...]:
    """Turn a user key into one entry per dimension of `shape` (plus the Nones), checked.

    Ints are made non-negative, slices get explicit in-range bounds, `...` is expanded.
    """
    if not isinstance(key, tuple):
        key = (key,)
    for entry in key:
        if entry is not None and entry is not Ellipsis and not isinstance(entry, slice) and not _is_int(entry):
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`) and None are valid indices, "
                f"got {type(entry).__name__} (indexing with tensors of indices is not supported yet)"
            )
    if sum(entry is Ellipsis for entry in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(entry is not None and entry is not Ellipsis for entry in key)
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    out: list[Entry] = []
    dim = 0
    for entry in key:
        if entry is None:
            out.append(None)
            continue
        size = shape[dim]
        if isinstance(entry, slice):
            if entry.step is not None and entry.step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(slice(*entry.indices(size)))
        else:
            i = int(entry)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            out.append(i % size)
        dim += 1
    return tuple(out)


def _is_int(entry: Any) -> bool:
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_))


def view_of(data: TensorData, key: tuple[Entry, ...]) -> TensorData:
    """The layout that a normalised `key` picks out of `data` (shares its storage)."""
    shape: list[int] = []
    strides: list[int] = []
    offset = 0
    dim = 0
    for entry in key:
        if entry is None:
            shape.append(1)
            strides.append(0)
            continue
        stride = data.strides[dim]
        if isinstance(entry, slice):
            start, stop, step = entry.start, entry.stop, entry.step
            size = max(0, (stop - start + step - 1) // step)
            shape.append(size)
            strides.append(stride * step)
            if size:
                offset += start * stride
        else:
            offset += entry * stride
        dim += 1
    storage = data._storage[offset:] if data.size else data._storage
    return TensorData(storage, tuple(shape), tuple(strides))


class Index(Function):
    """out = a[key] for a normalised basic-indexing key (a view of a)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", key: tuple[Entry, ...]) -> "Tensor":
        ctx.save_for_backward(a.shape, key)
        return a._view(view_of(a._tensor, key))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        """∂L/∂a: zeros, with ∂L/∂out written into the picked elements."""
        shape, key = ctx.saved_values
        grad = grad_output.new_zeros(shape)
        picked = grad._view(view_of(grad._tensor, key))
        if picked.numel():
            grad_output.backend.id_map(grad_output, picked)
        return grad, None


def getitem(a: "Tensor", key: Any) -> "Tensor":
    """`a[key]` with basic indexing (what `Tensor.__getitem__` calls)."""
    return Index.apply(a, normalize_key(key, a.shape))
