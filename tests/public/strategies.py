"""Hypothesis strategies and helpers shared by the test suite.

Kept generic (numbers and a closeness check) so that every stage's tests can import it
without pulling in code of a later stage.
"""

from __future__ import annotations

import math

from hypothesis import settings
from hypothesis import strategies as st

#: Settings for property tests: few examples, no per-example deadline (JIT compiles and
#: shared CI machines make timings noisy).
fast = settings(max_examples=30, deadline=None)

#: Integers small enough for exact float arithmetic.
small_ints = st.integers(min_value=1, max_value=3)

#: Floats in a range where products and sums stay well inside float64.
small_floats = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False, allow_infinity=False)

#: Strictly positive floats (for log, division, …), away from 0.
small_positive_floats = st.floats(min_value=0.1, max_value=100.0, allow_nan=False)

#: Floats bounded away from 0 in magnitude (for 1/x without huge values).
nonzero_floats = st.one_of(
    st.floats(min_value=-100.0, max_value=-0.1), st.floats(min_value=0.1, max_value=100.0)
)

#: Moderate floats for exp/sigmoid (keeps e^x and its derivative finite and well scaled).
moderate_floats = st.floats(min_value=-10.0, max_value=10.0, allow_nan=False)


def float_lists(min_size: int = 0, max_size: int = 10, elements: st.SearchStrategy[float] = small_floats):
    """Lists of floats (possibly empty)."""
    return st.lists(elements, min_size=min_size, max_size=max_size)


def assert_close(a: float, b: float, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Assert that two numbers agree, with a message showing both."""
    a, b = float(a), float(b)
    if math.isnan(a) and math.isnan(b):
        return
    if a == b:  # also covers equal infinities
        return
    assert abs(a - b) <= atol + rtol * abs(b), f"expected {b!r}, got {a!r} (diff {abs(a - b):.3g})"
