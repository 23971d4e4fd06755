"""Hidden checks of task 1.3, the chain rule: each ScalarFunction's backward against the
reference, `Scalar.chain_rule` against the student's own backward, and derivatives of
whole expressions against central differences of the student's own forward.

None of them needs task 1.2's operators or task 1.4's backpropagation: expressions are
built with ``F.apply`` (`graphs`), and the gradient check backpropagates here, in the
parent, what the student's chain_rule gives at each node. The graphs leave out LT and EQ
(their backward is checked on its own), so a comparison whose forward returns a bool costs
1.2 only. A backward reads what its forward saved, so a forward that saves a wrong value
(Exp and Sigmoid save their result) still makes a backward wrong in the student's tree; 1.2's
`forwards_save_for_backward` charges that to 1.2, and the default grade runs these checks
again after the reference's forward (`grader.grading.one_charge`).
"""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError, check, inputs_text
from ..compare import Shown
from ..probe import Answer, Probe, Tol, describe, diff
from . import graphs as G
from .common import SF, backward_after_forward


@check("1.3", "function_backwards", kind="equivalence")
def function_backwards(ctx: CheckContext) -> None:
    """Each ScalarFunction's backward(ctx, d) after its forward on the same ctx, for two d,
    against the reference."""
    ctx.equivalent(backward_after_forward(), Tol(rtol=1e-9, atol=1e-12))


#: z = F.apply(…) with leaves and Python numbers (constants, which chain_rule must pair too);
#: few functions, so that a forward of 1.2 that raises stops this check as rarely as possible.
CHAIN_CASES: list[G.Graph] = [
    [("x", "leaf", [2.0]), ("y", "leaf", [3.0]), ("o", "Mul", ["x", "y"])],
    [("x", "leaf", [2.0]), ("o", "Mul", ["x", 4.0])],
    [("y", "leaf", [-1.5]), ("o", "Add", [2.5, "y"])],
    [("x", "leaf", [2.0]), ("c", "const", [3.0]), ("o", "Mul", ["c", "x"])],
    [("x", "leaf", [-0.5]), ("o", "Inv", ["x"])],
    [("x", "leaf", [1.5]), ("a", "Neg", ["x"]), ("o", "Mul", ["a", "x"])],
]


def _chain_rule_probe(graph: G.Graph, d: float) -> Probe:
    cls = graph[-1][1]
    p = Probe(f"list(z.chain_rule({d})) for {G.describe(graph).replace('o = ', 'z = ')}")
    nodes = G.build(p, graph)
    z = nodes["o"]
    pairs = p.list(p.method(z, "chain_rule", d))
    h = p.attr(z, "history")
    own = p.call(p.attr(p.get(f"{SF}.{cls}"), "_backward"), p.attr(h, "ctx"), d)
    return p.returns(
        p.project(pairs, [0, "unique_id"]),
        p.project(pairs, [1]),
        p.project(p.attr(h, "inputs"), ["unique_id"]),
        own,
    )


@check("1.3", "chain_rule", kind="property")
def chain_rule(ctx: CheckContext) -> None:
    """chain_rule(d) pairs every input of the node (constants included), in order, with
    the derivative that the node's own backward gives for d."""
    d = 0.75
    probes = [_chain_rule_probe(graph, d) for graph in CHAIN_CASES]
    cls = [graph[-1][1] for graph in CHAIN_CASES]

    def validate(k: int, a: Answer) -> None:
        p = probes[k]
        if a.error is not None:
            raise StudentError(p.label, a.error, expected="one (input, derivative) pair per input of z")
        pair_ids, ders, input_ids, own = a.values
        n = len(input_ids)
        if len(pair_ids) != n:
            raise CheckFailed(
                f"{p.label}: {len(pair_ids)} pair(s) for the {n} inputs of z: pair every input, "
                "constants included (backpropagate skips the constants)",
                f"z.history.inputs: {n} Scalars",
            )
        for i, (got, want) in enumerate(zip(pair_ids, input_ids)):
            if got != want:
                raise CheckFailed(
                    f"{p.label}: pair {i} does not hold input {i} of z (z.history.inputs[{i}]): pair the inputs in order"
                )
        problem = diff(list(own), list(ders), Tol(rtol=1e-12, atol=0.0))
        if problem:
            raise CheckFailed(
                f"{p.label}: the derivatives differ from {cls[k]}.backward(ctx, {d}) for z's own ctx ({problem})",
                f"{cls[k]}._backward(z.history.ctx, {d}) = {describe(own)}\nyour pairs' derivatives: {describe(ders)}",
            )

    G.run_checked(ctx, probes, lambda run: validate)


