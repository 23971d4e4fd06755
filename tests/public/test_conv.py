"""Tasks 4.1 (conv1d) and 4.2 (conv2d): the im2col/col2im kernels on raw storages (against
their definition, and col2im as the adjoint of im2col), conv values and gradients against
a NumPy loop (the definition, and its backward written out) on every CPU backend and over
generated shapes, strides, paddings and dilations; central differences; layers and state
dicts; errors that name the function and the shapes; a clear error on the CUDA backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.nn.conv import unfold1d, unfold2d
from minitorch.testing import grad_check
from tensor_strategies import to_minitorch

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]

CHECK = settings(max_examples=25, deadline=None)


@st.composite
def conv1d_cases(draw):
    n, c_in, c_out = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k, stride, padding, dilation = (
        draw(st.integers(1, 4)),
        draw(st.integers(1, 3)),
        draw(st.integers(0, 2)),
        draw(st.integers(1, 2)),
    )
    span = dilation * (k - 1) + 1
    length = draw(st.integers(max(1, span - 2 * padding), span + 6))
    bias = draw(st.booleans())
    permuted = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    return n, c_in, c_out, length, k, stride, padding, dilation, bias, permuted, seed


@st.composite
def conv2d_cases(draw):
    n, c_in, c_out = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 1)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    spans = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    h = draw(st.integers(max(1, spans[0] - 2 * padding[0]), spans[0] + 4))
    w = draw(st.integers(max(1, spans[1] - 2 * padding[1]), spans[1] + 4))
    bias = draw(st.booleans())
    permuted = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    return n, c_in, c_out, h, w, kh, kw, stride, padding, dilation, bias, permuted, seed


def _inputs(rng, x_shape, w_shape, c_out, bias, permuted):
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    b = rng.standard_normal(c_out) if bias else None
    order = tuple(reversed(range(len(x_shape)))) if permuted else tuple(range(len(x_shape)))
    X = to_minitorch(x, order).requires_grad_(True)  # a non-contiguous layout when permuted
    W = minitorch.tensor(w, requires_grad=True)
    B = minitorch.tensor(b, requires_grad=True) if bias else None
    return x, w, b, X, W, B


def _conv_numpy(x: np.ndarray, w: np.ndarray, b, stride, padding, dilation) -> np.ndarray:
    """The definition, as loops: x [N, C, *S], w [O, C, *K] with per-axis stride, padding
    (before, after) pairs and dilation; 1-D and 2-D alike."""
    dims = x.ndim - 2
    pads = [(0, 0), (0, 0)] + list(padding)
    xp = np.pad(x, pads)
    out_size = [
        (xp.shape[2 + a] - dilation[a] * (w.shape[2 + a] - 1) - 1) // stride[a] + 1 for a in range(dims)
    ]
    out = np.zeros((x.shape[0], w.shape[0], *out_size))
    for pos in np.ndindex(*out_size):
        for offset in np.ndindex(*w.shape[2:]):
            idx = tuple(pos[a] * stride[a] + offset[a] * dilation[a] for a in range(dims))
            patch = xp[(slice(None), slice(None)) + idx]  # [N, C]
            out[(slice(None), slice(None)) + pos] += patch @ w[(slice(None), slice(None)) + offset].T
    if b is not None:
        out += b.reshape((1, -1) + (1,) * dims)
    return out


def _conv_numpy_backward(x: np.ndarray, w: np.ndarray, g: np.ndarray, stride, padding, dilation):
    """The gradients of `_conv_numpy` for the upstream gradient g [N, O, *OUT], by the same
    loops: every output position pos reads patch = xp[..., pos·stride + offset·dilation] and
    adds patch @ w[..., offset]ᵀ, so it sends

        ∂L/∂w[..., offset] += g[..., pos]ᵀ @ patch    and    ∂L/∂patch += g[..., pos] @ w[..., offset]

    and ∂L/∂b = Σ g over N and every output position. Returns (∂L/∂x, ∂L/∂w, ∂L/∂b)."""
    dims = x.ndim - 2
    pads = [(0, 0), (0, 0)] + list(padding)
    xp = np.pad(x, pads)
    grad_xp, grad_w = np.zeros_like(xp), np.zeros_like(w)
    for pos in np.ndindex(*g.shape[2:]):
        g_pos = g[(slice(None), slice(None)) + pos]  # [N, O]
        for offset in np.ndindex(*w.shape[2:]):
            idx = tuple(pos[a] * stride[a] + offset[a] * dilation[a] for a in range(dims))
            at_idx, at_offset = (slice(None), slice(None)) + idx, (slice(None), slice(None)) + offset
            grad_w[at_offset] += g_pos.T @ xp[at_idx]
            grad_xp[at_idx] += g_pos @ w[at_offset]
    inside = (slice(None), slice(None)) + tuple(
        slice(before, before + x.shape[2 + a]) for a, (before, _) in enumerate(padding)
    )
    return grad_xp[inside], grad_w, g.sum(axis=(0,) + tuple(range(2, g.ndim)))


def _check_values_and_gradients(out, expected, inputs, grads, rtol=1e-10, atol=1e-12) -> None:
    """out equals expected, and each input (None: no bias) holds its expected gradient."""
    assert out.shape == expected.shape, f"output shape {out.shape}, expected {expected.shape}"
    np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=atol)
    for name, t, want in zip(("x", "weight", "bias"), inputs, grads):
        if t is None:
            continue
        assert t.grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=rtol, atol=atol, err_msg=f"gradient of {name}")


def _raw(t: minitorch.Tensor):
    return t.tuple()


# ---------------------------------------------------------------------------------------
# conv1d


@pytest.mark.task4_1
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize(
    "stride,padding,dilation", [(1, (0, 0), 1), (2, (1, 1), 1), (1, (2, 1), 2), (3, (0, 2), 2)]
)
def test_im2col1d_follows_its_definition(backend, stride, padding, dilation) -> None:
    """cols[n, l, c·K + k] = x[n, c, l·stride + k·dilation − padding] (0 outside), read
    from a permuted (non-contiguous) input."""
    rng = np.random.default_rng(stride + 3 * dilation)
    n, c, length, k = 2, 3, 8, 3
    x = rng.standard_normal((n, c, length))
    X = to_minitorch(x, (2, 0, 1), backend)
    cols = unfold1d(X, k, stride, padding, dilation).numpy()
    xp = np.pad(x, [(0, 0), (0, 0), padding])
    l_out = (length + sum(padding) - dilation * (k - 1) - 1) // stride + 1
    assert cols.shape == (n, l_out, c * k)
    for l in range(l_out):  # noqa: E741
        for kk in range(k):
            np.testing.assert_array_equal(cols[:, l, kk::k], xp[:, :, l * stride + kk * dilation])


@pytest.mark.task4_1
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize(
    "stride,padding,dilation", [(1, (0, 0), 1), (2, (1, 2), 1), (1, (2, 2), 2), (3, (1, 0), 3)]
)
def test_col2im1d_is_the_adjoint_of_im2col1d(backend, stride, padding, dilation) -> None:
    """⟨im2col(x), c⟩ = ⟨x, col2im(c)⟩ for every x and c: col2im sums each input value's
    copies (the backward of im2col), and overwrites whatever its output held."""
    rng = np.random.default_rng(stride + 5 * dilation)
    x = minitorch.tensor(rng.standard_normal((2, 3, 9)), backend=backend, requires_grad=True)
    cols = unfold1d(x, 3, stride, padding, dilation)
    c = rng.standard_normal(cols.shape)
    cols.backward(minitorch.tensor(c, backend=backend))  # x.grad = col2im1d(c)
    assert x.grad is not None
    np.testing.assert_allclose((cols.numpy() * c).sum(), (x.numpy() * x.grad.numpy()).sum(), rtol=1e-12)
    # and directly: a raw kernel call into a storage full of garbage
    grad = np.full(x.numel(), np.nan)
    g = minitorch.tensor(c, backend=backend)
    shape, strides = np.array(x.shape), np.array(x._tensor.strides)
    backend.col2im1d(grad, shape, strides, *_raw(g), 3, stride, padding[0], dilation)
    np.testing.assert_allclose(grad.reshape(x.shape), x.grad.numpy(), rtol=1e-12)


@pytest.mark.task4_1
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv1d_matches_the_definition_on_each_backend(backend, dtype) -> None:
    rng = np.random.default_rng(11)
    x, w, b = rng.standard_normal((2, 3, 10)), rng.standard_normal((4, 3, 3)), rng.standard_normal(4)
    out = F.conv1d(
        *(minitorch.tensor(a, dtype=dtype, backend=backend) for a in (x, w, b)),
        stride=2,
        padding=2,
        dilation=2,
    )
    assert out.dtype == dtype and out.backend is backend
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out.numpy(), _conv_numpy(x, w, b, (2,), [(2, 2)], (2,)), rtol=tol, atol=tol)


@pytest.mark.task4_1
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_conv1d_central_differences_on_each_backend(backend) -> None:
    rng = np.random.default_rng(12)
    x, w, b = (
        minitorch.tensor(rng.standard_normal(s), backend=backend) for s in ((1, 2, 6), (2, 2, 3), (2,))
    )
    grad_check(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding="valid", dilation=1), x, w, b)


@pytest.mark.task4_1
@CHECK
@given(conv1d_cases())
def test_conv1d_matches_the_definition_over_generated_cases(case) -> None:
    """Values and all three gradients against the NumPy loops, for generated sizes, strides,
    paddings and dilations, with or without bias, contiguous or permuted input."""
    n, c_in, c_out, length, k, stride, padding, dilation, bias, permuted, seed = case
    rng = np.random.default_rng(seed)
    x, w, b, X, W, B = _inputs(rng, (n, c_in, length), (c_out, c_in, k), c_out, bias, permuted)
    out = F.conv1d(X, W, B, stride, padding, dilation)
    geometry = ((stride,), [(padding, padding)], (dilation,))
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    _check_values_and_gradients(
        out, _conv_numpy(x, w, b, *geometry), [X, W, B], _conv_numpy_backward(x, w, g, *geometry)
    )


@pytest.mark.task4_1
@pytest.mark.parametrize("stride,padding,dilation", [(1, 0, 1), (2, 1, 1), (1, 2, 2)])
def test_conv1d_central_differences(stride: int, padding: int, dilation: int) -> None:
    rng = np.random.default_rng(1)
    x = minitorch.tensor(rng.standard_normal((2, 2, 7)))
    w = minitorch.tensor(rng.standard_normal((3, 2, 3)))
    b = minitorch.tensor(rng.standard_normal(3))
    grad_check(lambda x, w, b: F.conv1d(x, w, b, stride, padding, dilation), x, w, b)


@pytest.mark.task4_1
@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("k,dilation", [(3, 2), (4, 2), (4, 1)])
def test_conv1d_string_padding(padding: str, k: int, dilation: int) -> None:
    """'valid' pads nothing; 'same' pads a total of dilation·(K − 1) zeros, the odd one
    (K = 4, dilation 1: 1 before, 2 after) after, so the output keeps the input's length."""
    rng = np.random.default_rng(k)
    x, w = rng.standard_normal((2, 3, 9)), rng.standard_normal((2, 3, k))
    out = F.conv1d(minitorch.tensor(x), minitorch.tensor(w), padding=padding, dilation=dilation)
    total = dilation * (k - 1) if padding == "same" else 0
    expected = _conv_numpy(x, w, None, (1,), [(total // 2, total - total // 2)], (dilation,))
    if padding == "same":
        assert out.shape == (2, 2, 9)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.task4_1
def test_conv1d_float32() -> None:
    """float32 in, float32 out and float32 gradients, close to the float64 definition."""
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4, 11), (5, 4, 3), (5,)))
    X, W, B = (minitorch.tensor(a, dtype=minitorch.float32, requires_grad=True) for a in (x, w, b))
    out = F.conv1d(X, W, B, stride=2, padding=1)
    assert out.dtype == np.float32
    geometry = ((2,), [(1, 1)], (1,))
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(minitorch.tensor(g, dtype=minitorch.float32))
    x64, w64, g64 = (a.astype(np.float64) for a in (x, w, g))
    _check_values_and_gradients(
        out,
        _conv_numpy(x64, w64, b.astype(np.float64), *geometry),
        [X, W, B],
        _conv_numpy_backward(x64, w64, g64, *geometry),
        rtol=1e-4,
        atol=1e-5,
    )
    assert X.grad is not None and X.grad.dtype == np.float32 and W.grad.dtype == np.float32


