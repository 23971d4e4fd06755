"""Indexing `x[key]` as in PyTorch: basic indexing gives views, integer and boolean
tensors gather copies.

Basic indexing: `x[i]`, `x[:, t]`, `x[..., a:b]`, `x[::2]`, `x[None]` — views.

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

Advanced indexing: `x[idx]`, `x[:, idx]`, `x[rows, cols]`, `x[mask]` — an entry that is an
int64 tensor, a list of ints or an integer array picks positions along its dimension;
several such entries are broadcast together to one index shape B and picked in lockstep:

    x [N, M],  rows [B], cols [B]   →  out [B],      out[b] = x[rows[b], cols[b]]
    x [N, M, K],  idx [B]  (x[:, idx]) →  out [N, B, K],  out[n, b, k] = x[n, idx[b], k]

A bool mask over the first k dimensions stands for the integer indices of its True
entries (`x[mask]` = `x[mask.nonzero()]`). Ints, slices and None are applied first (as
views); then the indexed dimensions are replaced by B — in their place when they are
next to each other, else in front (PyTorch's and NumPy's rule). The result is a copy:
a gather of rows, the same backend kernel as an embedding lookup. Its backward is a
scatter-add — an element picked twice receives the sum of both gradients:

    ∂L/∂x[i] = Σ_{b : index[b] = i} ∂L/∂out[b]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .autodiff import Context
from .function import Function
from .function import is_tensor
from .tensor_data import TensorData

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Gather", "Index", "getitem", "normalize_key"]

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
        if (
            entry is not None
            and entry is not Ellipsis
            and not isinstance(entry, slice)
            and not _is_int(entry)
        ):
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`), None and "
                f"integer or boolean tensors (and lists) are valid indices, got {type(entry).__name__}"
            )
    if sum(entry is Ellipsis for entry in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(entry is not None and entry is not Ellipsis for entry in key)
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1 :]
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
    storage = data._buffer[offset:] if data.size else data._buffer
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


# ---- advanced indexing: integer and boolean tensors -------------------------------------


def _is_advanced(entry: Any) -> bool:
    return is_tensor(entry) or isinstance(entry, (list, np.ndarray))


def _index_array(entry: Any) -> np.ndarray:
    """An index entry (tensor, list, array) as a NumPy array of int64 or bool."""
    array = entry.numpy() if is_tensor(entry) else np.asarray(entry)
    if array.size == 0 and array.dtype.kind == "f":  # x[[]]: an empty list of indices
        array = array.astype(np.int64)
    if array.dtype.kind not in "biu":
        raise IndexError(
            f"tensors used as indices must be long (int64) or bool tensors, got dtype {array.dtype}"
        )
    return array if array.dtype.kind == "b" else array.astype(np.int64)


def _expand(key: tuple, shape: tuple[int, ...]) -> list[Any]:
    """The key with `...` spelled out and every bool mask replaced by the integer index
    arrays of its True entries (a mask over k dimensions gives k arrays)."""
    entries = [_index_array(e) if _is_advanced(e) else e for e in key]
    used = sum(
        e.ndim if isinstance(e, np.ndarray) and e.dtype == np.bool_ else 1
        for e in entries
        if e is not None and e is not Ellipsis
    )
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out: list[Any] = []
    dim = 0
    for e in entries:
        if e is Ellipsis:
            out += [slice(None)] * (len(shape) - used)
            dim += len(shape) - used
        elif isinstance(e, np.ndarray) and e.dtype == np.bool_:
            if e.ndim == 0:
                raise IndexError("indexing with a 0-d bool (x[True]) is not supported")
            if e.shape != shape[dim : dim + e.ndim]:
                raise IndexError(
                    f"the shape of the mask {list(e.shape)} at index {dim} does not match the shape "
                    f"of the indexed tensor {list(shape)} at index {dim}"
                )
            out += list(np.nonzero(e))
            dim += e.ndim
        else:
            out.append(e)
            dim += e is not None
    return out


def _rows(t: "Tensor", m: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(storage, shape, strides) of a contiguous tensor seen as m rows of d values."""
    return t.tuple()[0], np.array([m, d], np.int64), np.array([d, 1], np.int64)


