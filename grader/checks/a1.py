"""Hidden checks of stage A1: central difference (1.1), Scalar forward (1.2), backward and
the chain rule (1.3), topological sort and backpropagation (1.4)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .base import CheckContext, CheckFailed, StudentError, inputs_text, check
from .probe import Probe, Ref, Tol, describe, diff

MT = "minitorch"
SF = "minitorch.scalar_functions"

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


# ---- 1.2 / 1.3 Scalar functions

#: (label, operator or method, arity, inputs); inputs avoid kinks (relu at 0) and log(≤ 0).
UNARY = [("neg", "-x"), ("log", "x.log()"), ("exp", "x.exp()"), ("sigmoid", "x.sigmoid()"), ("relu", "x.relu()")]
BINARY = [("add", "x + y"), ("sub", "x - y"), ("mul", "x * y"), ("truediv", "x / y"), ("lt", "x < y"), ("gt", "x > y"), ("eq", "x == y")]
XS = [1.0, 2.0, 0.5, -1.5, 3.0, -4.0, 10.0]
YS = [(1.0, 2.0), (2.0, 1.0), (3.0, 3.0), (-1.5, 0.5), (0.25, -4.0), (7.0, 2.5)]


def _scalar(p: Probe, v: float) -> Ref:
    return p.call(f"{MT}.Scalar", v)


def _unary(p: Probe, name: str, x: Ref) -> Ref:
    return p.op("neg", x) if name == "neg" else p.method(x, name)


@check("a1", "scalar_forward", kind="equivalence")
def scalar_forward(ctx: CheckContext) -> None:
    """Scalar operators and methods give Scalars with the right .data (also with a Python
    number on either side)."""
    probes = []
    for name, shown in UNARY:
        for v in XS:
            if name == "log" and v <= 0:
                continue
            p = Probe(f"{shown} for x = Scalar({v})")
            out = _unary(p, name, _scalar(p, v))
            p.returns(p.attr(out, "data"), out, names=["data", "result"])
            probes.append(p)
    for name, shown in BINARY:
        for a, b in YS:
            p = Probe(f"{shown} for x = Scalar({a}), y = Scalar({b})")
            out = p.op(name, _scalar(p, a), _scalar(p, b))
            p.returns(p.attr(out, "data"), out, names=["data", "result"])
            probes.append(p)
            # a plain number on the left or the right
            p = Probe(f"{shown.replace('y', repr(b))} for x = Scalar({a}) (a Python number on the right)")
            out = p.op(name, _scalar(p, a), b)
            p.returns(p.attr(out, "data"), names=["data"])
            probes.append(p)
            p = Probe(f"{shown.replace('x', repr(a))} for y = Scalar({b}) (a Python number on the left)")
            out = p.op(name, a, _scalar(p, b))
            p.returns(p.attr(out, "data"), names=["data"])
            probes.append(p)
    # the forward of each ScalarFunction called directly
    for cls, args in [("Add", (2.0, 3.0)), ("Mul", (2.0, -3.0)), ("Neg", (4.0,)), ("Inv", (4.0,)), ("Log", (2.0,)),
                      ("Exp", (1.5,)), ("Sigmoid", (-2.0,)), ("ReLU", (-1.0,)), ("ReLU", (2.5,)), ("LT", (1.0, 2.0)), ("EQ", (2.0, 2.0))]:
        p = Probe(f"{cls}.forward(ctx, {', '.join(map(repr, args))})")
        c = p.call(f"{MT}.Context")
        p.returns(p.call(p.attr(p.get(f"{SF}.{cls}"), "forward"), c, *args))
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


BACKWARD_CASES: list[tuple[str, tuple[float, ...]]] = [
    ("Add", (2.0, 3.0)), ("Mul", (2.0, -3.0)), ("Neg", (4.0,)), ("Inv", (4.0,)), ("Inv", (-0.5,)),
    ("Log", (2.0,)), ("Log", (0.25,)), ("Exp", (1.5,)), ("Exp", (-1.0,)), ("Sigmoid", (-2.0,)),
    ("Sigmoid", (0.5,)), ("ReLU", (-1.0,)), ("ReLU", (2.5,)), ("LT", (1.0, 2.0)), ("EQ", (2.0, 2.0)),
]


@check("a1", "scalar_backward", kind="equivalence")
def scalar_backward(ctx: CheckContext) -> None:
    """Each ScalarFunction's backward (called after its forward on one context), and
    Scalar.chain_rule, against the reference, with several upstream derivatives d."""
    probes = []
    for cls, args in BACKWARD_CASES:
        for d in (1.0, -2.5):
            p = Probe(f"{cls}.backward(ctx, d_output={d}) after {cls}.forward(ctx, {', '.join(map(repr, args))})")
            c = p.call(f"{MT}.Context")
            fn = p.get(f"{SF}.{cls}")
            p.call(p.attr(fn, "forward"), c, *args)
            p.returns(p.call(p.attr(fn, "_backward"), c, d))
            probes.append(p)
    for cls, args in BACKWARD_CASES:
        d = 0.75
        p = Probe(f"chain_rule(d_output={d}) of z = {cls}.apply({', '.join(f'Scalar({a})' for a in args)}): the derivative paired with each input")
        xs = [_scalar(p, a) for a in args]
        z = p.call(p.attr(p.get(f"{SF}.{cls}"), "apply"), *xs)
        pairs = p.list(p.method(z, "chain_rule", d))
        p.returns(p.project(pairs, [1]), p.project(pairs, [0, "data"]), names=["derivatives", "inputs paired with them (.data)"])
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


# ---- gradient checks on expressions (need backpropagate, 1.4)

Expr = Callable[[Probe, list[Ref]], Ref]

EXPRESSIONS: list[tuple[str, Expr, list[float]]] = [
    ("x * y + x", lambda p, v: p.op("add", p.op("mul", v[0], v[1]), v[0]), [2.0, 3.0]),
    ("(x * x).sigmoid()", lambda p, v: p.method(p.op("mul", v[0], v[0]), "sigmoid"), [0.7]),
    ("(x + y).log()", lambda p, v: p.method(p.op("add", v[0], v[1]), "log"), [1.5, 0.25]),
    ("x.exp() * x", lambda p, v: p.op("mul", p.method(v[0], "exp"), v[0]), [-0.3]),
    ("x / y - y", lambda p, v: p.op("sub", p.op("truediv", v[0], v[1]), v[1]), [2.0, -1.5]),
    ("(x * 2.0 - 1.0).relu() * y", lambda p, v: p.op("mul", p.method(p.op("sub", p.op("mul", v[0], 2.0), 1.0), "relu"), v[1]), [1.25, 3.0]),
    ("3.0 / (x * x + 1.0)", lambda p, v: p.op("truediv", 3.0, p.op("add", p.op("mul", v[0], v[0]), 1.0)), [0.4]),
    ("z = x * y; (z + z * x).sigmoid() + (z < x) * y", lambda p, v: _shared(p, v), [0.5, -1.2]),
    ("-(x * y * w).exp() + w.log()", lambda p, v: p.op("add", p.op("neg", p.method(p.op("mul", p.op("mul", v[0], v[1]), v[2]), "exp")), p.method(v[2], "log")), [0.3, -0.4, 2.0]),
]


def _shared(p: Probe, v: list[Ref]) -> Ref:
    z = p.op("mul", v[0], v[1])
    s = p.method(p.op("add", z, p.op("mul", z, v[0])), "sigmoid")
    return p.op("add", s, p.op("mul", p.op("lt", z, v[0]), v[1]))


def scalar_gradcheck_one(ctx: CheckContext, label: str, build: Expr, values: list[float], d: float, eps: float = 1e-6) -> None:
    """out = f(x…); out.backward(d): each x.derivative against d · (f(x+ε) − f(x−ε)) / 2ε of
    the student's own forward."""
    names = ["x", "y", "w"][: len(values)]
    inputs = dict(zip(names, values))
    main = Probe(label, inputs)
    xs = [_scalar(main, v) for v in values]
    out = build(main, xs)
    main.method(out, "backward", d)
    main.returns(main.attr(out, "data"), *[main.attr(x, "derivative") for x in xs])
    probes = [main]
    for k in range(len(values)):
        for sign in (1, -1):
            vals = list(values)
            vals[k] += sign * eps
            p = Probe(label)
            p.returns(p.attr(build(p, [_scalar(p, v) for v in vals]), "data"))
            probes.append(p)
    answers = ctx.child(probes)
    details = inputs_text(inputs) + f"\nd_output = {d}"
    for a in answers:
        if a.error:
            raise StudentError(f"{label}, then backward({d})", a.error, details)
    derivs = answers[0].values[1:]
    for k, name in enumerate(names):
        up, down = answers[1 + 2 * k].values[0], answers[2 + 2 * k].values[0]
        if not all(isinstance(v, (int, float)) for v in (up, down)):
            raise CheckFailed(f"{label}: .data is {describe(up)}, not a float", details)
        numeric = d * (up - down) / (2 * eps)
        got = derivs[k]
        if got is None:
            raise CheckFailed(f"{label}: {name}.derivative is None after backward()", details)
        problem = diff(float(numeric), got, Tol(rtol=1e-4, atol=1e-6))
        if problem:
            raise CheckFailed(
                f"{label}: {name}.derivative disagrees with the central difference of your forward ({problem})",
                details + f"\ncentral difference × d: {numeric:.10g}\nyour {name}.derivative: {describe(got)}",
            )


