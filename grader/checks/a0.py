"""Hidden checks of stage A0: operators (0.1), map / zipWith / reduce (0.2), modules (0.3).

One check per behaviour, weighted in the manifest: first each group of functions on
ordinary inputs, then each edge case on its own (`sigmoid_large_inputs`, `exp_overflow`,
…), so that a `log` written as log10 is reported on log(2.0), not hidden behind log(0.0),
and a missing edge case costs its share of the task only.

Numbers are compared by Python type as well as by value (`grader.checks.compare.diff`):
`lt` returning the bool True where the reference returns the float 1.0 is wrong, as in
the public tests. Where the public tests need a list (``map(neg)(ls) == [...]``,
``len(net.parameters())``, ``named_parameters() == [("w", p)]``) the probe also returns
the type of the result, so a generator or a tuple is reported as such.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

from .base import CheckContext, CheckFailed, StudentError, check, compare_answer
from .compare import Shown
from .probe import Answer, Probe, Ref, Tol

OPS = "minitorch.operators"
TOL = Tol(rtol=1e-7, atol=1e-12)

# ---- 0.1 operators

#: Ordinary inputs, small and simple first, so the first failure shown is the simplest.
XS = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.25, -7.5, 1e-3, 10.0, -30.0, 42.0]
BIG = [1e6, -1e6]
POSITIVE = [x for x in XS + BIG if x > 0] + [math.e]
NONZERO = [x for x in XS + BIG if x != 0]
PAIRS = [(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (-1.0, 1.0), (1.0, 1.0), (0.5, -0.25), (-3.0, -3.0),
         (3.0, -4.5), (-2.0, 7.0), (1e-3, 1e3), (10.0, 0.1), (1e6, -1e6)]
#: is_close is 1.0 for |x − y| < 1e-2 (strictly: not at 0.01); eq compares exactly (0.1 + 0.2 ≠ 0.3).
NEAR = [(1.0, 1.005), (1.0, 1.02), (-2.0, -2.009), (0.1 + 0.2, 0.3), (0.0, 0.01)]
DS = [1.0, -2.0, 0.25]


def _call(fn: str, *args: float) -> Probe:
    p = Probe(f"operators.{fn}({', '.join(map(repr, args))})")
    return p.returns(p.call(f"{OPS}.{fn}", *args))


def _calls(fns: Sequence[str], inputs: Sequence[Any]) -> list[Probe]:
    return [_call(fn, *(x if isinstance(x, tuple) else (x,))) for fn in fns for x in inputs]


@check("a0", "arithmetic", kind="equivalence")
def arithmetic(ctx: CheckContext) -> None:
    """mul, add, neg and id on ordinary numbers (floats in, floats out)."""
    ctx.equivalent(_calls(["mul", "add"], PAIRS) + _calls(["neg", "id"], XS + BIG), TOL)


@check("a0", "comparisons", kind="equivalence")
def comparisons(ctx: CheckContext) -> None:
    """lt, eq, max and is_close: the comparisons return the floats 1.0 / 0.0, not bools."""
    ctx.equivalent(_calls(["lt", "eq", "max", "is_close"], PAIRS + NEAR), TOL)


@check("a0", "relu_and_sigmoid", kind="equivalence")
def relu_and_sigmoid(ctx: CheckContext) -> None:
    """relu and sigmoid on ordinary numbers (|x| ≤ 100 for sigmoid)."""
    ctx.equivalent(_calls(["relu"], XS + BIG) + _calls(["sigmoid"], XS + [100.0, -100.0]), TOL)


@check("a0", "exp_log_inv", kind="equivalence")
def exp_log_inv(ctx: CheckContext) -> None:
    """exp, log (natural) and inv on ordinary numbers: log of positives, inv of non-zeros
    (to 1e-12, as the public tests compare exp with math.exp)."""
    probes = _calls(["exp"], XS) + _calls(["log"], POSITIVE) + _calls(["inv"], NONZERO)
    ctx.equivalent(probes, Tol(rtol=1e-12, atol=1e-15))


@check("a0", "backward_helpers", kind="equivalence")
def backward_helpers(ctx: CheckContext) -> None:
    """log_back, inv_back and relu_back (away from relu's kink) with several d."""
    probes = _calls(["log_back"], [(x, d) for x in POSITIVE[:6] for d in DS])
    probes += _calls(["inv_back"], [(x, d) for x in NONZERO[:8] for d in DS])
    probes += _calls(["relu_back"], [(x, d) for x in NONZERO[:8] for d in DS])
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a0", "sigmoid_large_inputs", kind="equivalence")
def sigmoid_large_inputs(ctx: CheckContext) -> None:
    """sigmoid(±1000) is 1.0 / 0.0 without an OverflowError (e^{-x} is never formed for x < 0)."""
    ctx.equivalent(_calls(["sigmoid"], [1000.0, -1000.0, 710.0, -710.0, 1e308, -1e308]), TOL)


@check("a0", "exp_overflow", kind="equivalence")
def exp_overflow(ctx: CheckContext) -> None:
    """exp overflows to inf as in PyTorch (math.exp raises OverflowError above ≈ 709.78)."""
    ctx.equivalent(_calls(["exp"], [709.0, 710.0, 1000.0, 1e308, -1000.0, -1e308]), TOL)


@check("a0", "log_of_zero_and_negatives", kind="equivalence")
def log_of_zero_and_negatives(ctx: CheckContext) -> None:
    """log(0) = −inf and log(x < 0) = nan as in PyTorch (math.log raises ValueError)."""
    ctx.equivalent(_calls(["log"], [0.0, -0.0, -1.0, -2.5, -1e-300]), TOL)


@check("a0", "inv_of_zero", kind="equivalence")
def inv_of_zero(ctx: CheckContext) -> None:
    """inv(0.0) = inf and inv(-0.0) = −inf as in PyTorch (1 / 0.0 raises ZeroDivisionError)."""
    ctx.equivalent(_calls(["inv"], [0.0, -0.0]), TOL)


@check("a0", "relu_back_at_zero", kind="equivalence")
def relu_back_at_zero(ctx: CheckContext) -> None:
    """relu_back(0, d) = 0: the subgradient at the kink is 0, as in PyTorch."""
    ctx.equivalent(_calls(["relu_back"], [(0.0, 5.0), (0.0, -1.0), (-0.0, 2.0)]), TOL)


# ---- 0.2 map / zipWith / reduce

LISTS = [[], [1.0], [1.0, 2.0], [3.0, -1.5, 2.0], [0.5, -0.25, 4.0, 8.0, -1.0]]


def _type_name(p: Probe, ref: Ref) -> Ref:
    return p.attr(p.attr(ref, "__class__"), "__name__")


def _hof(label: str, build: Callable[[Probe], Ref], is_list: bool = False) -> Probe:
    """A probe of a higher-order call; `is_list`: the result must be a list (its type is
    returned too)."""
    p = Probe(label)
    out = build(p)
    if is_list:
        return p.returns(_type_name(p, out), out, names=["type of the result", "result"])
    return p.returns(out)


#: map / zipWith / reduce are tried with functions of Python's `math` (reached through
#: `minitorch.operators.math`), not with the student's operators: a mistake in task 0.1
#: must not cost task 0.2. atan2 and copysign are not symmetric, so swapped arguments show.
MAP_FNS = ["atan", "tanh", "fabs"]
ZIP_FNS = ["atan2", "copysign", "hypot"]
REDUCE_FNS = [("atan2", 0.0), ("atan2", 10.0), ("hypot", 0.0), ("copysign", 1.0), ("copysign", -1.0)]


def _math(p: Probe, fn: str) -> Ref:
    return p.get(f"{OPS}.math.{fn}")


@check("a0", "map", kind="equivalence")
def map_(ctx: CheckContext) -> None:
    """map(fn)(ls) returns the list [fn(x) for x in ls], for several fn and lists."""
    probes = []
    for ls in LISTS:
        for fn in MAP_FNS:
            probes.append(_hof(f"map(math.{fn})({ls})", lambda p, fn=fn, ls=ls: p.call(p.call(f"{OPS}.map", _math(p, fn)), ls), True))
    ctx.equivalent(probes, TOL)


@check("a0", "zip_with", kind="equivalence")
def zip_with(ctx: CheckContext) -> None:
    """zipWith(fn)(a, b) returns the list [fn(x, y) for x, y in zip(a, b)] (equal lengths)."""
    probes = []
    for ls in LISTS:
        rev = [x * 2 - 1 for x in reversed(ls)]
        for fn in ZIP_FNS:
            probes.append(_hof(f"zipWith(math.{fn})({ls}, {rev})",
                               lambda p, fn=fn, ls=ls, rev=rev: p.call(p.call(f"{OPS}.zipWith", _math(p, fn)), ls, rev), True))
    ctx.equivalent(probes, TOL)


@check("a0", "reduce", kind="equivalence")
def reduce_(ctx: CheckContext) -> None:
    """reduce(fn, x0)([x1 … xn]) = fn(xn, … fn(x1, x0)): the start value, the order (atan2
    is not symmetric), the empty list, and any iterable (an iterator too)."""
    probes = []
    for ls in LISTS:
        for fn, start in REDUCE_FNS:
            probes.append(_hof(f"reduce(math.{fn}, {start})({ls})",
                               lambda p, fn=fn, start=start, ls=ls: p.call(p.call(f"{OPS}.reduce", _math(p, fn), start), ls)))
    for ls in LISTS[2:]:
        probes.append(_hof(f"reduce(math.atan2, 0.0)(iter({ls}))",
                           lambda p, ls=ls: p.call(p.call(f"{OPS}.reduce", _math(p, "atan2"), 0.0), p.method(p.const(ls), "__iter__"))))
    ctx.equivalent(probes, TOL)


def _own_operator_values(p: Probe, fn: str, args: list[tuple[float, ...]]) -> Probe:
    """The student's own `operators.fn` on each argument tuple: what a list function built
    on it must give (so a wrong 0.1 operator costs 0.1, not 0.2)."""
    return p.returns(*[p.call(f"{OPS}.{fn}", *a) for a in args])


def _folded(p: Probe, fn: str, start: float, ls: list[float]) -> Probe:
    """fn(xn, … fn(x1, start)) with the student's own operator: what sum / prod must give."""
    acc: Ref = p.const(start)
    for x in ls:
        acc = p.call(f"{OPS}.{fn}", x, acc)
    return p.returns(acc)


@check("a0", "list_functions", kind="equivalence")
def list_functions(ctx: CheckContext) -> None:
    """negList and addLists (lists), sum and prod, empty lists included (sum([]) = 0.0,
    prod([]) = 1.0), compared with what your own neg / add / mul give element by element
    (so a mistake in an operator of task 0.1 is not charged again here)."""
    cases: list[tuple[Probe, Probe]] = []  # (the list function, your operator on each element)
    for ls in LISTS:
        rev = [x * 2 - 1 for x in reversed(ls)]
        cases.append((_hof(f"negList({ls})", lambda p, ls=ls: p.call(f"{OPS}.negList", ls), True),
                      _own_operator_values(Probe(f"[neg(x) for x in {ls}]"), "neg", [(x,) for x in ls])))
        cases.append((_hof(f"addLists({ls}, {rev})", lambda p, ls=ls, rev=rev: p.call(f"{OPS}.addLists", ls, rev), True),
                      _own_operator_values(Probe(f"[add(x, y) for x, y in zip({ls}, {rev})]"), "add", list(zip(ls, rev)))))
        cases.append((_hof(f"sum({ls})", lambda p, ls=ls: p.call(f"{OPS}.sum", ls)), _folded(Probe(f"sum({ls}) with your add"), "add", 0.0, ls)))
        cases.append((_hof(f"prod({ls})", lambda p, ls=ls: p.call(f"{OPS}.prod", ls)), _folded(Probe(f"prod({ls}) with your mul"), "mul", 1.0, ls)))
    # the shape of each answer (a list, a float) is the reference's
    shapes = ctx.reference([c[0] for c in cases])
    answers = ctx.child([x for c in cases for x in c])
    for k, (probe, own) in enumerate(cases):
        got, want = answers[2 * k], answers[2 * k + 1]
        if want.error is not None:
            raise StudentError(f"{own.label} (what {probe.label} must give)", want.error)
        is_list = len(probe.output_names) == 2
        values = [list(want.values)] if is_list else list(want.values)
        expected = Answer(values=([shapes[k].values[0]] if is_list else []) + values)
        compare_answer(probe, expected, got, TOL)


@check("a0", "zip_with_unequal_lengths", kind="property")
def zip_with_unequal_lengths(ctx: CheckContext) -> None:
    """zipWith(fn)(a, b) with len(a) ≠ len(b) raises ValueError naming zipWith and both
    lengths (as the public test asks: "zipWith: lists of different lengths 3 and 2")."""
    cases = [([1.0, 2.0, 3.0], [1.0, 2.0]), ([], [4.0]), ([1.0], [2.0, 3.0, 4.0, 5.0])]
    probes = []
    for a, b in cases:
        p = Probe(f"zipWith(math.atan2)({a}, {b})", expect_error=True)
        probes.append(p.returns(p.call(p.call(f"{OPS}.zipWith", _math(p, "atan2")), a, b)))
    expected, got = ctx.reference(probes), ctx.child(probes)
    for (a, b), p, e, g in zip(cases, probes, expected, got):
        compare_answer(p, e, g)  # a ValueError (or a subclass) was raised
        pattern = rf"zipWith.*\b{len(a)}\b.*\b{len(b)}\b"
        if g.error is not None and not re.search(pattern, g.error.message):
            raise CheckFailed(
                f"{p.label}: the ValueError's message should name zipWith and both lengths ({len(a)} and {len(b)})",
                f"expected a message like: {e.error.message if e.error else ''}\ngot: {g.error.message!r}",
            )


# ---- 0.3 modules

TREE = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0], ["b", 3.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]], "children": [["e", {}]]}],
        ["f", {}],
    ],
}
#: "again" registers the module a.c a second time, "tied" the parameter a.w.
SHARED = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]]}],
    ],
    "alias": [["again", "a.c"], ["tied", "a.w"]],
}
TREES = {"TREE": TREE, "SHARED": SHARED}
MODULES = {"TREE": ["", "a", "a.c", "d", "d.e", "f"], "SHARED": ["", "a", "a.c", "d"]}
#: named_modules(remove_duplicate=False) lists a.c a second time, as "again".
ALL_MODULES = {"TREE": MODULES["TREE"], "SHARED": MODULES["SHARED"] + ["again"]}
PARAMS = {"TREE": ["p1", "a.w", "a.b", "a.c.z", "d.q"], "SHARED": ["p1", "a.w", "a.c.z", "d.q"]}

