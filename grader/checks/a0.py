"""Hidden checks of stage A0: operators (0.1), map / zipWith / reduce (0.2), modules (0.3)."""

from __future__ import annotations

import math

from .base import CheckContext, check
from .probe import Probe, Tol

OPS = "minitorch.operators"

#: Inputs ordered small and simple first, so the first failure shown is the simplest.
SCALARS = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.25, -7.5, 1e-3, 10.0, -30.0, 42.0, 1e6, -1e6]
PAIRS = [(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (-1.0, 1.0), (1.0, 1.0), (0.5, -0.25), (-3.0, -3.0),
         (3.0, -4.5), (-2.0, 7.0), (1e-3, 1e3), (10.0, 0.1), (1e6, -1e6)]
UNARY = ["id", "neg", "relu", "sigmoid", "exp", "log", "inv"]
BINARY = ["mul", "add", "lt", "eq", "max", "is_close"]
#: Edge cases each function must handle as its docstring says.
EDGES = {
    "sigmoid": [-1000.0, 1000.0, -40.0, 40.0],
    "exp": [709.0, 710.0, -1000.0],
    "log": [0.0, -1.0, 1e-300],
    "inv": [0.0, -0.0, 1e-300],
    "is_close": [],
}
BINARY_EDGES = {"is_close": [(1.0, 1.005), (1.0, 1.02), (-2.0, -2.009)], "eq": [(0.1 + 0.2, 0.3)]}


def _call_probe(fn: str, *args: float) -> Probe:
    label = f"operators.{fn}({', '.join(repr(a) for a in args)})"
    p = Probe(label)
    p.returns(p.call(f"{OPS}.{fn}", *args))
    return p


@check("a0", "operators_forward", kind="equivalence")
def operators_forward(ctx: CheckContext) -> None:
    """Every operator on ordinary and edge-case inputs, against the reference."""
    probes = []
    for fn in UNARY:
        for x in SCALARS + EDGES.get(fn, []):
            probes.append(_call_probe(fn, x))
    for fn in BINARY:
        for x, y in PAIRS + BINARY_EDGES.get(fn, []):
            probes.append(_call_probe(fn, x, y))
    ctx.equivalent(probes, Tol(rtol=1e-7, atol=1e-12))


@check("a0", "operators_backward", kind="equivalence")
def operators_backward(ctx: CheckContext) -> None:
    """log_back, inv_back and relu_back against the reference."""
    probes = []
    xs = [1.0, 2.0, -1.0, 0.5, -3.0, 1e-3, 7.0]
    ds = [1.0, -2.0, 0.25]
    for fn in ("log_back", "inv_back", "relu_back"):
        for x in xs + ([0.0] if fn == "relu_back" else []):
            for d in ds:
                probes.append(_call_probe(fn, x, d))
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


def _hof_probe(label: str, build) -> Probe:  # noqa: ANN001
    p = Probe(label)
    p.returns(build(p))
    return p


@check("a0", "functional", kind="equivalence")
def functional(ctx: CheckContext) -> None:
    """map / zipWith / reduce and the list functions built on them."""
    lists = [[], [1.0], [1.0, 2.0], [3.0, -1.5, 2.0], [0.5, -0.25, 4.0, 8.0, -1.0]]
    probes = []
    for ls in lists:
        for fn in ("neg", "sigmoid", "inv" if 0.0 not in ls else "id"):
            probes.append(_hof_probe(f"map(operators.{fn})({ls})", lambda p, fn=fn, ls=ls: p.call(p.call(f"{OPS}.map", p.get(f"{OPS}.{fn}")), ls)))
        probes.append(_hof_probe(f"negList({ls})", lambda p, ls=ls: p.call(f"{OPS}.negList", ls)))
        probes.append(_hof_probe(f"sum({ls})", lambda p, ls=ls: p.call(f"{OPS}.sum", ls)))
        probes.append(_hof_probe(f"prod({ls})", lambda p, ls=ls: p.call(f"{OPS}.prod", ls)))
        # sub is not commutative: reduce(fn, x0)([x1 … xn]) = fn(xn, … fn(x1, x0))
        for fn, start in (("add", 0.0), ("mul", 1.0), ("sub", 0.0), ("sub", 10.0), ("max", -math.inf)):
            probes.append(_hof_probe(
                f"reduce(operators.{fn}, {start})({ls})",
                lambda p, fn=fn, start=start, ls=ls: p.call(p.call(f"{OPS}.reduce", p.get(f"{OPS}.{fn}"), start), ls),
            ))
        rev = [x * 2 - 1 for x in reversed(ls)]
        for fn in ("add", "mul", "sub", "max"):
            probes.append(_hof_probe(
                f"zipWith(operators.{fn})({ls}, {rev})",
                lambda p, fn=fn, ls=ls, rev=rev: p.call(p.call(f"{OPS}.zipWith", p.get(f"{OPS}.{fn}")), ls, rev),
            ))
        probes.append(_hof_probe(f"addLists({ls}, {rev})", lambda p, ls=ls, rev=rev: p.call(f"{OPS}.addLists", ls, rev)))
    bad = Probe("zipWith(operators.add)([1.0, 2.0], [1.0]) (lists of different lengths)", expect_error=True)
    bad.returns(bad.call(bad.call(f"{OPS}.zipWith", bad.get(f"{OPS}.add")), [1.0, 2.0], [1.0]))
    probes.append(bad)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


# ---- modules


TREE = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0], ["b", 3.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]], "children": [["e", {}]]}],
        ["f", {}],
    ],
}
SHARED = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]]}],
    ],
    "alias": [["again", "a.c"], ["tied", "a.w"]],
}
PATHS = {
    "TREE": ["", "a", "a.c", "d", "d.e", "f"],
    "SHARED": ["", "a", "a.c", "d"],
}