@check("a1", "scalar_gradcheck", kind="gradient")
def scalar_gradcheck(ctx: CheckContext) -> None:
    """backward() on expressions against central differences of the student's forward,
    with a random upstream derivative."""
    for label, build, values in EXPRESSIONS:
        d = float(np.round(ctx.rng.uniform(0.5, 2.0) * ctx.rng.choice([-1, 1]), 3))
        scalar_gradcheck_one(ctx, label, build, values, d)


# ---- 1.4 topological sort and backpropagation

#: A graph: (name, op, inputs). Leaves ("leaf") need derivatives, constants ("const") not.
Graph = list[tuple[str, str, Sequence[Any]]]

DIAMOND: Graph = [
    ("x", "leaf", [2.0]), ("y", "leaf", [3.0]), ("c", "const", [4.0]),
    ("a", "mul", ["x", "y"]), ("b", "add", ["a", "x"]), ("e", "mul", ["a", "c"]),
    ("o", "add", ["b", "e"]),
]
WIDE: Graph = [
    ("x", "leaf", [0.5]), ("y", "leaf", [-1.5]), ("w", "leaf", [2.0]), ("k", "const", [3.0]),
    ("a", "mul", ["x", "x"]), ("b", "mul", ["a", "y"]), ("c", "add", ["b", "a"]),
    ("d", "sigmoid", ["c"]), ("e", "mul", ["d", "w"]), ("f", "add", ["e", "b"]),
    ("g", "mul", ["f", "k"]), ("h", "exp", ["x"]), ("o", "add", ["g", "h"]),
]
UNUSED: Graph = [  # y is a leaf the output does not depend on; z uses only constants
    ("x", "leaf", [1.0]), ("y", "leaf", [2.0]), ("k", "const", [2.0]), ("m", "const", [5.0]),
    ("z", "mul", ["k", "m"]), ("a", "mul", ["x", "z"]), ("o", "add", ["a", "x"]),
]


