"""Hidden checks of task 1.2: Scalar forward."""

from __future__ import annotations

from ..base import CheckContext, check
from ..probe import Probe, Ref, Tol
from .common import MT, backward_after_forward


SF = "minitorch.scalar_functions"
TOL = Tol(rtol=1e-9, atol=1e-12)

#: (function, inputs): ordinary inputs, away from relu's kink and log(≤ 0).
FORWARDS: list[tuple[str, tuple[float, ...]]] = [
    ("Add", (2.0, 3.0)),
    ("Add", (-1.5, 0.25)),
    ("Mul", (2.0, -3.0)),
    ("Mul", (0.5, 8.0)),
    ("Neg", (4.0,)),
    ("Neg", (-0.5,)),
    ("Inv", (4.0,)),
    ("Inv", (-0.2,)),
    ("Log", (2.0,)),
    ("Log", (0.25,)),
    ("Exp", (1.5,)),
    ("Exp", (-2.0,)),
    ("Sigmoid", (-2.0,)),
    ("Sigmoid", (0.75,)),
    ("ReLU", (-1.0,)),
    ("ReLU", (2.5,)),
    ("LT", (1.0, 2.0)),
    ("LT", (2.0, 1.0)),
    ("LT", (3.0, 3.0)),
    ("EQ", (2.0, 2.0)),
    ("EQ", (2.0, -2.0)),
]
#: (operator, as written): unary ones on x, binary ones on x and y.
UNARY = [
    ("neg", "-x"),
    ("log", "x.log()"),
    ("exp", "x.exp()"),
    ("sigmoid", "x.sigmoid()"),
    ("relu", "x.relu()"),
]
BINARY = [
    ("add", "x + y"),
    ("sub", "x - y"),
    ("mul", "x * y"),
    ("truediv", "x / y"),
    ("lt", "x < y"),
    ("gt", "x > y"),
    ("eq", "x == y"),
]
XS = [1.0, 2.0, 0.5, -1.5, 3.0, -4.0, 10.0]
YS = [(1.0, 2.0), (2.0, 1.0), (3.0, 3.0), (-1.5, 0.5), (0.25, -4.0), (7.0, 2.5)]
#: What Scalar(…) results are compared by: the value, the type, whether it needs a derivative.
RESULT = ["data", "type", "requires_grad"]


def _scalar(p: Probe, v: float) -> Ref:
    return p.call(f"{MT}.Scalar", v)


def _result(p: Probe, out: Ref) -> Probe:
    return p.returns(p.attr(out, "data"), out, p.attr(out, "requires_grad"), names=RESULT)


def _unary(p: Probe, name: str, x: Ref) -> Ref:
    return p.op("neg", x) if name == "neg" else p.method(x, name)


@check("1.2", "function_forwards", kind="equivalence")
def function_forwards(ctx: CheckContext) -> None:
    """Each ScalarFunction's forward(ctx, …) on plain floats (through `_forward`, which
    accepts an int and rejects a bool, as `apply` does)."""
    probes = []
    for cls, args in FORWARDS:
        p = Probe(f"{cls}.forward(ctx, {', '.join(map(repr, args))})")
        probes.append(
            p.returns(p.call(p.attr(p.get(f"{SF}.{cls}"), "_forward"), p.call(f"{MT}.Context"), *args))
        )
    ctx.equivalent(probes, TOL)


@check("1.2", "forwards_save_for_backward", kind="equivalence")
def forwards_save_for_backward(ctx: CheckContext) -> None:
    """Each ScalarFunction's forward saves what its backward needs: the backward's
    derivatives after the student's forward, against the reference."""
    ctx.equivalent(backward_after_forward(), TOL)


@check("1.2", "scalar_operators", kind="equivalence")
def scalar_operators(ctx: CheckContext) -> None:
    """Scalar operators and methods on Scalars give Scalars with the right .data; x + y and
    x * y record their function and the inputs x, y in order."""
    probes = []
    for name, shown in UNARY:
        for v in XS:
            if name == "log" and v <= 0:
                continue
            p = Probe(f"{shown} for x = Scalar({v})")
            probes.append(_result(p, _unary(p, name, _scalar(p, v))))
    for name, shown in BINARY:
        for a, b in YS:
            p = Probe(f"{shown} for x = Scalar({a}), y = Scalar({b})")
            probes.append(_result(p, p.op(name, _scalar(p, a), _scalar(p, b))))
    for name, fn in (("mul", "Mul"), ("add", "Add")):
        p = Probe(f"z = x {'*' if name == 'mul' else '+'} y for x = Scalar(2.0), y = Scalar(3.0): z.history")
        x, y = _scalar(p, 2.0), _scalar(p, 3.0)
        h = p.attr(p.op(name, x, y), "history")
        same = p.op(
            "eq", p.project(p.attr(h, "inputs"), ["unique_id"]), p.project(p.const([x, y]), ["unique_id"])
        )
        probes.append(
            p.returns(
                p.attr(p.attr(h, "last_fn"), "__name__"),
                same,
                names=[
                    "z.history.last_fn.__name__",
                    f"z.history.inputs are (x, y) (made by {fn}.apply(x, y))",
                ],
            )
        )
    ctx.equivalent(probes, TOL)


@check("1.2", "python_numbers", kind="equivalence")
def python_numbers(ctx: CheckContext) -> None:
    """A Python number on either side of an operator (x + 2.5, 2 * x, 4.0 / x …) gives the
    right Scalar, and the number becomes a constant: it needs no derivative."""
    probes = []
    for name, shown in BINARY:
        for a, b in YS[:4] + [(4.0, 2)]:
            for side in ("right", "left"):
                text = (
                    shown.replace("y", repr(b))
                    if side == "right"
                    else shown.replace("x", "#").replace("y", "x").replace("#", repr(b))
                )
                p = Probe(f"{text} for x = Scalar({a}) (a Python number on the {side})")
                probes.append(_result(p, _mixed(p, name, a, b, side)))
                q = Probe(
                    f"{text} for x = Scalar({a}): the inputs of its history that need a derivative (the number is a constant)"
                )
                needs = q.project(
                    q.attr(q.attr(_mixed(q, name, a, b, side), "history"), "inputs"), ["requires_grad"]
                )
                probes.append(q.returns(q.method(needs, "count", True), names=["how many"]))
    ctx.equivalent(probes, TOL)


def _mixed(p: Probe, name: str, a: float, b: float, side: str) -> Ref:
    """x `name` b (the number on the right) or b `name` x (on the left), x = Scalar(a)."""
    x = _scalar(p, a)
    return p.op(name, x, b) if side == "right" else p.op(name, b, x)


@check("1.2", "forward_edge_cases", kind="equivalence")
def forward_edge_cases(ctx: CheckContext) -> None:
    """Scalar(±1000).sigmoid() is 1.0 / 0.0 and Scalar(0.0).log() is −inf (no exception)."""
    probes = []
    for v, method in ((1000.0, "sigmoid"), (-1000.0, "sigmoid"), (0.0, "log")):
        p = Probe(f"Scalar({v}).{method}()")
        probes.append(p.returns(p.attr(p.method(_scalar(p, v), method), "data"), names=["data"]))
    ctx.equivalent(probes, TOL)
