"""Hidden checks of stage A4: conv1d (4.1), conv2d (4.2), softmax / log-softmax / dropout
(4.4) and the text CNN (4.5) here; pooling (4.3) in `a4_pooling`. Importing this module
registers all of them under stage "a4".

Tensors live on the simple backend, which runs the student's A4 kernels (im2col/col2im,
the pooling loops) as plain Python — the code between their fences, as written — and the
rest through the tensor operations of earlier stages. Every function is checked forward and
backward (a random upstream gradient) against the reference, on contiguous and permuted
(strided) inputs; the kernels are also called directly on raw storages (a permuted input,
an output buffer full of garbage that they must overwrite); convolution, pooling and the
softmax family are also checked against central differences of the student's own forward.
Dropout is random: its checks are properties (identity when not training, the p = 0 and
p = 1 edge cases, survivors scaled by 1/(1 − p), a drop rate near p, the gradient through
the same mask, repeatable under `manual_seed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import a4_pooling  # noqa: F401 - registers the checks of 4.3
from .base import CheckContext, CheckFailed, StudentError, check
from .layer_probes import fwd_bwd, gradcheck_call, kernel_probe, out_len
from .probe import F32, Probe, TensorVal, Tol, describe

CONV = "minitorch.nn.conv"
SOFT = "minitorch.nn.softmax"
DROP = "minitorch.nn.dropout"
TOL = Tol(rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------------- 4.1 / 4.2

CONV1D = [  # (N, C_in, L), (C_out, K), stride, padding, dilation, bias
    ((1, 1, 4), (1, 2), 1, 0, 1, False),
    ((2, 3, 7), (4, 3), 1, 0, 1, True),
    ((2, 2, 9), (3, 3), 2, 1, 1, True),
    ((1, 3, 10), (2, 2), 1, 2, 2, True),
    ((3, 2, 8), (2, 3), 3, 0, 2, False),
    ((2, 4, 6), (5, 5), 1, "same", 1, True),
]


def _conv_label(kind: str, x: tuple, w: tuple, stride: Any, padding: Any, dilation: Any, bias: bool) -> str:
    return f"{kind}(x {x}, weight {w}{', bias' if bias else ''}, stride={stride!r}, padding={padding!r}, dilation={dilation!r})"


@check("a4", "conv1d", kind="equivalence")
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
        probes.append(fwd_bwd(ctx, label, {"x": x, "weight": w, "bias": b},
                               lambda p, t, kw=kwargs: p.call(f"{CONV}.conv1d", *t, **kw), (xs[0], c_out, length)))
    # a permuted (non-contiguous) input
    x = ctx.rng.standard_normal((2, 3, 5))
    w = ctx.rng.standard_normal((2, 3, 2))
    probes.append(fwd_bwd(ctx, "conv1d(x (2, 3, 5) stored in dimension order (2, 1, 0), weight (2, 3, 2))", {"x": x, "weight": w},
                           lambda p, t: p.call(f"{CONV}.conv1d", *t), (2, 2, 4), order={"x": (2, 1, 0)}))
    # float32 stays float32
    x32, w32 = ctx.rng.standard_normal((1, 2, 5)).astype(np.float32), ctx.rng.standard_normal((3, 2, 2)).astype(np.float32)
    ctx.equivalent(probes, TOL)
    ctx.equivalent([fwd_bwd(ctx, "conv1d on float32 x (1, 2, 5), weight (3, 2, 2)", {"x": x32, "weight": w32},
                             lambda p, t: p.call(f"{CONV}.conv1d", *t), (1, 3, 4))], F32)


@check("a4", "im2col1d", kind="equivalence")
def im2col1d(ctx: CheckContext) -> None:
    """The kernels alone, im2col1d and col2im1d: a permuted source, an output holding garbage,
    strides, padding and dilation."""
    probes = []
    for (n, c, length), k, stride, pad, dil in [((2, 3, 7), 3, 2, 1, 1), ((1, 2, 9), 2, 1, 2, 3)]:
        l_out = out_len(length, k, stride, pad, dil)
        x = ctx.rng.standard_normal((n, c, length))
        geometry = f"kernel_size={k}, stride={stride}, padding={pad}, dilation={dil}"
        probes.append(kernel_probe(f"im2col1d(cols {(n, l_out, c * k)}, x {x.shape} stored in order (2, 0, 1), {geometry})",
                                    f"{CONV}.im2col1d", (n, l_out, c * k), x, (2, 0, 1), k, stride, pad, dil))
        cols = ctx.rng.standard_normal((n, l_out, c * k))
        probes.append(kernel_probe(f"col2im1d(x {x.shape} holding garbage, cols {cols.shape} stored in order (1, 2, 0), {geometry})",
                                    f"{CONV}.col2im1d", (n, c, length), cols, (1, 2, 0), k, stride, pad, dil))
    ctx.equivalent(probes, TOL)


@check("a4", "conv1d_gradcheck", kind="gradient")
def conv1d_gradcheck(ctx: CheckContext) -> None:
    """conv1d: backward against central differences of the student's forward."""
    for xs, ws, kwargs in [((2, 2, 5), (3, 2, 3), {"stride": 1, "padding": 1}), ((1, 2, 7), (2, 2, 2), {"stride": 2, "dilation": 2})]:
        arrays = [ctx.rng.standard_normal(xs), ctx.rng.standard_normal(ws), ctx.rng.standard_normal(ws[0])]
        gradcheck_call(ctx, f"conv1d(x {xs}, weight {ws}, bias, {kwargs})", f"{CONV}.conv1d", arrays, kwargs)


