"""What the checks of several A1 tasks share: module names, and each backward run after its
forward (1.3's probes, which 1.2's `forwards_save_for_backward` reads too).
"""

from __future__ import annotations

from ..probe import Probe


MT = "minitorch"

SF = "minitorch.scalar_functions"

#: (function, inputs): ordinary inputs, away from relu's kink and log(≤ 0).
BACKWARDS: list[tuple[str, tuple[float, ...]]] = [
    ("Add", (2.0, 3.0)),
    ("Mul", (2.0, -3.0)),
    ("Neg", (4.0,)),
    ("Inv", (4.0,)),
    ("Inv", (-0.5,)),
    ("Log", (2.0,)),
    ("Log", (0.25,)),
    ("Exp", (1.5,)),
    ("Exp", (-1.0,)),
    ("Sigmoid", (-2.0,)),
    ("Sigmoid", (0.5,)),
    ("ReLU", (-1.0,)),
    ("ReLU", (2.5,)),
    ("LT", (1.0, 2.0)),
    ("EQ", (2.0, 2.0)),
]


def backward_after_forward() -> list[Probe]:
    """Each ScalarFunction's backward(ctx, d) after its forward on the same ctx, for two d
    (through `_backward`: one derivative per input)."""
    probes = []
    for cls, args in BACKWARDS:
        for d in (1.0, -2.5):
            p = Probe(
                f"{cls}.backward(ctx, d_output={d}) after {cls}.forward(ctx, {', '.join(map(repr, args))})"
            )
            c = p.call(f"{MT}.Context")
            fn = p.get(f"{SF}.{cls}")
            p.call(p.attr(fn, "forward"), c, *args)
            probes.append(p.returns(p.call(p.attr(fn, "_backward"), c, d)))
    return probes
