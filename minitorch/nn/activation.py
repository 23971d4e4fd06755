r"""Activation functions as modules (`nn.ReLU`, `nn.Tanh`, `nn.GELU`) and GELU (`F.gelu`), as in PyTorch.

**GELU** (Hendrycks & Gimpel, 2016), the activation of BERT and GPT, weights its input by
the probability that a standard normal variable is below it:

    gelu(x) = x · Φ(x) = x · ½ (1 + erf(x / √2))                            approximate="none"
    gelu(x) ≈ ½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))                        approximate="tanh"

    d gelu / dx = Φ(x) + x φ(x),   φ(x) = e^{−x²/2} / √(2π)

Unlike relu it is smooth, and slightly negative for negative x (its minimum is about
−0.17 at x ≈ −0.75). The scalar functions are in `minitorch.operators` (`gelu`,
`gelu_back`, `gelu_tanh`, `gelu_tanh_back`); the backends map them over a tensor
(`gelu_map`, `gelu_back_zip`, …) and `Gelu` below is the autograd function, written as
`tensor_functions.Tanh` is: forward = the backend map, backward = the backend zip of the
saved input with the incoming gradient.

`get_activation` turns the `activation` argument of the transformer layers ("relu",
"gelu" or a callable) into a function, as PyTorch's layers do.
"""

from __future__ import annotations

from typing import Callable, Union

from ..autodiff import Context
from ..fast_paths import replaceable
from ..function import Function
from ..module import Module
from ..tensor import Tensor
from .validation import check_float

__all__ = ["gelu", "Gelu", "GELU", "ReLU", "Tanh", "get_activation"]

APPROXIMATIONS = ("none", "tanh")


class Gelu(Function):
    """out = gelu(a), exact (erf) or with the tanh approximation."""

    @staticmethod
    def forward(ctx: Context, a: Tensor, approximate: str) -> Tensor:
        ctx.save_for_backward(a, approximate)
        return a.backend.gelu_tanh_map(a) if approximate == "tanh" else a.backend.gelu_map(a)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        """∂L/∂a = ∂L/∂out · gelu'(a); the string `approximate` gets no gradient."""
        a, approximate = ctx.saved_values
        b = grad_output.backend
        grad = (
            b.gelu_tanh_back_zip(a, grad_output) if approximate == "tanh" else b.gelu_back_zip(a, grad_output)
        )
        return grad, None


def _check_approximate(approximate: str) -> None:
    if approximate not in APPROXIMATIONS:
        raise RuntimeError("approximate argument must be either none or tanh.")


@replaceable("gelu")
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """`F.gelu`: x · Φ(x) element-wise; approximate="tanh" uses the tanh formula (module docstring)."""
    _check_approximate(approximate)
    check_float("gelu", input=input)
    return Gelu.apply(input, approximate)


class GELU(Module):
    """`torch.nn.GELU(approximate="none")`: gelu element-wise (see `gelu`)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        _check_approximate(approximate)
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ReLU(Module):
    """`torch.nn.ReLU()`: max(0, x) element-wise. (`inplace` is accepted for PyTorch's
    signature; this library has no in-place operations, so it computes a new tensor.)"""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return input.relu()

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """`torch.nn.Tanh()`: tanh(x) element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


Activation = Union[str, Callable[[Tensor], Tensor]]


def get_activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    """The function an `activation` argument names: "relu" → relu, "gelu" → gelu (exact),
    a callable (a function or a module such as `GELU("tanh")`) → itself. Anything else
    raises PyTorch's RuntimeError ("activation should be relu/gelu, not …")."""
    if isinstance(activation, str):
        if activation == "relu":
            return lambda x: x.relu()
        if activation == "gelu":
            return gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation!r}")
