"""Stage A1: the differentiable functions of one or two numbers that `Scalar` is built on.

Each function is a class with two static methods working on plain floats:

* `forward(ctx, *inputs) -> float` computes the value and may save what backward needs
  with `ctx.save_for_backward(...)`;
* `backward(ctx, d_output) -> float | tuple[float, ...]` receives d = ∂out/∂(this result)
  and returns ∂out/∂input_i = d · ∂f/∂input_i, one per input (the chain rule).

`ScalarFunction.apply` does the bookkeeping: it unwraps Scalars into floats, calls forward,
and wraps the result in a new Scalar that remembers the function, the context and the
inputs (its `history`), so that backpropagation can later call backward.

Subtraction and division need no classes of their own: a − b = a + (−b), a / b = a · (1/b).
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

from . import operators
from .autodiff import Context

if TYPE_CHECKING:
    from .scalar import Scalar


def wrap_tuple(x: Any) -> tuple[Any, ...]:
    """`x` as a tuple: backward of a one-input function may return a bare float."""
    if isinstance(x, tuple):
        return x
    return (x,)


class ScalarFunction:
    """Base class of the differentiable scalar functions (subclasses define forward/backward)."""

    @classmethod
    def _forward(cls, ctx: Context, *inputs: float) -> float:
        out = cls.forward(ctx, *inputs)
        if isinstance(out, bool) or not isinstance(out, (float, int)):
            raise TypeError(f"{cls.__name__}.forward must return a float, got {type(out).__name__} ({out!r})")
        return float(out)

    @classmethod
    def _backward(cls, ctx: Context, d_output: float) -> tuple[float, ...]:
        grads = wrap_tuple(cls.backward(ctx, d_output))
        n_inputs = _arity(cls)
        if len(grads) != n_inputs:
            raise ValueError(
                f"{cls.__name__}.backward returned {len(grads)} derivative(s) "
                f"for {n_inputs} input(s): return one per argument of forward"
            )
        for i, g in enumerate(grads):
            if isinstance(g, bool) or not isinstance(g, (float, int)):
                raise TypeError(
                    f"{cls.__name__}.backward: the derivative for input {i} must be a float, "
                    f"got {type(g).__name__} ({g!r})"
                )
        return tuple(float(g) for g in grads)

    @classmethod
    def apply(cls, *vals: "Scalar | float") -> "Scalar":
        """Call the function on Scalars or numbers and record how the result was made.

        Python numbers become constants (no history: they need no derivative). If every
        input is a constant, so is the result.
        """
        from .scalar import Scalar, ScalarHistory  # scalar.py imports this module

        scalars = [v if isinstance(v, Scalar) else Scalar(v, history=None) for v in vals]
        needs_grad = any(s.history is not None for s in scalars)
        ctx = Context(no_grad=not needs_grad)
        out = cls._forward(ctx, *(s.data for s in scalars))
        history = ScalarHistory(cls, ctx, tuple(scalars)) if needs_grad else None
        return Scalar(out, history=history)

    @staticmethod
    def forward(ctx: Context, *inputs: float) -> float:
        raise NotImplementedError("ScalarFunction subclasses define forward")

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float | tuple[float, ...]:
        raise NotImplementedError("ScalarFunction subclasses define backward")


@functools.lru_cache(maxsize=None)
def _arity(cls: type) -> int:
    """How many inputs `cls.forward(ctx, ...)` takes."""
    return len(inspect.signature(cls.forward).parameters) - 1


class Add(ScalarFunction):
    """f(a, b) = a + b;  ∂f/∂a = 1, ∂f/∂b = 1."""

    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """a + b."""
        # BEGIN SOLUTION 1.2
        return operators.add(a, b)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> tuple[float, float]:
        """(d, d)."""
        # BEGIN SOLUTION 1.3
        return d_output, d_output
        # END SOLUTION 1.3


class Mul(ScalarFunction):
    """f(a, b) = a · b;  ∂f/∂a = b, ∂f/∂b = a."""

    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """a · b (saves a and b)."""
        # BEGIN SOLUTION 1.2
        ctx.save_for_backward(a, b)
        return operators.mul(a, b)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> tuple[float, float]:
        """(d · b, d · a)."""
        # BEGIN SOLUTION 1.3
        a, b = ctx.saved_values
        return operators.mul(b, d_output), operators.mul(a, d_output)
        # END SOLUTION 1.3


class Neg(ScalarFunction):
    """f(a) = −a;  f'(a) = −1."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """−a."""
        # BEGIN SOLUTION 1.2
        return operators.neg(a)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """−d."""
        # BEGIN SOLUTION 1.3
        return operators.neg(d_output)
        # END SOLUTION 1.3


