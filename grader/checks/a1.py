"""Hidden checks of stage A1, scalar autodiff: central difference (1.1) and the Scalar
forward (1.2) here; the backward and the chain rule (1.3) in `a1_backward`, topological
sort and backpropagation (1.4) in `a1_backprop`, on graphs from `a1_graphs`. Importing
this module registers all of them under stage "a1".

Task 1.2 is split into the ScalarFunction forwards, the Scalar operators, Python numbers
mixed in, and the edge cases; the operators are compared with the reference by value and
by the graph they record (``x * y`` records Mul with the inputs x, y, as the public tests
ask). The checks of 1.3 and 1.4 build their graphs with ``F.apply`` and never use the
operators, so a wrong operator costs 1.2 only.

A forward also saves in ``ctx`` what its backward needs, which only a backward can see:
`forwards_save_for_backward` runs each forward with the backward beside it. In the whole
tree that backward is the student's (1.3), so a wrong backward fails it too; the default
grade then runs it again after the reference's backward (`grader.one_charge`), and only a
forward that saves too little or the wrong value is charged for it — on 1.2, while 1.3's
backward checks, run again after the reference's forward, pass.
"""

from __future__ import annotations

from typing import Any

from . import a1_backprop, a1_backward  # noqa: F401 - registers the checks of 1.3 and 1.4
from .a1_backward import backward_after_forward
from .base import CheckContext, check
from .probe import Probe, Ref, Tol

MT = "minitorch"
SF = "minitorch.scalar_functions"
TOL = Tol(rtol=1e-9, atol=1e-12)

# ---- 1.1 central difference


@check("a1", "central_difference", kind="equivalence")
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


# ---- 1.2 Scalar forward

#: (function, inputs): ordinary inputs, away from relu's kink and log(≤ 0).
FORWARDS: list[tuple[str, tuple[float, ...]]] = [
    ("Add", (2.0, 3.0)), ("Add", (-1.5, 0.25)), ("Mul", (2.0, -3.0)), ("Mul", (0.5, 8.0)), ("Neg", (4.0,)), ("Neg", (-0.5,)),
    ("Inv", (4.0,)), ("Inv", (-0.2,)), ("Log", (2.0,)), ("Log", (0.25,)), ("Exp", (1.5,)), ("Exp", (-2.0,)),
    ("Sigmoid", (-2.0,)), ("Sigmoid", (0.75,)), ("ReLU", (-1.0,)), ("ReLU", (2.5,)),
    ("LT", (1.0, 2.0)), ("LT", (2.0, 1.0)), ("LT", (3.0, 3.0)), ("EQ", (2.0, 2.0)), ("EQ", (2.0, -2.0)),
]
#: (operator, as written): unary ones on x, binary ones on x and y.
UNARY = [("neg", "-x"), ("log", "x.log()"), ("exp", "x.exp()"), ("sigmoid", "x.sigmoid()"), ("relu", "x.relu()")]
BINARY = [("add", "x + y"), ("sub", "x - y"), ("mul", "x * y"), ("truediv", "x / y"), ("lt", "x < y"), ("gt", "x > y"), ("eq", "x == y")]
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


@check("a1", "function_forwards", kind="equivalence")
def function_forwards(ctx: CheckContext) -> None:
    """Each ScalarFunction's forward(ctx, …) on plain floats (through `_forward`, which
    accepts an int and rejects a bool, as `apply` does)."""
    probes = []
    for cls, args in FORWARDS:
        p = Probe(f"{cls}.forward(ctx, {', '.join(map(repr, args))})")
        probes.append(p.returns(p.call(p.attr(p.get(f"{SF}.{cls}"), "_forward"), p.call(f"{MT}.Context"), *args)))
    ctx.equivalent(probes, TOL)


@check("a1", "forwards_save_for_backward", kind="equivalence")
def forwards_save_for_backward(ctx: CheckContext) -> None:
    """Each ScalarFunction's forward saves what its backward needs: the backward's
    derivatives after the student's forward, against the reference."""
    ctx.equivalent(backward_after_forward(), TOL)


@check("a1", "scalar_operators", kind="equivalence")
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
        same = p.op("eq", p.project(p.attr(h, "inputs"), ["unique_id"]), p.project(p.const([x, y]), ["unique_id"]))
        probes.append(p.returns(p.attr(p.attr(h, "last_fn"), "__name__"), same, names=["z.history.last_fn.__name__", f"z.history.inputs are (x, y) (made by {fn}.apply(x, y))"]))
    ctx.equivalent(probes, TOL)


@check("a1", "python_numbers", kind="equivalence")
def python_numbers(ctx: CheckContext) -> None:
    """A Python number on either side of an operator (x + 2.5, 2 * x, 4.0 / x …) gives the
    right Scalar, and the number becomes a constant: it needs no derivative."""
    probes = []
    for name, shown in BINARY:
        for a, b in YS[:4] + [(4.0, 2)]:
            for side in ("right", "left"):
                text = shown.replace("y", repr(b)) if side == "right" else shown.replace("x", "#").replace("y", "x").replace("#", repr(b))
                p = Probe(f"{text} for x = Scalar({a}) (a Python number on the {side})")
                probes.append(_result(p, _mixed(p, name, a, b, side)))
                q = Probe(f"{text} for x = Scalar({a}): the inputs of its history that need a derivative (the number is a constant)")
                needs = q.project(q.attr(q.attr(_mixed(q, name, a, b, side), "history"), "inputs"), ["requires_grad"])
                probes.append(q.returns(q.method(needs, "count", True), names=["how many"]))
    ctx.equivalent(probes, TOL)


def _mixed(p: Probe, name: str, a: float, b: float, side: str) -> Ref:
    """x `name` b (the number on the right) or b `name` x (on the left), x = Scalar(a)."""
    x = _scalar(p, a)
    return p.op(name, x, b) if side == "right" else p.op(name, b, x)


@check("a1", "forward_edge_cases", kind="equivalence")
def forward_edge_cases(ctx: CheckContext) -> None:
    """Scalar(±1000).sigmoid() is 1.0 / 0.0 and Scalar(0.0).log() is −inf (no exception)."""
    probes = []
    for v, method in ((1000.0, "sigmoid"), (-1000.0, "sigmoid"), (0.0, "log")):
        p = Probe(f"Scalar({v}).{method}()")
        probes.append(p.returns(p.attr(p.method(_scalar(p, v), method), "data"), names=["data"]))
    ctx.equivalent(probes, TOL)


__all__: list[str] = []
