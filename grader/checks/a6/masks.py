"""Random attention masks (padding and causal, both polarities), shared by the A6 checks."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext


def random_mask(
    ctx: CheckContext, shape: tuple[int, ...], p_true: float = 0.6, empty_rows: int = 1
) -> np.ndarray:
    """A random bool mask with `empty_rows` rows (along the last dimension) all False."""
    mask = ctx.rng.random(shape) < p_true
    flat = mask.reshape(-1, shape[-1])
    for r in ctx.rng.choice(flat.shape[0], size=min(empty_rows, flat.shape[0]), replace=False):
        flat[r] = False
    return flat.reshape(shape)