CONV2D = [  # (N, C_in, H, W), (C_out, KH, KW), stride, padding, dilation, bias
    ((1, 1, 3, 3), (1, 2, 2), 1, 0, 1, False),
    ((2, 2, 5, 4), (3, 3, 2), 1, 0, 1, True),
    ((1, 3, 6, 7), (2, 3, 3), (2, 1), (1, 0), 1, True),
    ((2, 2, 7, 7), (2, 2, 3), 2, 1, (2, 1), True),
    ((1, 2, 5, 5), (3, 3, 3), 1, "same", 1, False),
]


@check("a4", "conv2d", kind="equivalence")
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
        probes.append(fwd_bwd(ctx, label, {"x": x, "weight": w, "bias": b},
                               lambda p, t, kw_=kwargs: p.call(f"{CONV}.conv2d", *t, **kw_), (xs[0], c_out, oh, ow)))
    x = ctx.rng.standard_normal((1, 2, 4, 3))
    w = ctx.rng.standard_normal((2, 2, 2, 2))
    probes.append(fwd_bwd(ctx, "conv2d(x (1, 2, 4, 3) stored in dimension order (3, 2, 1, 0), weight (2, 2, 2, 2))", {"x": x, "weight": w},
                           lambda p, t: p.call(f"{CONV}.conv2d", *t), (1, 2, 3, 2), order={"x": (3, 2, 1, 0)}))
    ctx.equivalent(probes, TOL)


@check("a4", "im2col2d", kind="equivalence")
def im2col2d(ctx: CheckContext) -> None:
    """The kernels alone, im2col2d and col2im2d: a permuted source, an output holding garbage,
    per-axis strides, padding and dilation."""
    probes = []
    for (n, c, h, w_), (kh, kw), (sh, sw), (ph, pw), (dh, dw) in [((2, 2, 5, 4), (2, 3), (1, 2), (1, 0), (1, 1)),
                                                                  ((1, 3, 6, 6), (3, 2), (2, 1), (0, 1), (2, 2))]:
        oh, ow = out_len(h, kh, sh, ph, dh), out_len(w_, kw, sw, pw, dw)
        x = ctx.rng.standard_normal((n, c, h, w_))
        args = (kh, kw, sh, sw, ph, pw, dh, dw)
        geometry = f"kernel ({kh}, {kw}), stride ({sh}, {sw}), padding ({ph}, {pw}), dilation ({dh}, {dw})"
        cols_shape = (n, oh, ow, c * kh * kw)
        probes.append(kernel_probe(f"im2col2d(cols {cols_shape}, x {x.shape} stored in order (3, 1, 0, 2), {geometry})",
                                    f"{CONV}.im2col2d", cols_shape, x, (3, 1, 0, 2), *args))
        cols = ctx.rng.standard_normal(cols_shape)
        probes.append(kernel_probe(f"col2im2d(x {x.shape} holding garbage, cols {cols_shape} stored in order (3, 2, 0, 1), {geometry})",
                                    f"{CONV}.col2im2d", x.shape, cols, (3, 2, 0, 1), *args))
    ctx.equivalent(probes, TOL)


