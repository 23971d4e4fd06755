"""Hidden checks of stage A6, task 6.3: `nn.MultiheadAttention`.

The module is built with the reference's constructor arguments, given random weights by
`load_state_dict` (PyTorch's names: `in_proj_weight`, `in_proj_bias`, `out_proj.weight`,
`out_proj.bias`), run forward and backward, and compared with the reference: the output,
the attention weights (averaged and per head), the gradients of query, key and value and
of every parameter. Cases: self-attention (one tensor passed three times: its gradient is
the sum of three), cross-attention with S ≠ L, sequence-first and batch-first layouts,
unbatched input, no bias, float32; masks in PyTorch's MultiheadAttention convention
(True = may NOT attend): random key padding with a sequence that is all padding, boolean
and float `attn_mask` of shape [L, S] and [B·H, L, S], both together, the causal mask.
Central differences of the student's forward for query, key and value.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext, check
from ..layer_probes import backward_of_sum
from ..probe import F32, Probe, Ref, Tol
from .masks import random_mask


MHA = "minitorch.nn.multihead_attention.MultiheadAttention"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _state(ctx: CheckContext, e: int, bias: bool, dtype: Any) -> dict[str, np.ndarray]:
    n = ctx.rng.standard_normal
    state = {"in_proj_weight": n((3 * e, e)) * 0.5, "out_proj.weight": n((e, e)) * 0.5}
    if bias:
        state |= {"in_proj_bias": n(3 * e) * 0.3, "out_proj.bias": n(e) * 0.3}
    return {k: v.astype(dtype) for k, v in state.items()}


def mha_probe(
    ctx: CheckContext,
    e: int,
    h: int,
    b: Optional[int],
    l: int,
    s: Optional[int] = None,
    *,
    batch_first: bool = False,
    bias: bool = True,
    key_padding_mask: Optional[np.ndarray] = None,
    attn_mask: Optional[np.ndarray] = None,
    dtype: Any = np.float64,
    what: str = "",
    **kwargs: Any,
) -> Probe:
    """MultiheadAttention(e, h) forward + backward; self-attention when s is None."""
    n = ctx.rng.standard_normal
    self_attn = s is None
    s = l if s is None else s

    def layout(length: int) -> tuple[int, ...]:
        if b is None:
            return (length, e)
        return (b, length, e) if batch_first else (length, b, e)

    arrays = {"query": n(layout(l)).astype(dtype)}
    if not self_attn:
        arrays |= {"key": n(layout(s)).astype(dtype), "value": n(layout(s)).astype(dtype)}
    state = _state(ctx, e, bias, dtype)
    masks = {"key_padding_mask": key_padding_mask, "attn_mask": attn_mask}
    shown = {**arrays, **state, **{k: v for k, v in masks.items() if v is not None}}
    ctor = f"MultiheadAttention({e}, {h}{', bias=False' if not bias else ''}{', batch_first=True' if batch_first else ''})"
    call = (
        "self-attention on x " + str(arrays["query"].shape)
        if self_attn
        else f"query {arrays['query'].shape}, key and value {arrays['key'].shape}"
    )
    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    p = Probe(f"{ctor} with weights loaded, {call}{what}{extra}", shown)
    module = p.call(MHA, e, h, bias=bias, batch_first=batch_first, backend=p.get(SIMPLE))
    p.method(module, "load_state_dict", state)
    q = p.tensor(arrays["query"], requires_grad=True)
    k, v = (
        (q, q)
        if self_attn
        else (p.tensor(arrays["key"], requires_grad=True), p.tensor(arrays["value"], requires_grad=True))
    )
    mask_refs = {
        name: (p.tensor(m.astype(dtype) if m.dtype.kind == "f" else m) if m is not None else None)
        for name, m in masks.items()
    }
    out = p.call(module, q, k, v, **mask_refs, **kwargs)
    output, weights = p.op("getitem", out, 0), p.op("getitem", out, 1)
    need = kwargs.get("need_weights", True)
    heads_shape: tuple[int, ...] = (l, s) if kwargs.get("average_attn_weights", True) else (h, l, s)
    w_shape = heads_shape if b is None else (b,) + heads_shape
    outputs = [(output, n(layout(l)).astype(dtype))] + ([(weights, n(w_shape).astype(dtype))] if need else [])
    backward_of_sum(p, outputs)
    params = p.method(module, "named_parameters")
    grads = [p.attr(q, "grad")] + ([] if self_attn else [p.attr(k, "grad"), p.attr(v, "grad")])
    grad_names = (
        ["x.grad (sum over its three uses)"] if self_attn else ["query.grad", "key.grad", "value.grad"]
    )
    p.returns(
        output,
        weights,
        *grads,
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["attn_output", "attn_weights"] + grad_names + ["parameter names", "parameter gradients"],
    )
    return p


@check("6.3", "mha", kind="equivalence")
def mha(ctx: CheckContext) -> None:
    """MultiheadAttention without masks: self- and cross-attention (S ≠ L), both layouts,
    unbatched, one head, no bias, per-head weights, need_weights=False, float32: outputs,
    weights and every gradient against the reference."""
    probes = [
        mha_probe(ctx, 2, 1, 1, 1),
        mha_probe(ctx, 4, 2, 2, 3),
        mha_probe(ctx, 6, 3, 2, 3, 5, batch_first=True),
        mha_probe(ctx, 4, 4, 3, 4, 2),
        mha_probe(ctx, 4, 2, None, 3, 4),
        mha_probe(ctx, 6, 2, 2, 3, batch_first=True, bias=False),
        mha_probe(ctx, 4, 2, 2, 3, 4, batch_first=True, average_attn_weights=False),
        mha_probe(ctx, 4, 2, 2, 3, need_weights=False),
    ]
    ctx.equivalent(probes, TOL)
    ctx.equivalent([mha_probe(ctx, 4, 2, 2, 3, 4, batch_first=True, dtype=np.float32)], F32)


@check("6.3", "mha_masks", kind="equivalence")
def mha_masks(ctx: CheckContext) -> None:
    """MultiheadAttention with masks (True = may NOT attend): random key padding with an
    all-padding sequence, boolean and float attn_mask [L, S] and [B·H, L, S], both together,
    the causal mask; outputs, weights and every gradient against the reference."""
    b, h, l, s = 3, 2, 4, 5
    kpm = ~random_mask(ctx, (b, s), p_true=0.6, empty_rows=1)
    bool_mask = ~random_mask(ctx, (l, s), p_true=0.7, empty_rows=1)
    float_mask = ctx.rng.standard_normal((b * h, l, s))
    float_mask[ctx.rng.random(float_mask.shape) < 0.25] = -np.inf
    per_head = ~random_mask(ctx, (b * h, l, s), p_true=0.7, empty_rows=2)
    causal = np.triu(np.ones((l, l), dtype=bool), 1)
    float_kpm = np.where(kpm, -np.inf, 0.0)
    probes = [
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            s,
            key_padding_mask=kpm,
            what=f", bool key_padding_mask {kpm.shape} (one sequence all padding)",
        ),
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            s,
            batch_first=True,
            key_padding_mask=float_kpm,
            what=", float key_padding_mask (−inf = padding)",
        ),
        mha_probe(ctx, 4, h, b, l, s, attn_mask=bool_mask, what=f", bool attn_mask {bool_mask.shape}"),
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            s,
            batch_first=True,
            attn_mask=per_head,
            what=f", bool attn_mask {per_head.shape} (one per head)",
        ),
        mha_probe(
            ctx, 4, h, b, l, s, attn_mask=float_mask, what=f", float attn_mask {float_mask.shape} with −inf"
        ),
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            s,
            batch_first=True,
            key_padding_mask=kpm,
            attn_mask=bool_mask,
            what=", bool key_padding_mask and bool attn_mask together",
            average_attn_weights=False,
        ),
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            None,
            batch_first=True,
            attn_mask=causal,
            what=", the causal attn_mask (triu, diagonal 1)",
            is_causal=True,
        ),
        # no weights wanted and no padding: the is_causal hint replaces the mask (as in PyTorch),
        # so multi_head_attention must pass is_causal on
        mha_probe(
            ctx,
            4,
            h,
            b,
            l,
            None,
            batch_first=True,
            attn_mask=causal,
            what=", the causal attn_mask (triu, diagonal 1)",
            is_causal=True,
            need_weights=False,
        ),
        mha_probe(ctx, 4, h, None, l, s, attn_mask=bool_mask, what=", unbatched, bool attn_mask"),
    ]
    ctx.equivalent(probes, TOL)
    ctx.equivalent(
        [
            mha_probe(
                ctx, 4, h, b, l, s, key_padding_mask=kpm, dtype=np.float32, what=", bool key_padding_mask"
            )
        ],
        F32,
    )


@check("6.3", "mha_gradcheck", kind="gradient")
def mha_gradcheck(ctx: CheckContext) -> None:
    """MultiheadAttention: the gradients of query, key and value against central
    differences of the student's forward (cross-attention, key padding)."""
    e, h, b, l, s = 4, 2, 2, 2, 3
    state = _state(ctx, e, True, np.float64)
    kpm = np.array([[False, True, False], [False, False, True]])
    arrays = [
        ctx.rng.standard_normal((b, l, e)),
        ctx.rng.standard_normal((b, s, e)),
        ctx.rng.standard_normal((b, s, e)),
    ]

    def build(p: Probe, ts: list[Ref]) -> Ref:
        module = p.call(MHA, e, h, batch_first=True, backend=p.get(SIMPLE))
        p.method(module, "load_state_dict", state)
        return p.op("getitem", p.call(module, *ts, key_padding_mask=p.tensor(kpm)), 0)

    ctx.gradcheck(
        f"MultiheadAttention({e}, {h}, batch_first=True) with weights loaded, query ({b}, {l}, {e}), "
        f"key and value ({b}, {s}, {e}), key_padding_mask ({b}, {s}) → attn_output",
        build,
        arrays,
        names=["query", "key", "value"],
    )
