"""Hidden checks of stage A6, task 6.4: LayerNorm and the sinusoidal positional encodings.

`layer_norm` and `LayerNorm` are run forward and backward against the reference (one and
several normalised dimensions, with and without weight and bias, a constant row — variance
0, where ε matters — inputs far from 0, strided storage, float32), and against central
differences of the student's own forward. The encodings are compared value by value for
even and odd d_model, one position and many.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import CheckContext, check
from ..layer_probes import backward_of_sum, fwd_bwd
from ..probe import F32, Probe, Ref, Tol


LN = "minitorch.nn.layer_norm"
PE = "minitorch.nn.positional.sinusoidal_positional_encoding"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _ln_probe(
    ctx: CheckContext,
    shape: tuple[int, ...],
    normalized: tuple[int, ...],
    affine: bool,
    x: Any = None,
    eps: float = 1e-5,
    order: Any = None,
) -> Probe:
    x = ctx.rng.standard_normal(shape) * 3.0 + 1.5 if x is None else x
    arrays = {
        "input": x,
        "weight": ctx.rng.standard_normal(normalized) if affine else None,
        "bias": ctx.rng.standard_normal(normalized) if affine else None,
    }
    label = f"layer_norm(input {x.shape}, normalized_shape={list(normalized)}{', weight, bias' if affine else ''}, eps={eps:g})"
    if order is not None:
        label += f" with input stored in dimension order {order}"

    def build(p: Probe, r: list[Ref]) -> Ref:
        return p.call(f"{LN}.layer_norm", r[0], list(normalized), r[1], r[2], eps=eps)

    return fwd_bwd(ctx, label, arrays, build, x.shape, order={"input": order} if order else None)


def _module_probe(ctx: CheckContext, shape: tuple[int, ...], normalized: Any) -> Probe:
    norm = (normalized,) if isinstance(normalized, int) else tuple(normalized)
    x, w, b = (
        ctx.rng.standard_normal(shape) * 2.0,
        ctx.rng.standard_normal(norm),
        ctx.rng.standard_normal(norm),
    )
    p = Probe(
        f"LayerNorm({normalized!r}) with weight and bias loaded, on input {shape}",
        {"input": x, "weight": w, "bias": b},
    )
    module = p.call(f"{LN}.LayerNorm", normalized, backend=p.get(SIMPLE))
    p.method(module, "load_state_dict", {"weight": w, "bias": b})
    xt = p.tensor(x, requires_grad=True)
    out = p.call(module, xt)
    backward_of_sum(p, [(out, ctx.rng.standard_normal(shape))])
    params = p.method(module, "named_parameters")
    p.returns(
        out,
        p.attr(xt, "grad"),
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["output", "input.grad", "parameter names", "parameter gradients"],
    )
    return p


@check("6.4", "layer_norm", kind="equivalence")
def layer_norm(ctx: CheckContext) -> None:
    """layer_norm and LayerNorm forward and backward against the reference."""
    probes = [
        _ln_probe(ctx, (1, 2), (2,), False),
        _ln_probe(ctx, (3, 5), (5,), True),
        _ln_probe(ctx, (2, 3, 4), (4,), True),
        _ln_probe(ctx, (2, 3, 4), (3, 4), True),
        _ln_probe(
            ctx,
            (3, 4),
            (4,),
            False,
            x=np.array([[2.0, 2.0, 2.0, 2.0], [1e3, 1e3 + 1, 1e3 - 1, 1e3], [0.0, 1.0, 0.0, 1.0]]),
        ),
        _ln_probe(ctx, (4, 3), (3,), True, eps=0.1),
        _ln_probe(ctx, (3, 4), (4,), True, order=(1, 0)),
        _module_probe(ctx, (2, 3, 4), 4),
        _module_probe(ctx, (2, 2, 3), (2, 3)),
    ]
    ctx.equivalent(probes, TOL)
    x = (ctx.rng.standard_normal((2, 3, 5)) * 4 + 2).astype(np.float32)
    ctx.equivalent([_ln_probe(ctx, x.shape, (5,), False, x=x)], F32)


@check("6.4", "layer_norm_gradcheck", kind="gradient")
def layer_norm_gradcheck(ctx: CheckContext) -> None:
    """layer_norm: backward (input, weight, bias) against central differences of the student's forward."""
    for shape, norm in [((2, 3), (3,)), ((2, 2, 3), (2, 3))]:
        arrays = [
            ctx.rng.standard_normal(shape) * 2 + 1,
            ctx.rng.standard_normal(norm),
            ctx.rng.standard_normal(norm),
        ]

        def build(p: Probe, ts: list[Ref], norm: tuple[int, ...] = norm) -> Ref:
            return p.call(f"{LN}.layer_norm", ts[0], list(norm), ts[1], ts[2])

        ctx.gradcheck(
            f"layer_norm(input {shape}, normalized_shape={list(norm)}, weight, bias)",
            build,
            arrays,
            names=["input", "weight", "bias"],
        )


@check("6.4", "positional_encoding", kind="equivalence")
def positional_encoding(ctx: CheckContext) -> None:
    """sinusoidal_positional_encoding(length, d_model): every value, even and odd d_model."""
    probes = []
    for length, d in [(1, 2), (4, 6), (7, 5), (50, 16), (3, 1), (128, 64)]:
        p = Probe(f"sinusoidal_positional_encoding({length}, {d})")
        p.returns(p.call(PE, length, d))
        probes.append(p)
    ctx.equivalent(probes, TOL)