def _gather_rows(src: "Tensor", rows: np.ndarray, out: "Tensor", d: int) -> None:
    """out[i, :] = src[rows[i], :] for contiguous src [N, D] and out [M, D] (any shapes
    with these sizes): the backend's row-gather kernel, the one embeddings use."""
    m = rows.size
    if not (m and d):
        return
    src.backend.embedding_gather(*_rows(out, m, d), *_rows(src, src.numel() // d, d), rows)


def _scatter_add_rows(grad: "Tensor", rows: np.ndarray, out: "Tensor", d: int) -> None:
    """out[rows[i], :] += grad[i, :] for contiguous grad [M, D] and out [N, D] (zeros on
    arrival); repeated rows add up (the embedding backward's kernel)."""
    m = rows.size
    if not (m and d):
        return
    grad.backend.embedding_scatter_add(*_rows(out, out.numel() // d, d), *_rows(grad, m, d), rows, -1)


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for k, o in enumerate(order):
        inverse[o] = k
    return tuple(inverse)


class Gather(Function):
    """out = a[index₀, index₁, …] on dimensions `dims` of a (index arrays of one shape B,
    in range, non-negative): a copy of shape B + the other dimensions, B in place of `dims`
    when these are adjacent, else in front."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", dims: tuple[int, ...], index: tuple[np.ndarray, ...]) -> "Tensor":
        rest = tuple(k for k in range(a.dims) if k not in dims)
        order = dims + rest  # the indexed dimensions first: a seen as rows [N, D]
        picked_shape = tuple(a.shape[k] for k in dims)
        rest_shape = tuple(a.shape[k] for k in rest)
        rows = (
            np.ravel_multi_index(index, picked_shape).reshape(-1) if index[0].size else np.zeros(0, np.int64)
        )
        src = a._view(a._tensor.permute(*order)).contiguous()
        out = a.new_zeros(index[0].shape + rest_shape)
        d = int(np.prod(rest_shape)) if rest_shape else 1
        _gather_rows(src, rows.astype(np.int64), out, d)
        move: tuple[int, ...] = tuple(range(out.dims))
        if dims == tuple(range(dims[0], dims[0] + len(dims))):  # adjacent: B goes in their place
            nb, before = index[0].ndim, dims[0]
            move = (
                tuple(range(nb, nb + before)) + tuple(range(nb)) + tuple(range(nb + before, nb + len(rest)))
            )
            out = out._view(out._tensor.permute(*move))
        ctx.save_for_backward(order, picked_shape + rest_shape, rows.astype(np.int64), move, d)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None, None]:
        """∂L/∂a: zeros, with each row of ∂L/∂out added into the row it was gathered from."""
        order, moved_shape, rows, move, d = ctx.saved_values
        g = grad_output._view(grad_output._tensor.permute(*_inverse(move))).contiguous()
        grad = grad_output.new_zeros(moved_shape)
        _scatter_add_rows(g, rows, grad, d)
        return grad._view(grad._tensor.permute(*_inverse(order))), None, None


def _advanced(a: "Tensor", key: tuple) -> "Tensor":
    """`a[key]` for a key holding integer / boolean index tensors (see the module docstring)."""
    entries = _expand(key, a.shape)
    basic: list[Any] = []
    dims: list[int] = []  # dimensions of the basic view that are indexed by arrays
    sources: list[int] = []  # … and the dimensions of `a` they come from
    arrays: list[np.ndarray] = []
    out_dim = in_dim = 0
    for e in entries:
        if isinstance(e, np.ndarray):
            basic.append(slice(None))
            dims.append(out_dim)
            sources.append(in_dim)
            arrays.append(e)
        else:
            basic.append(e)
        if e is None:
            out_dim += 1
            continue
        out_dim += not _is_int(e)
        in_dim += 1
    view = Index.apply(a, normalize_key(tuple(basic), a.shape))
    checked = []
    for d, source, array in zip(dims, sources, arrays):
        size = view.shape[d]
        if array.size and (array.min() < -size or array.max() >= size):
            bad = array.min() if array.min() < -size else array.max()
            raise IndexError(f"index {bad} is out of bounds for dimension {source} with size {size}")
        checked.append(array % size if size else array)
    try:
        broadcast = np.broadcast_arrays(*checked)
    except ValueError:
        shapes = ", ".join(str(list(x.shape)) for x in checked)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    return Gather.apply(view, tuple(dims), tuple(np.array(x, dtype=np.int64) for x in broadcast))


def getitem(a: "Tensor", key: Any) -> "Tensor":
    """`a[key]` (what `Tensor.__getitem__` calls): a view for basic keys, a gather for keys
    with integer or boolean index tensors."""
    entries = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(e) for e in entries):
        return _advanced(a, entries)
    return Index.apply(a, normalize_key(key, a.shape))