@check("a4", "conv2d_gradcheck", kind="gradient")
def conv2d_gradcheck(ctx: CheckContext) -> None:
    """conv2d: backward against central differences of the student's forward."""
    for xs, ws, kwargs in [((1, 2, 4, 4), (2, 2, 2, 2), {"stride": 1, "padding": 1}), ((1, 1, 5, 5), (2, 1, 3, 2), {"stride": (2, 1), "dilation": (1, 2)})]:
        arrays = [ctx.rng.standard_normal(xs), ctx.rng.standard_normal(ws), ctx.rng.standard_normal(ws[0])]
        gradcheck_call(ctx, f"conv2d(x {xs}, weight {ws}, bias, {kwargs})", f"{CONV}.conv2d", arrays, kwargs)


# ---------------------------------------------------------------------------- 4.4


def _softmax_probes(ctx: CheckContext, fn: str) -> list[Probe]:
    probes = []
    for shape, dim in [((4,), 0), ((2, 3), 1), ((2, 3), 0), ((2, 3, 4), -1), ((3, 2, 2), 1)]:
        x = ctx.rng.standard_normal(shape) * 3
        probes.append(fwd_bwd(ctx, f"{fn}(x {shape}, dim={dim})", {"x": x}, lambda p, t, d=dim: p.call(f"{SOFT}.{fn}", t[0], dim=d), shape))
    big = np.array([[1000.0, 0.0, -1000.0], [710.0, 712.0, 709.0]])
    probes.append(fwd_bwd(ctx, f"{fn}(x, dim=1) with logits of ±1000 (must not overflow)", {"x": big}, lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1), big.shape))
    # rows far apart: each row must subtract its own maximum, not the tensor's
    apart = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]])
    probes.append(fwd_bwd(ctx, f"{fn}(x, dim=1) with rows of logits near +1000 and −1000 (each row's own maximum)", {"x": apart},
                           lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1), apart.shape))
    x = ctx.rng.standard_normal((3, 4))
    probes.append(fwd_bwd(ctx, f"{fn}(x (3, 4) stored in dimension order (1, 0), dim=1)", {"x": x}, lambda p, t: p.call(f"{SOFT}.{fn}", t[0], dim=1), (3, 4), order={"x": (1, 0)}))
    return probes


@check("a4", "softmax", kind="equivalence")
def softmax(ctx: CheckContext) -> None:
    """softmax forward and backward along every dimension, stable for large logits."""
    ctx.equivalent(_softmax_probes(ctx, "softmax"), TOL)
    x = (ctx.rng.standard_normal((2, 5)) * 50).astype(np.float32)
    ctx.equivalent([fwd_bwd(ctx, "softmax(x, dim=1) on float32 logits", {"x": x}, lambda p, t: p.call(f"{SOFT}.softmax", t[0], dim=1), (2, 5))], F32)


@check("a4", "log_softmax", kind="equivalence")
def log_softmax(ctx: CheckContext) -> None:
    """log_softmax forward and backward along every dimension, stable for large logits."""
    ctx.equivalent(_softmax_probes(ctx, "log_softmax"), TOL)


@check("a4", "softmax_gradcheck", kind="gradient")
def softmax_gradcheck(ctx: CheckContext) -> None:
    """softmax and log_softmax: backward against central differences of the student's
    forward, along each dimension."""
    for fn in ("softmax", "log_softmax"):
        for dim in (0, 1):
            x = ctx.rng.standard_normal((3, 4))
            gradcheck_call(ctx, f"{fn}(x (3, 4), dim={dim})", f"{SOFT}.{fn}", [x], {"dim": dim})


@check("a4", "dropout", kind="property")
def dropout(ctx: CheckContext) -> None:
    """dropout: identity when not training or p = 0; zeros (no NaN) for p = 1; survivors
    scaled by 1/(1 − p), drop rate near p, gradient through the same mask; repeatable
    under manual_seed."""
    x = ctx.rng.uniform(0.5, 1.5, size=(50, 400))  # no zeros: a zero output means dropped
    g = ctx.rng.standard_normal(x.shape)
    cases = [("dropout(x, p=0.5, training=False)", 0.5, False), ("dropout(x, p=0.0)", 0.0, True), ("dropout(x, p=1.0)", 1.0, True),
             ("dropout(x, p=0.3)", 0.3, True), ("dropout(x, p=0.8)", 0.8, True)]
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
                raise CheckFailed(f"{p.label}: got shape {v.array.shape} and dtype {v.array.dtype}, expected {x.shape} and float64")
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
            bad = tuple(int(i) for i in np.argwhere(kept & ~np.isclose(out, x * scale, rtol=1e-12, atol=0))[0])
            raise CheckFailed(f"{label}: a kept element must be x / (1 − p): at {bad} x = {x[bad]:.6g}, "
                              f"got {out[bad]:.6g}, expected {x[bad] * scale:.6g}")
        rate = 1.0 - kept.mean()
        sigma = np.sqrt(prob * (1 - prob) / x.size)
        if abs(rate - prob) > 6 * sigma:
            raise CheckFailed(f"{label}: dropped {rate:.3f} of the elements, expected about {prob} (±{6 * sigma:.3f})")
        want = np.where(kept, g * scale, 0.0)
        if not np.allclose(grad, want, rtol=1e-12, atol=1e-15):
            raise CheckFailed(f"{label}: the gradient must be g / (1 − p) where the element was kept and 0 where it was dropped")
    first = outs["dropout(x, p=0.3)"][0]
    if not np.array_equal(first, answers[-1].values[0].array):
        raise CheckFailed("dropout after manual_seed(1234) gave a different mask the second time: draw the mask from minitorch's generator")


