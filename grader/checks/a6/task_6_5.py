"""Hidden checks of stage A6, task 6.5: the transformer layers and the tiny GPT.

`TransformerEncoderLayer` and `TransformerDecoderLayer` are built with the reference's
constructor arguments, given random weights by `load_state_dict` (PyTorch's names), run
forward and backward and compared with the reference (the output, the input's gradient,
every parameter's): post-norm and pre-norm, relu and gelu, both layouts, masks in PyTorch's
convention (random key padding, the causal mask), cross-attention to a memory of another
length. `TinyGPT` the same way with learned and sinusoidal positions; its causality is
checked on the student's code alone (the logits at t do not change when the tokens after t
change). Central differences of the student's own forward for both layers.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError, check
from ..layer_probes import backward_of_sum
from ..probe import F32, Probe, Ref, TensorVal, Tol, describe
from .masks import random_mask


TR = "minitorch.nn.transformer"
GPT = "minitorch.nn.gpt.TinyGPT"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _attn_state(ctx: CheckContext, prefix: str, d: int) -> dict[str, np.ndarray]:
    n = ctx.rng.standard_normal
    return {
        f"{prefix}.in_proj_weight": n((3 * d, d)) * 0.4,
        f"{prefix}.in_proj_bias": n(3 * d) * 0.2,
        f"{prefix}.out_proj.weight": n((d, d)) * 0.4,
        f"{prefix}.out_proj.bias": n(d) * 0.2,
    }


def layer_state(
    ctx: CheckContext, d: int, ff: int, decoder: bool = False, prefix: str = ""
) -> dict[str, np.ndarray]:
    """Random weights for an encoder (or decoder) layer, by PyTorch's parameter names."""
    n = ctx.rng.standard_normal
    state = _attn_state(ctx, "self_attn", d) | (_attn_state(ctx, "multihead_attn", d) if decoder else {})
    state |= {
        "linear1.weight": n((ff, d)) * 0.4,
        "linear1.bias": n(ff) * 0.2,
        "linear2.weight": n((d, ff)) * 0.4,
        "linear2.bias": n(d) * 0.2,
    }
    for k in range(1, 4 if decoder else 3):
        state |= {f"norm{k}.weight": 1.0 + 0.3 * n(d), f"norm{k}.bias": 0.2 * n(d)}
    return {prefix + k: v for k, v in state.items()}


def _grads_and_params(
    p: Probe,
    module: Ref,
    outputs: list[tuple[Ref, np.ndarray]],
    inputs: list[tuple[str, Ref]],
    out_names: list[str],
) -> Probe:
    backward_of_sum(p, outputs)
    params = p.method(module, "named_parameters")
    p.returns(
        *[o for o, _ in outputs],
        *[p.attr(t, "grad") for _, t in inputs],
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=out_names + [f"{name}.grad" for name, _ in inputs] + ["parameter names", "parameter gradients"],
    )
    return p


def encoder_probe(
    ctx: CheckContext,
    d: int,
    h: int,
    ff: int,
    shape: tuple[int, ...],
    *,
    norm_first: bool,
    activation: str = "relu",
    batch_first: bool = False,
    causal: bool = False,
    padding: Optional[np.ndarray] = None,
    dtype: Any = np.float64,
) -> Probe:
    x = ctx.rng.standard_normal(shape).astype(dtype)
    state = {k: v.astype(dtype) for k, v in layer_state(ctx, d, ff).items()}
    s = shape[1] if batch_first and len(shape) == 3 else shape[0]
    masks = []
    if causal:
        masks.append("the causal src_mask")
    if padding is not None:
        masks.append(f"src_key_padding_mask {padding.shape}")
    label = (
        f"TransformerEncoderLayer({d}, {h}, dim_feedforward={ff}, dropout=0.0, activation={activation!r}, "
        f"batch_first={batch_first}, norm_first={norm_first}) with weights loaded, on src {shape}"
        + (", " + " and ".join(masks) if masks else "")
    )
    p = Probe(label, {"src": x, **state} | ({"src_key_padding_mask": padding} if padding is not None else {}))
    layer = p.call(
        f"{TR}.TransformerEncoderLayer",
        d,
        h,
        dim_feedforward=ff,
        dropout=0.0,
        activation=activation,
        batch_first=batch_first,
        norm_first=norm_first,
        backend=p.get(SIMPLE),
    )
    p.method(layer, "load_state_dict", state)
    xt = p.tensor(x, requires_grad=True)
    kwargs: dict[str, Any] = {}
    if causal:
        kwargs |= {
            "src_mask": p.tensor(
                np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, 0.0).astype(dtype)
            ),
            "is_causal": True,
        }
    if padding is not None:
        kwargs["src_key_padding_mask"] = p.tensor(padding)
    out = p.call(layer, xt, **kwargs)
    return _grads_and_params(
        p, layer, [(out, ctx.rng.standard_normal(shape).astype(dtype))], [("src", xt)], ["output"]
    )