#: Expressions as graphs (the output is o); values away from kinks and log(≤ 0).
EXPRESSIONS: list[tuple[str, G.Graph]] = [
    (
        "x * y + x",
        [("x", "leaf", [2.0]), ("y", "leaf", [3.0]), ("a", "Mul", ["x", "y"]), ("o", "Add", ["a", "x"])],
    ),
    ("(x * x).sigmoid()", [("x", "leaf", [0.7]), ("a", "Mul", ["x", "x"]), ("o", "Sigmoid", ["a"])]),
    (
        "(x + y).log()",
        [("x", "leaf", [1.5]), ("y", "leaf", [0.25]), ("a", "Add", ["x", "y"]), ("o", "Log", ["a"])],
    ),
    ("x.exp() * x", [("x", "leaf", [-0.3]), ("a", "Exp", ["x"]), ("o", "Mul", ["a", "x"])]),
    (
        "x / y - y",
        [
            ("x", "leaf", [2.0]),
            ("y", "leaf", [-1.5]),
            ("i", "Inv", ["y"]),
            ("a", "Mul", ["x", "i"]),
            ("n", "Neg", ["y"]),
            ("o", "Add", ["a", "n"]),
        ],
    ),
    (
        "(x * 2.0 - 1.0).relu() * y",
        [
            ("x", "leaf", [1.25]),
            ("y", "leaf", [3.0]),
            ("a", "Mul", ["x", 2.0]),
            ("b", "Add", ["a", -1.0]),
            ("r", "ReLU", ["b"]),
            ("o", "Mul", ["r", "y"]),
        ],
    ),
    (
        "3.0 / (x * x + 1.0)",
        [
            ("x", "leaf", [0.4]),
            ("a", "Mul", ["x", "x"]),
            ("b", "Add", ["a", 1.0]),
            ("i", "Inv", ["b"]),
            ("o", "Mul", [3.0, "i"]),
        ],
    ),
    (
        "z = x * y; (z + z * x).sigmoid() + z.exp() * y",
        [
            ("x", "leaf", [0.5]),
            ("y", "leaf", [-1.2]),
            ("z", "Mul", ["x", "y"]),
            ("a", "Mul", ["z", "x"]),
            ("b", "Add", ["z", "a"]),
            ("s", "Sigmoid", ["b"]),
            ("e", "Exp", ["z"]),
            ("m", "Mul", ["e", "y"]),
            ("o", "Add", ["s", "m"]),
        ],
    ),
    (
        "-(x * y * w).exp() + w.log()",
        [
            ("x", "leaf", [0.3]),
            ("y", "leaf", [-0.4]),
            ("w", "leaf", [2.0]),
            ("a", "Mul", ["x", "y"]),
            ("b", "Mul", ["a", "w"]),
            ("e", "Exp", ["b"]),
            ("n", "Neg", ["e"]),
            ("l", "Log", ["w"]),
            ("o", "Add", ["n", "l"]),
        ],
    ),
]


@check("1.3", "gradient_check", kind="gradient")
def gradient_check(ctx: CheckContext) -> None:
    """Derivatives of expressions, backpropagated here from the student's chain_rule at each
    node (with a random upstream derivative d), against d · (o(leaf + ε) − o(leaf − ε)) / 2ε
    of the student's own forward."""
    eps = 1e-6
    cases = [
        (f"o = {label}", graph, float(np.round(ctx.rng.uniform(0.5, 2.0) * ctx.rng.choice([-1, 1]), 3)))
        for label, graph in EXPRESSIONS
    ]
    expected = G.expected_backprop(ctx.child, cases)
    probes: list[Probe] = []
    for label, graph, _ in cases:
        values = {name: ins[0] for name, op, ins in graph if op == "leaf"}
        for leaf, v in values.items():
            for sign in (1, -1):
                p = Probe(f"{label} with {leaf} {'+' if sign > 0 else '−'} ε (ε = {eps:g})")
                probes.append(p.returns(p.attr(G.build(p, graph, {leaf: v + sign * eps})["o"], "data")))
    answers = iter(zip(probes, ctx.child(probes)))
    for (label, graph, d), want in zip(cases, expected):
        values = {name: ins[0] for name, op, ins in graph if op == "leaf"}
        details = inputs_text({"graph": Shown(G.describe(graph)), **values}) + f"\nd_output = {d}"
        for leaf in values:
            (up_probe, up), (down_probe, down) = next(answers), next(answers)
            for probe, a in ((up_probe, up), (down_probe, down)):
                if a.error is not None:
                    raise StudentError(probe.label, a.error, details)
                if not isinstance(a.values[0], float):
                    raise CheckFailed(
                        f"{probe.label}: o.data is {describe(a.values[0])[:60]}, not a float", details
                    )
            numeric = d * (up.values[0] - down.values[0]) / (2 * eps)
            problem = diff(float(numeric), want.derivative[leaf], Tol(rtol=1e-4, atol=1e-6))
            if problem:
                raise CheckFailed(
                    f"{label}: the derivative for {leaf} from your chain_rule disagrees with the central difference of your forward ({problem})",
                    details
                    + f"\ncentral difference × d: {numeric:.10g}\nbackpropagated from your chain_rule: {want.derivative[leaf]:.10g}\n"
                    + want.text(),
                )
