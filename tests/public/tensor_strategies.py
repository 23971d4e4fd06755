"""Hypothesis strategies for tensors, including non-contiguous (permuted) layouts.

`tensors()` draws a NumPy array and a dimension order; `to_minitorch(arr, order)` builds a
minitorch tensor with the same *values* as `arr` but whose storage is laid out in `order`
(so its strides are not row-major when the order is not the identity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import minitorch


@dataclass
class Drawn:
    array: np.ndarray
    order: tuple[int, ...]

    def tensor(self, backend=None, dtype=None) -> minitorch.Tensor:
        return to_minitorch(self.array if dtype is None else self.array.astype(dtype), self.order, backend)

    def __repr__(self) -> str:
        return f"Drawn(shape={self.array.shape}, order={self.order})"


def to_minitorch(arr: np.ndarray, order: tuple[int, ...], backend=None) -> minitorch.Tensor:
    """A tensor equal to `arr` whose storage holds `arr.transpose(order)` contiguously."""
    base = minitorch.from_numpy(np.ascontiguousarray(arr.transpose(order)), backend=backend)
    inverse = tuple(int(i) for i in np.argsort(order))
    t = base.permute(*inverse)
    assert t.shape == arr.shape
    return t.detach()


def shapes(min_dims: int = 1, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(1, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def tensors(
    draw,
    shape=None,
    min_dims: int = 1,
    max_dims: int = 3,
    max_side: int = 4,
    low: float = -2.0,
    high: float = 2.0,
) -> Drawn:
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, max_side))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    array = rng.uniform(low, high, size=shape)
    order = tuple(draw(st.permutations(range(len(shape))))) if len(shape) else ()
    return Drawn(array, order)


@st.composite
def broadcastable_pair(draw, max_dims: int = 3, max_side: int = 3):
    """Two shapes that broadcast: the second drops leading dims and/or has 1s."""
    big = draw(shapes(1, max_dims, max_side))
    n = draw(st.integers(1, len(big)))
    small = tuple(1 if draw(st.booleans()) else s for s in big[len(big) - n :])
    if draw(st.booleans()):
        big, small = small, big
    return big, small
