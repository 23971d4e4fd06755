"""Hidden checks of stage A6, task 6.1: `masked_softmax`, attention pooling and additive
(Bahdanau) attention.

Every function is run forward and backward (a random upstream gradient on every output)
against the reference, with random masks: a random pattern, a row (or a whole sequence)
with nothing allowed — whose weights must be 0 and whose gradients must be 0, never NaN —
no mask at all, a mask that broadcasts, −∞ scores, logits of ±1000, strided inputs and
float32. The gradient checks compare the student's backward with central differences of
the student's own forward.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext, check
from ..layer_probes import backward_of_sum, fwd_bwd, fwd_bwd_many
from ..probe import F32, Probe, Ref, Tol
from .masks import random_mask


MS = "minitorch.nn.masked_softmax.masked_softmax"
POOL = "minitorch.nn.attention_pooling"
ADD = "minitorch.nn.additive_attention"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _masked_softmax_probes(ctx: CheckContext) -> list[Probe]:
    probes = []
    for shape, dim, empty in [
        ((4,), -1, 0),
        ((2, 3), -1, 0),
        ((3, 5), -1, 1),
        ((2, 3, 4), -1, 2),
        ((3, 4), 0, 1),
        ((2, 2, 3, 5), -1, 3),
    ]:
        x = ctx.rng.standard_normal(shape) * 3
        mask = random_mask(ctx, shape if dim == -1 else shape[::-1], empty_rows=empty)
        mask = mask if dim == -1 else mask.T
        label = f"masked_softmax(scores {shape}, mask {shape} ({empty} rows with nothing allowed), dim={dim})"
        probes.append(
            fwd_bwd(
                ctx,
                label,
                {"scores": x, "mask": mask},
                lambda p, t, d=dim: p.call(MS, t[0], t[1], dim=d),
                shape,
            )
        )
    x = ctx.rng.standard_normal((3, 4))
    probes.append(
        fwd_bwd(
            ctx,
            "masked_softmax(scores (3, 4), mask=None)",
            {"scores": x},
            lambda p, t: p.call(MS, t[0]),
            (3, 4),
        )
    )
    key_pad = np.array([[True, True, False, True]])
    probes.append(
        fwd_bwd(
            ctx,
            "masked_softmax(scores (3, 4), mask (1, 4): one mask broadcast over every row)",
            {"scores": x * 2, "mask": key_pad},
            lambda p, t: p.call(MS, t[0], t[1]),
            (3, 4),
        )
    )
    inf = np.array(
        [[0.5, -np.inf, 1.5, 2.0], [-np.inf, -np.inf, -np.inf, -np.inf], [1000.0, -1000.0, 999.0, 0.0]]
    )
    probes.append(
        fwd_bwd(
            ctx,
            "masked_softmax(scores with −inf entries, a row of −inf and logits of ±1000, mask=None)",
            {"scores": inf},
            lambda p, t: p.call(MS, t[0]),
            inf.shape,
        )
    )
    mask = random_mask(ctx, (3, 4))
    probes.append(
        fwd_bwd(
            ctx,
            "masked_softmax(scores (3, 4) stored in dimension order (1, 0), mask (3, 4))",
            {"scores": ctx.rng.standard_normal((3, 4)), "mask": mask},
            lambda p, t: p.call(MS, t[0], t[1]),
            (3, 4),
            order={"scores": (1, 0)},
        )
    )
    return probes


@check("6.1", "masked_softmax", kind="equivalence")
def masked_softmax(ctx: CheckContext) -> None:
    """masked_softmax forward and backward: random masks, rows with nothing allowed (zeros,
    never NaN), no mask, a broadcast mask, −∞ scores, ±1000 logits, strided, float32."""
    ctx.equivalent(_masked_softmax_probes(ctx), TOL)
    x = ctx.rng.standard_normal((2, 5)).astype(np.float32)
    mask = random_mask(ctx, (2, 5))
    ctx.equivalent(
        [
            fwd_bwd(
                ctx,
                "masked_softmax(float32 scores (2, 5), mask (2, 5))",
                {"scores": x, "mask": mask},
                lambda p, t: p.call(MS, t[0], t[1]),
                (2, 5),
            )
        ],
        F32,
    )


@check("6.1", "masked_softmax_gradcheck", kind="gradient")
def masked_softmax_gradcheck(ctx: CheckContext) -> None:
    """masked_softmax: backward against central differences of the student's forward."""
    for shape in [(2, 3), (3, 5)]:
        mask = random_mask(ctx, shape, p_true=0.7, empty_rows=0)

        def build(p: Probe, ts: list[Ref], mask: np.ndarray = mask) -> Ref:
            return p.call(MS, ts[0], p.tensor(mask))

        ctx.gradcheck(
            f"masked_softmax(scores {shape}, mask {shape})",
            build,
            [ctx.rng.standard_normal(shape)],
            names=["scores"],
        )


