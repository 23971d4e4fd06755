"""Stage A4, task 4.4: softmax and log-softmax along one dimension.

    softmax(x)_i     = e^{x_i} / Σ_j e^{x_j}
    log_softmax(x)_i = x_i − log Σ_j e^{x_j}

Computed as written, e^{x} overflows for x ≳ 89 (float32) or 710 (float64). Both are
unchanged when a constant is subtracted from every x_j, so subtract m = max_j x_j first:

    softmax(x)_i     = e^{x_i − m} / Σ_j e^{x_j − m}
    log_softmax(x)_i = (x_i − m) − log Σ_j e^{x_j − m}

Now every exponent is ≤ 0 and the sum is ≥ 1 (the largest term is e^0 = 1), so nothing
overflows and the log never sees 0. Both are compositions of differentiable tensor
operations (max, subtraction, exp, sum, division, log), so they run on every backend and
autograd computes their backward. Since the result does not depend on m, m is treated as
a constant (computed from `x.detach()`): no gradient flows through the max. What autograd
then computes is, with g = ∂L/∂out (Σ over the softmax dimension):

    softmax:      ∂L/∂x_i = s_i · (g_i − Σ_j g_j s_j)
    log_softmax:  ∂L/∂x_i = g_i − softmax(x)_i · Σ_j g_j

(For the maximum along a dimension with its indices, use `Tensor.max(dim)`, as in PyTorch.)
"""

from __future__ import annotations

from typing import Optional

from ..tensor import Tensor
from .validation import check_float

__all__ = ["softmax", "log_softmax"]


def _dim(name: str, input: Tensor, dim: Optional[int]) -> int:
    if dim is None:
        raise TypeError(f"{name}: give the dimension to normalise over, e.g. {name}(x, dim=-1)")
    if input.dims == 0:
        raise ValueError(f"{name}: the input needs at least one dimension, got a 0-d tensor")
    n = input.dims
    if not -n <= dim < n:
        raise IndexError(f"{name}: dimension {dim} is out of range for a tensor of shape {input.shape}")
    return dim % n


def softmax(input: Tensor, dim: Optional[int] = None) -> Tensor:
    """softmax(x)_i = e^{x_i − m} / Σ_j e^{x_j − m} along `dim`, m = max_j x_j (stable for
    any finite logits). Same shape as the input; each slice along `dim` sums to 1."""
    check_float("softmax", input=input)
    d = _dim("softmax", input, dim)
    # BEGIN SOLUTION 4.4
    z = input - input.detach().amax(d, keepdim=True)  # x − m: every exponent ≤ 0
    e = z.exp()
    return e / e.sum(d, keepdim=True)
    # END SOLUTION 4.4


def log_softmax(input: Tensor, dim: Optional[int] = None) -> Tensor:
    """log_softmax(x)_i = (x_i − m) − log Σ_j e^{x_j − m} along `dim`, m = max_j x_j
    (stable for any finite logits). Same shape as the input."""
    check_float("log_softmax", input=input)
    d = _dim("log_softmax", input, dim)
    # BEGIN SOLUTION 4.4
    z = input - input.detach().amax(d, keepdim=True)  # x − m
    return z - z.exp().sum(d, keepdim=True).log()
    # END SOLUTION 4.4
