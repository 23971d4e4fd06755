"""Hidden checks of task 2.4 (tensor backward): one check per Function's backward, and
gradient checks of composite expressions.

Each ``backward_<function>`` check calls ``minitorch.tensor_functions.<Function>.apply``
itself — no operator or method of `Tensor` in between, so no other Function's backward
runs — then ``out.backward(g)`` with a random upstream gradient g, and compares the
input gradients with the reference's: on several shapes, a permuted (non-contiguous)
layout and, for Add and Mul, broadcast operands. So one wrong backward costs its own
share of 2.4 and nothing else (before, one check held all thirteen: any one wrong
backward zeroed the task).

``tensor_gradcheck`` then differentiates composite expressions numerically (central
differences of the student's own forward) against their backward.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..base import CheckContext, check
from ..probe import Probe, Ref
from .backward_probes import BACKWARDS, TOL


def _register(name: str, function: str, make: Callable[[CheckContext, str], list[Probe]]) -> None:
    def run(ctx: CheckContext) -> None:
        ctx.equivalent(make(ctx, function), TOL)

    run.__doc__ = (
        f"{function}.backward alone: {function}.apply(...).backward(g) with a random g, "
        "against the reference's gradients (several shapes, a permuted layout)."
    )
    check("2.4", name, kind="equivalence")(run)


for _name, (_function, _make) in BACKWARDS.items():
    _register(_name, _function, _make)


Build = Callable[[Probe, list[Ref]], Ref]
GRADCHECK: list[tuple[str, Build, list[tuple[int, ...]], bool]] = [
    ("(a * b).sum(1)", lambda p, t: p.method(p.op("mul", t[0], t[1]), "sum", 1), [(2, 3), (2, 3)], False),
    (
        "(a @ b).sigmoid() * c",
        lambda p, t: p.op("mul", p.method(p.op("matmul", t[0], t[1]), "sigmoid"), t[2]),
        [(2, 3), (3, 2), (2,)],
        False,
    ),
    (
        "(a * a + 1.0).log() - a.exp() / (b + 3.0)",
        lambda p, t: p.op(
            "sub",
            p.method(p.op("add", p.op("mul", t[0], t[0]), 1.0), "log"),
            p.op("truediv", p.method(t[0], "exp"), p.op("add", t[1], 3.0)),
        ),
        [(3, 2), (2,)],
        False,
    ),
    (
        "a.permute(1, 0) * b",
        lambda p, t: p.op("mul", p.method(t[0], "permute", 1, 0), t[1]),
        [(2, 3), (3, 1)],
        False,
    ),
    (
        "(a.tanh() * b).mean(0) + a.sum(0)",
        lambda p, t: p.op(
            "add", p.method(p.op("mul", p.method(t[0], "tanh"), t[1]), "mean", 0), p.method(t[0], "sum", 0)
        ),
        [(3, 2), (1, 2)],
        False,
    ),
    (
        "(a - b).relu() ** 2 + (a < b) * a",
        lambda p, t: p.op(
            "add",
            p.op("pow", p.method(p.op("sub", t[0], t[1]), "relu"), 2),
            p.op("mul", p.op("lt", t[0], t[1]), t[0]),
        ),
        [(2, 2), (2, 2)],
        False,
    ),
    (
        "1.0 / a + a ** 3",
        lambda p, t: p.op("add", p.op("truediv", 1.0, t[0]), p.op("pow", t[0], 3)),
        [(2, 2)],
        True,
    ),
]


@check("2.4", "tensor_gradcheck", kind="gradient")
def tensor_gradcheck(ctx: CheckContext) -> None:
    """Composite tensor expressions: backward against central differences of the
    student's own forward, with a random upstream gradient."""
    for label, build, shapes, positive in GRADCHECK:
        arrays = [ctx.rng.uniform(0.5, 1.5, s) if positive else ctx.rng.standard_normal(s) for s in shapes]
        if "relu" in label:  # keep away from the kink at a == b
            arrays[1] = arrays[0] + np.where(ctx.rng.random(shapes[1]) < 0.5, -0.5, 0.5)
        ctx.gradcheck(label, build, arrays, names=list("abc")[: len(arrays)])
