r"""Stage A6, task 6.2: scaled dot-product attention (Vaswani et al., 2017), as
`torch.nn.functional.scaled_dot_product_attention`.

Every query asks every key "how well do we match?" (a dot product), the answers become
weights with a softmax over the keys, and the query gets the weighted average of the values:

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

    Q [..., L, E]    K [..., S, E]    V [..., S, Ev]        d_k = E
    scores  Q Kᵀ / √d_k       [..., L, S]     one row per query, one column per key
    weights softmax over S    [..., L, S]     each row sums to 1
    output  weights V         [..., L, Ev]    row i = Σ_j weights[i, j] · V[j]

The leading dimensions "..." (batch, heads) broadcast, as in a batched matrix product.

**Why divide by √d_k.** If the entries of q and k are independent with mean 0 and
variance 1, their dot product q·k = Σ_{e=1..E} q_e k_e has variance E: the scores grow
like √E with the width. Large scores saturate the softmax: softmax([10, −10]) =
[1 − 2·10⁻⁹, 2·10⁻⁹] is already one-hot. The softmax's Jacobian diag(α) − ααᵀ is then ≈ 0,
so almost no gradient reaches Q and K and the attention stops learning. Dividing by √E
brings the scores back to variance 1, whatever the width. (`scale=` replaces 1/√E.)

**Masks** say which keys a query may look at (PyTorch's convention here, the opposite of
`nn.MultiheadAttention`'s!):

* a bool `attn_mask` [..., L, S] (broadcastable): **True = MAY attend**; False positions
  get weight 0 (they take no part in the softmax — `masked_softmax`, task 6.1);
* a float `attn_mask` is ADDED to the scores (−∞ masks a position, 0 keeps it, other
  values bias it: ALiBi, relative positions);
* `is_causal=True` (no attn_mask allowed with it): query i may attend to keys j ≤ i, the
  lower triangle `tril` of an [L, S] matrix of ones — a decoder must not see the future.
  When L ≠ S the triangle is aligned at the top left, as PyTorch does: query 0 sees key 0
  only, whatever S is.

A query whose keys are all masked has no softmax (0/0); here its weights are all 0, so its
output is 0 and its gradient is 0, never NaN (PyTorch's function does the same).

**Dropout** with probability `dropout_p` is applied to the weights (after the softmax)
whenever dropout_p > 0 — this functional has no training flag, as in PyTorch; a module
passes `dropout_p=0.0` at evaluation time.

`scaled_dot_product_attention_with_weights` computes the same and also returns the
weights [..., L, S] (what `nn.MultiheadAttention` needs for `need_weights=True`, and what
one plots to see what a model attends to); `scaled_dot_product_attention` returns the output.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..fast_paths import replaceable
from ..tensor import Tensor
from ..tensor_data import ShapeError
from .dropout import dropout
from .masked_softmax import masked_softmax
from .validation import check_float

__all__ = ["scaled_dot_product_attention", "scaled_dot_product_attention_with_weights"]


def _broadcast(name: str, what: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """np.broadcast_shapes, with an error that names the function and the shapes."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"{name}: {what} do not broadcast: shapes {', '.join(map(str, shapes))}") from None