Outputs = tuple[list[Ref], list[str]]


def _describe(spec: dict) -> str:
    parts = [f"{n}=Parameter({v})" for n, v in spec.get("params", [])]
    parts += [f"{n}=Module({_describe(c)})" for n, c in spec.get("children", [])]
    parts += [f"{n}=<the same object as {path}>" for n, path in spec.get("alias", [])]
    return "{" + ", ".join(parts) + "}"


def _node(p: Probe, root: Ref, path: str) -> Ref:
    node = root
    for part in filter(None, path.split(".")):
        node = p.attr(node, part)
    return node


def _tree(tree: str, what: str, build: Callable[[Probe, Ref], Outputs]) -> Probe:
    p = Probe(f"{what} on {tree}", {tree: Shown(_describe(TREES[tree]))})
    root = p.module(TREES[tree])
    outs, names = build(p, root)
    return p.returns(*outs, names=names)


def _args(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _named_modules(tree: str, kwargs: dict) -> Probe:
    paths = ALL_MODULES[tree] if kwargs.get("remove_duplicate") is False else MODULES[tree]

    def build(p: Probe, r: Ref) -> Outputs:
        nm = p.list(p.method(r, "named_modules", **kwargs))  # any iterable of pairs will do
        same = p.op("eq", p.project(nm, [1]), p.const([_node(p, r, path) for path in paths]))
        return [p.project(nm, [0]), same], ["names", f"the modules are the tree's own objects ({', '.join(x or 'root' for x in paths)})"]
    return _tree(tree, f"named_modules({_args(kwargs)})", build)


def _named_parameters(tree: str, kwargs: dict) -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        res = p.method(r, "named_parameters", **kwargs)
        outs = [_type_name(p, res), p.project(res, ["__class__", "__name__"]), p.project(res, [0]), p.project(res, [1, "value"])]
        names = ["type of the result", "type of each item", "names", "values"]
        if not kwargs:
            outs.append(p.op("eq", p.project(res, [1]), p.const([_node(p, r, path) for path in PARAMS[tree]])))
            names.append("the parameters are the tree's own Parameter objects")
        return outs, names
    return _tree(tree, f"named_parameters({_args(kwargs)})", build)


def _parameters(tree: str) -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        res = p.method(r, "parameters")
        same = p.op("eq", p.project(res, []), p.const([_node(p, r, path) for path in PARAMS[tree]]))
        return [_type_name(p, res), p.project(res, ["value"]), same], ["type of the result", "values", "the parameters are the tree's own Parameter objects"]
    return _tree(tree, "parameters()", build)


@check("a0", "named_modules", kind="equivalence")
def named_modules(ctx: CheckContext) -> None:
    """named_modules: the root (named by prefix) and every sub-module by its dotted path, parents first."""
    ctx.equivalent([_named_modules("TREE", kw) for kw in ({}, {"prefix": "net"}, {"remove_duplicate": False})])


@check("a0", "named_parameters", kind="equivalence")
def named_parameters(ctx: CheckContext) -> None:
    """named_parameters: a list of (dotted name, Parameter) tuples, own parameters first;
    prefix and recurse=False."""
    ctx.equivalent([_named_parameters("TREE", kw) for kw in ({}, {"prefix": "net"}, {"recurse": False})])


@check("a0", "parameters", kind="equivalence")
def parameters(ctx: CheckContext) -> None:
    """parameters(): the list of the Parameter objects of named_parameters(), in order."""
    ctx.equivalent([_parameters("TREE")])


def _modes(calls: list[tuple[str, str]]) -> Probe:
    shown = "; ".join(f"{path or 'root'}.{call}" for path, call in calls)

    def build(p: Probe, r: Ref) -> Outputs:
        for path, call in calls:
            node = _node(p, r, path)
            if call == "eval()":
                p.method(node, "eval")
            else:
                p.method(node, "train", *([False] if call == "train(False)" else []))
        paths = MODULES["TREE"]
        return [p.attr(_node(p, r, path), "training") for path in paths], [f"{path or 'root'}.training" for path in paths]
    return _tree("TREE", f"{shown}, then the training flags", build)


@check("a0", "train_eval", kind="equivalence")
def train_eval(ctx: CheckContext) -> None:
    """train() / train(False) / eval() set the mode of a module and of every module below
    it, and return the module itself."""
    probes = [_modes(calls) for calls in ([("", "eval()")], [("", "train(False)")], [("", "eval()"), ("", "train()")],
                                          [("a", "eval()")], [("", "eval()"), ("d", "train()")])]
    probes.append(_tree("TREE", "net.train() is net, net.eval() is net",
                        lambda p, r: ([p.op("eq", p.method(r, "train"), r), p.op("eq", p.method(r, "eval"), r)], ["net.train() is net", "net.eval() is net"])))
    ctx.equivalent(probes)


@check("a0", "shared_submodules", kind="equivalence")
def shared_submodules(ctx: CheckContext) -> None:
    """A module or a Parameter registered twice is listed once (under its first name),
    twice with remove_duplicate=False."""
    probes = [_named_modules("SHARED", kw) for kw in ({}, {"remove_duplicate": False})]
    probes += [_named_parameters("SHARED", kw) for kw in ({}, {"remove_duplicate": False})]
    probes.append(_parameters("SHARED"))
    probes.append(_modes_shared())
    ctx.equivalent(probes)


def _modes_shared() -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        p.method(r, "eval")
        return [p.attr(_node(p, r, path), "training") for path in MODULES["SHARED"]], [f"{x or 'root'}.training" for x in MODULES["SHARED"]]
    return _tree("SHARED", "root.eval(), then the training flags", build)


__all__: list[str] = []
