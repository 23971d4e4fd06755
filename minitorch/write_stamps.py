"""The write counter behind autograd's check of in-place writes (`inplace.py`, point 2).

Each in-place write stamps the memory it wrote with the next number of a counter
(`mark_written`); each recorded function remembers the counter when it ran
(`Function.apply` stores `clock()`); before its backward runs, `check_saved` raises if a
tensor it saved carries a later stamp. While no in-place write ever happens the check costs
one comparison of two integers.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

__all__ = ["clock", "mark_written", "check_saved"]

_clock = 0
#: id(root storage) → (a weak reference to it, the clock of its last write)
_stamps: dict[int, tuple[weakref.ref, int]] = {}


def clock() -> int:
    """The number of in-place writes so far (what `Function.apply` records)."""
    return _clock


def _root(storage: np.ndarray) -> np.ndarray:
    """The array that owns the memory of `storage` (views of a tensor share it)."""
    while isinstance(storage.base, np.ndarray):
        storage = storage.base
    return storage


def mark_written(storage: np.ndarray) -> None:
    """Stamp the memory of `storage` as written now."""
    global _clock
    _clock += 1
    root = _root(storage)
    key = id(root)
    _stamps[key] = (weakref.ref(root, lambda _, key=key: _stamps.pop(key, None)), _clock)


def _stamp(value: Any) -> int:
    data = getattr(value, "_tensor", None)
    storage = getattr(data, "_storage", None)
    if not isinstance(storage, np.ndarray):
        return 0
    root = _root(storage)
    entry = _stamps.get(id(root))
    return entry[1] if entry is not None and entry[0]() is root else 0


def check_saved(fn_name: str, ran_at: int, saved: tuple[Any, ...]) -> None:
    """Raise if a tensor `fn_name` saved for backward was written in place after it ran."""
    if _clock == ran_at:  # no in-place write since: nothing to look at
        return
    for value in saved:
        if _stamp(value) > ran_at:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: a tensor of shape {tuple(value.shape)} saved by {fn_name}.forward was written "
                f"after it (write to a copy, x.clone(), instead)"
            )