def _pooling_probe(
    ctx: CheckContext, b: int, t: int, d: int, padding: Optional[np.ndarray], dtype: Any = np.float64
) -> Probe:
    values = ctx.rng.standard_normal((b, t, d)).astype(dtype)
    weight = ctx.rng.standard_normal(d).astype(dtype)
    arrays = {"values": values, "weight": weight, "key_padding_mask": padding}
    what = (
        "no mask"
        if padding is None
        else f"key_padding_mask {padding.shape} ({int(padding.all(-1).sum())} sequences all padding)"
    )
    label = f"attention_pooling(values {values.shape}, weight {weight.shape}, {what})"

    def build(p: Probe, r: list[Any]) -> list[Ref]:
        out = p.call(f"{POOL}.attention_pooling", r[0], r[1], key_padding_mask=r[2])
        return [p.op("getitem", out, 0), p.op("getitem", out, 1)]

    return fwd_bwd_many(ctx, label, arrays, build, [(b, d), (b, t)], ["pooled", "weights"])


def _pooling_module_probe(ctx: CheckContext, b: int, t: int, d: int) -> Probe:
    values = ctx.rng.standard_normal((b, t, d))
    weight = ctx.rng.standard_normal(d)
    padding = ~random_mask(ctx, (b, t), p_true=0.7, empty_rows=0)
    p = Probe(
        f"AttentionPooling({d}) with weight loaded, on values {values.shape} and a key_padding_mask",
        {"values": values, "weight": weight},
    )
    module = p.call(f"{POOL}.AttentionPooling", d, backend=p.get(SIMPLE))
    p.method(module, "load_state_dict", {"weight": weight})
    v = p.tensor(values, requires_grad=True)
    out = p.call(module, v, key_padding_mask=p.tensor(padding))
    pooled, weights = p.op("getitem", out, 0), p.op("getitem", out, 1)
    backward_of_sum(
        p, [(pooled, ctx.rng.standard_normal((b, d))), (weights, ctx.rng.standard_normal((b, t)))]
    )
    params = p.method(module, "named_parameters")
    p.returns(
        pooled,
        weights,
        p.attr(v, "grad"),
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["pooled", "weights", "values.grad", "parameter names", "parameter gradients"],
    )
    return p


@check("6.1", "attention_pooling", kind="equivalence")
def attention_pooling(ctx: CheckContext) -> None:
    """attention_pooling and AttentionPooling: the pooled vectors, the weights and every
    gradient against the reference, with random padding, an all-padding sequence, no mask,
    float32."""
    probes = [_pooling_probe(ctx, 1, 1, 1, None), _pooling_probe(ctx, 2, 3, 4, None)]
    for b, t, d, empty in [(3, 5, 2, 1), (4, 6, 3, 2)]:
        probes.append(_pooling_probe(ctx, b, t, d, ~random_mask(ctx, (b, t), p_true=0.6, empty_rows=empty)))
    probes.append(_pooling_module_probe(ctx, 2, 4, 3))
    ctx.equivalent(probes, TOL)
    ctx.equivalent([_pooling_probe(ctx, 2, 3, 4, ~random_mask(ctx, (2, 3), empty_rows=0), np.float32)], F32)


def _additive_arrays(
    ctx: CheckContext,
    b: int,
    s: int,
    dq: int,
    dk: int,
    dv: Optional[int],
    h: int,
    padding: bool,
    empty: int = 0,
) -> dict[str, Optional[np.ndarray]]:
    n = ctx.rng.standard_normal
    return {
        "query": n((b, dq)),
        "keys": n((b, s, dk)),
        "values": n((b, s, dv)) if dv else None,
        "w_query": n((h, dq)) * 0.7,
        "w_key": n((h, dk)) * 0.7,
        "v": n(h),
        "key_padding_mask": ~random_mask(ctx, (b, s), p_true=0.7, empty_rows=empty) if padding else None,
    }


def _additive_probe(ctx: CheckContext, arrays: dict[str, Optional[np.ndarray]]) -> Probe:
    shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items() if v is not None)
    label = f"additive_attention({shapes})"
    b, s = arrays["keys"].shape[:2]
    dv = (arrays["values"] if arrays["values"] is not None else arrays["keys"]).shape[-1]

    def build(p: Probe, r: list[Any]) -> list[Ref]:
        q, k, v, wq, wk, vv, mask = r
        out = p.call(
            f"{ADD}.additive_attention", q, k, v if v is not None else k, wq, wk, vv, key_padding_mask=mask
        )
        return [p.op("getitem", out, 0), p.op("getitem", out, 1)]

    return fwd_bwd_many(ctx, label, arrays, build, [(b, dv), (b, s)], ["context", "weights"])


