"""Toy 2-D binary classification datasets for the first networks.

Each returns a `Graph` of N points x ∈ [0, 1]² with labels y ∈ {0, 1}. Generation is
seeded, so a dataset is the same on every run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Graph:
    """N points with coordinates X (N × 2) and labels y (N)."""

    N: int
    X: np.ndarray
    y: np.ndarray


def _points(N: int, rng: random.Random) -> list[tuple[float, float]]:
    return [(rng.random(), rng.random()) for _ in range(N)]


def _graph(N: int, seed: int, label: Callable[[float, float], bool]) -> Graph:
    pts = _points(N, random.Random(seed))
    X = np.array(pts, dtype=np.float64)
    y = np.array([1.0 if label(a, b) else 0.0 for a, b in pts])
    return Graph(N, X, y)


def simple(N: int, seed: int = 0) -> Graph:
    """Left half positive: y = x₁ < 0.5."""
    return _graph(N, seed, lambda a, b: a < 0.5)


def diag(N: int, seed: int = 0) -> Graph:
    """Below the anti-diagonal positive: y = x₁ + x₂ < 0.5."""
    return _graph(N, seed, lambda a, b: a + b < 0.5)


def split(N: int, seed: int = 0) -> Graph:
    """Two outer bands positive: y = x₁ < 0.2 or x₁ > 0.8."""
    return _graph(N, seed, lambda a, b: a < 0.2 or a > 0.8)


def xor(N: int, seed: int = 0) -> Graph:
    """Opposite quadrants positive: y = (x₁ < 0.5) xor (x₂ < 0.5)."""
    return _graph(N, seed, lambda a, b: (a < 0.5) != (b < 0.5))


def circle(N: int, seed: int = 0) -> Graph:
    """Outside a circle of radius √0.1 around the centre positive."""
    return _graph(N, seed, lambda a, b: (a - 0.5) ** 2 + (b - 0.5) ** 2 > 0.1)


def spiral(N: int, seed: int = 0) -> Graph:
    """Two interleaved spirals, N/2 points each (the hardest of the set)."""

    def arm(t: float, sign: float) -> tuple[float, float]:
        return (sign * t * math.cos(t) / 20.0 + 0.5, sign * t * math.sin(t) / 20.0 + 0.5)

    half = N // 2
    ts = [5.0 + 5.0 * i / max(half, 1) for i in range(half)]
    pts = [arm(t, 1.0) for t in ts] + [arm(t, -1.0) for t in ts]
    y = [0.0] * half + [1.0] * half
    return Graph(len(pts), np.array(pts, dtype=np.float64), np.array(y))


DATASETS: dict[str, Callable[..., Graph]] = {
    "simple": simple,
    "diag": diag,
    "split": split,
    "xor": xor,
    "circle": circle,
    "spiral": spiral,
}
