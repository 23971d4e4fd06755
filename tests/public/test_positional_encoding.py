"""Sinusoidal positional encodings: the lecture's formula at hand-checked points, and the
property that makes them useful (k positions later = the same rotation for every pos)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch.nn import functional as F

pytestmark = pytest.mark.task6_4


def test_shape_dtype_and_hand_values() -> None:
    pe = F.sinusoidal_positional_encoding(50, 8)
    assert pe.shape == (50, 8) and pe.dtype == np.float64 and not pe.requires_grad
    table = pe.numpy()
    np.testing.assert_array_equal(table[0], [0.0, 1.0] * 4)  # sin 0, cos 0
    assert table[1, 0] == pytest.approx(math.sin(1.0))  # i = 0: ω = 1
    assert table[1, 1] == pytest.approx(math.cos(1.0))
    assert table[7, 2] == pytest.approx(math.sin(7 / 10000 ** (2 / 8)))  # i = 1
    assert table[7, 7] == pytest.approx(math.cos(7 / 10000 ** (6 / 8)))  # i = 3
    assert F.sinusoidal_positional_encoding(3, 4, dtype=minitorch.float32).dtype == np.float32


def test_every_entry_is_the_formula() -> None:
    """PE(pos, 2i) = sin(pos / 10000^{2i/d}), PE(pos, 2i + 1) = cos(the same angle), entry by entry."""
    length, d = 12, 6
    table = F.sinusoidal_positional_encoding(length, d).numpy()
    for pos in range(length):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert table[pos, 2 * i] == pytest.approx(math.sin(angle), rel=1e-12, abs=1e-15)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(angle), rel=1e-12, abs=1e-15)


def test_odd_width_ends_with_a_sine_column() -> None:
    table = F.sinusoidal_positional_encoding(6, 5).numpy()
    assert table.shape == (6, 5)
    np.testing.assert_allclose(table[:, 4], np.sin(np.arange(6) / 10000 ** (4 / 5)))


def test_k_positions_later_is_one_rotation_for_every_position() -> None:
    d, k = 16, 5
    table = F.sinusoidal_positional_encoding(40, d).numpy()
    for i in range(d // 2):
        w = 10000 ** (-2 * i / d)
        rotation = np.array([[math.cos(k * w), -math.sin(k * w)], [math.sin(k * w), math.cos(k * w)]])
        pairs = table[:, 2 * i : 2 * i + 2]  # [sin, cos] per pos
        np.testing.assert_allclose(pairs[:-k] @ rotation, pairs[k:], atol=1e-12)


def test_errors() -> None:
    with pytest.raises(ValueError, match="d_model"):
        F.sinusoidal_positional_encoding(4, 0)
    assert F.sinusoidal_positional_encoding(0, 4).shape == (0, 4)