def decoder_probe(
    ctx: CheckContext,
    d: int,
    h: int,
    ff: int,
    b: int,
    t: int,
    s: int,
    *,
    norm_first: bool,
    batch_first: bool = True,
    activation: str = "relu",
    padding: bool = False,
) -> Probe:
    def lay(n: int) -> tuple[int, ...]:
        return (b, n, d) if batch_first else (n, b, d)

    tgt, memory = ctx.rng.standard_normal(lay(t)), ctx.rng.standard_normal(lay(s))
    state = layer_state(ctx, d, ff, decoder=True)
    kpm = ~random_mask(ctx, (b, s), p_true=0.7, empty_rows=0) if padding else None
    label = (
        f"TransformerDecoderLayer({d}, {h}, dim_feedforward={ff}, dropout=0.0, activation={activation!r}, "
        f"batch_first={batch_first}, norm_first={norm_first}) with weights loaded, on tgt {tgt.shape}, memory {memory.shape}, "
        f"the causal tgt_mask" + (f", memory_key_padding_mask {kpm.shape}" if padding else "")
    )
    p = Probe(
        label, {"tgt": tgt, "memory": memory, **state} | ({"memory_key_padding_mask": kpm} if padding else {})
    )
    layer = p.call(
        f"{TR}.TransformerDecoderLayer",
        d,
        h,
        dim_feedforward=ff,
        dropout=0.0,
        activation=activation,
        batch_first=batch_first,
        norm_first=norm_first,
        backend=p.get(SIMPLE),
    )
    p.method(layer, "load_state_dict", state)
    tt, mt = p.tensor(tgt, requires_grad=True), p.tensor(memory, requires_grad=True)
    mask = p.tensor(np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, 0.0))
    kwargs = {"memory_key_padding_mask": p.tensor(kpm)} if padding else {}
    out = p.call(layer, tt, mt, tgt_mask=mask, tgt_is_causal=True, **kwargs)
    return _grads_and_params(
        p, layer, [(out, ctx.rng.standard_normal(lay(t)))], [("tgt", tt), ("memory", mt)], ["output"]
    )


@check("6.5", "encoder_layer", kind="equivalence")
def encoder_layer(ctx: CheckContext) -> None:
    """TransformerEncoderLayer, post-norm and pre-norm, relu and gelu, both layouts, causal
    mask and key padding, float32: output and every gradient against the reference."""
    pad = ~random_mask(ctx, (2, 4), p_true=0.7, empty_rows=0)
    # The smallest probe is small but not degenerate: with one position attention is the
    # identity, and LayerNorm over d_model = 2 maps every vector to ±(γ) + β, so a wrong
    # attention could show there only in the tenth digit ("expected 1.24417323, got 1.244173232").
    probes = [
        encoder_probe(ctx, 4, 1, 3, (3, 1, 4), norm_first=False),  # (S, N, E): three positions
        encoder_probe(ctx, 4, 2, 6, (3, 2, 4), norm_first=False),
        encoder_probe(ctx, 4, 2, 6, (3, 2, 4), norm_first=True),
        encoder_probe(
            ctx, 6, 3, 8, (2, 4, 6), norm_first=True, activation="gelu", batch_first=True, causal=True
        ),
        encoder_probe(
            ctx, 4, 2, 5, (2, 4, 4), norm_first=False, activation="gelu", batch_first=True, padding=pad
        ),
        encoder_probe(ctx, 4, 2, 5, (3, 4), norm_first=True, causal=True),
    ]
    ctx.equivalent(probes, TOL)
    ctx.equivalent(
        [
            encoder_probe(
                ctx, 4, 2, 6, (2, 3, 4), norm_first=True, batch_first=True, causal=True, dtype=np.float32
            )
        ],
        F32,
    )


