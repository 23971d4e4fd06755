"""Hidden checks of task 1.4: topological sort and backpropagation, on small graphs and on
a chain of 5,000 nodes (a recursive depth-first search exceeds the child's recursion limit,
Python's default of 1,000 frames, as it does in the public tests).

The graphs are built with ``F.apply`` (`graphs`) from Add and Mul only, so the student's
operators (1.2) are never used; only a forward of Add or Mul, or a chain_rule, that raises
can stop them.
Expected derivatives are computed here from what the student's own chain_rule reports at
each node (`graphs.expected_backprop`): a wrong backward (1.3) costs 1.3, not 1.4.

Calls are observed directly, as the public tests count them: each leaf's
``accumulate_derivative`` is replaced, for the probe, by the ``append`` of an empty list
(the list comes back), and each interior node's ``chain_rule`` by itself wrapped in
``functools.lru_cache`` (its ``cache_info()`` counts the calls). Backpropagation must call
chain_rule once per interior node and accumulate_derivative once per leaf, with the summed
derivative, and neither on constants or on nodes the output does not depend on.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Optional, Sequence

from ..base import CheckContext, CheckFailed, StudentError, check, inputs_text
from ..compare import Shown
from ..probe import Answer, Probe, Ref, Tol, describe, diff
from . import graphs as G


MT = "minitorch"
SF = "minitorch.scalar_functions"

DIAMOND: G.Graph = [
    ("x", "leaf", [2.0]),
    ("y", "leaf", [3.0]),
    ("c", "const", [4.0]),
    ("a", "Mul", ["x", "y"]),
    ("b", "Add", ["a", "x"]),
    ("e", "Mul", ["c", "a"]),
    ("o", "Add", ["b", "e"]),
]  # e = c * a: a constant first (a `break` at it would skip a)
WIDE: G.Graph = [
    ("x", "leaf", [0.5]),
    ("y", "leaf", [-1.5]),
    ("w", "leaf", [2.0]),
    ("k", "const", [3.0]),
    ("a", "Mul", ["x", "x"]),
    ("b", "Mul", ["a", "y"]),
    ("c", "Add", ["b", "a"]),
    ("d", "Mul", ["c", "c"]),
    ("e", "Mul", ["d", "w"]),
    ("f", "Add", ["e", "b"]),
    ("g", "Mul", ["f", "k"]),
    ("h", "Add", ["x", 1.5]),
    ("o", "Add", ["g", "h"]),
]
UNUSED: G.Graph = [  # y is a leaf o does not depend on; z is computed from constants only
    ("x", "leaf", [1.0]),
    ("y", "leaf", [2.0]),
    ("k", "const", [2.0]),
    ("m", "const", [5.0]),
    ("z", "Mul", ["k", "m"]),
    ("u", "Mul", ["y", "y"]),
    ("a", "Mul", ["x", "z"]),
    ("o", "Add", ["a", "x"]),
]


def chain(n: int, mixed: bool) -> G.Graph:
    """x, y, then n nodes each computed from the one before and y (Mul and Add alternating
    when `mixed`, Add only otherwise); the last one is o."""
    g: G.Graph = [("x", "leaf", [0.1]), ("y", "leaf", [1.0])]
    prev = "x"
    for i in range(n):
        cur = "o" if i == n - 1 else f"n{i}"
        g.append((cur, "Mul" if mixed and i % 2 == 0 else "Add", [prev, "y"]))
        prev = cur
    return g


GRAPHS = {"diamond": DIAMOND, "wide": WIDE, "unused": UNUSED, "chain of 30": chain(30, mixed=True)}
LONG = 5000
LONG_CHAIN = chain(LONG, mixed=False)


def _topo_probe(label: str, graph: G.Graph) -> Probe:
    p = Probe(f"topological_sort(o) for {label}", {"graph": Shown(G.describe(graph))})
    nodes = G.build(p, graph)
    order = p.call(f"{MT}.topological_sort", nodes["o"])
    return p.returns(
        p.attr(p.attr(order, "__class__"), "__name__"), p.project(order, ["unique_id"]), G.node_ids(p, nodes)
    )


def _check_order(p: Probe, graph: G.Graph, a: Answer) -> None:
    """`a` answers `_topo_probe`: a list of each node o depends on, once, inputs after users."""
    shown = inputs_text(p.inputs)
    if a.error is not None:
        raise StudentError(
            p.label,
            a.error,
            shown,
            expected=f"a list of the {len(G.reachable(graph))} nodes o depends on, o first",
        )
    kind, order_ids, ids = a.values
    if kind != "list":
        raise CheckFailed(
            f"{p.label}: expected a list, got a {kind} (the order is indexed: order[0] is o)", shown
        )
    name_of = {i: name for (name, _, _), i in zip(graph, ids)}
    order = [
        name_of.get(i, "a Scalar that is not a named node (a constant made from a Python number?)")
        for i in order_ids
    ]
    want = G.reachable(graph)
    text = shown + f"\nyour order: {', '.join(order[:20])}{' …' if len(order) > 20 else ''}"
    dupes = sorted(n for n, count in Counter(order).items() if count > 1)
    if dupes:
        raise CheckFailed(f"{p.label}: nodes listed more than once: {', '.join(dupes[:5])}", text)
    missing, extra = sorted(want - set(order)), sorted(set(order) - want)
    if missing:
        raise CheckFailed(f"{p.label}: missing {', '.join(missing[:5])}", text)
    if extra:
        raise CheckFailed(
            f"{p.label}: should not list {', '.join(extra[:5])} (constants and nodes o does not depend on are left out)",
            text,
        )
    if order[0] != "o":
        raise CheckFailed(
            f"{p.label}: the order starts with {order[0]}, not with o (the output comes first)", text
        )
    pos = {n: i for i, n in enumerate(order)}
    for name, op, ins in graph:
        for parent in ins:
            if isinstance(parent, str) and parent in pos and name in pos and pos[parent] < pos[name]:
                raise CheckFailed(
                    f"{p.label}: {parent} comes before {name}, which was computed from it", text
                )


@check("1.4", "topological_sort", kind="property")
def topological_sort(ctx: CheckContext) -> None:
    """topological_sort returns a list of every non-constant node the output depends on,
    once each, output first, each node before the nodes it was computed from (any valid
    order is accepted)."""
    items = list(GRAPHS.items())
    probes = [_topo_probe(f"the {name} graph", graph) for name, graph in items]
    G.run_checked(ctx, probes, lambda run: lambda k, a: _check_order(probes[k], items[k][1], a))


@check("1.4", "topological_sort_long_chain", kind="property")
def topological_sort_long_chain(ctx: CheckContext) -> None:
    """topological_sort on a chain of 5,000 nodes: no RecursionError (iterate with an
    explicit stack; the public tests use such a chain too)."""
    probes = [_topo_probe(f"a chain of {LONG} nodes", LONG_CHAIN)]
    G.run_checked(
        ctx, probes, lambda run: lambda k, a: _check_order(probes[k], LONG_CHAIN, a), reference=False
    )


def _backprop_probe(label: str, graph: G.Graph, d: float, long: bool = False) -> Probe:
    """backpropagate(o, d), answering the node ids, what each leaf's accumulate_derivative
    was called with, and how often each interior node's chain_rule was called. For a
    `long` chain, what o.chain_rule(1.0) gives (first) instead of the chain_rule counts."""
    p = Probe(f"backpropagate(o, {d}) for {label}", {"graph": Shown(G.describe(graph))})
    nodes = G.build(p, graph)
    first = []
    if long:
        pairs = p.list(p.method(nodes["o"], "chain_rule", 1.0))
        first = [p.project(pairs, [0, "unique_id"]), p.project(pairs, [1])]
    calls: list[Ref] = []
    for leaf in G.leaves(graph):
        calls.append(p.const([]))
        p.setattr(nodes[leaf], "accumulate_derivative", p.attr(calls[-1], "append"))
    counted = []
    for name in [] if long else G.interior(graph):
        # functools.lru_cache (as scalar_functions imports it) wraps chain_rule and counts its calls
        wrapper = p.call(p.call(f"{SF}.functools.lru_cache", None), p.attr(nodes[name], "chain_rule"))
        p.setattr(nodes[name], "chain_rule", wrapper)
        counted.append(wrapper)
    p.call(f"{MT}.backpropagate", nodes["o"], d)
    counts = [
        p.op("add", p.attr(info, "hits"), p.attr(info, "misses"))
        for info in (p.method(w, "cache_info") for w in counted)
    ]
    return p.returns(*first, G.node_ids(p, nodes), *calls, *counts)


def _check_chain_rule_calls(p: Probe, graph: G.Graph, counts: Sequence[int]) -> None:
    """Each interior node o depends on had its chain_rule called once, every other none."""
    live = G.reachable(graph)
    for name, count in zip(G.interior(graph), counts):
        want = 1 if name in live else 0
        if count != want:
            raise CheckFailed(
                f"{p.label}: chain_rule was called {count} time(s) on {name}, expected {want}"
                + (
                    ": visit each node once, with the sum of the derivatives that reach it"
                    if want
                    else f" (o does not depend on {name})"
                ),
                inputs_text(p.inputs),
            )


def _check_calls(
    p: Probe, graph: G.Graph, calls: Sequence[Any], want: Optional[dict[str, float]], note: str = ""
) -> None:
    """Each leaf o depends on got one accumulate_derivative call (with want[leaf] when
    known), every other leaf none."""
    live = G.reachable(graph)
    leaves = G.leaves(graph)
    wanted = ", ".join(
        f"{x}.accumulate_derivative({want[x]:.10g})" if want else x for x in leaves if x in live
    )
    shown = "\n".join(
        [
            inputs_text(p.inputs),
            f"expected one call on each leaf o depends on: {wanted}",
            "your calls: " + "; ".join(f"{x}: {describe(c)[:60]}" for x, c in zip(leaves, calls)),
        ]
    )
    for leaf, got in zip(leaves, calls):
        if leaf not in live:
            if got:
                raise CheckFailed(
                    f"{p.label}: accumulate_derivative was called on {leaf}, which o does not depend on",
                    shown,
                )
            continue
        total = f"{want[leaf]:.10g}" if want else ""
        if not got:
            raise CheckFailed(
                f"{p.label}: accumulate_derivative was never called on the leaf {leaf} "
                f"(expected once{', with ' + total if total else ''})",
                shown,
            )
        if len(got) > 1:
            raise CheckFailed(
                f"{p.label}: accumulate_derivative was called {len(got)} times on the leaf {leaf} ({describe(got)[:60]}): "
                f"call it once per leaf, with the derivatives of all paths summed{' (' + total + ')' if total else ''}",
                shown,
            )
        problem = diff(want[leaf], got[0], Tol(rtol=1e-9, atol=1e-12)) if want else None
        if problem:
            raise CheckFailed(
                f"{p.label}: the derivative given to {leaf}.accumulate_derivative: {problem}",
                shown + "\n" + note,
            )


@check("1.4", "backpropagate", kind="property")
def backpropagate(ctx: CheckContext) -> None:
    """backpropagate(o, d) calls accumulate_derivative once on every leaf o depends on, with
    its derivative summed over all paths (as the student's own chain_rule gives them), and
    on nothing else; and chain_rule once on every interior node o depends on."""
    cases = [
        (f"the {name} graph", graph, d) for (name, graph), d in zip(GRAPHS.items(), (1.0, -0.5, 2.0, 1.5))
    ]
    probes = [_backprop_probe(label, graph, d) for label, graph, d in cases]

    def validator(run: G.Run) -> Callable[[int, Answer], None]:
        expected = G.expected_backprop(run, cases)

        def validate(k: int, a: Answer) -> None:
            if a.error is not None:
                raise StudentError(
                    probes[k].label,
                    a.error,
                    inputs_text(probes[k].inputs),
                    expected="each leaf's accumulate_derivative called once, with its derivative",
                )
            graph, n = cases[k][1], len(G.leaves(cases[k][1]))
            _check_calls(probes[k], graph, a.values[1 : 1 + n], expected[k].derivative, expected[k].text())
            _check_chain_rule_calls(probes[k], graph, a.values[1 + n :])

        return validate

    G.run_checked(ctx, probes, validator)


@check("1.4", "backpropagate_long_chain", kind="property")
def backpropagate_long_chain(ctx: CheckContext) -> None:
    """backpropagate(o, 1.0) on a chain of 5,000 Add nodes: no RecursionError; x gets 1.0 and
    y its 5,000 contributions summed into one call (when Add's chain_rule gives (1, 1):
    a wrong Add.backward is 1.3's to report)."""
    probe = _backprop_probe(f"a chain of {LONG} nodes", LONG_CHAIN, 1.0, long=True)
    (a,) = ctx.child([probe])
    if a.error is not None:
        raise StudentError(
            probe.label,
            a.error,
            inputs_text(probe.inputs),
            expected="x.accumulate_derivative(1.0), y.accumulate_derivative(5000.0)",
        )
    pair_ids, ders, ids, *calls = a.values
    add_is_right = list(pair_ids) == [ids[-2], ids[1]] and list(ders) == [1.0, 1.0]  # o = Add.apply(n4998, y)
    _check_calls(probe, LONG_CHAIN, calls, {"x": 1.0, "y": float(LONG)} if add_is_right else None)
