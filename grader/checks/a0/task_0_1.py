"""Hidden checks of task 0.1: Operators."""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..base import CheckContext, check
from ..probe import Probe, Tol
from .common import OPS, TOL


#: Ordinary inputs, small and simple first, so the first failure shown is the simplest.
XS = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.25, -7.5, 1e-3, 10.0, -30.0, 42.0]
BIG = [1e6, -1e6]
POSITIVE = [x for x in XS + BIG if x > 0] + [math.e]
NONZERO = [x for x in XS + BIG if x != 0]
PAIRS = [
    (0.0, 0.0),
    (1.0, 2.0),
    (2.0, 1.0),
    (-1.0, 1.0),
    (1.0, 1.0),
    (0.5, -0.25),
    (-3.0, -3.0),
    (3.0, -4.5),
    (-2.0, 7.0),
    (1e-3, 1e3),
    (10.0, 0.1),
    (1e6, -1e6),
]
#: is_close is 1.0 for |x − y| < 1e-2 (strictly: not at 0.01); eq compares exactly (0.1 + 0.2 ≠ 0.3).
NEAR = [(1.0, 1.005), (1.0, 1.02), (-2.0, -2.009), (0.1 + 0.2, 0.3), (0.0, 0.01)]
DS = [1.0, -2.0, 0.25]


def _call(fn: str, *args: float) -> Probe:
    p = Probe(f"operators.{fn}({', '.join(map(repr, args))})")
    return p.returns(p.call(f"{OPS}.{fn}", *args))


def _calls(fns: Sequence[str], inputs: Sequence[Any]) -> list[Probe]:
    return [_call(fn, *(x if isinstance(x, tuple) else (x,))) for fn in fns for x in inputs]


@check("0.1", "arithmetic", kind="equivalence")
def arithmetic(ctx: CheckContext) -> None:
    """mul, add, neg and id on ordinary numbers (floats in, floats out)."""
    ctx.equivalent(_calls(["mul", "add"], PAIRS) + _calls(["neg", "id"], XS + BIG), TOL)


@check("0.1", "comparisons", kind="equivalence")
def comparisons(ctx: CheckContext) -> None:
    """lt, eq, max and is_close: the comparisons return the floats 1.0 / 0.0, not bools."""
    ctx.equivalent(_calls(["lt", "eq", "max", "is_close"], PAIRS + NEAR), TOL)


@check("0.1", "relu_and_sigmoid", kind="equivalence")
def relu_and_sigmoid(ctx: CheckContext) -> None:
    """relu and sigmoid on ordinary numbers (|x| ≤ 100 for sigmoid)."""
    ctx.equivalent(_calls(["relu"], XS + BIG) + _calls(["sigmoid"], XS + [100.0, -100.0]), TOL)


@check("0.1", "exp_log_inv", kind="equivalence")
def exp_log_inv(ctx: CheckContext) -> None:
    """exp, log (natural) and inv on ordinary numbers: log of positives, inv of non-zeros
    (to 1e-12, as the public tests compare exp with math.exp)."""
    probes = _calls(["exp"], XS) + _calls(["log"], POSITIVE) + _calls(["inv"], NONZERO)
    ctx.equivalent(probes, Tol(rtol=1e-12, atol=1e-15))


@check("0.1", "backward_helpers", kind="equivalence")
def backward_helpers(ctx: CheckContext) -> None:
    """log_back, inv_back and relu_back (away from relu's kink) with several d."""
    probes = _calls(["log_back"], [(x, d) for x in POSITIVE[:6] for d in DS])
    probes += _calls(["inv_back"], [(x, d) for x in NONZERO[:8] for d in DS])
    probes += _calls(["relu_back"], [(x, d) for x in NONZERO[:8] for d in DS])
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("0.1", "sigmoid_large_inputs", kind="equivalence")
def sigmoid_large_inputs(ctx: CheckContext) -> None:
    """sigmoid(±1000) is 1.0 / 0.0 without an OverflowError (e^{-x} is never formed for x < 0)."""
    ctx.equivalent(_calls(["sigmoid"], [1000.0, -1000.0, 710.0, -710.0, 1e308, -1e308]), TOL)


@check("0.1", "exp_overflow", kind="equivalence")
def exp_overflow(ctx: CheckContext) -> None:
    """exp overflows to inf as in PyTorch (math.exp raises OverflowError above ≈ 709.78)."""
    ctx.equivalent(_calls(["exp"], [709.0, 710.0, 1000.0, 1e308, -1000.0, -1e308]), TOL)


@check("0.1", "log_of_zero_and_negatives", kind="equivalence")
def log_of_zero_and_negatives(ctx: CheckContext) -> None:
    """log(0) = −inf and log(x < 0) = nan as in PyTorch (math.log raises ValueError)."""
    ctx.equivalent(_calls(["log"], [0.0, -0.0, -1.0, -2.5, -1e-300]), TOL)


@check("0.1", "inv_of_zero", kind="equivalence")
def inv_of_zero(ctx: CheckContext) -> None:
    """inv(0.0) = inf and inv(-0.0) = −inf as in PyTorch (1 / 0.0 raises ZeroDivisionError)."""
    ctx.equivalent(_calls(["inv"], [0.0, -0.0]), TOL)


@check("0.1", "relu_back_at_zero", kind="equivalence")
def relu_back_at_zero(ctx: CheckContext) -> None:
    """relu_back(0, d) = 0: the subgradient at the kink is 0, as in PyTorch."""
    ctx.equivalent(_calls(["relu_back"], [(0.0, 5.0), (0.0, -1.0), (-0.0, 2.0)]), TOL)
