r"""Stage A6, task 6.1: additive attention (Bahdanau, Cho & Bengio, 2015).

A decoder about to emit its next word asks "which source positions matter now?". Its
state is the query q; the encoder's outputs are the keys k_1 … k_S (and the values
v_1 … v_S, often the same vectors). Additive attention scores each key with a one-hidden-
layer network of the query and the key, turns the scores into weights with a softmax, and
returns the weighted average of the values, the *context vector*:

    e_j = vᵀ tanh(W q + U k_j)            score of source position j
    α   = softmax(e)   over j = 1 … S     attention weights (0 at padding)
    c   = Σ_j α_j v_j                     context

Shapes (B batch, S source positions, H the hidden size of the scoring network):

    query q [B, Dq]    keys k [B, S, Dk]    values [B, S, Dv]
    W = w_query [H, Dq]    U = w_key [H, Dk]    v [H]
    W q [B, H]    U k_j [B, S, H]    e, α [B, S]    c [B, Dv]

**The speed trick.** U k_j does not depend on the query. A decoder calls attention once
per output step with a new query but the same keys, so it should compute the projected keys
U k [B, S, H] once per sequence — `AdditiveAttention.project_keys(keys)` — and pass them to
every step as `projected_keys`. A step then costs one [B, Dq]·[Dq, H] product for W q
instead of also a [B·S, Dk]·[Dk, H] one for U k.

**Padding.** `key_padding_mask` [B, S] is PyTorch's: a bool tensor, True = padding
(ignore). `masked_softmax` takes the opposite polarity (True = may attend), so it receives
`~key_padding_mask`. A row that is all padding gets all-zero weights and a zero context,
never NaN.

There is no PyTorch layer of this name. `AdditiveAttention` holds W and U as two bias-free
`Linear` layers `query_proj` and `key_proj` (so W = query_proj.weight, U = key_proj.weight),
and v as the Parameter `v` [H], initialised as the one row of a `Linear(H, 1)`:
U(−1/√H, 1/√H). (Bahdanau's W and U need no biases: a bias of the hidden layer can live in
either one, and a bias after v cancels in the softmax.)
"""

from __future__ import annotations

import math
from typing import Optional

from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .attention_pooling import check_key_padding_mask
from .linear import Linear, uniform
from .masked_softmax import masked_softmax
from .validation import check_float

__all__ = ["additive_attention", "AdditiveAttention"]


def _check_additive(
    name: str,
    query: Tensor,
    keys: Tensor,
    values: Tensor,
    w_query: Tensor,
    w_key: Tensor,
    v: Tensor,
    key_padding_mask: Optional[Tensor],
    projected_keys: Optional[Tensor],
) -> None:
    """The shape checks of `additive_attention` (batched arguments); errors name `name` and the shapes."""
    if query.dims != 2:
        raise ShapeError(f"{name}: query must have shape [B, Dq] (or [Dq]), got {query.shape}")
    batch, d_query = query.shape
    if keys.dims != 3 or keys.shape[0] != batch:
        raise ShapeError(
            f"{name}: keys must have shape [B, S, Dk] with B = {batch} (query {query.shape}), got {keys.shape}"
        )
    seq = keys.shape[1]
    if values.dims != 3 or values.shape[:2] != (batch, seq):
        raise ShapeError(
            f"{name}: values must have shape [B, S, Dv] = [{batch}, {seq}, Dv] (keys {keys.shape}), got {values.shape}"
        )
    if v.dims != 1:
        raise ShapeError(f"{name}: v must have shape [H], got {v.shape}")
    hidden = v.shape[0]
    if w_query.shape != (hidden, d_query):
        raise ShapeError(
            f"{name}: w_query must have shape [H, Dq] = ({hidden}, {d_query}) (v {v.shape}, query {query.shape}), "
            f"got {w_query.shape}"
        )
    if w_key.shape != (hidden, keys.shape[2]):
        raise ShapeError(
            f"{name}: w_key must have shape [H, Dk] = ({hidden}, {keys.shape[2]}) (v {v.shape}, keys {keys.shape}), "
            f"got {w_key.shape}"
        )
    if projected_keys is not None and projected_keys.shape != (batch, seq, hidden):
        raise ShapeError(
            f"{name}: projected_keys must have shape [B, S, H] = ({batch}, {seq}, {hidden}), got {projected_keys.shape}"
        )
    check_key_padding_mask(name, key_padding_mask, (batch, seq))


