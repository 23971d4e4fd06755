"""What the checks of several A2 tasks share: the tensor_data module and the layouts probed."""

from __future__ import annotations

from typing import Optional


TD = "minitorch.tensor_data"


def _layouts(ndim: int) -> list[Optional[tuple[int, ...]]]:
    """Row-major, reversed, and (for 3+ dims) one mixed memory order."""
    out: list[Optional[tuple[int, ...]]] = [None]
    if ndim >= 2:
        out.append(tuple(reversed(range(ndim))))
    if ndim >= 3:
        out.append((ndim - 2, 0, ndim - 1, *range(1, ndim - 2)))
    return out