def hint_without_mask_probe(
    ctx: CheckContext, norm_first: bool, d: int = 4, h: int = 2, ff: int = 6
) -> Probe:
    """``tgt_is_causal=True`` without a ``tgt_mask``: the self-attention raises PyTorch's
    RuntimeError, unless the layer drops the hint (which, beside the mask, changes nothing)."""
    tgt, memory = ctx.rng.standard_normal((2, 3, d)), ctx.rng.standard_normal((2, 2, d))
    p = Probe(
        f"TransformerDecoderLayer({d}, {h}, dim_feedforward={ff}, dropout=0.0, batch_first=True, "
        f"norm_first={norm_first}) on tgt "
        f"{tgt.shape}, memory {memory.shape}, tgt_is_causal=True without a tgt_mask (must raise "
        "RuntimeError, as PyTorch: the hint needs its mask)",
        {"tgt": tgt, "memory": memory},
        expect_error=True,
    )
    layer = p.call(
        f"{TR}.TransformerDecoderLayer",
        d,
        h,
        dim_feedforward=ff,
        dropout=0.0,
        batch_first=True,
        norm_first=norm_first,
        backend=p.get(SIMPLE),
    )
    p.returns(p.call(layer, p.tensor(tgt), p.tensor(memory), tgt_is_causal=True))
    return p


@check("6.5", "decoder_layer", kind="equivalence")
def decoder_layer(ctx: CheckContext) -> None:
    """TransformerDecoderLayer (masked self-attention, cross-attention to a memory of
    another length, feed-forward), post-norm and pre-norm: output and every gradient
    (tgt, memory, parameters) against the reference; and `tgt_is_causal` reaches the
    self-attention."""
    probes = [
        decoder_probe(ctx, 4, 2, 6, 2, 3, 5, norm_first=False),
        decoder_probe(ctx, 4, 2, 6, 2, 4, 2, norm_first=True, activation="gelu"),
        decoder_probe(ctx, 4, 1, 3, 2, 3, 4, norm_first=False, batch_first=False, padding=True),
        hint_without_mask_probe(ctx, norm_first=False),
        hint_without_mask_probe(ctx, norm_first=True),
    ]
    ctx.equivalent(probes, TOL)


def gpt_state(
    ctx: CheckContext, v: int, context: int, d: int, layers: int, ff: int, learned: bool
) -> dict[str, np.ndarray]:
    n = ctx.rng.standard_normal
    state = {"token_embedding.weight": n((v, d))} | (
        {"position_embedding.weight": n((context, d)) * 0.5} if learned else {}
    )
    for i in range(layers):
        state |= layer_state(ctx, d, ff, prefix=f"blocks.{i}.")
    return state | {
        "norm.weight": 1.0 + 0.3 * n(d),
        "norm.bias": 0.2 * n(d),
        "head.weight": n((v, d)) * 0.4,
        "head.bias": 0.2 * n(v),
    }


def _gpt_args(v: int, context: int, d: int, h: int, layers: int, ff: int, positions: str) -> str:
    return f"TinyGPT(vocab_size={v}, context_length={context}, d_model={d}, nhead={h}, num_layers={layers}, dim_feedforward={ff}, positions={positions!r})"


def gpt_probe(
    ctx: CheckContext,
    v: int,
    context: int,
    d: int,
    h: int,
    layers: int,
    ff: int,
    positions: str,
    b: int,
    t: int,
) -> Probe:
    idx = ctx.rng.integers(0, v, size=(b, t)).astype(np.int64)
    state = gpt_state(ctx, v, context, d, layers, ff, positions == "learned")
    p = Probe(
        f"{_gpt_args(v, context, d, h, layers, ff, positions)} with weights loaded, on idx {idx.shape}",
        {"idx": idx, **state},
    )
    model = p.call(GPT, v, context, d, h, layers, ff, positions=positions, backend=p.get(SIMPLE))
    p.method(model, "load_state_dict", state)
    logits = p.call(model, p.tensor(idx))
    return _grads_and_params(p, model, [(logits, ctx.rng.standard_normal((b, t, v)))], [], ["logits"])


@check("6.5", "gpt_forward", kind="equivalence")
def gpt_forward(ctx: CheckContext) -> None:
    """TinyGPT with learned and sinusoidal positions, one and two blocks, T below and at the
    context length: the logits and every parameter's gradient against the reference."""
    probes = [
        gpt_probe(ctx, 3, 3, 4, 1, 1, 3, "learned", 1, 3),  # not degenerate: see encoder_layer
        gpt_probe(ctx, 5, 6, 4, 2, 2, 6, "learned", 2, 4),
        gpt_probe(ctx, 5, 4, 4, 2, 1, 5, "sinusoidal", 2, 4),
        gpt_probe(ctx, 7, 8, 6, 3, 2, 8, "sinusoidal", 1, 5),
    ]
    ctx.equivalent(probes, TOL)


