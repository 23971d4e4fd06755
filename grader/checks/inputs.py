"""Input generation shared by the stage checks: layouts and values (parent side only)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

I64 = np.int64


def strides_for(shape: Sequence[int], order: Optional[Sequence[int]] = None) -> tuple[int, ...]:
    """Strides of `shape` stored in memory in dimension order `order` (None: row-major).

    E.g. shape (2, 3) in order (1, 0) (column-major) has strides (1, 2).
    """
    order = list(range(len(shape))) if order is None else list(order)
    out = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        out[dim] = step
        step *= shape[dim]
    return tuple(out)


def reversed_order(ndim: int) -> tuple[int, ...]:
    """The memory order that stores the last dimension slowest (a transposed layout)."""
    return tuple(reversed(range(ndim)))


def layout_text(order: Optional[Sequence[int]]) -> str:
    return "row-major" if order is None else f"stored in dimension order {tuple(order)}"


def values(
    rng: np.random.Generator, shape: Sequence[int], positive: bool = False, dtype: Any = np.float64
) -> np.ndarray:
    """Random values: in [0.5, 2) when `positive` (log, inv); otherwise on a grid of
    quarters without 0, so that comparisons (eq, lt, max) meet ties."""
    if positive:
        return rng.uniform(0.5, 2.0, size=shape).astype(dtype)
    a = np.round(rng.standard_normal(shape) * 4) / 4
    a[a == 0] = 0.75
    return a.astype(dtype)
