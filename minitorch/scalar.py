"""Stage A1: `Scalar`, a number that remembers how it was computed.

    x = Scalar(2.0); y = Scalar(3.0)
    z = x * y + x          # z.data == 8.0; z.history records Add(Mul(x, y), x)
    z.backward()           # x.derivative == 4.0 (= y + 1), y.derivative == 2.0 (= x)

Every Scalar has a `history`:

* a Scalar you create is a *leaf*: `ScalarHistory()` with no function; backward stores
  ∂out/∂leaf in its `.derivative`;
* a Scalar produced by a function has `ScalarHistory(last_fn, ctx, inputs)`;
* a *constant* (a Python number mixed into an expression, or a Scalar made with
  `history=None`) has `history = None` and never gets a derivative.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from .autodiff import Context, backpropagate, central_difference
from .scalar_functions import (
    EQ,
    LT,
    Add,
    Exp,
    Inv,
    Log,
    Mul,
    Neg,
    ReLU,
    ScalarFunction,
    Sigmoid,
)

__all__ = ["Scalar", "ScalarHistory", "ScalarFunction", "derivative_check"]

ScalarLike = Union[float, int, "Scalar"]

_ids = itertools.count(1)


@dataclass
class ScalarHistory:
    """How a Scalar was made: the function, its saved context and its inputs.

    All fields empty (the default) mark a leaf: a value created by the user.
    """

    last_fn: Optional[type[ScalarFunction]] = None
    ctx: Optional[Context] = None
    inputs: Sequence["Scalar"] = field(default_factory=tuple)


class Scalar:
    """A float that records the computation graph for reverse-mode differentiation.

    Attributes:
        data: the value.
        history: how it was made (see the module docstring); None for a constant.
        derivative: ∂out/∂self after `out.backward()` (leaves only; None before).
        unique_id: a number no other Scalar has (used to mark nodes as visited).
        name: a label for printing graphs.
    """

    __hash__ = object.__hash__  # `==` builds a Scalar, but Scalars still hash by identity

    def __init__(
        self,
        v: float,
        history: Optional[ScalarHistory] = ScalarHistory(),
        name: Optional[str] = None,
    ) -> None:
        if isinstance(v, Scalar):
            v = v.data
        self.unique_id: int = next(_ids)
        self.data: float = float(v)
        self.history: Optional[ScalarHistory] = (
            ScalarHistory() if history is not None and history.last_fn is None else history
        )
        self.derivative: Optional[float] = None
        self.name: str = name if name is not None else f"x{self.unique_id}"

    def __repr__(self) -> str:
        return f"Scalar({self.data})"

    def __float__(self) -> float:
        return self.data

    def __bool__(self) -> bool:
        return bool(self.data)

    @property
    def requires_grad(self) -> bool:
        """True unless this Scalar is a constant."""
        return self.history is not None

    def requires_grad_(self, requires_grad: bool = True) -> "Scalar":
        """Make this Scalar a leaf that receives a derivative (or, with False, a constant)."""
        self.history = ScalarHistory() if requires_grad else None
        return self

    # ---- Python operators ---------------------------------------------------------------
    # Task 1.2: build each from the ScalarFunctions (a − b = a + (−b), a / b = a · (1/b)).

    def __add__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Add.apply(self, b)
        # END SOLUTION 1.2

    def __radd__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Add.apply(b, self)
        # END SOLUTION 1.2

    def __sub__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Add.apply(self, Neg.apply(b))
        # END SOLUTION 1.2

    def __rsub__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Add.apply(b, Neg.apply(self))
        # END SOLUTION 1.2

    def __mul__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Mul.apply(self, b)
        # END SOLUTION 1.2

    def __rmul__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Mul.apply(b, self)
        # END SOLUTION 1.2

    def __truediv__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Mul.apply(self, Inv.apply(b))
        # END SOLUTION 1.2

    def __rtruediv__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Mul.apply(b, Inv.apply(self))
        # END SOLUTION 1.2

    def __neg__(self) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return Neg.apply(self)
        # END SOLUTION 1.2

    def __lt__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return LT.apply(self, b)
        # END SOLUTION 1.2

    def __gt__(self, b: ScalarLike) -> "Scalar":
        # BEGIN SOLUTION 1.2
        return LT.apply(b, self)
        # END SOLUTION 1.2

    def __eq__(self, b: ScalarLike) -> "Scalar":  # type: ignore[override]
        # BEGIN SOLUTION 1.2
        return EQ.apply(self, b)
        # END SOLUTION 1.2

    def log(self) -> "Scalar":
        """ln(self)."""
        # BEGIN SOLUTION 1.2
        return Log.apply(self)
        # END SOLUTION 1.2

    def exp(self) -> "Scalar":
        """e^self."""
        # BEGIN SOLUTION 1.2
        return Exp.apply(self)
        # END SOLUTION 1.2

    def sigmoid(self) -> "Scalar":
        """σ(self) = 1 / (1 + e^−self)."""
        # BEGIN SOLUTION 1.2
        return Sigmoid.apply(self)
        # END SOLUTION 1.2

    def relu(self) -> "Scalar":
        """max(0, self)."""
        # BEGIN SOLUTION 1.2
        return ReLU.apply(self)
        # END SOLUTION 1.2

    # ---- the Variable protocol used by backpropagate --------------------------------------

    def is_leaf(self) -> bool:
        """A leaf was created by the user (history without a function)."""
        return self.history is not None and self.history.last_fn is None

    def is_constant(self) -> bool:
        """A constant has no history and needs no derivative."""
        return self.history is None

    @property
    def parents(self) -> Sequence["Scalar"]:
        """The inputs of the function that made this Scalar (empty for leaves)."""
        if self.history is None:
            return ()
        return self.history.inputs

    def accumulate_derivative(self, x: float) -> None:
        """Add `x` to `.derivative` (leaves only): a value used twice gets both derivatives."""
        if not self.is_leaf():
            raise RuntimeError(
                f"accumulate_derivative on {self!r}: only leaves (Scalars created by the "
                "user) hold derivatives"
            )
        if self.derivative is None:
            self.derivative = 0.0
        self.derivative += x

    def chain_rule(self, d_output: float) -> Iterable[tuple["Scalar", float]]:
        r"""One step of the chain rule at this node.

        If this Scalar is f(x₁, …, xₙ) and d_output = ∂out/∂self, return the pairs
        (xᵢ, d_output · ∂f/∂xᵢ) for every input xᵢ, in order, using the backward of the
        function that made it (`history.last_fn._backward(history.ctx, d_output)`).
        """
        h = self.history
        if h is None or h.last_fn is None or h.ctx is None:
            raise RuntimeError(f"chain_rule on {self!r}: it was not made by a function")
        # BEGIN SOLUTION 1.3
        derivatives = h.last_fn._backward(h.ctx, d_output)
        return list(zip(h.inputs, derivatives))
        # END SOLUTION 1.3

    def backward(self, d_output: float = 1.0) -> None:
        """Backpropagate from this Scalar: every leaf it depends on gets ∂self/∂leaf · d_output
        added to its `.derivative`."""
        if self.history is None:
            raise RuntimeError(
                f"backward on a constant {self!r}: it does not depend on any Scalar that needs a derivative"
            )
        backpropagate(self, float(d_output))


def derivative_check(
    f: Callable[..., Any], *scalars: Scalar, d_output: float = 1.0, tol: float = 1e-2
) -> None:
    r"""Check the derivatives backward gives against central differences.

    Runs `f(*scalars).backward(d_output)` (the scalars' derivatives are reset first) and, for
    each argument i that needs a derivative, compares `scalars[i].derivative` with
    d_output · central_difference(f, …, arg=i). Raises AssertionError naming the function, the
    argument, the expected and the got derivative when |got − expected| > tol · (1 + |expected|).
    """
    name = getattr(f, "__name__", repr(f))
    for s in scalars:
        s.derivative = None
    out = f(*scalars)
    if not isinstance(out, Scalar):
        raise TypeError(f"derivative_check: {name} must return a Scalar, got {type(out).__name__}")
    if out.history is not None:
        out.backward(d_output)
    values = [s.data for s in scalars]

    def f_float(*xs: float) -> float:
        return f(*(Scalar(x) for x in xs)).data

    for i, s in enumerate(scalars):
        if s.is_constant():
            continue
        expected = d_output * central_difference(f_float, *values, arg=i)
        got = 0.0 if s.derivative is None else s.derivative
        if not abs(got - expected) <= tol * (1.0 + abs(expected)):  # False for nan too
            raise AssertionError(
                f"Derivative check failed for {name} at {tuple(values)}, argument {i}: "
                f"expected {expected:.6g} (central difference × d_output={d_output:.6g}), "
                f"got {got:.6g} from backward"
            )
