r"""Stage A6, task 6.1: the softmax every attention layer uses, over the positions a query
may attend to.

    α_j = e^{s_j − m} / Σ_{k allowed} e^{s_k − m}   if j is allowed     m = max_{k allowed} s_k
    α_j = 0                                           if j is masked

"Allowed" means `mask[j]` is True (PyTorch's `scaled_dot_product_attention` convention: a
boolean mask says who *may* be attended to) and s_j > −∞ (a float mask that adds −∞ masks
too). Masked scores take no part in the maximum or the sum, and get no gradient.

**A row with nothing allowed** (a query whose keys are all padding, or a fully −∞ row)
has no softmax: 0/0. Computed naively it is NaN, and one NaN spreads through the
backward pass to every parameter. This function defines it as α = 0 for the whole row, so
the attention output of such a query is 0 (the bias of any layer that follows), and its
gradient is 0. PyTorch's `scaled_dot_product_attention` does the same since 2.5;
`torch.nn.MultiheadAttention` still returns NaN there, and this library does not.
"""

from __future__ import annotations

from typing import Optional

from ..tensor import Tensor
from .validation import check_float

__all__ = ["masked_softmax"]


def masked_softmax(scores: Tensor, mask: Optional[Tensor] = None, dim: int = -1) -> Tensor:
    """Softmax of `scores` along `dim` over the allowed positions; 0 where masked, and 0 for
    a whole row with no allowed position (see the module docstring).

    Shapes: scores [..., S] (any float tensor; `dim` picks the positions); mask, when given,
    is a bool tensor broadcastable to scores' shape, True = may attend. Returns the shape of
    scores; every row with an allowed position sums to 1.
    """
    check_float("masked_softmax", scores=scores)
    if mask is not None and mask.dtype != bool:
        raise TypeError(
            f"masked_softmax: the mask must be a bool tensor (True = may attend), got dtype {mask.dtype}"
        )
    # BEGIN SOLUTION 6.1
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    m = scores.detach().amax(dim, keepdim=True)  # −∞ for a row with nothing allowed
    m = m.masked_fill(m == float("-inf"), 0.0)  # … which must not become −∞ − (−∞) = NaN
    e = (scores - m).exp()  # e^{−∞} = 0 at every masked position
    total = e.sum(dim, keepdim=True)
    return e / total.masked_fill(total == 0.0, 1.0)  # an empty row: 0 / 1 = 0
    # END SOLUTION 6.1