def _node(p: Probe, root, path: str):  # noqa: ANN001
    node = root
    for part in filter(None, path.split(".")):
        node = p.attr(node, part)
    return node


def _module_probes() -> list[Probe]:
    probes = []
    for tree_name, spec in (("TREE", TREE), ("SHARED", SHARED)):
        shape = f"the module tree {tree_name} = {_describe(spec)}"

        def add(what: str, build) -> None:  # noqa: ANN001
            p = Probe(f"{what} on {shape}")
            root = p.module(spec)
            p.returns(*build(p, root))
            probes.append(p)

        for kwargs in ({}, {"prefix": "net"}, {"remove_duplicate": False}):
            args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            add(f"[name for name, _ in named_modules({args})]", lambda p, r, kw=kwargs: [p.project(p.method(r, "named_modules", **kw), [0])])
        for kwargs in ({}, {"prefix": "net"}, {"recurse": False}, {"remove_duplicate": False}):
            args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            add(
                f"named_parameters({args}) (names and values)",
                lambda p, r, kw=kwargs: [p.project(p.method(r, "named_parameters", **kw), [0]), p.project(p.method(r, "named_parameters", **kw), [1, "value"])],
            )
        add("[p.value for p in parameters()]", lambda p, r: [p.project(p.method(r, "parameters"), ["value"])])
        add("[m.training for m in modules()]", lambda p, r: [p.project(p.method(r, "modules"), ["training"])])
        paths = PATHS[tree_name]

        def modes(p: Probe, r, calls: list[tuple[str, str]]):  # noqa: ANN001
            for path, call in calls:
                node = _node(p, r, path)
                if call == "train":
                    p.method(node, "train")
                elif call == "train(False)":
                    p.method(node, "train", False)
                else:
                    p.method(node, "eval")
            return [p.attr(_node(p, r, path), "training") for path in paths]

        for calls in ([("", "eval")], [("", "train(False)")], [("", "eval"), ("", "train")], [("a", "eval")], [("", "eval"), ("d", "train")]):
            desc = "; ".join(f"{'root' if not path else path}.{call}()" if call != "train(False)" else f"{'root' if not path else path}.train(False)" for path, call in calls)
            add(f"{desc}, then the training flag of {', '.join(x or 'root' for x in paths)}", lambda p, r, c=calls: modes(p, r, c))
        add("the value returned by train() and eval()", lambda p, r: [p.method(r, "train"), p.method(r, "eval")])
    return probes


def _describe(spec: dict) -> str:
    parts = [f"{n}=Parameter({v})" for n, v in spec.get("params", [])]
    parts += [f"{n}=Module({_describe(c)})" for n, c in spec.get("children", [])]
    parts += [f"{n}=<the same object as {path}>" for n, path in spec.get("alias", [])]
    return "{" + ", ".join(parts) + "}"


@check("a0", "modules", kind="equivalence")
def modules(ctx: CheckContext) -> None:
    """named_modules / named_parameters / parameters / train / eval on module trees."""
    ctx.equivalent(_module_probes())
