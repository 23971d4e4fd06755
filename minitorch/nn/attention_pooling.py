r"""Stage A6, task 6.1: attention pooling — a learned weighted average over the positions of a sequence.

A sentence classifier needs one vector for a sequence of T token vectors v_1 … v_T. Max or
mean pooling treat every position alike; attention pooling learns which positions matter.
One learned vector w scores every position, a softmax turns the scores into weights, and
the output is the weighted average of the values:

    s_p = wᵀ v_p                          score of position p        values [B, T, D], w [D] → s [B, T]
    α   = softmax(s)   over p = 1 … T     attention weights          α [B, T], each row sums to 1
    out = Σ_p α_p v_p                     the pooled vector          out [B, D]

The weights α say how much each token contributed: drawn over the tokens of a sentence
they are a (rough) explanation of the prediction.

**Padding.** Sentences of a batch have different lengths and are padded to T. A padded
position must get weight 0, so the softmax runs over the real tokens only. The mask follows
PyTorch's `key_padding_mask`: a bool tensor [B, T], True = padding (ignore). `masked_softmax`
uses the opposite polarity (True = may attend), so it receives `~key_padding_mask`. A row
that is all padding gets all-zero weights and a zero output, never NaN.

There is no PyTorch layer of this name; `AttentionPooling` holds w as its Parameter
`weight` [D], initialised as PyTorch initialises the one row of a `Linear(D, 1)`:
U(−1/√D, 1/√D). A bias would add the same constant to every score and cancel in the
softmax, so there is none.
"""

from __future__ import annotations

import math
from typing import Optional

from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .linear import uniform
from .masked_softmax import masked_softmax
from .validation import check_float

__all__ = ["attention_pooling", "AttentionPooling", "check_key_padding_mask"]


def check_key_padding_mask(name: str, key_padding_mask: Optional[Tensor], shape: tuple[int, ...]) -> None:
    """Raise when a key_padding_mask is not None or a bool tensor of `shape` ([B, T]).

    The error names the function `name` and the shapes it got."""
    if key_padding_mask is None:
        return
    if not isinstance(key_padding_mask, Tensor):
        raise TypeError(
            f"{name}: key_padding_mask must be a minitorch Tensor or None, got {type(key_padding_mask).__name__}"
        )
    if key_padding_mask.dtype != bool:
        raise TypeError(
            f"{name}: key_padding_mask must be a bool tensor (True = padding, ignored), got dtype {key_padding_mask.dtype}"
        )
    if key_padding_mask.shape != tuple(shape):
        raise ShapeError(
            f"{name}: key_padding_mask must have shape {tuple(shape)}, got {key_padding_mask.shape}"
        )


def attention_pooling(
    values: Tensor,
    weight: Tensor,
    key_padding_mask: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """Attention pooling (see the module docstring): s = values w, α = softmax(s) over the
    unpadded positions, pooled = Σ_p α_p v_p.

    Shapes: values [B, T, D], weight [D], key_padding_mask [B, T] bool (True = padding) or
    None → (pooled [B, D], weights [B, T]). Without a batch: values [T, D] and a mask [T]
    give ([D], [T]).
    """
    check_float("attention_pooling", values=values, weight=weight)
    if values.dims == 2:  # no batch dimension: add one and take it away again
        check_key_padding_mask("attention_pooling", key_padding_mask, values.shape[:1])
        mask = key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None
        pooled, weights = attention_pooling(values.unsqueeze(0), weight, mask)
        return pooled.squeeze(0), weights.squeeze(0)
    if values.dims != 3:
        raise ShapeError(
            f"attention_pooling: values must have shape [B, T, D] (or [T, D]), got {values.shape}"
        )
    if weight.shape != (values.shape[2],):
        raise ShapeError(
            f"attention_pooling: weight must have shape ({values.shape[2]},) for values of shape {values.shape}, "
            f"got {weight.shape}"
        )
    check_key_padding_mask("attention_pooling", key_padding_mask, values.shape[:2])
    allowed = ~key_padding_mask if key_padding_mask is not None else None  # masked_softmax: True = may attend
    # BEGIN SOLUTION 6.1
    scores = values @ weight  # [B, T, D] @ [D] → [B, T]: s_p = wᵀ v_p
    weights = masked_softmax(scores, allowed, dim=-1)  # α over the positions; 0 at padding
    pooled = (weights.unsqueeze(1) @ values).squeeze(1)  # [B, 1, T] @ [B, T, D] → [B, D]: Σ_p α_p v_p
    return pooled, weights
    # END SOLUTION 6.1


class AttentionPooling(Module):
    """Attention pooling with a learned score vector `weight` [embed_dim] (see the module docstring).

    forward(values [B, T, D], key_padding_mask [B, T] bool or None) → (pooled [B, D], weights [B, T]).
    """

    def __init__(self, embed_dim: int, dtype=None, backend: Optional[TensorBackend] = None) -> None:  # noqa: ANN001
        super().__init__()
        if isinstance(embed_dim, bool) or not isinstance(embed_dim, int) or embed_dim <= 0:
            raise ValueError(f"AttentionPooling: embed_dim must be a positive integer, got {embed_dim!r}")
        self.embed_dim = embed_dim
        self.weight = Parameter(uniform((embed_dim,), 1.0 / math.sqrt(embed_dim), dtype, backend))

    def forward(self, values: Tensor, key_padding_mask: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        check_float("AttentionPooling", values=values)
        if values.dims not in (2, 3) or values.shape[-1] != self.embed_dim:
            raise ShapeError(
                f"AttentionPooling({self.embed_dim}): values must have shape [B, T, {self.embed_dim}] "
                f"(or [T, {self.embed_dim}]), got {values.shape}"
            )
        return attention_pooling(values, self.weight.value, key_padding_mask)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}"
