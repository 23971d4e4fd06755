r"""Stage A6, task 6.4: layer normalisation (Ba, Kiros & Hinton, 2016), as `torch.nn.LayerNorm` / `F.layer_norm`.

For an input x of shape [..., *normalized_shape], each vector of its last
D = len(normalized_shape) dimensions (N = ∏ normalized_shape values) is normalised alone:

    μ  = (1/N) Σ x_i                          mean of the vector
    σ² = (1/N) Σ (x_i − μ)²                   biased variance (divides by N, as torch)
    y_i = (x_i − μ) / √(σ² + ε) · γ_i + β_i   γ (weight), β (bias): shape normalized_shape

The lecture writes (x − μ) / (σ + ε); PyTorch, and so this library, put ε under the root.
The two agree to within ε for any σ that matters.

Why LayerNorm rather than BatchNorm in NLP: its statistics are those of one token's
features, so they do not depend on the batch, on the other positions of a sequence, or on
how much padding a batch holds, and training and inference compute the same thing.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

from ..constructors import ones, zeros
from ..fast_paths import replaceable
from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_ops import TensorBackend

Shape = Union[int, Sequence[int]]


def _as_shape(normalized_shape: Shape) -> tuple[int, ...]:
    shape = (
        (normalized_shape,) if isinstance(normalized_shape, int) else tuple(int(n) for n in normalized_shape)
    )
    if not shape or any(n <= 0 for n in shape):
        raise ValueError(f"normalized_shape must be one or more positive sizes, got {normalized_shape!r}")
    return shape


def checked_shape(input: Tensor, normalized_shape: Shape) -> tuple[int, ...]:
    """normalized_shape as a tuple, after checking that the input ends with it."""
    shape = _as_shape(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(shape) :]) != shape or len(input.shape) < len(shape):
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
            f"but got input of size {list(input.shape)}"
        )
    return shape


def normalise_rows(x: Tensor, eps: float) -> Tensor:
    """x̂ = (x − μ) / √(σ² + ε) along the last dimension: x [..., N] → x̂ [..., N].

    μ = (1/N) Σ x_i and σ² = (1/N) Σ (x_i − μ)² are each row's mean and biased variance
    (PyTorch's LayerNorm divides by N, not N − 1), and ε sits under the square root.
    """
    # BEGIN SOLUTION 6.4
    centred = x - x.mean(-1, keepdim=True)
    variance = (centred * centred).mean(-1, keepdim=True)
    return centred / (variance + eps).sqrt()
    # END SOLUTION 6.4


@replaceable("layer_norm")
def layer_norm(
    input: Tensor,
    normalized_shape: Shape,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    eps: float = 1e-5,
) -> Tensor:
    """y = (x − μ) / √(σ² + ε) · weight + bias over the last dimensions (see the module docstring).

    Shapes: input [..., *normalized_shape] → the same shape; weight and bias, when given,
    have shape normalized_shape.
    """
    shape = checked_shape(input, normalized_shape)
    lead = tuple(input.shape[: len(input.shape) - len(shape)])
    rows = input.reshape(*lead, math.prod(shape))  # one vector of N values per row
    y = normalise_rows(rows, eps).reshape(*lead, *shape)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class LayerNorm(Module):
    """`torch.nn.LayerNorm`: layer_norm with a learned weight γ (ones) and bias β (zeros).

    Args:
        normalized_shape: the trailing shape normalised over (an int for the last dimension).
        eps: added to the variance under the square root.
        elementwise_affine: learn γ and β (False: neither exists).
        bias: learn β too (with elementwise_affine).
    """

    def __init__(
        self,
        normalized_shape: Shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ):  # noqa: ANN001 - a minitorch or NumPy dtype
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = (
            Parameter(ones(self.normalized_shape, dtype=dtype, backend=backend))
            if elementwise_affine
            else None
        )
        self.bias = (
            Parameter(zeros(self.normalized_shape, dtype=dtype, backend=backend))
            if elementwise_affine and bias
            else None
        )

    def forward(self, input: Tensor) -> Tensor:
        weight = self.weight.value if self.weight is not None else None
        bias = self.bias.value if self.bias is not None else None
        return layer_norm(input, self.normalized_shape, weight, bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