def _chain(n: int) -> Graph:
    g: Graph = [("x", "leaf", [0.1]), ("y", "leaf", [1.0])]
    prev = "x"
    for i in range(n):
        cur = f"n{i}"
        g.append((cur, "add" if i % 2 else "mul", [prev, "y"]))
        prev = cur
    g.append(("o", "mul", [prev, "x"]))
    return g


GRAPHS = {"diamond": DIAMOND, "wide": WIDE, "unused": UNUSED, "chain of 300": _chain(300)}


def _build_graph(p: Probe, graph: Graph) -> dict[str, Ref]:
    nodes: dict[str, Ref] = {}
    for name, op, ins in graph:
        if op in ("leaf", "const"):
            s = p.call(f"{MT}.Scalar", ins[0], name=name)
            if op == "const":
                p.method(s, "requires_grad_", False)
            nodes[name] = s
            continue
        args = [nodes[i] for i in ins]
        if op in ("add", "mul", "lt"):
            out = p.op(op, *args)
        else:
            out = p.method(args[0], op)
        p.setattr(out, "name", name)
        nodes[name] = out
    return nodes


def _describe_graph(graph: Graph) -> str:
    parts = []
    for name, op, ins in graph[:12]:
        if op in ("leaf", "const"):
            parts.append(f"{name} = Scalar({ins[0]})" + (" (constant)" if op == "const" else ""))
        elif op in ("add", "mul"):
            parts.append(f"{name} = {ins[0]} {'+' if op == 'add' else '*'} {ins[1]}")
        else:
            parts.append(f"{name} = {ins[0]}.{op}()")
    if len(graph) > 12:
        parts.append(f"… ({len(graph) - 12} more nodes)")
    return "; ".join(parts)