# ---------------------------------------------------------------------------- 4.5


TEXTCNN = {"vocab_size": 20, "embedding_dim": 6, "num_classes": 3, "kernel_sizes": (2, 3), "num_filters": 4, "dropout": 0.5, "padding_idx": 0}


def _textcnn_state(ctx: CheckContext) -> dict[str, np.ndarray]:
    """Random weights for every parameter, named and shaped as the reference names them."""
    import minitorch  # the reference, imported by the parent

    model = minitorch.nn.TextCNN(**TEXTCNN, backend=minitorch.SimpleBackend)
    state = {}
    for name, value in sorted(model.state_dict().items()):
        arr = np.asarray(value)
        state[name] = ctx.rng.standard_normal(arr.shape) * 0.5
    return state


def _textcnn_probe(ctx: CheckContext, state: dict[str, np.ndarray], tokens: np.ndarray, mode: str) -> Probe:
    """TextCNN with the weights `state` in `mode` on `tokens`, then backward: the logits,
    the parameters' names and gradients."""
    kwargs = dict(TEXTCNN)
    if mode == "train":
        kwargs["dropout"] = 0.0
    p = Probe(f"TextCNN({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) in {mode} mode on tokens {tokens.shape}, then backward",
              {"tokens": tokens})
    model = p.call("minitorch.nn.TextCNN", backend=p.get("minitorch.SimpleBackend"), **kwargs)
    p.method(model, "load_state_dict", {k: state[k] for k in sorted(state)})
    p.method(model, "eval" if mode == "eval" else "train")
    logits = p.call(model, p.tensor(tokens))
    g = ctx.rng.standard_normal((tokens.shape[0], TEXTCNN["num_classes"]))
    p.method(logits, "backward", p.tensor(g))
    params = p.method(model, "named_parameters")
    return p.returns(logits, p.project(params, [0]), p.project(params, [1, "value", "grad"]),
                     names=["logits", "parameter names", "parameter gradients"])


def _tokens(ctx: CheckContext, shape: tuple[int, int]) -> np.ndarray:
    tokens = ctx.rng.integers(1, TEXTCNN["vocab_size"], size=shape).astype(np.int64)
    tokens[0, shape[1] - 2:] = 0  # padding
    return tokens


@check("a4", "textcnn", kind="equivalence")
def textcnn(ctx: CheckContext) -> None:
    """TextCNN with given weights in eval mode: logits and every parameter's gradient,
    against the reference."""
    ctx.equivalent([_textcnn_probe(ctx, _textcnn_state(ctx), _tokens(ctx, (3, 7)), "eval")], Tol(rtol=1e-8, atol=1e-10))


@check("a4", "textcnn_train", kind="equivalence")
def textcnn_train(ctx: CheckContext) -> None:
    """TextCNN with given weights in training mode (dropout 0): logits and gradients."""
    ctx.equivalent([_textcnn_probe(ctx, _textcnn_state(ctx), _tokens(ctx, (3, 7)), "train")], Tol(rtol=1e-8, atol=1e-10))


@check("a4", "textcnn_shapes", kind="equivalence")
def textcnn_shapes(ctx: CheckContext) -> None:
    """TextCNN on a batch of one, and on sentences exactly as long as the widest filter."""
    state = _textcnn_state(ctx)
    probes = [_textcnn_probe(ctx, state, _tokens(ctx, (1, 6)), "eval"),
              _textcnn_probe(ctx, state, _tokens(ctx, (2, max(TEXTCNN["kernel_sizes"]))), "eval")]
    ctx.equivalent(probes, Tol(rtol=1e-8, atol=1e-10))
