"""Stage A4, task 4.4: dropout (Srivastava et al., 2014), as `torch.nn.functional.dropout`.

During training each unit is zeroed with probability p, independently; the survivors are
scaled by 1 / (1 − p) ("inverted dropout") so that the expected value of every unit is
unchanged:

    out = x · m / (1 − p),   m_i ~ Bernoulli(1 − p)        E[out] = x

The mask is a tensor on the input's backend: uniform samples u ~ U[0, 1) from minitorch's
seeded generator (`rand`, seeded by `minitorch.manual_seed`, so runs repeat), and
m = (u > p). The output is a product of tensors, so autograd gives the gradient — the same
mask: ∂L/∂x = ∂L/∂out · m / (1 − p).

At evaluation time dropout is the identity, with no rescaling needed. Edge cases: p = 0
keeps everything (identity); p = 1 drops everything (the output is all zeros — no division
by 1 − p = 0).
"""

from __future__ import annotations

from ..constructors import rand
from ..module import Module
from ..tensor import Tensor
from .validation import check_float

__all__ = ["dropout", "Dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1 − p) when training;
    return the input unchanged when not training. Same shape and dtype as the input."""
    check_float("dropout", input=input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    # BEGIN SOLUTION 4.4
    if p == 1.0:
        return input * 0.0
    u = rand(input.shape, dtype=input.dtype, backend=input.backend)  # U[0, 1)
    keep = u > p  # a bool mask m: True with probability 1 − p
    return input * keep * (1.0 / (1.0 - p))  # x ⊙ m / (1 − p), in x's dtype
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
