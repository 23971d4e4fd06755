"""`minitorch.accel.fast_exp.exp`, the vectorisable eˣ of the fused kernels, against NumPy's exp."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.accel.fast_exp import exp
from minitorch.jit import njit

pytestmark = pytest.mark.library


@njit
def _exp_all(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):  # the loop the kernels run: vectorised by LLVM
        out[i] = exp(x[i])


def _fast(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=np.float64)
    _exp_all(np.asarray(x, dtype=np.float64), out)
    return out


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.spacing(want)


@pytest.mark.parametrize("low, high", [(-1.0, 1.0), (-40.0, 40.0), (-708.0, 709.7)])
def test_within_two_ulp_of_numpy(low, high) -> None:
    x = np.random.default_rng(0).uniform(low, high, 100_003)  # an odd count: a loop remainder
    assert _ulps(_fast(x), np.exp(x)).max() <= 2.0


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-708.0, max_value=709.7, allow_nan=False))
def test_within_two_ulp_anywhere(x) -> None:
    want = np.exp(np.float64(x))
    assert _ulps(_fast(np.array([x])), want)[0] <= 2.0


def test_special_values_as_math_exp() -> None:
    x = np.array([-np.inf, -1e308, -800.0, -746.0, 0.0, -0.0, 709.78, 710.0, 1e308, np.inf])
    want = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, math.exp(709.78), np.inf, np.inf, np.inf])
    got = _fast(x)
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 4, 5, 7, 8, 9]], want[[0, 1, 2, 3, 4, 5, 7, 8, 9]])
    assert _ulps(got[6:7], want[6:7])[0] <= 2.0
    assert np.isnan(_fast(np.array([np.nan, 1.0, np.nan]))[[0, 2]]).all()


def test_subnormal_results_are_close() -> None:
    """Below about −708 eˣ is subnormal: fewer bits, so compare absolutely."""
    x = np.linspace(-745.0, -708.5, 1001)
    np.testing.assert_allclose(_fast(x), np.exp(x), rtol=1e-12, atol=2 * np.spacing(0.0))
