"""Stage A1: reverse-mode automatic differentiation, shared by `Scalar` and `Tensor`.

A computation builds a graph: each value remembers the function that made it and that
function's inputs. `backpropagate` walks the graph from the output back to the leaves in
reverse topological order, applying the chain rule at each node

    ∂out/∂input_i  +=  ∂out/∂node · ∂node/∂input_i

and accumulating the result in every leaf that needs a gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

# ## Task 1.1: central difference


def central_difference(f: Callable[..., Any], *vals: Any, arg: int = 0, epsilon: float = 1e-6) -> Any:
    r"""Approximate the partial derivative of f with respect to argument `arg`:

        ∂f/∂x_arg ≈ (f(…, x_arg + ε, …) − f(…, x_arg − ε, …)) / (2ε)

    The error is O(ε²), against O(ε) for the one-sided difference.

    Args:
        f: a function of len(vals) numbers returning a number.
        *vals: the point x at which to differentiate.
        arg: which argument to perturb.
        epsilon: the step ε.
    """
    # BEGIN SOLUTION 1.1
    up = list(vals)
    down = list(vals)
    up[arg] = up[arg] + epsilon
    down[arg] = down[arg] - epsilon
    return (f(*up) - f(*down)) / (2.0 * epsilon)
    # END SOLUTION 1.1


class Variable(Protocol):
    """What backpropagation needs from a node (both `Scalar` and `Tensor` provide it)."""

    @property
    def unique_id(self) -> int: ...

    def accumulate_derivative(self, x: Any) -> None: ...

    def is_leaf(self) -> bool: ...

    def is_constant(self) -> bool: ...

    @property
    def parents(self) -> Iterable["Variable"]: ...

    def chain_rule(self, d_output: Any) -> Iterable[tuple["Variable", Any]]: ...


@dataclass
class Context:
    """Passed to a function's forward and backward: what forward saves, backward reads."""

    no_grad: bool = False
    saved_values: tuple[Any, ...] = field(default_factory=tuple)
    #: the count of in-place writes when the function ran (`inplace.py`: a saved tensor
    #: written after it makes backward refuse)
    ran_at: int = 0

    def save_for_backward(self, *values: Any) -> None:
        """Keep `values` for the backward pass (skipped when no gradient is needed)."""
        if self.no_grad:
            return
        self.saved_values = values

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        return self.saved_values


# ## Task 1.4: backpropagation


def topological_sort(variable: Variable) -> list[Variable]:
    """All non-constant nodes the output depends on, each once, output first.

    Every node appears before the nodes it was computed from, so when backpropagation
    reaches a node, every use of it has already sent its derivative back. Iterative
    depth-first search (no recursion limit on long graphs such as unrolled RNNs).
    """
    # BEGIN SOLUTION 1.4
    order: list[Variable] = []
    visited: set[int] = set()
    # (node, expanded?) pairs: a node is emitted after all its parents (post-order).
    stack: list[tuple[Variable, bool]] = [(variable, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node.unique_id in visited or node.is_constant():
            continue
        visited.add(node.unique_id)
        stack.append((node, True))
        if not node.is_leaf():
            for parent in node.parents:
                if parent.unique_id not in visited and not parent.is_constant():
                    stack.append((parent, False))
    order.reverse()  # post-order lists parents first; we want the output first
    return order
    # END SOLUTION 1.4


def backpropagate(variable: Variable, deriv: Any) -> None:
    """Run backpropagation from `variable`, whose derivative (∂out/∂variable) is `deriv`.

    Visits nodes in `topological_sort` order, holding one summed derivative per node; calls
    `chain_rule` on interior nodes and `accumulate_derivative` on leaves.
    """
    # BEGIN SOLUTION 1.4
    derivatives: dict[int, Any] = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = derivatives.pop(node.unique_id, None)
        if d is None:
            continue
        if node.is_leaf():
            node.accumulate_derivative(d)
            continue
        for parent, d_parent in node.chain_rule(d):
            if parent.is_constant():
                continue
            if parent.unique_id in derivatives:
                derivatives[parent.unique_id] = derivatives[parent.unique_id] + d_parent
            else:
                derivatives[parent.unique_id] = d_parent
    # END SOLUTION 1.4
