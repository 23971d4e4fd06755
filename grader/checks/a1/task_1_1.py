"""Hidden checks of task 1.1: Central difference."""

from __future__ import annotations

from typing import Any

from ..base import CheckContext, check
from ..probe import Probe, Tol
from .common import MT


@check("1.1", "central_difference", kind="equivalence")
def central_difference(ctx: CheckContext) -> None:
    """central_difference on operators of one and two arguments, several ε (a one-sided
    difference is caught by the large ε)."""
    cases: list[tuple[str, list[float], int, float | None]] = [
        ("id", [2.0], 0, None),
        ("mul", [2.0, 3.0], 0, None),
        ("mul", [2.0, 3.0], 1, None),
        ("exp", [0.5], 0, None),
        ("sigmoid", [1.5], 0, 0.1),
        ("exp", [1.0], 0, 0.1),
        ("mul", [4.0, -2.0], 1, 0.5),
        ("log", [2.0], 0, 0.01),
        ("inv", [3.0], 0, 0.25),
        ("add", [1.0, 5.0], 1, 1e-3),
        ("sigmoid", [-2.0], 0, 1e-4),
    ]
    probes = []
    for fn, vals, arg, eps in cases:
        kwargs: dict[str, Any] = {"arg": arg}
        if eps is not None:
            kwargs["epsilon"] = eps
        shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        p = Probe(f"central_difference(operators.{fn}, {', '.join(map(repr, vals))}, {shown})")
        p.returns(p.call(f"{MT}.central_difference", p.get(f"{MT}.operators.{fn}"), *vals, **kwargs))
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-6, atol=1e-9))
