"""Hidden checks of task 4.2: conv2d."""

from __future__ import annotations

from ..base import CheckContext, check
from ..layer_probes import fwd_bwd, gradcheck_call, kernel_probe, out_len
from .common import CONV, TOL, _conv_label


CONV2D = [  # (N, C_in, H, W), (C_out, KH, KW), stride, padding, dilation, bias
    ((1, 1, 3, 3), (1, 2, 2), 1, 0, 1, False),
    ((2, 2, 5, 4), (3, 3, 2), 1, 0, 1, True),
    ((1, 3, 6, 7), (2, 3, 3), (2, 1), (1, 0), 1, True),
    ((2, 2, 7, 7), (2, 2, 3), 2, 1, (2, 1), True),
    ((1, 2, 5, 5), (3, 3, 3), 1, "same", 1, False),
]


@check("4.2", "conv2d", kind="equivalence")
def conv2d(ctx: CheckContext) -> None:
    """conv2d forward and backward against the reference: per-axis strides, padding and
    dilation, 'same' padding, with and without bias."""
    probes = []
    for xs, (c_out, kh, kw), stride, padding, dilation, bias in CONV2D:
        x = ctx.rng.standard_normal(xs)
        w = ctx.rng.standard_normal((c_out, xs[1], kh, kw))
        b = ctx.rng.standard_normal(c_out) if bias else None
        st = stride if isinstance(stride, tuple) else (stride, stride)
        pd = (0, 0) if padding == "same" else padding if isinstance(padding, tuple) else (padding, padding)
        dl = dilation if isinstance(dilation, tuple) else (dilation, dilation)
        if padding == "same":
            oh, ow = xs[2], xs[3]
        else:
            oh, ow = out_len(xs[2], kh, st[0], pd[0], dl[0]), out_len(xs[3], kw, st[1], pd[1], dl[1])
        label = _conv_label("conv2d", xs, w.shape, stride, padding, dilation, bias)
        kwargs = {"stride": stride, "padding": padding, "dilation": dilation}
        probes.append(
            fwd_bwd(
                ctx,
                label,
                {"x": x, "weight": w, "bias": b},
                lambda p, t, kw_=kwargs: p.call(f"{CONV}.conv2d", *t, **kw_),
                (xs[0], c_out, oh, ow),
            )
        )
    x = ctx.rng.standard_normal((1, 2, 4, 3))
    w = ctx.rng.standard_normal((2, 2, 2, 2))
    probes.append(
        fwd_bwd(
            ctx,
            "conv2d(x (1, 2, 4, 3) stored in dimension order (3, 2, 1, 0), weight (2, 2, 2, 2))",
            {"x": x, "weight": w},
            lambda p, t: p.call(f"{CONV}.conv2d", *t),
            (1, 2, 3, 2),
            order={"x": (3, 2, 1, 0)},
        )
    )
    ctx.equivalent(probes, TOL)


@check("4.2", "im2col2d", kind="equivalence")
def im2col2d(ctx: CheckContext) -> None:
    """The kernels alone, im2col2d and col2im2d: a permuted source, an output holding garbage,
    per-axis strides, padding and dilation."""
    probes = []
    for (n, c, h, w_), (kh, kw), (sh, sw), (ph, pw), (dh, dw) in [
        ((2, 2, 5, 4), (2, 3), (1, 2), (1, 0), (1, 1)),
        ((1, 3, 6, 6), (3, 2), (2, 1), (0, 1), (2, 2)),
    ]:
        oh, ow = out_len(h, kh, sh, ph, dh), out_len(w_, kw, sw, pw, dw)
        x = ctx.rng.standard_normal((n, c, h, w_))
        args = (kh, kw, sh, sw, ph, pw, dh, dw)
        geometry = f"kernel ({kh}, {kw}), stride ({sh}, {sw}), padding ({ph}, {pw}), dilation ({dh}, {dw})"
        cols_shape = (n, oh, ow, c * kh * kw)
        probes.append(
            kernel_probe(
                f"im2col2d(cols {cols_shape}, x {x.shape} stored in order (3, 1, 0, 2), {geometry})",
                f"{CONV}.im2col2d",
                cols_shape,
                x,
                (3, 1, 0, 2),
                *args,
            )
        )
        cols = ctx.rng.standard_normal(cols_shape)
        probes.append(
            kernel_probe(
                f"col2im2d(x {x.shape} holding garbage, cols {cols_shape} stored in order (3, 2, 0, 1), {geometry})",
                f"{CONV}.col2im2d",
                x.shape,
                cols,
                (3, 2, 0, 1),
                *args,
            )
        )
    ctx.equivalent(probes, TOL)


@check("4.2", "conv2d_gradcheck", kind="gradient")
def conv2d_gradcheck(ctx: CheckContext) -> None:
    """conv2d: backward against central differences of the student's forward."""
    for xs, ws, kwargs in [
        ((1, 2, 4, 4), (2, 2, 2, 2), {"stride": 1, "padding": 1}),
        ((1, 1, 5, 5), (2, 1, 3, 2), {"stride": (2, 1), "dilation": (1, 2)}),
    ]:
        arrays = [ctx.rng.standard_normal(xs), ctx.rng.standard_normal(ws), ctx.rng.standard_normal(ws[0])]
        gradcheck_call(ctx, f"conv2d(x {xs}, weight {ws}, bias, {kwargs})", f"{CONV}.conv2d", arrays, kwargs)