class Inv(ScalarFunction):
    """f(a) = 1/a;  f'(a) = −1/a²."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """1 / a (saves a)."""
        # BEGIN SOLUTION 1.2
        ctx.save_for_backward(a)
        return operators.inv(a)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """−d / a²."""
        # BEGIN SOLUTION 1.3
        (a,) = ctx.saved_values
        return operators.inv_back(a, d_output)
        # END SOLUTION 1.3


class Log(ScalarFunction):
    """f(a) = ln a;  f'(a) = 1/a."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """ln a (saves a)."""
        # BEGIN SOLUTION 1.2
        ctx.save_for_backward(a)
        return operators.log(a)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """d / a."""
        # BEGIN SOLUTION 1.3
        (a,) = ctx.saved_values
        return operators.log_back(a, d_output)
        # END SOLUTION 1.3


class Exp(ScalarFunction):
    """f(a) = eᵃ;  f'(a) = eᵃ (save the output, not the input)."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """eᵃ (saves the result)."""
        # BEGIN SOLUTION 1.2
        out = operators.exp(a)
        ctx.save_for_backward(out)
        return out
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """d · eᵃ."""
        # BEGIN SOLUTION 1.3
        (out,) = ctx.saved_values
        return operators.mul(out, d_output)
        # END SOLUTION 1.3


class Sigmoid(ScalarFunction):
    """f(a) = σ(a) = 1/(1 + e⁻ᵃ);  f'(a) = σ(a)·(1 − σ(a))."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """σ(a) (saves the result)."""
        # BEGIN SOLUTION 1.2
        out = operators.sigmoid(a)
        ctx.save_for_backward(out)
        return out
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """d · σ(a) · (1 − σ(a))."""
        # BEGIN SOLUTION 1.3
        (s,) = ctx.saved_values
        return d_output * s * (1.0 - s)
        # END SOLUTION 1.3


class ReLU(ScalarFunction):
    """f(a) = max(0, a);  f'(a) = 1 if a > 0 else 0."""

    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """max(0, a) (saves a)."""
        # BEGIN SOLUTION 1.2
        ctx.save_for_backward(a)
        return operators.relu(a)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> float:
        """d if a > 0 else 0."""
        # BEGIN SOLUTION 1.3
        (a,) = ctx.saved_values
        return operators.relu_back(a, d_output)
        # END SOLUTION 1.3


class LT(ScalarFunction):
    """f(a, b) = 1 if a < b else 0;  a step function: both derivatives are 0."""

    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """1.0 if a < b else 0.0."""
        # BEGIN SOLUTION 1.2
        return operators.lt(a, b)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> tuple[float, float]:
        """(0, 0)."""
        # BEGIN SOLUTION 1.3
        return 0.0, 0.0
        # END SOLUTION 1.3


class EQ(ScalarFunction):
    """f(a, b) = 1 if a == b else 0;  both derivatives are 0."""

    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """1.0 if a == b else 0.0."""
        # BEGIN SOLUTION 1.2
        return operators.eq(a, b)
        # END SOLUTION 1.2

    @staticmethod
    def backward(ctx: Context, d_output: float) -> tuple[float, float]:
        """(0, 0)."""
        # BEGIN SOLUTION 1.3
        return 0.0, 0.0
        # END SOLUTION 1.3
