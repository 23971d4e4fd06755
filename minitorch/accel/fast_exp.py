r"""eˣ for Numba kernels, written so that a loop calling it runs on SIMD lanes.

`math.exp` in a Numba loop is a call into the C library, one value at a time: LLVM cannot
vectorise a loop with a call in it, and the call costs about 7 ns (measured here, float64).
A kernel that needs five exponentials per value — an LSTM step: three sigmoids and two
tanh — spends most of its time there. This `exp` is plain arithmetic, so LLVM turns the
loop around it into 8-wide AVX-512 code (4-wide on AVX2): about 3× faster per value.

The method (as in every vector math library):

    n = round(x / ln 2)                    an integer, |n| ≤ 1075 after clamping x
    r = x − n·ln 2                         |r| ≤ ln 2 / 2 ≈ 0.347 (ln 2 in two parts, so
                                           that n·ln2_hi is exact: Cody and Waite)
    eʳ ≈ Σ_{k=0}^{12} rᵏ / k!              Taylor to r¹², relative error < 2e-16 there
    eˣ = eʳ · 2ⁿ                           2ⁿ read from a table of the powers of two
                                           (n = 1024 or −1075: 2·eʳ · 2¹⁰²³ or ½·eʳ · 2⁻¹⁰⁷⁴)

The table lookup is a SIMD gather; `math.ldexp` would be a library call again. Accuracy:
within 2 ulp of NumPy's `exp` over the float64 range (tested in tests/reference/test_fast_exp.py);
float32 values are computed in float64 and round once. Special values as `math.exp`:
exp(−inf) = 0, exp(+inf) = inf, exp(nan) = nan, 0 below about −745.1 and inf above
about 709.8.

Editing this file: Numba's on-disk cache checks only the file a kernel is defined in, so
kernels in other files that use `exp` (the fused recurrent kernels) would keep loading
their old machine code. Delete their cached files after an edit
(``find . -name '*.nb[ic]' -delete``, or a fresh ``NUMBA_CACHE_DIR``).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import njit

__all__ = ["exp"]

_LOG2E = 1.4426950408889634  # 1 / ln 2
_LN2_HI = 6.93147180369123816490e-01  # ln 2 = _LN2_HI + _LN2_LO; _LN2_HI has 32 bits only,
_LN2_LO = 1.90821492927058770002e-10  # so n·_LN2_HI is exact for |n| < 2²¹

#: 2ᵏ for k = −1074 … 1023 (index k + 1074): every power of two a float64 can hold.
_MIN_N, _MAX_N = -1074, 1023
_POW2 = np.array([math.ldexp(1.0, k) for k in range(_MIN_N, _MAX_N + 1)])


@njit(inline="always")
def exp(x: float) -> float:
    """eˣ in float64, no library call (see the module docstring)."""
    finite = x if x == x else 0.0  # a nan would make a garbage table index: look up 0 instead
    clamped = min(max(finite, -746.0), 710.0)  # beyond these eˣ is 0 or inf anyway
    n = min(max(math.floor(clamped * _LOG2E + 0.5), _MIN_N - 1.0), _MAX_N + 1.0)
    r = (clamped - n * _LN2_HI) - n * _LN2_LO
    q = 1.0 / 479001600.0  # eʳ = 1 + r + r²·q(r), q = Σ_{k≥2} r^(k−2)/k!, Horner from 1/12!
    q = q * r + 1.0 / 39916800.0
    q = q * r + 1.0 / 3628800.0
    q = q * r + 1.0 / 362880.0
    q = q * r + 1.0 / 40320.0
    q = q * r + 1.0 / 5040.0
    q = q * r + 1.0 / 720.0
    q = q * r + 1.0 / 120.0
    q = q * r + 1.0 / 24.0
    q = q * r + 1.0 / 6.0
    q = q * r + 0.5
    p = 1.0 + (r + r * r * q)  # the 1 added last: the small terms keep their bits
    # 2ⁿ for n = 1024 or −1075 is not a float64: move one factor of 2 into p (exact).
    p = p * 2.0 if n > _MAX_N else (p * 0.5 if n < _MIN_N else p)
    k = min(max(int(n), _MIN_N), _MAX_N)
    value = p * _POW2[k - _MIN_N]
    return value if x == x else x
