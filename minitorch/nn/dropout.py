"""Stage A4, task 4.4: dropout (Srivastava et al., 2014), as `torch.nn.functional.dropout`.

During training each unit is zeroed with probability p, independently; the survivors are
scaled by 1 / (1 − p) ("inverted dropout") so that the expected value of every unit is
unchanged:

    out = x · m / (1 − p),   m_i ~ Bernoulli(1 − p)        E[out] = x

At evaluation time dropout is the identity, with no rescaling needed. The gradient is the
same mask: ∂L/∂x = ∂L/∂out · m / (1 − p). Edge cases: p = 0 keeps everything (identity);
p = 1 drops everything (the output is all zeros — no division by 1 − p = 0).

The mask comes from minitorch's seeded generator (`minitorch.manual_seed`), so runs repeat.
"""

from __future__ import annotations


from ..module import Module
from ..tensor import Tensor
from ..rng import generator
from ._kernels import check_float, wrap

__all__ = ["dropout", "Dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1 − p) when training;
    return the input unchanged when not training."""
    check_float("dropout", input=input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    # BEGIN SOLUTION 4.4
    if p == 1.0:
        return input * 0.0
    keep = generator().random(input.shape) >= p
    mask = wrap(keep * (1.0 / (1.0 - p)), input, input.dtype)
    return input * mask
    # END SOLUTION 4.4


class Dropout(Module):
    """Dropout as a layer: active in training mode, the identity after `.eval()`."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
