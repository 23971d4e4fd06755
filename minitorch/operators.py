"""Stage A0: the scalar operators everything else is built from.

Every function here takes and returns plain Python floats. Later stages reuse them
unchanged: the tensor backends map them over every element, and the fast backends compile
them with Numba, so they must stay simple (no NumPy, no containers, no exceptions).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

# ## Task 0.1: the operators


def mul(x: float, y: float) -> float:
    """Product: f(x, y) = x · y."""
    # BEGIN SOLUTION 0.1
    return x * y
    # END SOLUTION 0.1


def id(x: float) -> float:
    """Identity: f(x) = x."""
    # BEGIN SOLUTION 0.1
    return x
    # END SOLUTION 0.1


def add(x: float, y: float) -> float:
    """Sum: f(x, y) = x + y."""
    # BEGIN SOLUTION 0.1
    return x + y
    # END SOLUTION 0.1


def neg(x: float) -> float:
    """Negation: f(x) = −x."""
    # BEGIN SOLUTION 0.1
    return -x
    # END SOLUTION 0.1


def lt(x: float, y: float) -> float:
    """Less than: 1.0 if x < y else 0.0."""
    # BEGIN SOLUTION 0.1
    return 1.0 if x < y else 0.0
    # END SOLUTION 0.1


def eq(x: float, y: float) -> float:
    """Equality: 1.0 if x == y else 0.0."""
    # BEGIN SOLUTION 0.1
    return 1.0 if x == y else 0.0
    # END SOLUTION 0.1


def max(x: float, y: float) -> float:
    """Maximum: x if x > y else y."""
    # BEGIN SOLUTION 0.1
    return x if x > y else y
    # END SOLUTION 0.1


def is_close(x: float, y: float) -> float:
    """Closeness: 1.0 if |x − y| < 1e-2 else 0.0 (a loose test for unit tests)."""
    # BEGIN SOLUTION 0.1
    return 1.0 if abs(x - y) < 1e-2 else 0.0
    # END SOLUTION 0.1


def sigmoid(x: float) -> float:
    r"""Logistic sigmoid σ(x) = 1 / (1 + e^{−x}), computed stably.

    For x ≥ 0 use 1 / (1 + e^{−x}); for x < 0 use the equal form e^{x} / (1 + e^{x}).
    Either way the exponent is ≤ 0, so e^{…} never overflows (σ(−1000) = 0, not an error).
    """
    # BEGIN SOLUTION 0.1
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
    # END SOLUTION 0.1


def relu(x: float) -> float:
    """Rectified linear unit: relu(x) = max(0, x)."""
    # BEGIN SOLUTION 0.1
    return x if x > 0.0 else 0.0
    # END SOLUTION 0.1


def log(x: float) -> float:
    """Natural logarithm ln(x); like PyTorch, ln(0) = −inf and ln(x < 0) = nan (no exception)."""
    # BEGIN SOLUTION 0.1
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan
    # END SOLUTION 0.1


def exp(x: float) -> float:
    """Exponential e^x; like PyTorch, it overflows to inf rather than raising."""
    # BEGIN SOLUTION 0.1
    if x > 709.782712893384:  # ln(largest float64): beyond it math.exp would raise
        return math.inf
    return math.exp(x)
    # END SOLUTION 0.1


def inv(x: float) -> float:
    """Reciprocal 1 / x; like PyTorch, 1 / ±0 = ±inf rather than an exception."""
    # BEGIN SOLUTION 0.1
    if x == 0.0:
        return math.copysign(math.inf, x)
    return 1.0 / x
    # END SOLUTION 0.1


def log_back(x: float, d: float) -> float:
    r"""Backward of log: d · ∂ln(x)/∂x = d / x."""
    # BEGIN SOLUTION 0.1
    return d / x
    # END SOLUTION 0.1


def inv_back(x: float, d: float) -> float:
    r"""Backward of inv: d · ∂(1/x)/∂x = −d / x²."""
    # BEGIN SOLUTION 0.1
    return -d / (x * x)
    # END SOLUTION 0.1


def relu_back(x: float, d: float) -> float:
    r"""Backward of relu: d if x > 0 else 0 (the subgradient 0 is used at x = 0)."""
    # BEGIN SOLUTION 0.1
    return d if x > 0.0 else 0.0
    # END SOLUTION 0.1


def sigmoid_back(x: float, d: float) -> float:
    r"""Backward of sigmoid: d · σ(x) · (1 − σ(x))."""
    s = sigmoid(x)
    return d * s * (1.0 - s)


def tanh(x: float) -> float:
    """Hyperbolic tangent, tanh(x) = (eˣ − e⁻ˣ) / (eˣ + e⁻ˣ) = 2σ(2x) − 1 (math.tanh: stable for large |x|)."""
    return math.tanh(x)


def tanh_back(x: float, d: float) -> float:
    r"""Backward of tanh: d · (1 − tanh²(x))."""
    t = math.tanh(x)
    return d * (1.0 - t * t)


def sub(x: float, y: float) -> float:
    """Difference: f(x, y) = x − y."""
    return x - y


def div(x: float, y: float) -> float:
    """Quotient: f(x, y) = x / y."""
    return x / y


def pow(x: float, y: float) -> float:
    """Power x^y with PyTorch's conventions: nan for a negative base and a non-integer
    exponent, inf for 0 to a negative power (no exceptions, so kernels can compile it)."""
    if x < 0.0 and y != math.floor(y):
        return math.nan
    if x == 0.0 and y < 0.0:
        return math.inf
    return math.pow(x, y)


def gt(x: float, y: float) -> float:
    """Greater than: 1.0 if x > y else 0.0."""
    return 1.0 if x > y else 0.0


# ## Task 0.2: higher-order functions


def map(fn: Callable[[float], float]) -> Callable[[Iterable[float]], list[float]]:
    """Higher-order map: map(fn)([x1, x2, …]) = [fn(x1), fn(x2), …].

    Args:
        fn: a function from one value to one value.

    Returns:
        A function that takes a list and returns the list of fn applied to each element.
    """

    # BEGIN SOLUTION 0.2
    def apply(ls: Iterable[float]) -> list[float]:
        return [fn(x) for x in ls]

    return apply
    # END SOLUTION 0.2


def zipWith(fn: Callable[[float, float], float]) -> Callable[[Iterable[float], Iterable[float]], list[float]]:
    """Higher-order zip: zipWith(fn)([x1, x2, …], [y1, y2, …]) = [fn(x1, y1), fn(x2, y2), …].

    The two lists must have the same length (a ValueError otherwise).
    """

    # BEGIN SOLUTION 0.2
    def apply(ls1: Iterable[float], ls2: Iterable[float]) -> list[float]:
        xs, ys = list(ls1), list(ls2)
        if len(xs) != len(ys):
            raise ValueError(f"zipWith: lists of different lengths {len(xs)} and {len(ys)}")
        return [fn(x, y) for x, y in zip(xs, ys)]

    return apply
    # END SOLUTION 0.2


def reduce(fn: Callable[[float, float], float], start: float) -> Callable[[Iterable[float]], float]:
    r"""Higher-order reduce: reduce(fn, x0)([x1, …, xn]) = fn(xn, fn(x_{n−1}, … fn(x1, x0))).

    Args:
        fn: combines the next element with the running value.
        start: the value for the empty list.
    """

    # BEGIN SOLUTION 0.2
    def apply(ls: Iterable[float]) -> float:
        acc = start
        for x in ls:
            acc = fn(x, acc)
        return acc

    return apply
    # END SOLUTION 0.2


def negList(ls: Iterable[float]) -> list[float]:
    """Negate every element of a list, using `map`."""
    # BEGIN SOLUTION 0.2
    return map(neg)(ls)
    # END SOLUTION 0.2


def addLists(ls1: Iterable[float], ls2: Iterable[float]) -> list[float]:
    """Element-wise sum of two lists, using `zipWith`."""
    # BEGIN SOLUTION 0.2
    return zipWith(add)(ls1, ls2)
    # END SOLUTION 0.2


def sum(ls: Iterable[float]) -> float:
    """Sum of a list (0 for the empty list), using `reduce`."""
    # BEGIN SOLUTION 0.2
    return reduce(add, 0.0)(ls)
    # END SOLUTION 0.2


def prod(ls: Iterable[float]) -> float:
    """Product of a list (1 for the empty list), using `reduce`."""
    # BEGIN SOLUTION 0.2
    return reduce(mul, 1.0)(ls)
    # END SOLUTION 0.2


# ## Library (stage A6): GELU, the activation of BERT and GPT
#
# gelu(x) = x · Φ(x), Φ the standard normal CDF: Φ(x) = ½ (1 + erf(x / √2)). The "tanh"
# approximation (Hendrycks & Gimpel, 2016) replaces Φ(x) by ½ (1 + tanh(√(2/π) (x + 0.044715 x³))).
# The formulas are PyTorch's (aten's GeluKernel), so values agree to the last bits.

_SQRT1_2 = 0.7071067811865476  # 1 / √2
_GELU_PDF = 0.3989422804014327  # 1 / √(2π)
_GELU_BETA = 0.7978845608028654  # √(2/π)
_GELU_KAPPA = 0.044715


def gelu(x: float) -> float:
    r"""GELU: x · Φ(x) = x · ½ (1 + erf(x / √2))."""
    return x * 0.5 * (1.0 + math.erf(x * _SQRT1_2))


def gelu_back(x: float, d: float) -> float:
    r"""Backward of gelu: d · (Φ(x) + x φ(x)), φ(x) = e^{−x²/2} / √(2π) the normal density."""
    cdf = 0.5 * (1.0 + math.erf(x * _SQRT1_2))
    pdf = _GELU_PDF * math.exp(-0.5 * x * x)
    return d * (cdf + x * pdf)


def gelu_tanh(x: float) -> float:
    r"""GELU, tanh approximation: ½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))."""
    inner = _GELU_BETA * (x + _GELU_KAPPA * x * x * x)
    return 0.5 * x * (1.0 + math.tanh(inner))


def gelu_tanh_back(x: float, d: float) -> float:
    r"""Backward of gelu_tanh: d · (½ (1 + t) + ½ x (1 − t²) √(2/π) (1 + 3 · 0.044715 x²)), t = tanh(inner)."""
    t = math.tanh(_GELU_BETA * (x + _GELU_KAPPA * x * x * x))
    left = 0.5 * (1.0 + t)
    right = 0.5 * x * (1.0 - t * t) * _GELU_BETA * (1.0 + 3.0 * _GELU_KAPPA * x * x)
    return d * (left + right)
