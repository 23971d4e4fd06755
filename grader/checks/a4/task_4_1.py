"""Hidden checks of task 4.1: conv1d."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, check
from ..layer_probes import fwd_bwd, gradcheck_call, kernel_probe, out_len
from ..probe import F32
from .common import CONV, TOL, _conv_label


CONV1D = [  # (N, C_in, L), (C_out, K), stride, padding, dilation, bias
    ((1, 1, 4), (1, 2), 1, 0, 1, False),
    ((2, 3, 7), (4, 3), 1, 0, 1, True),
    ((2, 2, 9), (3, 3), 2, 1, 1, True),
    ((1, 3, 10), (2, 2), 1, 2, 2, True),
    ((3, 2, 8), (2, 3), 3, 0, 2, False),
    ((2, 4, 6), (5, 5), 1, "same", 1, True),
]


@check("4.1", "conv1d", kind="equivalence")
def conv1d(ctx: CheckContext) -> None:
    """conv1d forward and backward against the reference: strides, padding (also 'same'),
    dilation, with and without bias, a permuted input, float32."""
    probes = []
    for xs, (c_out, k), stride, padding, dilation, bias in CONV1D:
        x = ctx.rng.standard_normal(xs)
        w = ctx.rng.standard_normal((c_out, xs[1], k))
        b = ctx.rng.standard_normal(c_out) if bias else None
        length = xs[2] if padding == "same" else out_len(xs[2], k, stride, padding, dilation)
        label = _conv_label("conv1d", xs, w.shape, stride, padding, dilation, bias)
        kwargs = {"stride": stride, "padding": padding, "dilation": dilation}
        probes.append(
            fwd_bwd(
                ctx,
                label,
                {"x": x, "weight": w, "bias": b},
                lambda p, t, kw=kwargs: p.call(f"{CONV}.conv1d", *t, **kw),
                (xs[0], c_out, length),
            )
        )
    # a permuted (non-contiguous) input
    x = ctx.rng.standard_normal((2, 3, 5))
    w = ctx.rng.standard_normal((2, 3, 2))
    probes.append(
        fwd_bwd(
            ctx,
            "conv1d(x (2, 3, 5) stored in dimension order (2, 1, 0), weight (2, 3, 2))",
            {"x": x, "weight": w},
            lambda p, t: p.call(f"{CONV}.conv1d", *t),
            (2, 2, 4),
            order={"x": (2, 1, 0)},
        )
    )
    # float32 stays float32
    x32, w32 = (
        ctx.rng.standard_normal((1, 2, 5)).astype(np.float32),
        ctx.rng.standard_normal((3, 2, 2)).astype(np.float32),
    )
    ctx.equivalent(probes, TOL)
    ctx.equivalent(
        [
            fwd_bwd(
                ctx,
                "conv1d on float32 x (1, 2, 5), weight (3, 2, 2)",
                {"x": x32, "weight": w32},
                lambda p, t: p.call(f"{CONV}.conv1d", *t),
                (1, 3, 4),
            )
        ],
        F32,
    )


@check("4.1", "im2col1d", kind="equivalence")
def im2col1d(ctx: CheckContext) -> None:
    """The kernels alone, im2col1d and col2im1d: a permuted source, an output holding garbage,
    strides, padding and dilation."""
    probes = []
    for (n, c, length), k, stride, pad, dil in [((2, 3, 7), 3, 2, 1, 1), ((1, 2, 9), 2, 1, 2, 3)]:
        l_out = out_len(length, k, stride, pad, dil)
        x = ctx.rng.standard_normal((n, c, length))
        geometry = f"kernel_size={k}, stride={stride}, padding={pad}, dilation={dil}"
        probes.append(
            kernel_probe(
                f"im2col1d(cols {(n, l_out, c * k)}, x {x.shape} stored in order (2, 0, 1), {geometry})",
                f"{CONV}.im2col1d",
                (n, l_out, c * k),
                x,
                (2, 0, 1),
                k,
                stride,
                pad,
                dil,
            )
        )
        cols = ctx.rng.standard_normal((n, l_out, c * k))
        probes.append(
            kernel_probe(
                f"col2im1d(x {x.shape} holding garbage, cols {cols.shape} stored in order (1, 2, 0), {geometry})",
                f"{CONV}.col2im1d",
                (n, c, length),
                cols,
                (1, 2, 0),
                k,
                stride,
                pad,
                dil,
            )
        )
    ctx.equivalent(probes, TOL)


@check("4.1", "conv1d_gradcheck", kind="gradient")
def conv1d_gradcheck(ctx: CheckContext) -> None:
    """conv1d: backward against central differences of the student's forward."""
    for xs, ws, kwargs in [
        ((2, 2, 5), (3, 2, 3), {"stride": 1, "padding": 1}),
        ((1, 2, 7), (2, 2, 2), {"stride": 2, "dilation": 2}),
    ]:
        arrays = [ctx.rng.standard_normal(xs), ctx.rng.standard_normal(ws), ctx.rng.standard_normal(ws[0])]
        gradcheck_call(ctx, f"conv1d(x {xs}, weight {ws}, bias, {kwargs})", f"{CONV}.conv1d", arrays, kwargs)
