r"""The exact GELU as one fused operation, on SIMD lanes — the reference's fast path for
`F.gelu(x)` (approximate="none").

    gelu(x)  = x · Φ(x) = x · ½ (1 + erf(x / √2))                       [any shape]
    gelu'(x) = Φ(x) + x φ(x),   φ(x) = e^{−x²/2} / √(2π)

The plain path (`nn.activation.Gelu`) maps `operators.gelu` over the tensor and zips
`operators.gelu_back` backward; both call `math.erf`, which in a Numba loop is a call into
the C library for each value, as `math.exp` is (`fast_exp` says why that is slow). In the
tiny GPT's step those two loops over 1024 × 256 values took 4.5 of 31 ms (Intel Xeon,
Emerald Rapids, 2 cores). Here `erf` is plain arithmetic in two pieces, chosen per value
with selects rather than branches, so LLVM runs the loop on vector lanes:

    |x| < 1:      erf(x) = x · Σ_{n<22} cₙ x²ⁿ,   cₙ = (2/√π) (−1)ⁿ / (n! (2n + 1))
                  (the Taylor series; its last term is below 10⁻²⁰ for |x| < 1)
    1 ≤ |x| < 6:  erf(x) = ±(1 − e^{−x²} · erfcx(|x|)),   erfcx(x) = e^{x²} erfc(x)
                  erfcx is smooth and slowly varying (0.43 at 1, 0.09 at 6): a polynomial
                  of degree 31 in u = (2|x| − 7) / 5 ∈ [−1, 1], fitted at import
                  (`_fit_erfcx`); e^{−x²} is `fast_exp`
    |x| ≥ 6:      erf(x) = ±1 (erfc(6) ≈ 2·10⁻¹⁷ is below half an ulp of 1)

Accuracy: within 3 ulp of `math.erf` over the float64 range, 0.1 ulp on average, so the
GELU and its derivative are within a few ulp of the plain ones, not bit for bit (tested in
tests/reference/test_fused_gelu.py). erf(±0) = ±0, erf(±inf) = ±1, erf(nan) = nan. float32
tensors are computed in float64 and rounded once, as the plain kernels do.

The kernels are compiled with ``fastmath={"contract"}`` (each multiply and add one FMA
instruction: fewer instructions, one rounding instead of two) and loop over the values in
parallel; small tensors run on one thread.

It replaces `F.gelu` (`minitorch/nn/activation.py`, through `fast_paths`) only for the exact
GELU of float32/float64 tensors on a CPU backend; the tanh form, the CUDA backend and
everything else take the plain path. It is `reference_only` in the A6 manifest.

Editing `fast_exp`: Numba's cache checks only the file a kernel is defined in, so the kernels
here, which inline it, keep their old machine code until their ``*.nbi/*.nbc`` files are
deleted (an edit of this file is seen).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import prange

from ..autodiff import Context
from ..fast_paths import replaces
from ..function import Function
from ..jit import njit, serial_and_parallel
from ..tensor import Tensor
from .fast_exp import exp as fast_exp

__all__ = ["erf", "gelu"]

#: Below this many values a kernel runs on the calling thread only.
PARALLEL_MIN = 1 << 14
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

_TWO_OVER_SQRT_PI = 1.1283791670955126  # 2 / √π
_SQRT1_2 = 0.7071067811865476  # 1 / √2, as `operators` has it
_GELU_PDF = 0.3989422804014327  # 1 / √(2π)

#: Where the pieces meet.
_SMALL, _LARGE = 1.0, 6.0

#: cₙ of the Taylor series of erf(x) / x in x², each rounded once from its exact fraction.
_TAYLOR = np.array(
    [_TWO_OVER_SQRT_PI * float(Fraction((-1) ** n, math.factorial(n) * (2 * n + 1))) for n in range(22)]
)

#: u = _SCALE·|x| − _SHIFT maps [_SMALL, _LARGE] onto [−1, 1]: a multiply-add, no division
#: (Numba checks every division for a zero divisor, and that check stops LLVM vectorizing).
_SCALE = 2.0 / (_LARGE - _SMALL)
_SHIFT = (_LARGE + _SMALL) / (_LARGE - _SMALL)


def _fit_erfcx(degree: int = 31, nodes: int = 800) -> np.ndarray:
    """erfcx(x) = e^{x²} erfc(x) on [_SMALL, _LARGE] as a polynomial in u = _SCALE·x − _SHIFT,
    coefficients from degree 0 up: a least-squares Chebyshev fit at `nodes` Chebyshev points,
    turned into powers of u (well conditioned here: no coefficient is above 0.16, so summing
    the powers loses nothing). Its last coefficients are ~10⁻¹⁷: the samples' rounding, not the
    degree, limits the fit."""
    u = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    x = (u + _SHIFT) / _SCALE
    samples = np.array([math.exp(v * v) * math.erfc(v) for v in x])
    chebyshev = np.polynomial.chebyshev.chebfit(u, samples, degree)
    return np.polynomial.chebyshev.cheb2poly(chebyshev)


_ERFCX = _fit_erfcx()  # 32 coefficients

# ## Short chains
#
# Horner's rule p = (…(c₃₁ u + c₃₀) u + …) u + c₀ is one chain of 31 multiply-adds, each
# waiting ~4 cycles for the one before: the loop would wait, not compute (measured: no faster
# than the C library's erf). Split by the remainder of the power, p(u) = Σ_{r<4} uʳ Pᵣ(u⁴),
# the four Pᵣ are four independent chains of 7 that the CPU runs side by side (and the
# Taylor series likewise in two, by even and odd powers of x²).


@njit(inline="always")
def _every(step: int, coefficients: np.ndarray, first: int, w: float) -> float:
    """Σ_j coefficients[first + step·j] · wʲ over the j inside the array, by Horner in w
    (`step` and `first` are constants where it is inlined: LLVM unrolls the loop)."""
    last = first + step * ((coefficients.size - 1 - first) // step)
    p = coefficients[last]
    for k in range(last - step, first - 1, -step):
        p = p * w + coefficients[k]
    return p


@njit(inline="always")
def erf(x: float) -> float:
    """erf(x) on SIMD lanes (see the module docstring)."""
    a = abs(x)
    z = a * a
    # |x| < 1: the Taylor series in z = x², by even and odd powers of z
    z2 = z * z
    small = a * (_every(2, _TAYLOR, 0, z2) + z * _every(2, _TAYLOR, 1, z2))
    # 1 ≤ |x| < 6: erfcx's polynomial in u, by powers of u modulo 4
    u = _SCALE * a - _SHIFT
    u2 = u * u
    u4 = u2 * u2
    p0 = _every(4, _ERFCX, 0, u4)
    p1 = _every(4, _ERFCX, 1, u4)
    p2 = _every(4, _ERFCX, 2, u4)
    p3 = _every(4, _ERFCX, 3, u4)
    tail = 1.0 - fast_exp(-z) * ((p0 + u * p1) + u2 * (p2 + u * p3))
    r = small if a < _SMALL else (tail if a < _LARGE else 1.0)
    return -r if x < 0.0 else (r if x > 0.0 else x)  # x's sign; ±0 and nan come back as they are


# ## The kernels (each compiled twice: serial and parallel)


def _forward(x: np.ndarray, y: np.ndarray) -> None:
    """y = x · ½ (1 + erf(x / √2)), value by value (flat, contiguous arrays)."""
    for i in prange(x.size):
        v = np.float64(x[i])
        y[i] = v * 0.5 * (1.0 + erf(v * _SQRT1_2))


def _backward(x: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> None:
    """dx = dy · (Φ(x) + x φ(x)), value by value (flat, contiguous arrays)."""
    for i in prange(x.size):
        v = np.float64(x[i])
        cdf = 0.5 * (1.0 + erf(v * _SQRT1_2))
        pdf = _GELU_PDF * fast_exp(-0.5 * v * v)
        dx[i] = np.float64(dy[i]) * (cdf + v * pdf)


_forward_serial, _forward_parallel = serial_and_parallel(_forward, fastmath={"contract"})
_backward_serial, _backward_parallel = serial_and_parallel(_backward, fastmath={"contract"})


def _flat(t: Tensor) -> np.ndarray:
    """`t`'s values as a flat C-contiguous array (a copy only when `t` is not contiguous)."""
    return np.ascontiguousarray(t._tensor.numpy_view()).reshape(-1)


class GeluFunction(Function):
    """y = gelu(x), the exact GELU: one graph node, one kernel each way."""

    @staticmethod
    def forward(ctx: Context, x: Tensor) -> Tensor:
        xs = _flat(x)
        y = np.empty_like(xs)  # the kernel writes every element
        (_forward_parallel if xs.size >= PARALLEL_MIN else _forward_serial)(xs, y)
        ctx.save_for_backward(xs)
        return Tensor.make(y, tuple(x.shape), backend=x.backend)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> Tensor:
        (xs,) = ctx.saved_values
        dy = _flat(grad_output)
        dx = np.empty_like(xs)
        (_backward_parallel if xs.size >= PARALLEL_MIN else _backward_serial)(xs, dy, dx)
        return Tensor.make(dx, tuple(grad_output.shape), backend=grad_output.backend)


@replaces("gelu")
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """The exact GELU of a float32/float64 tensor on a CPU backend as ONE graph node;
    `NotImplemented` (the plain `F.gelu`, with its checks and errors) for anything else."""
    if (
        approximate != "none"
        or not isinstance(input, Tensor)
        or input.backend.cuda
        or input.dtype not in FLOATS
        or input._tensor.size == 0
    ):
        return NotImplemented
    return GeluFunction.apply(input)