def additive_attention(
    query: Tensor,
    keys: Tensor,
    values: Tensor,
    w_query: Tensor,
    w_key: Tensor,
    v: Tensor,
    key_padding_mask: Optional[Tensor] = None,
    projected_keys: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """Additive attention (see the module docstring): e_j = vᵀ tanh(W q + U k_j),
    α = softmax(e) over the unpadded positions, context = Σ_j α_j values_j.

    Shapes: query [B, Dq], keys [B, S, Dk], values [B, S, Dv], w_query (W) [H, Dq],
    w_key (U) [H, Dk], v [H], key_padding_mask [B, S] bool (True = padding) or None
    → (context [B, Dv], weights [B, S]). Without a batch: query [Dq], keys [S, Dk],
    values [S, Dv], mask [S] → ([Dv], [S]).

    `projected_keys` [B, S, H], when given, is U k (keys @ w_keyᵀ) computed beforehand, so
    that a decoder projects its keys once per sequence rather than once per step; `keys` is
    then used for its shape only.
    """
    name = "additive_attention"
    check_float(
        name,
        query=query,
        keys=keys,
        values=values,
        w_query=w_query,
        w_key=w_key,
        v=v,
        projected_keys=projected_keys,
    )
    if query.dims == 1:  # no batch dimension: add one and take it away again
        if keys.dims != 2 or values.dims != 2:
            raise ShapeError(
                f"{name}: an unbatched query {query.shape} needs keys [S, Dk] and values [S, Dv], "
                f"got keys {keys.shape} and values {values.shape}"
            )
        check_key_padding_mask(name, key_padding_mask, keys.shape[:1])
        context, weights = additive_attention(
            query.unsqueeze(0),
            keys.unsqueeze(0),
            values.unsqueeze(0),
            w_query,
            w_key,
            v,
            key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None,
            projected_keys.unsqueeze(0) if projected_keys is not None else None,
        )
        return context.squeeze(0), weights.squeeze(0)
    _check_additive(name, query, keys, values, w_query, w_key, v, key_padding_mask, projected_keys)
    allowed = ~key_padding_mask if key_padding_mask is not None else None  # masked_softmax: True = may attend
    # BEGIN SOLUTION 6.1
    if projected_keys is None:
        projected_keys = keys @ w_key.transpose(0, 1)  # U k_j for every j: [B, S, H]
    projected_query = query @ w_query.transpose(0, 1)  # W q: [B, H]
    hidden = (projected_query.unsqueeze(1) + projected_keys).tanh()  # tanh(W q + U k_j): [B, S, H]
    scores = hidden @ v  # e_j = vᵀ tanh(…): [B, S]
    weights = masked_softmax(scores, allowed, dim=-1)  # α over j; 0 at padding
    context = (weights.unsqueeze(1) @ values).squeeze(1)  # [B, 1, S] @ [B, S, Dv] → [B, Dv]
    return context, weights
    # END SOLUTION 6.1


class AdditiveAttention(Module):
    """Additive (Bahdanau) attention with learned W (`query_proj`), U (`key_proj`) and v.

    Args:
        query_size: Dq, the size of a query (the decoder state).
        key_size: Dk, the size of a key (an encoder output).
        hidden_size: H, the size of the scoring network's hidden layer.

    Sub-modules and parameters: `query_proj = Linear(query_size, hidden_size, bias=False)`,
    `key_proj = Linear(key_size, hidden_size, bias=False)`, `v` [hidden_size].

    forward(query [B, Dq], keys [B, S, Dk], values [B, S, Dv] = keys, key_padding_mask
    [B, S] bool or None, projected_keys [B, S, H] or None) → (context [B, Dv], weights [B, S]).

    A decoder that attends to the same keys at every step calls `project_keys(keys)` once
    per sequence and passes the result as `projected_keys` to every step: U k is then not
    recomputed at each step (see the module docstring).
    """

    def __init__(
        self,
        query_size: int,
        key_size: int,
        hidden_size: int,
        dtype=None,  # noqa: ANN001
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        for what, n in (("query_size", query_size), ("key_size", key_size), ("hidden_size", hidden_size)):
            if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                raise ValueError(f"AdditiveAttention: {what} must be a positive integer, got {n!r}")
        self.query_size, self.key_size, self.hidden_size = query_size, key_size, hidden_size
        self.query_proj = Linear(query_size, hidden_size, bias=False, dtype=dtype, backend=backend)
        self.key_proj = Linear(key_size, hidden_size, bias=False, dtype=dtype, backend=backend)
        self.v = Parameter(uniform((hidden_size,), 1.0 / math.sqrt(hidden_size), dtype, backend))

    def project_keys(self, keys: Tensor) -> Tensor:
        """U k: keys [B, S, key_size] (or [S, key_size]) → [B, S, hidden_size] (or [S, hidden_size]).

        Compute this once per sequence and pass it to every `forward` call as `projected_keys`."""
        check_float("AdditiveAttention.project_keys", keys=keys)
        if keys.dims not in (2, 3) or keys.shape[-1] != self.key_size:
            raise ShapeError(
                f"AdditiveAttention.project_keys: keys must have shape [B, S, {self.key_size}] "
                f"(or [S, {self.key_size}]), got {keys.shape}"
            )
        return self.key_proj(keys)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
        projected_keys: Optional[Tensor] = None,
    ) -> tuple[Tensor, Tensor]:
        name = f"AdditiveAttention({self.query_size}, {self.key_size}, {self.hidden_size})"
        check_float(name, query=query, keys=keys)
        if query.dims not in (1, 2) or query.shape[-1] != self.query_size:
            raise ShapeError(
                f"{name}: query must have shape [B, {self.query_size}] (or [{self.query_size}]), got {query.shape}"
            )
        if keys.dims != query.dims + 1 or keys.shape[-1] != self.key_size:
            raise ShapeError(
                f"{name}: keys must have shape [B, S, {self.key_size}] (or [S, {self.key_size}] for an unbatched "
                f"query) for query {query.shape}, got {keys.shape}"
            )
        if values is None:
            values = keys
        return additive_attention(
            query,
            keys,
            values,
            self.query_proj.weight.value,
            self.key_proj.weight.value,
            self.v.value,
            key_padding_mask,
            projected_keys,
        )

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}, hidden_size={self.hidden_size}"
