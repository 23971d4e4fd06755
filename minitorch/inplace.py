"""In-place writes (`x[0] = v`, `x.add_(y)`, `x.zero_()`, …) and the check that keeps
gradients right after them.

An in-place operation overwrites a tensor's storage, which every view of it shares. Two
things could then go wrong with autograd, and both are refused here, as PyTorch does:

1. Writing into a tensor the graph needs to differentiate *through* (a leaf that requires
   grad, or a tensor computed from one): its gradient would silently lose the write. Such a
   write raises, unless grad mode is off (`with minitorch.no_grad():`, as initialisation and
   optimizers do) or it goes through `.data`, which is the same storage outside the graph.
2. Writing into a tensor a function *saved* for its backward pass (say `x` of `y = x * w`,
   then `x.add_(1)` before `y.backward()`): the backward would read the new values. Each
   write stamps the storage with a number from a counter (`write_stamps`); each recorded
   function remembers the counter when it ran (`Function.apply`); before a backward runs,
   `check_saved` looks for a saved tensor stamped later. While no in-place write ever
   happens the check costs one comparison of two integers.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .function import grad_enabled
from .write_stamps import check_saved, clock, mark_written

__all__ = ["clock", "check_saved", "strided", "mark_written", "check_writable"]


def strided(tensor: Any) -> np.ndarray:
    """A NumPy array over the tensor's own storage, through its strides: writing to it
    writes the tensor (and every view of it)."""
    data = tensor._tensor
    if any(stride == 0 and size > 1 for stride, size in zip(data.strides, data.shape)):
        raise RuntimeError(
            f"unsupported operation: more than one element of the written-to tensor refers to a single memory "
            f"location (shape {tuple(tensor.shape)}, strides {data.strides}); write to a copy (x.clone()) instead"
        )
    storage = data._storage
    return np.lib.stride_tricks.as_strided(
        storage,
        shape=data.shape,
        strides=tuple(s * storage.itemsize for s in data.strides),
        writeable=True,
    )


def check_writable(name: str, tensor: Any, value: Optional[Any] = None) -> None:
    """Raise when writing `value` into `tensor` in place would fool autograd (module docstring, 1)."""
    if not grad_enabled():
        return
    if tensor.history is not None and tensor.history.last_fn is None:
        raise RuntimeError(
            f"{name}: a leaf Variable that requires grad is being used in an in-place operation "
            f"(use `with minitorch.no_grad():`, or write to .data)"
        )
    if tensor.history is not None:
        raise RuntimeError(
            f"{name}: in-place operations on a tensor computed with gradients are not supported by minitorch "
            f"(write it out of place: y = y + …, or build it with cat / stack / where)"
        )
    if value is not None and getattr(value, "requires_grad", False):
        raise RuntimeError(
            f"{name}: the value written requires grad, and minitorch's in-place operations record no gradient "
            f"(build the tensor with cat / stack / where instead)"
        )


# ---- the operations (Tensor's `add_`, `fill_`, `__setitem__`, … call these) --------------


def _category(dtype: Any) -> int:
    return {"b": 0, "i": 1, "u": 1, "f": 2}[np.dtype(dtype).kind]


def _operand(name: str, tensor: Any, other: Any) -> Any:
    """`other` as NumPy (a tensor's values) or a Python number, checked to broadcast to the
    tensor's shape (an in-place result keeps the written tensor's shape)."""
    if hasattr(other, "_tensor"):
        values = other.numpy()
        shape = np.broadcast_shapes(tuple(tensor.shape), values.shape)
        if shape != tuple(tensor.shape):
            raise RuntimeError(
                f"{name}: output with shape {tuple(tensor.shape)} doesn't match the broadcast shape {shape}"
            )
        return values
    if isinstance(other, (bool, int, float, np.number, np.bool_)):
        return other
    raise TypeError(f"{name}: expected a tensor or a number, got {type(other).__name__}")


def update(name: str, tensor: Any, compute: Any, other: Any = None, keep_kind: bool = True) -> Any:
    """tensor ← compute(its values, other's values), in place; returns the tensor.

    With `keep_kind` the result's dtype must not be of a higher kind than the tensor's
    (bool < integer < floating), as PyTorch requires: `ints.add_(0.5)` is refused."""
    from .dtypes import result_type

    check_writable(name, tensor, other)
    values = None if other is None else _operand(name, tensor, other)
    if keep_kind and other is not None:
        kind = result_type(tensor, other)
        if _category(kind) > _category(tensor.dtype):
            raise RuntimeError(
                f"{name}: result type {kind} can't be cast to the desired output type {tensor.dtype}"
            )
    cells = strided(tensor)
    cells[...] = compute(cells, values)
    mark_written(tensor._tensor._storage)
    return tensor


def setitem(tensor: Any, key: Any, value: Any) -> None:
    """`tensor[key] = value`: the positions `key` picks (as `tensor[key]` reads them: ints,
    slices, None, ..., integer and bool index tensors) take `value` (broadcast), converted
    to the tensor's dtype."""
    from .indexing import _index_array, _is_advanced

    check_writable("__setitem__", tensor, value)
    entries = key if isinstance(key, tuple) else (key,)
    numpy_key = tuple(_index_array(e) if _is_advanced(e) else e for e in entries)
    values = value.numpy() if hasattr(value, "_tensor") else value
    cells = strided(tensor)
    try:
        cells[numpy_key if isinstance(key, tuple) else numpy_key[0]] = values
    except ValueError as exc:
        raise RuntimeError(
            f"__setitem__: cannot write a value of shape {np.shape(values)} into "
            f"tensor{list(tensor.shape)}[{key!r}] ({exc})"
        ) from exc
    mark_written(tensor._tensor._storage)