@check("6.5", "gpt_causal", kind="property")
def gpt_causal(ctx: CheckContext) -> None:
    """On the student's code alone: the logits at position t do not change when the tokens
    after t change (every t), for learned and sinusoidal positions."""
    v, context, d, h, layers, ff, t = 6, 8, 4, 2, 2, 6, 7
    for positions in ("learned", "sinusoidal"):
        state = gpt_state(ctx, v, context, d, layers, ff, positions == "learned")
        idx = ctx.rng.integers(0, v, size=(1, t)).astype(np.int64)
        probes = []
        for cut in [None] + list(range(t - 1)):
            ids = idx.copy()
            if cut is not None:
                ids[0, cut + 1 :] = (
                    ids[0, cut + 1 :] + 1 + ctx.rng.integers(0, v - 1, size=t - cut - 1)
                ) % v  # every later token changes
            what = "" if cut is None else f", the tokens after position {cut} changed"
            p = Probe(
                f"{_gpt_args(v, context, d, h, layers, ff, positions)} with weights loaded, on idx {ids.tolist()}{what}",
                {"idx": ids, **state},
            )
            model = p.call(GPT, v, context, d, h, layers, ff, positions=positions, backend=p.get(SIMPLE))
            p.method(model, "load_state_dict", state)
            p.returns(p.call(model, p.tensor(ids)))
            probes.append(p)
        answers = ctx.child(probes)
        outs = []
        for p, a in zip(probes, answers):
            if a.error:
                raise StudentError(p.label, a.error, "")
            (val,) = a.values
            if not isinstance(val, TensorVal) or val.array.shape != (1, t, v):
                raise CheckFailed(
                    f"{p.label}: expected logits of shape {(1, t, v)}, got {describe(val)[:80]}"
                )
            outs.append(val.array)
        for cut, out in enumerate(outs[1:]):
            if not np.allclose(out[:, : cut + 1], outs[0][:, : cut + 1], rtol=1e-10, atol=1e-12):
                pos = int(
                    np.argwhere(
                        ~np.isclose(out[0, : cut + 1], outs[0][0, : cut + 1], rtol=1e-10, atol=1e-12)
                    )[0][0]
                )
                raise CheckFailed(
                    f"{probes[cut + 1].label}: the logits at position {pos} changed, but a causal model at "
                    f"position {pos} may only read the tokens at positions ≤ {pos}"
                )
        if np.allclose(outs[1][:, 1:], outs[0][:, 1:]):
            raise CheckFailed(
                f"{probes[1].label}: the logits after position 0 did not change at all: the model ignores its input"
            )


@check("6.5", "transformer_gradcheck", kind="gradient")
def transformer_gradcheck(ctx: CheckContext) -> None:
    """The encoder layer (post-norm and pre-norm, causal) and the decoder layer: the input
    gradients against central differences of the student's forward."""
    d, h, ff, s = 4, 2, 5, 3
    for norm_first in (False, True):
        state = layer_state(ctx, d, ff)
        mask = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, 0.0)

        def build(p: Probe, ts: list[Ref], state: dict = state, norm_first: bool = norm_first) -> Ref:
            layer = p.call(
                f"{TR}.TransformerEncoderLayer",
                d,
                h,
                dim_feedforward=ff,
                dropout=0.0,
                batch_first=True,
                norm_first=norm_first,
                backend=p.get(SIMPLE),
            )
            p.method(layer, "load_state_dict", state)
            return p.call(layer, ts[0], src_mask=p.tensor(mask), is_causal=True)

        ctx.gradcheck(
            f"TransformerEncoderLayer({d}, {h}, dim_feedforward={ff}, dropout=0.0, batch_first=True, norm_first={norm_first}) "
            f"with weights loaded, on src (1, {s}, {d}) with the causal src_mask",
            build,
            [ctx.rng.standard_normal((1, s, d))],
            names=["src"],
        )
    state = layer_state(ctx, d, ff, decoder=True)

    def build_dec(p: Probe, ts: list[Ref]) -> Ref:
        layer = p.call(
            f"{TR}.TransformerDecoderLayer",
            d,
            h,
            dim_feedforward=ff,
            dropout=0.0,
            batch_first=True,
            backend=p.get(SIMPLE),
        )
        p.method(layer, "load_state_dict", state)
        return p.call(layer, ts[0], ts[1])

    ctx.gradcheck(
        f"TransformerDecoderLayer({d}, {h}, dim_feedforward={ff}, dropout=0.0, batch_first=True) with weights loaded, "
        f"on tgt (1, 2, {d}) and memory (1, 3, {d})",
        build_dec,
        [ctx.rng.standard_normal((1, 2, d)), ctx.rng.standard_normal((1, 3, d))],
        names=["tgt", "memory"],
    )