def _additive_module_probe(ctx: CheckContext, projected: bool) -> Probe:
    b, s, dq, dk, h = 2, 4, 3, 5, 6
    a = _additive_arrays(ctx, b, s, dq, dk, None, h, padding=True)
    state = {"query_proj.weight": a["w_query"], "key_proj.weight": a["w_key"], "v": a["v"]}
    how = "keys projected once with project_keys(keys)" if projected else "keys projected inside forward"
    p = Probe(
        f"AdditiveAttention({dq}, {dk}, {h}) with weights loaded, on query ({b}, {dq}), keys ({b}, {s}, {dk}), "
        f"a key_padding_mask; {how}",
        {k: v for k, v in a.items() if v is not None},
    )
    module = p.call(f"{ADD}.AdditiveAttention", dq, dk, h, backend=p.get(SIMPLE))
    p.method(module, "load_state_dict", state)
    q, k = p.tensor(a["query"], requires_grad=True), p.tensor(a["keys"], requires_grad=True)
    kwargs = {"key_padding_mask": p.tensor(a["key_padding_mask"])}
    if projected:
        kwargs["projected_keys"] = p.method(module, "project_keys", k)
    out = p.call(module, q, k, **kwargs)
    context, weights = p.op("getitem", out, 0), p.op("getitem", out, 1)
    backward_of_sum(
        p, [(context, ctx.rng.standard_normal((b, dk))), (weights, ctx.rng.standard_normal((b, s)))]
    )
    params = p.method(module, "named_parameters")
    p.returns(
        context,
        weights,
        p.attr(q, "grad"),
        p.attr(k, "grad"),
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["context", "weights", "query.grad", "keys.grad", "parameter names", "parameter gradients"],
    )
    return p


@check("6.1", "additive_attention", kind="equivalence")
def additive_attention(ctx: CheckContext) -> None:
    """additive_attention and AdditiveAttention (with and without project_keys): context,
    weights and every gradient against the reference, random padding, an all-padding
    sequence, no mask, values other than the keys, float32."""
    probes = [
        _additive_probe(ctx, _additive_arrays(ctx, 1, 1, 1, 1, None, 1, False)),
        _additive_probe(ctx, _additive_arrays(ctx, 2, 3, 4, 3, None, 5, False)),
        _additive_probe(ctx, _additive_arrays(ctx, 3, 5, 2, 4, 3, 4, True, empty=1)),
        _additive_probe(ctx, _additive_arrays(ctx, 4, 6, 3, 3, 2, 2, True, empty=2)),
        _additive_module_probe(ctx, False),
        _additive_module_probe(ctx, True),
    ]
    ctx.equivalent(probes, TOL)
    a32 = {
        k: (v.astype(np.float32) if v is not None and v.dtype.kind == "f" else v)
        for k, v in _additive_arrays(ctx, 2, 3, 2, 3, None, 4, True).items()
    }
    ctx.equivalent([_additive_probe(ctx, a32)], F32)


@check("6.1", "additive_attention_gradcheck", kind="gradient")
def additive_attention_gradcheck(ctx: CheckContext) -> None:
    """additive_attention and attention_pooling: backward against central differences of
    the student's forward (the context; every input and weight)."""
    a = _additive_arrays(ctx, 2, 3, 2, 3, 2, 3, padding=True)
    mask = a.pop("key_padding_mask")
    names = list(a)

    def build(p: Probe, ts: list[Ref]) -> Ref:
        out = p.call(f"{ADD}.additive_attention", *ts, key_padding_mask=p.tensor(mask))
        return p.op("getitem", out, 0)

    ctx.gradcheck(
        "additive_attention(query (2, 2), keys (2, 3, 3), values (2, 3, 2), w_query (3, 2), w_key (3, 3), v (3,), "
        "key_padding_mask (2, 3)) → context",
        build,
        list(a.values()),
        names=names,
    )
    values, weight = ctx.rng.standard_normal((2, 3, 2)), ctx.rng.standard_normal(2)
    pad = np.array([[False, False, True], [False, True, False]])

    def build_pool(p: Probe, ts: list[Ref]) -> Ref:
        return p.op(
            "getitem", p.call(f"{POOL}.attention_pooling", ts[0], ts[1], key_padding_mask=p.tensor(pad)), 0
        )

    ctx.gradcheck(
        "attention_pooling(values (2, 3, 2), weight (2,), key_padding_mask (2, 3)) → pooled",
        build_pool,
        [values, weight],
        names=["values", "weight"],
    )
