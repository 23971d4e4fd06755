"""Hidden checks of stage A6, task 6.2: `scaled_dot_product_attention` with masks.

Forward and backward (q, k and v) against the reference: no mask; random boolean masks
(True = may attend) with rows that may attend to nothing; float masks with −∞ entries; a
mask that broadcasts over the batch and the heads; `is_causal` with L = S and L ≠ S; a
given `scale`; strided inputs; float32. Central differences of the student's forward.

The properties of the lecture are checked on the student's code alone, with V = I (the
S × S identity) so that the output *is* the attention matrix: every row sums to 1 (0 for a
row with nothing allowed), masked entries are exactly 0, and with `is_causal` the output
at position t does not change when the keys and values after t change. Dropout: p = 1
drops every weight (zeros), p = 0 is the identity.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError, check
from ..layer_probes import fwd_bwd
from ..probe import F32, Probe, Ref, TensorVal, Tol, describe
from .masks import random_mask


SDPA = "minitorch.nn.attention.scaled_dot_product_attention"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _qkv(ctx: CheckContext, lead: tuple[int, ...], l: int, s: int, e: int, ev: int) -> dict[str, np.ndarray]:
    n = ctx.rng.standard_normal
    return {"query": n(lead + (l, e)), "key": n(lead + (s, e)), "value": n(lead + (s, ev))}


def sdpa_probe(
    ctx: CheckContext,
    lead: tuple[int, ...],
    l: int,
    s: int,
    e: int,
    ev: int,
    *,
    mask: Optional[np.ndarray] = None,
    what: str = "",
    order: Optional[dict] = None,
    dtype: Any = np.float64,
    **kwargs: Any,
) -> Probe:
    arrays: dict[str, Optional[np.ndarray]] = {
        k: v.astype(dtype) for k, v in _qkv(ctx, lead, l, s, e, ev).items()
    }
    arrays["attn_mask"] = None if mask is None else (mask.astype(dtype) if mask.dtype.kind == "f" else mask)
    shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items() if v is not None and k != "attn_mask")
    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    label = f"scaled_dot_product_attention({shapes}{what}{extra})"

    def build(p: Probe, r: list[Ref]) -> Ref:
        return p.call(SDPA, r[0], r[1], r[2], attn_mask=r[3], **kwargs)

    return fwd_bwd(ctx, label, arrays, build, lead + (l, ev), order=order)


def _float_mask(ctx: CheckContext, shape: tuple[int, ...]) -> np.ndarray:
    m = ctx.rng.standard_normal(shape)
    m[ctx.rng.random(shape) < 0.3] = -np.inf
    m.reshape(-1, shape[-1])[0] = -np.inf  # one row with nothing allowed
    return m


@check("6.2", "sdpa", kind="equivalence")
def sdpa(ctx: CheckContext) -> None:
    """scaled_dot_product_attention without masks: values and the gradients of q, k and v,
    batched, with heads, L ≠ S, Ev ≠ E, a given scale, strided inputs, float32."""
    probes = [
        sdpa_probe(ctx, (), 1, 1, 1, 1),
        sdpa_probe(ctx, (), 3, 4, 2, 5),
        sdpa_probe(ctx, (2,), 4, 3, 3, 2),
        sdpa_probe(ctx, (2, 3), 5, 5, 4, 4),
        sdpa_probe(ctx, (2,), 3, 6, 4, 2, scale=0.7),
        sdpa_probe(
            ctx,
            (2,),
            3,
            4,
            5,
            2,
            what=", query stored in dimension order (0, 2, 1)",
            order={"query": (0, 2, 1)},
        ),
    ]
    ctx.equivalent(probes, TOL)
    ctx.equivalent([sdpa_probe(ctx, (2,), 3, 4, 4, 3, dtype=np.float32)], F32)


@check("6.2", "sdpa_masks", kind="equivalence")
def sdpa_masks(ctx: CheckContext) -> None:
    """scaled_dot_product_attention with masks: random boolean masks (True = may attend) with
    rows that may attend to nothing, float masks with −inf, broadcast masks, is_causal
    (L = S and L ≠ S): values and gradients against the reference."""
    probes = []
    for lead, l, s, empty in [((), 3, 4, 1), ((2,), 4, 5, 2), ((2, 2), 3, 3, 1)]:
        m = random_mask(ctx, lead + (l, s), p_true=0.6, empty_rows=empty)
        probes.append(
            sdpa_probe(
                ctx,
                lead,
                l,
                s,
                3,
                2,
                mask=m,
                what=f", bool attn_mask {m.shape} ({empty} rows may attend to nothing)",
            )
        )
    m = random_mask(ctx, (4, 5), p_true=0.7, empty_rows=1)
    probes.append(
        sdpa_probe(
            ctx, (2, 3), 4, 5, 2, 3, mask=m, what=", bool attn_mask (4, 5) broadcast over batch and heads"
        )
    )
    pad = ~np.array(
        [[[[False, False, True, True, True]]], [[[False, False, False, False, True]]]]
    )  # [B, 1, 1, S]: key padding
    probes.append(
        sdpa_probe(
            ctx, (2, 2), 3, 5, 2, 2, mask=pad, what=", bool attn_mask (2, 1, 1, 5): key padding per sequence"
        )
    )
    fm = _float_mask(ctx, (2, 3, 4))
    probes.append(
        sdpa_probe(
            ctx,
            (2,),
            3,
            4,
            3,
            3,
            mask=fm,
            what=", float attn_mask (2, 3, 4) with -inf entries and a row of -inf",
        )
    )
    probes.append(sdpa_probe(ctx, (2,), 4, 4, 3, 2, is_causal=True))
    probes.append(sdpa_probe(ctx, (2,), 3, 5, 2, 2, is_causal=True))
    probes.append(sdpa_probe(ctx, (1,), 5, 3, 2, 2, is_causal=True))
    ctx.equivalent(probes, TOL)
    m = random_mask(ctx, (3, 4), empty_rows=1)
    ctx.equivalent(
        [sdpa_probe(ctx, (2,), 3, 4, 2, 2, mask=m, dtype=np.float32, what=", bool attn_mask (3, 4)")], F32
    )


def _weights_probe(
    label: str, q: np.ndarray, k: np.ndarray, mask: Optional[np.ndarray] = None, **kwargs: Any
) -> Probe:
    """The attention matrix itself: V = I makes the output equal to the weights."""
    s = k.shape[-2]
    eye = np.broadcast_to(np.eye(s), k.shape[:-2] + (s, s)).copy()
    p = Probe(
        label,
        {"query": q, "key": k, "value (the identity)": eye}
        | ({"attn_mask": mask} if mask is not None else {}),
    )
    p.returns(
        p.call(
            SDPA,
            p.tensor(q),
            p.tensor(k),
            p.tensor(eye),
            attn_mask=None if mask is None else p.tensor(mask),
            **kwargs,
        )
    )
    return p


def _tensor_of(p: Probe, answer: Any, shape: tuple[int, ...]) -> np.ndarray:
    if answer.error:
        raise StudentError(p.label, answer.error, "")
    (v,) = answer.values
    if not isinstance(v, TensorVal) or v.array.shape != shape:
        raise CheckFailed(f"{p.label}: expected a tensor of shape {shape}, got {describe(v)[:80]}")
    return v.array


@check("6.2", "sdpa_properties", kind="property")
def sdpa_properties(ctx: CheckContext) -> None:
    """The lecture's properties on the student's code: rows of the attention matrix sum to 1
    (0 with nothing allowed), masked weights are 0, causal outputs ignore the future,
    dropout p = 1 gives zeros."""
    n = ctx.rng.standard_normal
    q, k = n((2, 4, 3)) * 2, n((2, 5, 3)) * 2
    mask = random_mask(ctx, (2, 4, 5), p_true=0.6, empty_rows=1)
    cases = [
        (
            _weights_probe(
                "scaled_dot_product_attention(q (2, 4, 3), k (2, 5, 3), v = I) (the attention matrix)", q, k
            ),
            None,
        ),
        (
            _weights_probe(
                "scaled_dot_product_attention(q (2, 4, 3), k (2, 5, 3), v = I, bool attn_mask (2, 4, 5))",
                q,
                k,
                mask,
            ),
            mask,
        ),
        (
            _weights_probe(
                "scaled_dot_product_attention(q (2, 4, 3), k (2, 5, 3), v = I, is_causal=True)",
                q,
                k,
                is_causal=True,
            ),
            np.broadcast_to(np.tril(np.ones((4, 5), dtype=bool)), (2, 4, 5)),
        ),
    ]
    answers = ctx.child([c for c, _ in cases])
    for (p, allowed), a in zip(cases, answers):
        w = _tensor_of(p, a, (2, 4, 5))
        if np.isnan(w).any():
            raise CheckFailed(f"{p.label}: the attention matrix holds NaN")
        if allowed is not None and np.any(w[~allowed] != 0.0):
            i = tuple(np.argwhere((w != 0.0) & ~allowed)[0])
            raise CheckFailed(
                f"{p.label}: weight {list(i)} is {w[i]:.6g}, but that key is masked (it must be exactly 0)"
            )
        live = np.ones(w.shape[:-1], dtype=bool) if allowed is None else allowed.any(-1)
        sums = w.sum(-1)
        bad = ~np.isclose(sums, np.where(live, 1.0, 0.0), rtol=1e-9, atol=1e-12)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            want = "1" if live[i] else "0 (a row that may attend to nothing)"
            raise CheckFailed(
                f"{p.label}: row {list(i)} of the attention matrix sums to {sums[i]:.10g}, expected {want}"
            )
    # causality: changing keys and values after position t changes nothing at t
    q, k, v = n((1, 6, 2)), n((1, 6, 2)), n((1, 6, 3))
    k2, v2 = k.copy(), v.copy()
    k2[:, 3:] += n((1, 3, 2)) * 3
    v2[:, 3:] += n((1, 3, 3)) * 3
    probes = []
    for kk, vv, tag in [(k, v, "keys and values"), (k2, v2, "the keys and values of positions 3-5 changed")]:
        p = Probe(
            f"scaled_dot_product_attention(q (1, 6, 2), k, v (1, 6, 3), is_causal=True), {tag}",
            {"query": q, "key": kk, "value": vv},
        )
        p.returns(p.call(SDPA, p.tensor(q), p.tensor(kk), p.tensor(vv), is_causal=True))
        probes.append(p)
    a, b = (_tensor_of(p, ans, (1, 6, 3)) for p, ans in zip(probes, ctx.child(probes)))
    if not np.allclose(a[:, :3], b[:, :3], rtol=1e-12, atol=1e-14):
        raise CheckFailed(
            f"{probes[1].label}: the outputs at positions 0-2 changed, but with is_causal=True they may only "
            "attend to positions ≤ their own"
        )
    # dropout p = 1 drops every weight
    p = Probe("scaled_dot_product_attention(q (2, 3, 2), k, v (2, 4, 2), dropout_p=1.0)")
    p.returns(
        p.call(SDPA, p.tensor(n((2, 3, 2))), p.tensor(n((2, 4, 2))), p.tensor(n((2, 4, 2))), dropout_p=1.0)
    )
    (ans,) = ctx.child([p])
    if np.any(_tensor_of(p, ans, (2, 3, 2)) != 0.0):
        raise CheckFailed(
            f"{p.label}: with dropout_p=1.0 every attention weight is dropped: the output must be all zeros"
        )


@check("6.2", "sdpa_gradcheck", kind="gradient")
def sdpa_gradcheck(ctx: CheckContext) -> None:
    """scaled_dot_product_attention: backward (q, k, v) against central differences of the
    student's forward, with a boolean mask and with is_causal."""
    arrays = list(_qkv(ctx, (2,), 3, 4, 2, 2).values())
    mask = random_mask(ctx, (2, 3, 4), p_true=0.7, empty_rows=1)

    def build(p: Probe, ts: list[Ref]) -> Ref:
        return p.call(SDPA, *ts, attn_mask=p.tensor(mask))

    ctx.gradcheck(
        "scaled_dot_product_attention(query (2, 3, 2), key (2, 4, 2), value (2, 4, 2), bool attn_mask (2, 3, 4))",
        build,
        arrays,
        names=["query", "key", "value"],
    )
    arrays = list(_qkv(ctx, (1,), 3, 3, 2, 2).values())
    ctx.gradcheck(
        "scaled_dot_product_attention(query (1, 3, 2), key (1, 3, 2), value (1, 3, 2), is_causal=True)",
        lambda p, ts: p.call(SDPA, *ts, is_causal=True),
        arrays,
        names=["query", "key", "value"],
    )