@pytest.mark.task4_1
def test_conv1d_input_without_gradient() -> None:
    """A constant input (e.g. the first layer's data) gets no gradient; the weight still does."""
    rng = np.random.default_rng(3)
    x = minitorch.tensor(rng.standard_normal((2, 2, 6)))
    w = minitorch.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    F.conv1d(x, w).sum().backward()
    assert x.grad is None and w.grad is not None and w.grad.shape == (3, 2, 2)


@pytest.mark.task4_1
@pytest.mark.parametrize(
    "x_shape,w_shape,kwargs,message",
    [
        ((3, 10), (4, 3, 2), {}, "conv1d: input must be 3-D"),
        ((2, 3, 10), (4, 2, 3), {}, "input has 3 channels"),
        ((2, 3, 4), (4, 3, 6), {}, "larger than the padded input"),
        ((2, 3, 2), (4, 3, 3), {"dilation": 2, "padding": 1}, "larger than the padded input"),
        ((2, 3, 10), (4, 3), {}, "conv1d: weight must be 3-D"),
        ((2, 3, 10), (4, 3, 2), {"stride": 0}, "stride must be an integer ≥ 1"),
        ((2, 3, 10), (4, 3, 2), {"padding": "same", "stride": 2}, "padding='same' needs stride 1"),
    ],
)
def test_conv1d_errors(x_shape, w_shape, kwargs, message) -> None:
    x, w = minitorch.zeros(*x_shape), minitorch.zeros(*w_shape)
    with pytest.raises((ValueError, minitorch.ShapeError)) as info:
        F.conv1d(x, w, **kwargs)
    assert message in str(info.value)
    if "3-D" in message or "channels" in message or "larger" in message:
        assert str(x_shape) in str(info.value) or str(w_shape) in str(info.value)


