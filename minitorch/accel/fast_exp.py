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
    eˣ = (eʳ · 2^h) · 2^(n−h)              h = ⌊n/2⌋: two factors that are normal float64
                                           numbers even when 2ⁿ is not (n = 1024, or
                                           n < −1022 where eˣ is subnormal)

Two things keep every step on SIMD lanes, on AVX2 as on AVX-512:

* n stays a float64 (`np.floor`). `math.floor` returns an int, and AVX2 has no vector
  instruction that converts float64 to int64: LLVM converts one lane at a time (measured:
  the whole loop 2.5× slower on AVX2 code).
* 2ᵐ is built from its bits: a float64 with exponent field m + 1023 and a zero mantissa.
  Adding 1.5·2⁵² to m + 1023 puts that integer in the low bits of the sum (the float64
  spacing there is 1); its bits shifted left by 52 are exactly 2ᵐ's bits. An add, a shift
  and two reinterpretations (`_bits_of`, `_float_of`: no instruction at all) instead of a
  table lookup, which is a slow gather on AVX-512 and scalar loads on AVX2.

Accuracy: within 2 ulp of NumPy's `exp` over the float64 range (tested in
tests/reference/test_fast_exp.py); float32 values are computed in float64 and round once.
Special values as `math.exp`: exp(−inf) = 0, exp(+inf) = inf, exp(nan) = nan, 0 below
about −745.1 and inf above about 709.8.

Editing this file: Numba's on-disk cache checks only the file a kernel is defined in, so
kernels in other files that inline `exp` (the fused recurrent kernels) would keep loading
their old machine code. Delete their cached files after an edit
(``find . -name '*.nb[ic]' -delete``, or a fresh ``NUMBA_CACHE_DIR``).
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import intrinsic

from .. import operators
from ..fast_paths import register_scalar_form
from ..jit import njit

__all__ = ["exp"]

_LOG2E = 1.4426950408889634  # 1 / ln 2
_LN2_HI = 6.93147180369123816490e-01  # ln 2 = _LN2_HI + _LN2_LO; _LN2_HI has 32 bits only,
_LN2_LO = 1.90821492927058770002e-10  # so n·_LN2_HI is exact for |n| < 2²¹
_MIN_N, _MAX_N = -1075.0, 1024.0  # 2ⁿ beyond these makes eʳ·2ⁿ round to 0 or overflow
_SHIFT = 6755399441055744.0  # 1.5·2⁵²: m + _SHIFT holds the integer m in its low bits


@intrinsic
def _bits_of(typingctx, value):  # type: ignore[no-untyped-def]
    """The 64 bits of a float64, as an int64 (LLVM's bitcast: no instruction is emitted)."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, bits):  # type: ignore[no-untyped-def]
    """The float64 whose 64 bits are those of an int64."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@njit(inline="always")
def _pow2(m: float) -> float:
    """2ᵐ for an integer-valued float64 m in [−1022, 1023]: exponent field m + 1023."""
    return _float_of(_bits_of(m + (1023.0 + _SHIFT)) << 52)


@njit(inline="always")
def exp(x: float) -> float:
    """eˣ in float64, no library call (see the module docstring)."""
    finite = x if x == x else 0.0  # a nan would make garbage bits: compute e⁰ instead
    clamped = min(max(finite, -746.0), 710.0)  # beyond these eˣ is 0 or inf anyway
    n = min(max(np.floor(clamped * _LOG2E + 0.5), _MIN_N), _MAX_N)
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
    h = np.floor(n * 0.5)  # |h|, |n − h| ≤ 538: both powers of two are normal numbers
    value = (p * _pow2(h)) * _pow2(n - h)  # the first product is exact: one rounding
    return value if x == x else x


# The tuned backend's maps run this form of `operators.exp` (`fast_paths.scalar_form`): a loop
# that calls the C library's `exp` cannot be vectorised.
register_scalar_form(operators.exp, exp)
