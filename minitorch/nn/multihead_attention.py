r"""Stage A6, task 6.3: multi-head attention (Vaswani et al., 2017), as `torch.nn.MultiheadAttention`.

One attention compares queries and keys in one way. Multi-head attention runs H of them
side by side, each in its own learned subspace of size d = E/H, and mixes their results:

    head_h = Attention(Q W_hᵠ, K W_hᵏ, V W_hᵛ)        W_hᵠ, W_hᵏ, W_hᵛ: [E, d] (their transposes, in torch's layout)
    MultiHead(Q, K, V) = [head_1; …; head_H] W_oᵀ + b_o

Stacking the H projections of size d gives one [E, E] matrix per role, so the code
projects once and then *splits* the result into heads:

    q = query W_qᵀ + b_q   [B, L, E] → view [B, L, H, d] → transpose → [B, H, L, d]
    k = key   W_kᵀ + b_k   [B, S, E] → … → [B, H, S, d]
    v = value W_vᵀ + b_v   [B, S, E] → … → [B, H, S, d]
    o, α = scaled_dot_product_attention(q, k, v)    o [B, H, L, d],  α [B, H, L, S]
    merge: o → transpose [B, L, H, d] → view [B, L, E] (the heads side by side)
    out = merged W_oᵀ + b_o   [B, L, E]

(B batch, L queries, S keys and values, E = embed_dim, H = num_heads, d = E/H.) The heads
cost no more than one attention of width E: the same matrix products, cut differently.

**Parameters, as PyTorch's** (so a torch `state_dict` loads unchanged):

* `in_proj_weight` [3E, E] = [W_q; W_k; W_v] stacked (rows 0…E−1 are W_q), xavier-uniform
  U(−a, a) with a = √(6 / (E + 3E)); `in_proj_bias` [3E] = [b_q; b_k; b_v], zeros;
* with `kdim` or `vdim` ≠ E (keys/values of another width): `q_proj_weight` [E, E],
  `k_proj_weight` [E, kdim], `v_proj_weight` [E, vdim] (each xavier-uniform) instead of
  `in_proj_weight`;
* `out_proj`, a `Linear(E, E)`: W_o with Linear's U(−1/√E, 1/√E), b_o zeros.

**Masks — THE OPPOSITE POLARITY OF `F.scaled_dot_product_attention`.** Here, as in
`torch.nn.MultiheadAttention`, a bool mask says **True = may NOT attend** (ignore):

* `key_padding_mask` [B, S] (or [S] unbatched): True marks a padding key, ignored by
  every query; a float one is added to the scores;
* `attn_mask` [L, S], or [B·H, L, S] per batch element and head (index b·H + h), or
  [H, L, S] unbatched: True = query i may not attend to key j; a float one is added.

Both are turned into one mask in 6.2's convention (True = may attend) before attention.
`is_causal=True` is PyTorch's *hint* that attn_mask is the causal mask; attn_mask must
still be given (the transformer's `generate_square_subsequent_mask(L)` builds it).

**Fully masked rows.** A query that may attend to nothing (e.g. all its keys are padding)
gets torch's NaN from `torch.nn.MultiheadAttention`. Here its weights are 0, so its
attention result is 0 and its output is out_proj's bias b_o; gradients are finite (0
through that query's attention). `nn.MultiheadAttention` differs from PyTorch there only.

Layouts: `batch_first=False` (PyTorch's default) takes and returns [L, B, E]; `True`
takes [B, L, E]; unbatched inputs are [L, E]. The attention weights are [B, L, S]
averaged over the heads (`average_attn_weights=True`) or [B, H, L, S] per head, and
include dropout when it is active (training mode, `dropout` > 0), as PyTorch's do.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..constructors import zeros
from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .attention import scaled_dot_product_attention_with_weights
from .linear import Linear, uniform
from .validation import check_float

__all__ = ["MultiheadAttention", "multi_head_attention"]


def multi_head_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_heads: int,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    b_q: Optional[Tensor],
    b_k: Optional[Tensor],
    b_v: Optional[Tensor],
    out_weight: Tensor,
    out_bias: Optional[Tensor],
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """Multi-head attention on batch-first inputs (see the module docstring).

    Shapes: query [B, L, E], key [B, S, Ek], value [B, S, Ev]; w_q [E, E], w_k [E, Ek],
    w_v [E, Ev], b_q, b_k, b_v [E] or None; out_weight [E, E], out_bias [E] or None.
    attn_mask is in `F.scaled_dot_product_attention`'s convention (bool True = MAY attend,
    or float added), broadcastable to [B, H, L, S]; is_causal as there.
    Returns (output [B, L, E], per-head weights [B, H, L, S]).

    `MultiheadAttention.forward` checks the arguments and converts layouts and masks before
    calling this, so it checks nothing itself.
    """
    batch, tgt_len, embed_dim = query.shape
    src_len = key.shape[1]
    head_dim = embed_dim // num_heads
    # BEGIN SOLUTION 6.3
    q = query @ w_q.transpose(0, 1)  # [B, L, E]
    k = key @ w_k.transpose(0, 1)  # [B, S, E]
    v = value @ w_v.transpose(0, 1)  # [B, S, E]
    if b_q is not None:
        q, k, v = q + b_q, k + b_k, v + b_v
    q = q.view(batch, tgt_len, num_heads, head_dim).transpose(1, 2)  # split: [B, H, L, d]
    k = k.view(batch, src_len, num_heads, head_dim).transpose(1, 2)  # [B, H, S, d]
    v = v.view(batch, src_len, num_heads, head_dim).transpose(1, 2)  # [B, H, S, d]
    heads, weights = scaled_dot_product_attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal)
    merged = heads.transpose(1, 2).contiguous().view(batch, tgt_len, embed_dim)  # [B, L, H·d]
    out = merged @ out_weight.transpose(0, 1)  # [B, L, E]
    if out_bias is not None:
        out = out + out_bias
    return out, weights
    # END SOLUTION 6.3


def _xavier_uniform(shape: tuple[int, int], dtype, backend: Optional[TensorBackend]) -> Tensor:  # noqa: ANN001
    """U(−a, a) with a = √(6 / (fan_in + fan_out)), torch.nn.init.xavier_uniform_ for a [fan_out, fan_in] weight."""
    return uniform(shape, math.sqrt(6.0 / (shape[0] + shape[1])), dtype, backend)


def _mask_dtype_check(name: str, what: str, mask: Tensor) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}: {what} must be a minitorch Tensor or None, got {type(mask).__name__}")
    if mask.dtype != bool and not np.issubdtype(mask.dtype, np.floating):
        raise AssertionError(
            f"{name}: only bool and floating types of {what} are supported, got dtype {mask.dtype}"
        )


class MultiheadAttention(Module):
    r"""Multi-head attention, as `torch.nn.MultiheadAttention` (see the module docstring).

    Args:
        embed_dim: E, the width of queries and of the output.
        num_heads: H; must divide embed_dim (each head has E/H features).
        dropout: probability of dropping an attention weight, in training mode only.
        bias: learn in_proj_bias and out_proj.bias.
        add_bias_kv, add_zero_attn: not supported (NotImplementedError when True).
        kdim, vdim: widths of keys and values (default E); either ≠ E gives separate
            q_proj_weight, k_proj_weight, v_proj_weight instead of in_proj_weight.
        batch_first: inputs and output are [B, L, E] rather than [L, B, E].
        dtype, backend: of the parameters.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) → (attn_output, attn_weights or None).

    **Masks here: bool True = may NOT attend** (the opposite of
    F.scaled_dot_product_attention). A query with nothing to attend to outputs
    out_proj.bias (PyTorch: NaN).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: Optional[int] = None,
        vdim: Optional[int] = None,
        batch_first: bool = False,
        dtype=None,  # noqa: ANN001 - a minitorch or NumPy dtype
        backend: Optional[TensorBackend] = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim and num_heads must be greater than 0, "
                f"got embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "MultiheadAttention: add_bias_kv=True and add_zero_attn=True are not supported by minitorch"
            )
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be a probability in [0, 1], got {dropout}")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(
                f"embed_dim must be divisible by num_heads (MultiheadAttention: embed_dim={embed_dim}, "
                f"num_heads={num_heads})"
            )
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_xavier_uniform((3 * embed_dim, embed_dim), dtype, backend))
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.q_proj_weight = Parameter(_xavier_uniform((embed_dim, embed_dim), dtype, backend))
            self.k_proj_weight = Parameter(_xavier_uniform((embed_dim, self.kdim), dtype, backend))
            self.v_proj_weight = Parameter(_xavier_uniform((embed_dim, self.vdim), dtype, backend))
            self.in_proj_weight = None
        self.in_proj_bias = Parameter(zeros((3 * embed_dim,), dtype=dtype, backend=backend)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, backend=backend)
        if bias:
            self.out_proj.bias.update(zeros((embed_dim,), dtype=dtype, backend=backend))
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False

    # ---- the checks and conversions around the task's function ------------------------

    def _name(self) -> str:
        return f"MultiheadAttention(embed_dim={self.embed_dim}, num_heads={self.num_heads})"

    def _check_forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
    ) -> bool:
        """PyTorch's checks of the inputs (in its layout); return whether the input is batched."""
        name = self._name()
        check_float(name, query=query, key=key, value=value)
        if query.dims not in (2, 3):
            raise AssertionError(
                f"{name}: query should be unbatched 2D or batched 3D tensor but received {query.dims}-D query "
                f"tensor (shape {query.shape})"
            )
        batched = query.dims == 3
        kind = "batched (3-D)" if batched else "unbatched (2-D)"
        if key.dims != query.dims or value.dims != query.dims:
            raise AssertionError(
                f"{name}: For {kind} `query`, expected `key` and `value` to be {query.dims}-D but found "
                f"{key.dims}-D and {value.dims}-D tensors respectively (query {query.shape}, key {key.shape}, "
                f"value {value.shape})"
            )
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(
                f"{name}: was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]} "
                f"(query {query.shape})"
            )
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise ShapeError(
                f"{name}: key and value must have {self.kdim} and {self.vdim} features (kdim, vdim), got key "
                f"{key.shape} and value {value.shape}"
            )
        if key.shape[:-1] != value.shape[:-1]:
            raise AssertionError(
                f"{name}: key's sequence and batch dims {key.shape[:-1]} do not match value's {value.shape[:-1]} "
                f"(key {key.shape}, value {value.shape})"
            )
        b = 0 if self.batch_first else 1  # where the batch dimension is (batched inputs)
        if batched and key.shape[b] != query.shape[b]:
            layout = "[B, L, E]" if self.batch_first else "[L, B, E]"
            raise ShapeError(
                f"{name}: query and key must have the same batch size (layout {layout}, batch_first="
                f"{self.batch_first}), got query {query.shape} and key {key.shape}"
            )
        bsz = query.shape[b] if batched else 1
        tgt_len = query.shape[1 - b] if batched else query.shape[0]
        src_len = key.shape[1 - b] if batched else key.shape[0]
        if key_padding_mask is not None:
            _mask_dtype_check(name, "key_padding_mask", key_padding_mask)
            expected = (bsz, src_len) if batched else (src_len,)
            if key_padding_mask.shape != expected:
                raise AssertionError(
                    f"{name}: expected key_padding_mask of shape {expected} ([B, S]{'' if batched else ' unbatched: [S]'}"
                    f"), got {key_padding_mask.shape} (query {query.shape}, key {key.shape})"
                )
        if attn_mask is not None:
            _mask_dtype_check(name, "attn_mask", attn_mask)
            if attn_mask.dims == 2:
                if attn_mask.shape != (tgt_len, src_len):
                    raise ShapeError(
                        f"{name}: The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                        f"{(tgt_len, src_len)} (query {query.shape}, key {key.shape})."
                    )
            elif attn_mask.dims == 3:
                expected = (bsz * self.num_heads, tgt_len, src_len)
                if attn_mask.shape != expected and not batched:  # PyTorch's error type for [H, L, S]
                    raise AssertionError(
                        f"{name}: Expected `attn_mask` shape to be {expected} ([num_heads, L, S] for an unbatched "
                        f"query {query.shape}, key {key.shape}) but got {attn_mask.shape}"
                    )
                if attn_mask.shape != expected:
                    raise ShapeError(
                        f"{name}: The shape of the 3D attn_mask is {attn_mask.shape}, but should be {expected} "
                        f"([B·num_heads, L, S]; query {query.shape}, key {key.shape})."
                    )
            else:
                raise AssertionError(
                    f"{name}: expected `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.dims}-D tensor "
                    f"instead (shape {attn_mask.shape})"
                )
        return batched

    def _merge_masks(
        self,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
        bsz: int,
        tgt_len: int,
        src_len: int,
        dtype: np.dtype,
    ) -> Optional[Tensor]:
        """The two masks (True = may NOT attend, or float added) as ONE mask in
        F.scaled_dot_product_attention's convention (True = MAY attend, or float added),
        broadcastable to [B, H, L, S]. Bool masks stay bool (combined with "and"); if
        either is float, a bool one becomes 0 / −∞ and the two are added."""
        masks = []
        if key_padding_mask is not None:
            masks.append(
                key_padding_mask.reshape(bsz, 1, 1, src_len)
            )  # the same keys for every head and query
        if attn_mask is not None:
            if attn_mask.dims == 2:
                masks.append(attn_mask.reshape(1, 1, tgt_len, src_len))  # the same for every batch and head
            else:
                masks.append(attn_mask.reshape(bsz, self.num_heads, tgt_len, src_len))  # index b·H + h
        if not masks:
            return None
        if all(m.dtype == bool for m in masks):
            allowed = ~masks[0]
            for m in masks[1:]:
                allowed = allowed & ~m
            return allowed
        total = None
        for m in masks:
            f = (
                m.new_zeros(m.shape, dtype=dtype).masked_fill(m, float("-inf"))
                if m.dtype == bool
                else m.to(dtype)
            )
            total = f if total is None else total + f
        return total

    def _weights(self) -> tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor], Optional[Tensor]]:
        """(w_q, w_k, w_v, b_q, b_k, b_v): the blocks of in_proj_weight / in_proj_bias, or
        the separate q/k/v_proj_weight."""
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.value.chunk(3, 0)
        else:
            w_q, w_k, w_v = self.q_proj_weight.value, self.k_proj_weight.value, self.v_proj_weight.value
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.value.chunk(3, 0)
        else:
            b_q = b_k = b_v = None
        return w_q, w_k, w_v, b_q, b_k, b_v

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = True,
        attn_mask: Optional[Tensor] = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Optional[Tensor]]:
        """Attention of `query` to `key`/`value`; returns (attn_output, attn_weights or None).

        Shapes (batch_first=False / True / unbatched): query [L, B, E] / [B, L, E] / [L, E],
        key [S, B, kdim] / [B, S, kdim] / [S, kdim], value likewise with vdim → attn_output
        like query. attn_weights (need_weights=True): [B, L, S] averaged over heads, or
        [B, H, L, S] with average_attn_weights=False (unbatched: no B).

        key_padding_mask [B, S] ([S]): bool True = IGNORE that key, or float added.
        attn_mask [L, S] or [B·H, L, S] ([H, L, S] unbatched): bool True = may NOT attend,
        or float added. is_causal: a hint that attn_mask is causal (attn_mask is required).
        """
        batched = self._check_forward(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise RuntimeError(
                f"{self._name()}: Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        if not batched:  # add a batch of one, take it away at the end
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:  # [L, B, E] → [B, L, E]
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        bsz, tgt_len, _ = query.shape
        src_len = key.shape[1]
        # PyTorch: with no padding mask and no weights wanted, the hint replaces the mask.
        use_causal = is_causal and key_padding_mask is None and not need_weights
        if use_causal:
            attn_mask = None
        mask = self._merge_masks(key_padding_mask, attn_mask, bsz, tgt_len, src_len, query.dtype)
        dropout_p = self.dropout if self.training else 0.0
        output, weights = multi_head_attention(
            query,
            key,
            value,
            self.num_heads,
            *self._weights(),
            self.out_proj.weight.value,
            self.out_proj.bias.value if self.out_proj.bias is not None else None,
            attn_mask=mask,
            dropout_p=dropout_p,
            is_causal=use_causal,
        )
        if not batched:
            output = output.squeeze(0)
        elif not self.batch_first:
            output = output.transpose(0, 1)  # back to [L, B, E]
        if not need_weights:
            return output, None
        if average_attn_weights:
            weights = weights.mean(1)  # [B, L, S]
        return output, weights.squeeze(0) if not batched else weights

    def extra_repr(self) -> str:
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if not self._qkv_same_embed_dim:
            s += f", kdim={self.kdim}, vdim={self.vdim}"
        if self.batch_first:
            s += ", batch_first=True"
        return s