@pytest.mark.task4_1
def test_conv1d_bias_shape_error() -> None:
    with pytest.raises(minitorch.ShapeError, match=r"bias must have shape \(4,\)"):
        F.conv1d(minitorch.zeros(1, 3, 5), minitorch.zeros(4, 3, 2), minitorch.zeros(3))


@pytest.mark.task4_1
def test_conv1d_layer_parameters_and_init() -> None:
    minitorch.manual_seed(0)
    layer = nn.Conv1d(6, 8, 3, padding=1)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert layer.weight.value.shape == (8, 6, 3) and layer.bias.value.shape == (8,)
    bound = 1 / np.sqrt(6 * 3)
    for p in (layer.weight.value, layer.bias.value):
        values = p.numpy()
        assert np.all(np.abs(values) <= bound) and values.std() > bound / 4
    assert layer(minitorch.zeros(2, 6, 5)).shape == (2, 8, 5)
    assert nn.Conv1d(2, 3, 2, bias=False).bias is None


@pytest.mark.task4_1
def test_conv1d_layer_state_dict_round_trip() -> None:
    """A state_dict of NumPy arrays (PyTorch's names and shapes) loads into the layer, which
    then computes the definition with those weights; state_dict() gives them back."""
    rng = np.random.default_rng(4)
    weights = {"weight": rng.standard_normal((5, 4, 3)), "bias": rng.standard_normal(5)}
    layer = nn.Conv1d(4, 5, 3, stride=2, padding=1, dilation=2)
    layer.load_state_dict(weights)
    x = rng.standard_normal((2, 4, 12))
    expected = _conv_numpy(x, weights["weight"], weights["bias"], (2,), [(1, 1)], (2,))
    np.testing.assert_allclose(layer(minitorch.tensor(x)).numpy(), expected, rtol=1e-10)
    saved = layer.state_dict()
    assert sorted(saved) == ["bias", "weight"]
    for name, value in weights.items():
        np.testing.assert_array_equal(saved[name], value)


