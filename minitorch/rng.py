"""minitorch's random number generator: one NumPy generator behind `rand`, `randn`, dropout
masks and parameter initialisation, so that `manual_seed(s)` makes a whole run repeatable
(as `torch.manual_seed`)."""

from __future__ import annotations

import numpy as np

__all__ = ["generator", "manual_seed"]

_rng = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Seed minitorch's random number generator (rand, randn, dropout, init)."""
    global _rng
    _rng = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """minitorch's random number generator (seeded by `manual_seed`)."""
    return _rng
