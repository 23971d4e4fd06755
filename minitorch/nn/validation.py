"""Argument checks shared by the layers of `minitorch.nn`.

Every error names the function that was called and the value it got, so that a wrong
shape or dtype deep inside a model points at the call that caused it.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ..tensor import Tensor

__all__ = ["check_float", "int_tuple"]


def check_float(name: str, **tensors: Optional[Tensor]) -> None:
    """Raise a TypeError naming `name` when an argument is not a floating-point tensor
    (arguments given as None are skipped)."""
    for arg, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {arg} must be a minitorch Tensor, got {type(t).__name__}")
        if not np.issubdtype(t.dtype, np.floating):
            raise TypeError(f"{name}: {arg} must be a float32 or float64 tensor, got dtype {t.dtype}")


def _integer(name: str, what: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: {what} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def int_tuple(name: str, what: str, value: Union[int, tuple, list], n: int, minimum: int) -> tuple[int, ...]:
    """An int (repeated n times) or a sequence of n ints, as an n-tuple of ints ≥ minimum.

    `int_tuple("conv2d", "stride", 2, 2, 1) == (2, 2)`; errors name the function and the
    argument: "conv2d: stride must be an int or a tuple of 2 ints, got (1, 2, 3)".
    """
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            kind = "an int" if n == 1 else f"an int or a tuple of {n} ints"
            raise ValueError(f"{name}: {what} must be {kind}, got {value!r}")
        return tuple(_integer(name, what, v, minimum) for v in value)
    return (_integer(name, what, value, minimum),) * n
