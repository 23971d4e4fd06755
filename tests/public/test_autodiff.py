"""Stage A1, tasks 1.1 and 1.4: central differences, topological sort and backpropagation.

Sort and backpropagation are tested on a small stand-in node class (`Node`) that implements
the `Variable` protocol with fixed local derivatives, so these tests need nothing from
tasks 1.2/1.3; the worked examples at the end run the whole thing on Scalars.
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import Scalar, backpropagate, central_difference, topological_sort
from strategies import assert_close, fast, moderate_floats, small_floats

# ## Task 1.1: central difference


@pytest.mark.task1_1
@fast
@given(moderate_floats)
def test_central_difference_one_arg(x: float) -> None:
    assert_close(central_difference(lambda a: a * a, x), 2 * x, atol=1e-4)
    assert_close(central_difference(math.sin, x), math.cos(x), atol=1e-6)


@pytest.mark.task1_1
@fast
@given(moderate_floats, moderate_floats, moderate_floats)
def test_central_difference_picks_the_argument(x: float, y: float, z: float) -> None:
    def f(a: float, b: float, c: float) -> float:
        return a * b + math.sin(a) + 3.0 * c

    assert_close(central_difference(f, x, y, z, arg=0), y + math.cos(x), atol=1e-4)
    assert_close(central_difference(f, x, y, z, arg=1), x, atol=1e-4)
    assert_close(central_difference(f, x, y, z, arg=2), 3.0, atol=1e-4)


@pytest.mark.task1_1
def test_central_difference_is_centred() -> None:
    # For x³ the central difference is exactly 3x² + ε²; a one-sided one would be off by ~3xε.
    eps = 1e-3
    got = central_difference(lambda a: a**3, 1.0, epsilon=eps)
    assert abs(got - (3.0 + eps**2)) < 1e-9, got


# ---- a stand-in graph node implementing the Variable protocol ---------------------------

_ids = itertools.count(1)


class Node:
    """A graph node with fixed local derivatives ∂self/∂parent_i = local[i]."""

    def __init__(
        self, parents: Iterable["Node"] = (), local: Iterable[float] = (), constant: bool = False
    ) -> None:
        self.unique_id = next(_ids)
        self._parents = list(parents)
        self.local = list(local)
        self.constant = constant
        self.derivative: float | None = None
        self.chain_rule_calls = 0
        self.accumulate_calls = 0

    def __repr__(self) -> str:
        return f"Node{self.unique_id}"

    def is_leaf(self) -> bool:
        return not self._parents and not self.constant

    def is_constant(self) -> bool:
        return self.constant

    @property
    def parents(self) -> list["Node"]:
        return self._parents

    def accumulate_derivative(self, x: float) -> None:
        assert self.is_leaf(), f"accumulate_derivative called on non-leaf {self}"
        self.accumulate_calls += 1
        self.derivative = (self.derivative or 0.0) + x

    def chain_rule(self, d_output: float) -> list[tuple["Node", float]]:
        self.chain_rule_calls += 1
        return [(p, d_output * l) for p, l in zip(self._parents, self.local)]


@st.composite
def random_graphs(draw: st.DrawFn) -> list[Node]:
    """A random DAG: node i takes 1–3 parents (repeats allowed) among nodes 0..i−1.

    Returns all nodes; the last one is the output. Some of the first nodes are constants.
    """
    n_leaves = draw(st.integers(1, 4))
    nodes = [Node(constant=draw(st.booleans()) and i > 0) for i in range(n_leaves)]
    for _ in range(draw(st.integers(1, 12))):
        k = draw(st.integers(1, 3))
        parents = [nodes[draw(st.integers(0, len(nodes) - 1))] for _ in range(k)]
        local = [draw(st.floats(-2.0, 2.0)) for _ in range(k)]
        nodes.append(Node(parents, local))
    return nodes


def reachable(out: Node) -> set[int]:
    """Ids of the non-constant nodes `out` depends on (itself included)."""
    seen: set[int] = set()
    stack = [out]
    while stack:
        node = stack.pop()
        if node.constant or node.unique_id in seen:
            continue
        seen.add(node.unique_id)
        stack.extend(node.parents)
    return seen


# ## Task 1.4: topological sort


@pytest.mark.task1_4
@fast
@given(random_graphs())
def test_topological_sort_properties(nodes: list[Node]) -> None:
    out = nodes[-1]
    order = list(topological_sort(out))
    ids = [n.unique_id for n in order]
    assert order[0] is out, "the output comes first"
    assert len(ids) == len(set(ids)), "each node appears once"
    assert set(ids) == reachable(out), "exactly the non-constant nodes the output depends on"
    position = {n.unique_id: i for i, n in enumerate(order)}
    for node in order:
        for parent in node.parents:
            if not parent.constant:
                assert position[parent.unique_id] > position[node.unique_id], (
                    f"{node} must come before its input {parent}"
                )


@pytest.mark.task1_4
def test_topological_sort_diamond() -> None:
    x = Node()
    a = Node([x], [1.0])
    b = Node([x], [1.0])
    out = Node([a, b], [1.0, 1.0])
    order = topological_sort(out)
    assert order[0] is out and order[-1] is x
    assert {n.unique_id for n in order[1:3]} == {a.unique_id, b.unique_id}


@pytest.mark.task1_4
def test_topological_sort_skips_constants() -> None:
    x, c = Node(), Node(constant=True)
    out = Node([x, c], [1.0, 1.0])
    assert [n.unique_id for n in topological_sort(out)] == [out.unique_id, x.unique_id]


# ## Task 1.4: backpropagation


def reference_derivatives(nodes: list[Node], d: float) -> dict[int, float]:
    """∂out/∂node for every node: nodes are listed in dependency order, so one sweep from
    the end accumulates every path (an independent, index-based implementation)."""
    g = {n.unique_id: 0.0 for n in nodes}
    g[nodes[-1].unique_id] = d
    for node in reversed(nodes):
        for parent, local in zip(node.parents, node.local):
            g[parent.unique_id] += g[node.unique_id] * local
    return g


@pytest.mark.task1_4
@fast
@given(random_graphs(), st.floats(-3.0, 3.0))
def test_backpropagate_random_graphs(nodes: list[Node], d: float) -> None:
    out = nodes[-1]
    backpropagate(out, d)
    expected = reference_derivatives(nodes, d)
    live = reachable(out)
    for node in nodes:
        if node.unique_id not in live:
            assert node.chain_rule_calls == 0 and node.derivative is None, f"{node} is not used"
            continue
        if node.is_leaf():
            assert node.accumulate_calls == 1, f"leaf {node} should be given its total derivative once"
            assert_close(node.derivative, expected[node.unique_id], rtol=1e-9, atol=1e-9)
        elif not node.constant:
            assert node.chain_rule_calls == 1, f"{node} visited {node.chain_rule_calls} times"
    for node in nodes:
        if node.constant:
            assert node.derivative is None and node.chain_rule_calls == 0


@pytest.mark.task1_4
def test_backpropagate_diamond_and_reuse() -> None:
    x = Node()
    a = Node([x], [2.0])  # a = 2x
    b = Node([x, x], [3.0, 4.0])  # b uses x twice: ∂b/∂x = 7
    out = Node([a, b], [5.0, 6.0])  # out = 5a + 6b
    backpropagate(out, 1.0)
    assert x.derivative == 5.0 * 2.0 + 6.0 * 7.0
    assert a.chain_rule_calls == b.chain_rule_calls == out.chain_rule_calls == 1


@pytest.mark.task1_4
def test_backpropagate_long_chain_no_recursion_error() -> None:
    x = Node()
    node = x
    for _ in range(5000):
        node = Node([node], [1.0])
    backpropagate(node, 2.0)
    assert x.derivative == 2.0


# ---- the whole pipeline on Scalars -----------------------------------------------------


@pytest.mark.task1_4
def test_worked_example_sum_times() -> None:
    # f(x, y, z) = (x + y) · z
    x, y, z = Scalar(-2.0), Scalar(5.0), Scalar(-4.0)
    f = (x + y) * z
    assert f.data == -12.0
    f.backward()
    assert (x.derivative, y.derivative, z.derivative) == (-4.0, -4.0, 3.0)


@pytest.mark.task1_4
def test_worked_example_neuron() -> None:
    # σ(w0·x0 + w1·x1 + w2) with w = (2, −3, −3), x = (−1, −2)
    w0, w1, w2 = Scalar(2.0), Scalar(-3.0), Scalar(-3.0)
    x0, x1 = Scalar(-1.0), Scalar(-2.0)
    dot = w0 * x0 + w1 * x1 + w2
    out = dot.sigmoid()
    assert_close(out.data, 0.7310585786300049, atol=1e-12)
    out.backward()
    local = out.data * (1 - out.data)
    assert round(local, 2) == 0.20
    assert round(w0.derivative, 2) == -0.20
    assert round(x0.derivative, 2) == 0.39
    assert round(w1.derivative, 2) == -0.39
    assert round(x1.derivative, 2) == -0.59
    assert round(w2.derivative, 2) == 0.20


@pytest.mark.task1_4
@fast
@given(small_floats)
def test_scalar_used_twice(a: float) -> None:
    x = Scalar(a)
    (x * x + x).backward()
    assert_close(x.derivative, 2 * a + 1, rtol=1e-9, atol=1e-9)


@pytest.mark.task1_4
@fast
@given(small_floats, small_floats)
def test_scalar_diamond(a: float, b: float) -> None:
    x, y = Scalar(a), Scalar(b)
    s = x + y  # shared sub-expression
    out = s * s + s * 3.0
    out.backward()
    expected = 2 * (a + b) + 3.0
    assert_close(x.derivative, expected, rtol=1e-9, atol=1e-9)
    assert_close(y.derivative, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.task1_4
def test_scalar_long_chain() -> None:
    x = Scalar(1.5)
    c = x
    for _ in range(2500):  # 5000 operations
        c = c * 1.0001 + x
    c.backward()
    # c_n = 1.0001·c_{n−1} + x  ⇒  ∂c_n/∂x = Σ_{k=0}^{n} 1.0001^k
    expected = sum(1.0001**k for k in range(2501))
    assert_close(x.derivative, expected, rtol=1e-9)


@pytest.mark.task1_4
def test_constants_get_no_derivative() -> None:
    x = Scalar(2.0)
    c = Scalar(3.0, history=None)
    out = x * c + 4.0
    out.backward()
    assert x.derivative == 3.0
    assert c.derivative is None
    const = out.history.inputs[1]
    assert const.is_constant() and const.derivative is None


@pytest.mark.task1_4
def test_derivatives_accumulate_across_backward_calls() -> None:
    x = Scalar(2.0)
    (x * 3.0).backward()
    (x * 4.0).backward(0.5)
    assert x.derivative == 3.0 + 2.0


@pytest.mark.task1_4
def test_backward_of_a_constant_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="constant"):
        (Scalar(1.0, history=None) * 2.0).backward()


@pytest.mark.task1_4
def test_topological_sort_on_scalars() -> None:
    x, y = Scalar(1.0), Scalar(2.0)
    s = x * y
    out = s + s.log() + 1.0
    order = topological_sort(out)
    assert order[0] is out
    ids = [n.unique_id for n in order]
    assert len(ids) == len(set(ids))
    assert {x.unique_id, y.unique_id, s.unique_id} <= set(ids)
    assert all(not n.is_constant() for n in order)
    assert ids.index(s.unique_id) < ids.index(x.unique_id)