@check("a1", "topological_sort", kind="property")
def topological_sort(ctx: CheckContext) -> None:
    """topological_sort lists every non-constant node the output depends on exactly once,
    each before the nodes it was computed from (any valid order is accepted)."""
    probes = []
    for gname, graph in GRAPHS.items():
        p = Probe(f"topological_sort(o) for the {gname} graph", {"graph": _describe_graph(graph)})
        nodes = _build_graph(p, graph)
        p.returns(p.project(p.list(p.call(f"{MT}.topological_sort", nodes["o"])), ["name"]))
        probes.append(p)
    expected = ctx.reference(probes)
    got = ctx.child(probes)
    for (gname, graph), p, e, g in zip(GRAPHS.items(), probes, expected, got):
        if g.error:
            raise StudentError(p.label, g.error, inputs_text(p.inputs))
        order = g.values[0]
        want = e.values[0]
        if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
            raise CheckFailed(f"{p.label}: expected a list of Scalars, got {describe(order)[:100]}", inputs_text(p.inputs))
        dupes = sorted({n for n in order if order.count(n) > 1})
        if dupes:
            raise CheckFailed(f"{p.label}: nodes listed more than once: {', '.join(dupes[:5])}", inputs_text(p.inputs))
        missing, extra = sorted(set(want) - set(order)), sorted(set(order) - set(want))
        if missing or extra:
            raise CheckFailed(
                f"{p.label}: " + ("missing " + ", ".join(missing[:5]) if missing else "")
                + ("; " if missing and extra else "") + ("should not list " + ", ".join(extra[:5]) + " (constants are left out)" if extra else ""),
                inputs_text(p.inputs) + f"\nyour order: {', '.join(order[:20])}\na valid order: {', '.join(want[:20])}",
            )
        pos = {n: i for i, n in enumerate(order)}
        for name, op, ins in graph:
            if op in ("leaf", "const"):
                continue
            for parent in ins:
                if parent in pos and name in pos and pos[parent] < pos[name]:
                    raise CheckFailed(
                        f"{p.label}: {parent} comes before {name}, which was computed from it",
                        inputs_text(p.inputs) + f"\nyour order: {', '.join(order[:20])}\na valid order: {', '.join(want[:20])}",
                    )


@check("a1", "backpropagate", kind="equivalence")
def backpropagate(ctx: CheckContext) -> None:
    """backpropagate(o, d) (and o.backward(d)) fill each leaf's derivative, summed over
    every path; constants get none."""
    probes = []
    for gname, graph in GRAPHS.items():
        leaves = [n for n, op, _ in graph if op in ("leaf", "const")]
        for how in ("backpropagate", "backward"):
            d = 1.5 if how == "backward" else -0.5
            call = f"backpropagate(o, {d})" if how == "backpropagate" else f"o.backward({d})"
            p = Probe(f"{call} for the {gname} graph", {"graph": _describe_graph(graph)})
            nodes = _build_graph(p, graph)
            if how == "backpropagate":
                p.call(f"{MT}.backpropagate", nodes["o"], d)
            else:
                p.method(nodes["o"], "backward", d)
            p.returns(*[p.attr(nodes[n], "derivative") for n in leaves], names=[f"{n}.derivative" for n in leaves])
            probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-7, atol=1e-10))
