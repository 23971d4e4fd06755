"""Scalar graphs for the checks of tasks 1.3 and 1.4, built with `ScalarFunction.apply` only.

A graph is a list of nodes ``(name, op, inputs)``, each after the nodes it is computed from::

    [("x", "leaf", [2.0]), ("c", "const", [4.0]), ("a", "Mul", ["x", "c"]), ("o", "Add", ["a", 2.5])]

``leaf`` is ``Scalar(v)``, ``const`` is ``Scalar(v, history=None)``, any other op is the
ScalarFunction of that name applied to earlier nodes or to Python numbers (which `apply`
turns into constants). Building with ``Mul.apply(x, c)`` rather than ``x * c`` keeps the
checks of 1.3 and 1.4 off the student's Scalar operators (task 1.2); the student's forwards
still run, so a forward that *raises* still stops them.

`expected_backprop` asks the child what the student's chain_rule gives at every interior
node, called with the derivative that node must receive, and adds up here, in the parent,
what backpropagation must then give every node: so the gradient check of 1.3 needs no
`backpropagate` (task 1.4), and what 1.4 must produce follows from the student's own
chain_rule and backward (task 1.3), right or wrong: a wrong backward costs 1.3 only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..base import CheckContext, CheckFailed, GraderBug, StudentError
from ..probe import Answer, Probe, Ref


MT = "minitorch"
SF = "minitorch.scalar_functions"

Node = tuple[str, str, Sequence[Any]]
Graph = list[Node]


def constants(graph: Graph) -> set[str]:
    """Names of the constant nodes: ``const`` ones and those computed from constants only."""
    out: set[str] = set()
    for name, op, ins in graph:
        if op == "const" or (op != "leaf" and all(not isinstance(i, str) or i in out for i in ins)):
            out.add(name)
    return out


def interior(graph: Graph) -> list[str]:
    """The nodes made by a function that need a derivative (chain_rule can be called on them)."""
    const = constants(graph)
    return [name for name, op, _ in graph if op not in ("leaf", "const") and name not in const]


def leaves(graph: Graph) -> list[str]:
    return [name for name, op, _ in graph if op == "leaf"]


def reachable(graph: Graph, out: str = "o") -> set[str]:
    """The non-constant nodes `out` depends on, `out` included."""
    const, ins = constants(graph), {name: node_ins for name, _, node_ins in graph}
    seen: set[str] = set()
    stack = [out]
    while stack:
        name = stack.pop()
        if name in seen or name in const:
            continue
        seen.add(name)
        stack.extend(i for i in ins[name] if isinstance(i, str))
    return seen


def describe(graph: Graph, limit: int = 14) -> str:
    """``x = Scalar(2.0); a = Mul.apply(x, c); …`` (the first `limit` nodes)."""
    parts = []
    for name, op, ins in graph[:limit]:
        if op == "leaf":
            parts.append(f"{name} = Scalar({ins[0]!r})")
        elif op == "const":
            parts.append(f"{name} = Scalar({ins[0]!r}, history=None)")
        else:
            parts.append(
                f"{name} = {op}.apply({', '.join(i if isinstance(i, str) else repr(i) for i in ins)})"
            )
    if len(graph) > limit:
        parts.append(f"… ({len(graph) - limit} more nodes, the same way)")
    return "; ".join(parts)


def build(p: Probe, graph: Graph, values: Optional[dict[str, float]] = None) -> dict[str, Ref]:
    """Add the graph to probe `p` (leaf values overridden by `values`); registers by name."""
    nodes: dict[str, Ref] = {}
    fns: dict[str, Ref] = {}
    scalar = p.get(f"{MT}.Scalar")
    for name, op, ins in graph:
        if op == "leaf":
            nodes[name] = p.call(scalar, (values or {}).get(name, ins[0]))
        elif op == "const":
            nodes[name] = p.call(scalar, ins[0], history=None)
        else:
            if op not in fns:
                fns[op] = p.attr(p.get(f"{SF}.{op}"), "apply")
            nodes[name] = p.call(fns[op], *[nodes[i] if isinstance(i, str) else i for i in ins])
    return nodes


def node_ids(p: Probe, nodes: dict[str, Ref]) -> Ref:
    """The unique_id of every node, in graph order (`unique_id` is not the student's code)."""
    return p.project(p.const(list(nodes.values())), ["unique_id"])


Run = Callable[[Sequence[Probe]], list[Answer]]


def levels(graph: Graph, out: str = "o") -> list[list[str]]:
    """The interior nodes `out` depends on, by their longest distance from `out`: every node
    comes in a later level than all the nodes that use it."""
    inner, reach = set(interior(graph)), reachable(graph, out)
    level = {out: 0}
    for name, _, ins in reversed(graph):  # users come after their inputs in a graph
        for i in ins:
            if name in level and isinstance(i, str) and i in reach:
                level[i] = max(level.get(i, 0), level[name] + 1)
    groups = [
        [n for n, _, _ in graph if n in inner and level.get(n) == k] for k in range(max(level.values()) + 1)
    ]
    return [g for g in groups if g]


@dataclass
class Expected:
    """What backpropagating d from o must give, asked of the student's own chain_rule.

    Attributes:
        derivative: ∂o/∂node · d for every node (0 where o does not depend on it).
        calls: (node, the derivative it received, [(input, derivative chain_rule gave)]).
    """

    derivative: dict[str, float]
    calls: list[tuple[str, float, list[tuple[str, float]]]]

    def text(self, limit: int = 12) -> str:
        lines = [
            f"  {node}.chain_rule({d:.6g}) → " + ", ".join(f"({x}, {der:.6g})" for x, der in pairs)
            for node, d, pairs in self.calls[:limit]
        ]
        return "\n".join(
            ["what your chain_rule gives at each node:", *lines]
            + (["  …"] if len(self.calls) > limit else [])
        )


def expected_backprop(run: Run, cases: Sequence[tuple[str, Graph, float]]) -> list[Expected]:
    """For each (label, graph, d): call the student's chain_rule at every interior node once,
    with the sum of what the nodes using it passed back, exactly as backpropagate must;
    level by level (one batch of probes per level, all graphs together). So the result
    follows the student's own backward even where it is wrong, say ignores d_output."""
    out = [Expected({name: 0.0 for name, _, _ in graph} | {"o": d}, []) for _, graph, d in cases]
    plans = [levels(graph) for _, graph, _ in cases]
    for depth in range(max(len(p) for p in plans)):
        batch = [(k, plans[k][depth]) for k in range(len(cases)) if depth < len(plans[k])]
        probes = []
        for k, names in batch:
            label, graph, _ = cases[k]
            p = Probe(
                f"{', '.join(f'{n}.chain_rule({out[k].derivative[n]:.6g})' for n in names)} for {label}"
            )
            nodes = build(p, graph)
            steps = []
            for name in names:
                pairs = p.list(p.method(nodes[name], "chain_rule", out[k].derivative[name]))
                steps += [p.project(pairs, [0, "unique_id"]), p.project(pairs, [1])]
            probes.append(p.returns(node_ids(p, nodes), *steps))
        for (k, names), p, answer in zip(batch, probes, run(probes)):
            graph = cases[k][1]
            if answer.error is not None:
                raise StudentError(
                    p.label, answer.error, f"graph: {describe(graph)}", expected="(input, derivative) pairs"
                )
            name_of = {i: name for (name, _, _), i in zip(graph, answer.values[0])}
            for j, name in enumerate(names):
                ids, ders = answer.values[1 + 2 * j], answer.values[2 + 2 * j]
                pairs = [
                    (name_of.get(i, "a constant"), float(der))
                    for i, der in zip(ids, ders)
                    if isinstance(der, (int, float))
                ]
                out[k].calls.append((name, out[k].derivative[name], pairs))
                for x, der in pairs:
                    if x in out[k].derivative:
                        out[k].derivative[x] += der
    return out


def run_checked(
    ctx: CheckContext,
    probes: Sequence[Probe],
    validator: Callable[[Run], Callable[[int, Answer], None]],
    reference: bool = True,
) -> None:
    """Run `probes` in the child and check each answer with ``validator(ctx.child)`` (which
    prepares its expectations with the run it is given, and raises CheckFailed /
    StudentError). With `reference`, the reference's answers must pass
    ``validator(ctx.reference)`` first: a check that the reference fails is a grader bug."""
    if reference:
        try:
            validate = validator(ctx.reference)
            for k, answer in enumerate(ctx.reference(probes)):
                validate(k, answer)
        except (CheckFailed, StudentError) as exc:
            raise GraderBug(f"the reference fails check {ctx.check.name}: {exc.message}") from exc
    validate = validator(ctx.child)
    for k, answer in enumerate(ctx.child(probes)):
        validate(k, answer)
