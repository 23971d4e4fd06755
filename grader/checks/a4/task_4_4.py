"""Hidden checks of task 4.4: Softmax, log-softmax and dropout."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError, check
from ..layer_probes import fwd_bwd, gradcheck_call
from ..probe import F32, Probe, TensorVal, describe
from .common import TOL


SOFT = "minitorch.nn.softmax"
DROP = "minitorch.nn.dropout"


def _softmax_probes(ctx: CheckContext, fn: str) -> list[Probe]:
    probes = []
    for shape, dim in [((4,), 0), ((2, 3), 1), ((2, 3), 0), ((2, 3, 4), -1), ((3, 2, 2), 1)]:
        x = ctx.rng.standard_normal(shape) * 3
        probes.append(
            fwd_bwd(
                ctx,
                f"{fn}(x {shape}, dim={dim})",
                {"x": x},
                lambda p, t, d=dim: p.call(f"{SOFT}.{fn}", t[0], dim=d),
                shape,
            )
        )
    big = np.array([[1000.0, 0.0, -1000.0], [710.0, 712.0, 709.0]])
    probes.append(
        fwd_bwd(
            ctx,
            f"{fn}(x, dim=1) with logits of ±1000 (must not overflow)",
            {"x": big},
            lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1),
            big.shape,
        )
    )
    # rows far apart: each row must subtract its own maximum, not the tensor's
    apart = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]])
    probes.append(
        fwd_bwd(
            ctx,
            f"{fn}(x, dim=1) with rows of logits near +1000 and −1000 (each row's own maximum)",
            {"x": apart},
            lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1),
            apart.shape,
        )
    )
    x = ctx.rng.standard_normal((3, 4))
    probes.append(
        fwd_bwd(
            ctx,
            f"{fn}(x (3, 4) stored in dimension order (1, 0), dim=1)",
            {"x": x},
            lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1),
            (3, 4),
            order={"x": (1, 0)},
        )
    )
    return probes


@check("4.4", "softmax", kind="equivalence")
def softmax(ctx: CheckContext) -> None:
    """softmax forward and backward along every dimension, stable for large logits."""
    ctx.equivalent(_softmax_probes(ctx, "softmax"), TOL)
    x = (ctx.rng.standard_normal((2, 5)) * 50).astype(np.float32)
    ctx.equivalent(
        [
            fwd_bwd(
                ctx,
                "softmax(x, dim=1) on float32 logits",
                {"x": x},
                lambda p, t: p.call(f"{SOFT}.softmax", t[0], dim=1),
                (2, 5),
            )
        ],
        F32,
    )


@check("4.4", "log_softmax", kind="equivalence")
def log_softmax(ctx: CheckContext) -> None:
    """log_softmax forward and backward along every dimension, stable for large logits."""
    ctx.equivalent(_softmax_probes(ctx, "log_softmax"), TOL)


@check("4.4", "softmax_gradcheck", kind="gradient")
def softmax_gradcheck(ctx: CheckContext) -> None:
    """softmax and log_softmax: backward against central differences of the student's
    forward, along each dimension."""
    for fn in ("softmax", "log_softmax"):
        for dim in (0, 1):
            x = ctx.rng.standard_normal((3, 4))
            gradcheck_call(ctx, f"{fn}(x (3, 4), dim={dim})", f"{SOFT}.{fn}", [x], {"dim": dim})


@check("4.4", "dropout", kind="property")
def dropout(ctx: CheckContext) -> None:
    """dropout: identity when not training or p = 0; zeros (no NaN) for p = 1; survivors
    scaled by 1/(1 − p), drop rate near p, gradient through the same mask; repeatable
    under manual_seed."""
    x = ctx.rng.uniform(0.5, 1.5, size=(50, 400))  # no zeros: a zero output means dropped
    g = ctx.rng.standard_normal(x.shape)
    cases = [
        ("dropout(x, p=0.5, training=False)", 0.5, False),
        ("dropout(x, p=0.0)", 0.0, True),
        ("dropout(x, p=1.0)", 1.0, True),
        ("dropout(x, p=0.3)", 0.3, True),
        ("dropout(x, p=0.8)", 0.8, True),
    ]
    probes = []
    for label, prob, training in cases:
        p = Probe(f"{label} for x of shape {x.shape}, then backward")
        p.call("minitorch.manual_seed", 1234)
        t = p.tensor(x, requires_grad=True)
        out = p.call(f"{DROP}.dropout", t, prob, training)
        p.method(out, "backward", p.tensor(g))
        p.returns(out, p.attr(t, "grad"), names=["output", "x.grad"])
        probes.append(p)
    again = Probe("dropout(x, p=0.3) again after manual_seed(1234): the same mask")
    again.call("minitorch.manual_seed", 1234)
    again.returns(again.call(f"{DROP}.dropout", again.tensor(x), 0.3, True))
    probes.append(again)
    answers = ctx.child(probes)
    for p, a in zip(probes, answers):
        if a.error:
            raise StudentError(p.label, a.error)
        for v in a.values:
            if not isinstance(v, TensorVal):
                raise CheckFailed(f"{p.label}: expected a Tensor, got {describe(v)[:80]}")
            if v.array.shape != x.shape or v.array.dtype != np.float64:
                raise CheckFailed(
                    f"{p.label}: got shape {v.array.shape} and dtype {v.array.dtype}, expected {x.shape} and float64"
                )
    outs = {label: (a.values[0].array, a.values[1].array) for (label, _, _), a in zip(cases, answers)}
    for label, prob, training in cases:
        out, grad = outs[label]
        if np.isnan(out).any() or np.isnan(grad).any():
            raise CheckFailed(f"{label}: the output or the gradient holds NaN")
        if not training or prob == 0.0:
            if not np.array_equal(out, x) or not np.allclose(grad, g, rtol=1e-12, atol=0):
                raise CheckFailed(f"{label}: must return the input unchanged (and pass the gradient through)")
            continue
        if prob == 1.0:
            if np.any(out != 0) or np.any(grad != 0):
                raise CheckFailed(f"{label}: every element must be dropped (all zeros, gradient zero)")
            continue
        kept = out != 0
        scale = 1.0 / (1.0 - prob)
        if not np.allclose(out[kept], x[kept] * scale, rtol=1e-12, atol=0):
            bad = tuple(
                int(i) for i in np.argwhere(kept & ~np.isclose(out, x * scale, rtol=1e-12, atol=0))[0]
            )
            raise CheckFailed(
                f"{label}: a kept element must be x / (1 − p): at {bad} x = {x[bad]:.6g}, "
                f"got {out[bad]:.6g}, expected {x[bad] * scale:.6g}"
            )
        rate = 1.0 - kept.mean()
        sigma = np.sqrt(prob * (1 - prob) / x.size)
        if abs(rate - prob) > 6 * sigma:
            raise CheckFailed(
                f"{label}: dropped {rate:.3f} of the elements, expected about {prob} (±{6 * sigma:.3f})"
            )
        want = np.where(kept, g * scale, 0.0)
        if not np.allclose(grad, want, rtol=1e-12, atol=1e-15):
            raise CheckFailed(
                f"{label}: the gradient must be g / (1 − p) where the element was kept and 0 where it was dropped"
            )
    first = outs["dropout(x, p=0.3)"][0]
    if not np.array_equal(first, answers[-1].values[0].array):
        raise CheckFailed(
            "dropout after manual_seed(1234) gave a different mask the second time: draw the mask from minitorch's generator"
        )