def _check_sdpa(
    name: str,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor],
    dropout_p: float,
    is_causal: bool,
    enable_gqa: bool,
) -> None:
    """PyTorch's argument checks of scaled_dot_product_attention; errors name `name` and the shapes."""
    check_float(name, query=query, key=key, value=value)
    if min(query.dims, key.dims, value.dims) < 2:
        raise ShapeError(
            f"{name}: Expected query, key, and value to all be at least 2 dimensional, but got "
            f"query {query.shape}, key {key.shape} and value {value.shape}"
        )
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            f"{name}: Expected query, key, and value to have the same dtype, but got query.dtype: {query.dtype} "
            f"key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError(
            f"{name}: query [..., L, E] and key [..., S, E] must have the same E, got query {query.shape} "
            f"and key {key.shape}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ShapeError(
            f"{name}: key [..., S, E] and value [..., S, Ev] must have the same S, got key {key.shape} "
            f"and value {value.shape}"
        )
    _broadcast(
        name,
        "the batch dimensions of query, key and value",
        query.shape[:-2],
        key.shape[:-2],
        value.shape[:-2],
    )
    if enable_gqa:
        raise NotImplementedError(f"{name}: enable_gqa=True (grouped-query attention) is not supported")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"{name}: dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is None:
        return
    if is_causal:
        raise RuntimeError(f"{name}: Explicit attn_mask should not be set when is_causal=True")
    if not isinstance(attn_mask, Tensor):
        raise TypeError(
            f"{name}: attn_mask must be a minitorch Tensor or None, got {type(attn_mask).__name__}"
        )
    if attn_mask.dtype != bool and not np.issubdtype(attn_mask.dtype, np.floating):
        raise RuntimeError(
            f"{name}: Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead."
        )
    scores = tuple(np.broadcast_shapes(query.shape[:-2], key.shape[:-2])) + (query.shape[-2], key.shape[-2])
    try:
        fits = tuple(np.broadcast_shapes(attn_mask.shape, scores)) == scores
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{name}: attn_mask must broadcast to the scores' shape [..., L, S] = {scores} (query {query.shape}, "
            f"key {key.shape}), got {attn_mask.shape}"
        )


def sdpa_arguments(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor],
    dropout_p: float,
    is_causal: bool,
    scale: Optional[float],
    enable_gqa: bool,
) -> tuple[Optional[Tensor], float]:
    """Checks the arguments (errors named after `scaled_dot_product_attention`) and returns
    (attn_mask, scale) as the computation uses them: a float mask in the query's dtype (it
    is added to the scores), and scale = 1/√E unless given."""
    _check_sdpa(
        "scaled_dot_product_attention", query, key, value, attn_mask, dropout_p, is_causal, enable_gqa
    )
    if attn_mask is not None and attn_mask.dtype != bool:
        attn_mask = attn_mask.to(query.dtype)
    return attn_mask, 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


@replaceable("scaled_dot_product_attention_with_weights")
def scaled_dot_product_attention_with_weights(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> tuple[Tensor, Tensor]:
    """softmax(Q Kᵀ · scale + mask) V and the weights (see the module docstring).

    Shapes: query [..., L, E], key [..., S, E], value [..., S, Ev] (leading dimensions
    broadcast) → (output [..., L, Ev], weights [..., L, S]). attn_mask: bool (True = may
    attend) or float (added to the scores), broadcastable to [..., L, S]. is_causal: query
    i attends to keys j ≤ i. scale: 1/√E unless given. The weights returned are those
    applied to V, so after dropout when dropout_p > 0; an all-masked row has weights 0.
    """
    attn_mask, scale = sdpa_arguments(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    L, S = query.shape[-2], key.shape[-2]
    # BEGIN SOLUTION 6.2
    scores = (query @ key.transpose(-2, -1)) * scale  # Q Kᵀ / √d_k: [..., L, S]
    allowed = None  # masked_softmax: True = may attend
    if is_causal:
        allowed = query.new_ones((L, S), dtype=bool).tril()  # key j ≤ query i
    elif attn_mask is not None and attn_mask.dtype == bool:
        allowed = attn_mask
    elif attn_mask is not None:
        scores = scores + attn_mask  # a float mask is added (−∞ masks)
    weights = masked_softmax(scores, allowed, dim=-1)  # rows sum to 1; an empty row is 0
    weights = dropout(weights, dropout_p)  # identity when dropout_p == 0
    return weights @ value, weights  # [..., L, Ev], [..., L, S]
    # END SOLUTION 6.2


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(Q Kᵀ / √E + mask) V, as `torch.nn.functional.scaled_dot_product_attention`.

    query [..., L, E], key [..., S, E], value [..., S, Ev] → [..., L, Ev]. A bool attn_mask
    says True = MAY attend; a float one is added to the scores; is_causal=True masks the
    future (top-left aligned [L, S] lower triangle) and forbids attn_mask. Dropout with
    probability dropout_p on the weights whenever dropout_p > 0. A query with every key
    masked gets output 0. enable_gqa=True raises NotImplementedError.
    """
    output, _ = scaled_dot_product_attention_with_weights(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
    )
    return output
