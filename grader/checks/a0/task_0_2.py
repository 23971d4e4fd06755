"""Hidden checks of task 0.2: Map, zipWith and reduce."""

from __future__ import annotations

import re
from typing import Callable

from ..base import CheckContext, CheckFailed, StudentError, check, compare_answer
from ..probe import Answer, Probe, Ref
from .common import OPS, TOL, _type_name


LISTS = [[], [1.0], [1.0, 2.0], [3.0, -1.5, 2.0], [0.5, -0.25, 4.0, 8.0, -1.0]]


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


@check("0.2", "map", kind="equivalence")
def map_(ctx: CheckContext) -> None:
    """map(fn)(ls) returns the list [fn(x) for x in ls], for several fn and lists."""
    probes = []
    for ls in LISTS:
        for fn in MAP_FNS:
            probes.append(
                _hof(
                    f"map(math.{fn})({ls})",
                    lambda p, fn=fn, ls=ls: p.call(p.call(f"{OPS}.map", _math(p, fn)), ls),
                    True,
                )
            )
    ctx.equivalent(probes, TOL)


@check("0.2", "zip_with", kind="equivalence")
def zip_with(ctx: CheckContext) -> None:
    """zipWith(fn)(a, b) returns the list [fn(x, y) for x, y in zip(a, b)] (equal lengths)."""
    probes = []
    for ls in LISTS:
        rev = [x * 2 - 1 for x in reversed(ls)]
        for fn in ZIP_FNS:
            probes.append(
                _hof(
                    f"zipWith(math.{fn})({ls}, {rev})",
                    lambda p, fn=fn, ls=ls, rev=rev: p.call(p.call(f"{OPS}.zipWith", _math(p, fn)), ls, rev),
                    True,
                )
            )
    ctx.equivalent(probes, TOL)


@check("0.2", "reduce", kind="equivalence")
def reduce_(ctx: CheckContext) -> None:
    """reduce(fn, x0)([x1 … xn]) = fn(xn, … fn(x1, x0)): the start value, the order (atan2
    is not symmetric), the empty list, and any iterable (an iterator too)."""
    probes = []
    for ls in LISTS:
        for fn, start in REDUCE_FNS:
            probes.append(
                _hof(
                    f"reduce(math.{fn}, {start})({ls})",
                    lambda p, fn=fn, start=start, ls=ls: p.call(
                        p.call(f"{OPS}.reduce", _math(p, fn), start), ls
                    ),
                )
            )
    for ls in LISTS[2:]:
        probes.append(
            _hof(
                f"reduce(math.atan2, 0.0)(iter({ls}))",
                lambda p, ls=ls: p.call(
                    p.call(f"{OPS}.reduce", _math(p, "atan2"), 0.0), p.method(p.const(ls), "__iter__")
                ),
            )
        )
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


@check("0.2", "list_functions", kind="equivalence")
def list_functions(ctx: CheckContext) -> None:
    """negList and addLists (lists), sum and prod, empty lists included (sum([]) = 0.0,
    prod([]) = 1.0), compared with what your own neg / add / mul give element by element
    (so a mistake in an operator of task 0.1 is not charged again here)."""
    cases: list[tuple[Probe, Probe]] = []  # (the list function, your operator on each element)
    for ls in LISTS:
        rev = [x * 2 - 1 for x in reversed(ls)]
        cases.append(
            (
                _hof(f"negList({ls})", lambda p, ls=ls: p.call(f"{OPS}.negList", ls), True),
                _own_operator_values(Probe(f"[neg(x) for x in {ls}]"), "neg", [(x,) for x in ls]),
            )
        )
        cases.append(
            (
                _hof(
                    f"addLists({ls}, {rev})",
                    lambda p, ls=ls, rev=rev: p.call(f"{OPS}.addLists", ls, rev),
                    True,
                ),
                _own_operator_values(
                    Probe(f"[add(x, y) for x, y in zip({ls}, {rev})]"), "add", list(zip(ls, rev))
                ),
            )
        )
        cases.append(
            (
                _hof(f"sum({ls})", lambda p, ls=ls: p.call(f"{OPS}.sum", ls)),
                _folded(Probe(f"sum({ls}) with your add"), "add", 0.0, ls),
            )
        )
        cases.append(
            (
                _hof(f"prod({ls})", lambda p, ls=ls: p.call(f"{OPS}.prod", ls)),
                _folded(Probe(f"prod({ls}) with your mul"), "mul", 1.0, ls),
            )
        )
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


@check("0.2", "zip_with_unequal_lengths", kind="property")
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
