"""The fully connected layer."""

from __future__ import annotations

import math
from typing import Optional

from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..constructors import rand
from ..tensor_ops import TensorBackend


def uniform(
    shape: tuple[int, ...], bound: float, dtype=None, backend: Optional[TensorBackend] = None
) -> Tensor:
    """Samples from U(−bound, bound), PyTorch's default initialisation for Linear and Conv."""
    return (rand(shape, dtype=dtype, backend=backend) * (2.0 * bound) - bound).detach()


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    r"""y = x Wᵀ + b, as `torch.nn.functional.linear`.

    Shapes: input [..., in], weight [out, in], bias [out] → y [..., out].
    """
    if weight.dims != 2 or input.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input of shape {input.shape} and weight of shape {weight.shape} "
            f"(expected weight [out_features, {input.shape[-1]}])"
        )
    lead = input.shape[:-1]
    if len(lead) > 1:  # [..., in] as one matrix of rows: one product forward and backward
        return linear(input.reshape(-1, weight.shape[1]), weight, bias).view(*lead, weight.shape[0])
    y = input @ weight.transpose(0, 1)
    if bias is not None:
        y = y + bias
    return y


class Linear(Module):
    r"""y = x Wᵀ + b, as `torch.nn.Linear`.

    Shapes: x [..., in_features] → y [..., out_features]; `weight` is
    [out_features, in_features], `bias` is [out_features]. Both start as
    U(−1/√in, 1/√in), PyTorch's default.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ):
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear({in_features}, {out_features}): sizes must be positive")
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(uniform((out_features, in_features), bound, dtype, backend))
        self.bias = Parameter(uniform((out_features,), bound, dtype, backend)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear({self.in_features}, {self.out_features}): input's last dimension is "
                f"{x.shape[-1]}, expected {self.in_features} (input shape {x.shape})"
            )
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
        )
