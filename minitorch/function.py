"""Stage A2: how a tensor operation takes part in autodiff — `Function`, `History`, grad mode.

A differentiable tensor operation is a `Function`: a `forward` that computes the value and a
`backward` that turns ∂L/∂out into ∂L/∂input for every input, exactly like
`torch.autograd.Function`:

    forward(ctx, *args) -> Tensor            args may mix tensors and plain Python values
    backward(ctx, grad_output) -> one gradient per forward argument (None for non-tensors)

`Function.apply` runs `forward` without recording (so forward may use any tensor code) and,
when an input requires a gradient, records *one* graph node for the whole function: the
output's `History` holds the function, its saved context and its inputs. Backpropagation
(`autodiff.backpropagate`) later walks these records backwards.

Grad mode: inside `with no_grad():` nothing is recorded (as `torch.no_grad()`); optimizers
and evaluation loops use it, and so does backpropagation itself.

Import order (no cycles): `function` → `tensor_functions` → `tensor`. This module knows
tensors only by what autodiff needs from them, so it never imports `tensor`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from . import write_stamps
from .autodiff import Context

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Function", "History", "grad_enabled", "no_grad"]


# ## Gradient mode

_grad_enabled = True


def grad_enabled() -> bool:
    """Whether operations are being recorded for backpropagation."""
    return _grad_enabled


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Context manager: inside it, no operation is recorded (as `torch.no_grad()`)."""
    global _grad_enabled
    previous = _grad_enabled
    _grad_enabled = False
    try:
        yield
    finally:
        _grad_enabled = previous


# ## The graph record


@dataclass
class History:
    """How a tensor was made: the Function, its context and its inputs.

    A leaf that requires a gradient has a History with `last_fn` None; a tensor that needs
    no gradient has no History at all.
    """

    last_fn: Optional[type["Function"]] = None
    ctx: Optional[Context] = None
    inputs: Sequence[Any] = field(default_factory=tuple)


def is_tensor(value: Any) -> bool:
    """Whether `value` is a tensor (it has a storage and may carry a History).

    Function arguments mix tensors with plain values (a dimension, a shape, a dtype); only
    tensors can require gradients.
    """
    return hasattr(value, "_tensor") and hasattr(value, "history")


# ## The Function base class


class Function:
    """Base class of differentiable tensor functions (subclass, then call `.apply`)."""

    @staticmethod
    def forward(ctx: Context, *args: Any) -> "Tensor":
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> "Tensor":
        """out = forward(ctx, *args), recorded as one graph node when an input needs a gradient.

        Every tensor operation passes through here, so it is written for speed: a plain loop
        instead of `any(...)`, and grad mode switched off around `forward` by hand rather
        than with the `no_grad()` context manager (same effect, a few µs less per call).
        """
        global _grad_enabled
        need_grad = False
        if _grad_enabled:
            for a in args:
                if getattr(a, "history", None) is not None and is_tensor(a):
                    need_grad = True
                    break
        ctx = Context(no_grad=not need_grad)
        previous, _grad_enabled = _grad_enabled, False
        try:
            out = cls.forward(ctx, *args)
        finally:
            _grad_enabled = previous
        if not is_tensor(out):
            raise TypeError(f"{cls.__name__}.forward must return a Tensor, got {type(out).__name__}")
        if need_grad:
            ctx.ran_at = write_stamps.clock()
            out.history = History(cls, ctx, args)
        return out