# ---------------------------------------------------------------------------------------
# conv2d


@pytest.mark.task4_2
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize(
    "stride,padding,dilation", [((1, 1), (0, 0, 0, 0), (1, 1)), ((2, 1), (1, 1, 0, 2), (1, 2))]
)
def test_im2col2d_follows_its_definition_and_col2im2d_is_its_adjoint(
    backend, stride, padding, dilation
) -> None:
    """cols[n, i, j, (c·KH + a)·KW + b] = x[n, c, i·sh + a·dh − ph, j·sw + b·dw − pw], read
    from a permuted input; ⟨im2col(x), c⟩ = ⟨x, col2im(c)⟩."""
    rng = np.random.default_rng(sum(stride))
    n, c, h, w, kh, kw = 2, 2, 5, 6, 2, 3
    x = rng.standard_normal((n, c, h, w))
    X = to_minitorch(x, (3, 1, 0, 2), backend).requires_grad_(True)
    cols = unfold2d(X, (kh, kw), stride, padding, dilation)
    xp = np.pad(x, [(0, 0), (0, 0), padding[:2], padding[2:]])
    got = cols.numpy()
    oh, ow = got.shape[1:3]
    assert got.shape == (
        n,
        (h + padding[0] + padding[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
        ow,
        c * kh * kw,
    )
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    want = xp[:, :, i * stride[0] + a * dilation[0], j * stride[1] + b * dilation[1]]
                    np.testing.assert_array_equal(got[:, i, j, a * kw + b :: kh * kw], want)
    g = rng.standard_normal(cols.shape)
    cols.backward(minitorch.tensor(g, backend=backend))
    assert X.grad is not None
    np.testing.assert_allclose((got * g).sum(), (x * X.grad.numpy()).sum(), rtol=1e-12)


@pytest.mark.task4_2
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_conv2d_matches_the_definition_on_each_backend(backend) -> None:
    rng = np.random.default_rng(13)
    x, w, b = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((2, 3, 3, 2)), rng.standard_normal(2)
    out = F.conv2d(
        *(minitorch.tensor(a, backend=backend) for a in (x, w, b)),
        stride=(2, 1),
        padding=(1, 0),
        dilation=(1, 2),
    )
    np.testing.assert_allclose(
        out.numpy(), _conv_numpy(x, w, b, (2, 1), [(1, 1), (0, 0)], (1, 2)), rtol=1e-12, atol=1e-12
    )
    grad_check(
        lambda x: F.conv2d(x, minitorch.tensor(w, backend=backend), None, 1, "same"),
        minitorch.tensor(x[:1, :, :4, :4], backend=backend),
    )


@pytest.mark.task4_2
@CHECK
@given(conv2d_cases())
def test_conv2d_matches_the_definition_over_generated_cases(case) -> None:
    """Values and all three gradients against the NumPy loops, for generated sizes, strides,
    paddings and dilations per axis, with or without bias, contiguous or permuted input."""
    n, c_in, c_out, h, w_, kh, kw, stride, padding, dilation, bias, permuted, seed = case
    rng = np.random.default_rng(seed)
    x, w, b, X, W, B = _inputs(rng, (n, c_in, h, w_), (c_out, c_in, kh, kw), c_out, bias, permuted)
    out = F.conv2d(X, W, B, stride, padding, dilation)
    geometry = (stride, [(padding[0], padding[0]), (padding[1], padding[1])], dilation)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    _check_values_and_gradients(
        out, _conv_numpy(x, w, b, *geometry), [X, W, B], _conv_numpy_backward(x, w, g, *geometry)
    )


@pytest.mark.task4_2
@pytest.mark.parametrize("stride,padding,dilation", [(1, 0, 1), ((2, 1), (1, 0), (1, 2))])
def test_conv2d_central_differences(stride, padding, dilation) -> None:
    rng = np.random.default_rng(5)
    x = minitorch.tensor(rng.standard_normal((1, 2, 5, 4)))
    w = minitorch.tensor(rng.standard_normal((2, 2, 2, 2)))
    b = minitorch.tensor(rng.standard_normal(2))
    grad_check(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation), x, w, b)


@pytest.mark.task4_2
def test_conv2d_same_padding() -> None:
    """'same' with a 4 × 3 kernel: 3 rows of zeros (1 before, 2 after) and 2 columns (1, 1)."""
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((1, 2, 6, 7)), rng.standard_normal((3, 2, 4, 3))
    out = F.conv2d(minitorch.tensor(x), minitorch.tensor(w), padding="same")
    assert out.shape == (1, 3, 6, 7)
    expected = _conv_numpy(x, w, None, (1, 1), [(1, 2), (1, 1)], (1, 1))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.task4_2
@pytest.mark.parametrize(
    "x_shape,w_shape,kwargs,message",
    [
        ((3, 5, 5), (2, 3, 2, 2), {}, "conv2d: input must be 4-D"),
        ((1, 3, 5, 5), (2, 4, 2, 2), {}, "input has 3 channels"),
        ((1, 3, 5, 2), (2, 3, 2, 3), {}, "along the width"),
        ((1, 3, 5, 5), (2, 3, 2, 2), {"stride": (1, 2, 3)}, "stride must be an int or a tuple of 2"),
    ],
)
def test_conv2d_errors(x_shape, w_shape, kwargs, message) -> None:
    with pytest.raises((ValueError, minitorch.ShapeError), match=message.replace("(", r"\(")):
        F.conv2d(minitorch.zeros(*x_shape), minitorch.zeros(*w_shape), **kwargs)


@pytest.mark.task4_2
def test_conv2d_layer_init_and_state_dict() -> None:
    """Weight [C_out, C_in, KH, KW] drawn from U(−1/√(C_in·KH·KW), +1/√(C_in·KH·KW)); a loaded
    state_dict makes the layer compute the definition with those weights."""
    minitorch.manual_seed(0)
    layer = nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=1)
    assert layer.weight.value.shape == (4, 3, 3, 2) and layer.bias.value.shape == (4,)
    bound = 1 / np.sqrt(3 * 3 * 2)
    assert np.all(np.abs(layer.weight.value.numpy()) <= bound)
    rng = np.random.default_rng(7)
    weights = {"weight": rng.standard_normal((4, 3, 3, 2)), "bias": rng.standard_normal(4)}
    layer.load_state_dict(weights)
    x = rng.standard_normal((2, 3, 6, 5))
    expected = _conv_numpy(x, weights["weight"], weights["bias"], (2, 1), [(1, 1), (1, 1)], (1, 1))
    np.testing.assert_allclose(layer(minitorch.tensor(x)).numpy(), expected, rtol=1e-10)
