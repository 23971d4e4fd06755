"""The fused scaled dot-product attention (`minitorch/accel/fused_attention.py`): the same output,
weights and gradients (q, k, v, a float mask; through the output and through the weights) as
the composed attention of task 6.2, in float64 and float32, for batch / head dimensions,
broadcasting, bool and float masks of several shapes with fully masked rows, is_causal with
L ≠ S, a given scale, dropout (the same draws), non-contiguous inputs, both CPU backends and
the parallel kernels; one graph node; the case it leaves to the composed path; central
differences; torch float64; multi-head attention with need_weights."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minitorch
from minitorch import fast_paths, nn
from minitorch.nn import functional as F
from minitorch.nn.attention import scaled_dot_product_attention_with_weights as sdpa
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

from minitorch.accel import fused_attention  # noqa: E402

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=1e-4, atol=1e-5)}


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _bool_mask(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """True = may attend; query 0 masked entirely (a fully masked row), query 1 keeps key 0.
    A key-padding mask [B, 1, 1, S]: the last batch element has only padding."""
    mask = np.random.default_rng(seed).random(shape) > 0.4
    if shape[-2] == 1:
        mask[..., 0] = True
        mask[-1] = False
        return mask
    mask[..., 1, 0] = True
    mask[..., 0, :] = False
    return mask


def _float_mask(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """−∞ where the bool mask says no (query 0: every key), small biases elsewhere."""
    return np.where(_bool_mask(shape, seed), 0.5 * _rand(*shape, seed=seed + 1), -np.inf)


def _run(composed: bool, arrays, mask, kwargs, g_out, g_w, dtype, backend=None, views=False, seed=0):
    """{out, weights, ∂q, ∂k, ∂v, ∂mask} on one path. The loss is Σ out·g_out (+ Σ weights·g_w
    when g_w is given). `views`: q, k, v are transposed views (non-contiguous)."""
    leaves = [
        minitorch.tensor(
            (a.swapaxes(-2, -1) if views else a).astype(dtype), requires_grad=True, backend=backend
        )
        for a in arrays
    ]
    q, k, v = (t.transpose(-2, -1) if views else t for t in leaves)
    if views:
        assert not any(t._tensor.is_contiguous() for t in (q, k, v))
    m = None
    if mask is not None:
        m = (
            minitorch.tensor(mask, backend=backend)
            if mask.dtype == bool
            else minitorch.tensor(mask.astype(dtype), requires_grad=True, backend=backend)
        )
    minitorch.manual_seed(seed)
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        out, weights = sdpa(q, k, v, attn_mask=m, **kwargs)
        loss = (out * minitorch.tensor(g_out.astype(dtype), backend=backend)).sum()
        if g_w is not None:
            loss = loss + (weights * minitorch.tensor(g_w.astype(dtype), backend=backend)).sum()
        loss.backward()
    grads = [t.grad.numpy().swapaxes(-2, -1) if views else t.grad.numpy() for t in leaves]
    result = {"out": out, "weights": weights, "∂q": grads[0], "∂k": grads[1], "∂v": grads[2]}
    if m is not None and m.requires_grad:
        result["∂mask"] = m.grad.numpy()
    return result


def _compare(fused: dict, composed: dict, dtype) -> None:
    assert fused.keys() == composed.keys()
    for what in fused:
        a, c = fused[what], composed[what]
        if isinstance(a, minitorch.Tensor):
            assert a.shape == c.shape, f"{what}: shape {a.shape}, composed {c.shape}"
            a, c = a.numpy(), c.numpy()
        assert a.dtype == np.dtype(dtype), f"{what}: dtype {a.dtype}"
        assert np.isfinite(a).all(), f"{what}: NaN or inf"
        np.testing.assert_allclose(a, c, err_msg=what, **TOL[dtype])


# (query shape, key shape, value shape, mask: None | (kind, shape), kwargs)
CASES = [
    pytest.param((2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5), None, {}, id="self-B2-H3"),
    pytest.param((2, 4, 6), (2, 7, 6), (2, 7, 3), None, {}, id="cross-L4-S7-Ev3"),
    pytest.param((4, 6), (7, 6), (7, 3), None, {}, id="no-batch"),
    pytest.param((2, 1, 4, 5), (1, 3, 6, 5), (6, 2), None, {}, id="broadcast-batch"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("bool", (2, 4, 6)), {}, id="bool-mask"),
    pytest.param((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), ("bool", (4, 6)), {}, id="bool-mask-L-S"),
    pytest.param((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), ("bool", (2, 1, 1, 6)), {}, id="bool-key-padding"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("float", (2, 4, 6)), {}, id="float-mask"),
    pytest.param(
        (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), ("float", (2, 1, 4, 6)), {}, id="float-mask-broadcast"
    ),
    pytest.param((2, 5, 4), (2, 5, 4), (2, 5, 3), None, {"is_causal": True}, id="causal-L=S"),
    pytest.param((2, 3, 4), (2, 6, 4), (2, 6, 3), None, {"is_causal": True}, id="causal-L<S"),
    pytest.param((2, 6, 4), (2, 3, 4), (2, 3, 3), None, {"is_causal": True}, id="causal-L>S"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("bool", (4, 6)), {"scale": 0.7}, id="scale"),
    pytest.param(
        (4, 4, 64, 16), (4, 4, 64, 16), (4, 4, 64, 16), None, {"is_causal": True}, id="parallel-causal"
    ),
    pytest.param(
        (2, 4, 40, 8), (2, 4, 60, 8), (2, 4, 60, 8), ("float", (2, 1, 40, 60)), {}, id="parallel-float"
    ),
]


def _inputs(q_shape, k_shape, v_shape, mask):
    arrays = [_rand(*s, seed=i) for i, s in enumerate((q_shape, k_shape, v_shape), start=1)]
    m = None
    if mask is not None:
        kind, shape = mask
        m = _bool_mask(shape, seed=4) if kind == "bool" else _float_mask(shape, seed=4)
    return arrays, m


def _output_shapes(q_shape, k_shape, v_shape):
    batch = tuple(np.broadcast_shapes(q_shape[:-2], k_shape[:-2]))
    return batch + (q_shape[-2], v_shape[-1]), batch + (q_shape[-2], k_shape[-2])


@pytest.mark.parametrize(
    "through_weights", [False, True], ids=["loss-on-output", "loss-on-output-and-weights"]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("q_shape, k_shape, v_shape, mask, kwargs", CASES)
def test_fused_matches_composed(q_shape, k_shape, v_shape, mask, kwargs, dtype, through_weights) -> None:
    arrays, m = _inputs(q_shape, k_shape, v_shape, mask)
    out_shape, w_shape = _output_shapes(q_shape, k_shape, v_shape)
    g_out, g_w = _rand(*out_shape, seed=5), _rand(*w_shape, seed=6) if through_weights else None
    fused = _run(False, arrays, m, kwargs, g_out, g_w, dtype)
    composed = _run(True, arrays, m, kwargs, g_out, g_w, dtype)
    assert fused["out"].history.last_fn is fused_attention.AttentionFunction, "the fused path was not taken"
    assert fused["weights"].history.last_fn is fused_attention.AttentionWeights
    _compare(fused, composed, dtype)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "mask, kwargs",
    [(None, {"is_causal": True}), (("bool", (2, 1, 4, 6)), {}), (("float", (4, 6)), {})],
    ids=["causal", "bool", "float"],
)
def test_non_contiguous_inputs_on_both_backends(mask, kwargs, dtype, backend) -> None:
    arrays, m = _inputs((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), mask)
    g_out, g_w = _rand(2, 3, 4, 2, seed=5), _rand(2, 3, 4, 6, seed=6)
    fused = _run(False, arrays, m, kwargs, g_out, g_w, dtype, backend=backend, views=True)
    composed = _run(True, arrays, m, kwargs, g_out, g_w, dtype, backend=backend, views=True)
    assert fused["out"].history.last_fn is fused_attention.AttentionFunction
    assert fused["out"].backend is backend and fused["weights"].backend is backend
    _compare(fused, composed, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("p", [0.3, 1.0])
def test_dropout_draws_the_same_mask(p, dtype) -> None:
    arrays, m = _inputs((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3), ("bool", (5, 6)))
    g_out, g_w = _rand(2, 3, 5, 3, seed=5), _rand(2, 3, 5, 6, seed=6)
    fused = _run(False, arrays, m, {"dropout_p": p}, g_out, g_w, dtype, seed=11)
    composed = _run(True, arrays, m, {"dropout_p": p}, g_out, g_w, dtype, seed=11)
    assert fused["out"].history.last_fn is fused_attention.AttentionFunction
    _compare(fused, composed, dtype)
    w = fused["weights"].numpy()
    if p == 1.0:
        assert (w == 0.0).all()
    else:  # some kept weights were scaled by 1/(1 − p), some allowed ones dropped
        assert (w > 0).any() and ((w == 0) & np.broadcast_to(m, w.shape)).any()


def test_fully_masked_rows_give_zeros_and_zero_gradients() -> None:
    for mask in (_bool_mask((4, 6), seed=4), _float_mask((4, 6), seed=4)):
        arrays, _ = _inputs((2, 4, 5), (2, 6, 5), (2, 6, 3), None)
        r = _run(False, arrays, mask, {}, _rand(2, 4, 3, seed=5), _rand(2, 4, 6, seed=6), np.float64)
        assert (r["weights"].numpy()[:, 0] == 0.0).all() and (r["out"].numpy()[:, 0] == 0.0).all()
        assert all(np.isfinite(g).all() for k, g in r.items() if k.startswith("∂"))
        assert (r["∂q"][:, 0] == 0.0).all(), "a query that attends to nothing must get gradient 0"
        if "∂mask" in r:
            assert (r["∂mask"][0] == 0.0).all()


def test_value_batch_larger_than_the_scores_takes_the_composed_path(monkeypatch) -> None:
    calls = []
    original = fused_attention.AttentionFunction.apply
    monkeypatch.setattr(
        fused_attention.AttentionFunction, "apply", lambda *a: calls.append(1) or original(*a)
    )
    arrays, _ = _inputs((4, 5), (6, 5), (2, 6, 3), None)  # weights [4, 6], output [2, 4, 3]
    fused = _run(False, arrays, None, {}, _rand(2, 4, 3, seed=5), _rand(4, 6, seed=6), np.float64)
    composed = _run(True, arrays, None, {}, _rand(2, 4, 3, seed=5), _rand(4, 6, seed=6), np.float64)
    assert not calls
    _compare(fused, composed, np.float64)
    _run(False, *_inputs((4, 5), (6, 5), (6, 3), None), {}, _rand(4, 3), None, np.float64)
    assert calls, "a supported call did not take the fused path"


def test_grad_check_on_the_fused_path() -> None:
    q, k, v = (minitorch.tensor(_rand(*s, seed=i)) for i, s in enumerate(((2, 3, 4), (2, 5, 4), (2, 5, 3))))
    grad_check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    mask = minitorch.tensor(_bool_mask((3, 5), seed=4))
    grad_check(lambda q, k, v: sdpa(q, k, v, attn_mask=mask)[0], q, k, v)
    grad_check(lambda q, k: sdpa(q, k, v, attn_mask=mask, scale=0.8)[1], q, k)  # through the weights
    bias = minitorch.tensor(0.5 * _rand(3, 5, seed=7))  # a finite float mask, and its gradient
    grad_check(lambda q, k, m: sdpa(q, k, v, attn_mask=m)[0], q, k, bias)


@pytest.mark.parametrize(
    "mask, kwargs",
    [
        (None, {}),
        (("bool", (2, 4, 6)), {}),
        (("float", (1, 4, 6)), {}),
        (None, {"is_causal": True, "scale": 0.6}),
    ],
    ids=["plain", "bool", "float", "causal-scale"],
)
def test_matches_torch_float64(mask, kwargs) -> None:
    torch = pytest.importorskip("torch")
    arrays, m = _inputs((2, 4, 5), (2, 6, 5), (2, 6, 3), mask)
    if m is not None:
        m[..., 0, 2] = True if m.dtype == bool else 0.1  # no fully masked row: torch versions differ there
    g = _rand(2, 4, 3, seed=5)
    r = _run(False, arrays, m, kwargs, g, None, np.float64)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    t_mask = None if m is None else torch.tensor(m, requires_grad=m.dtype != bool)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=t_mask, **kwargs)
    t_out.backward(torch.tensor(g))
    expected = {"out": t_out, "∂q": tq.grad, "∂k": tk.grad, "∂v": tv.grad}
    if "∂mask" in r:
        expected["∂mask"] = t_mask.grad
    for what, t in expected.items():
        got = r[what].numpy() if isinstance(r[what], minitorch.Tensor) else r[what]
        np.testing.assert_allclose(got, t.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what)


def test_multihead_attention_with_weights_matches_composed() -> None:
    """nn.MultiheadAttention (key padding, need_weights averaged over heads): the weights
    are used by the loss, so gradients flow through both outputs of the fused attention."""
    minitorch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = _rand(2, 5, 8, seed=1)
    padding = np.zeros((2, 5), dtype=bool)
    padding[1, 3:] = True
    results = []
    for composed in (False, True):
        mha.zero_grad()
        xs = minitorch.tensor(x, requires_grad=True)
        with fast_paths.plain_only() if composed else contextlib.nullcontext():
            out, weights = mha(xs, xs, xs, key_padding_mask=minitorch.tensor(padding))
            (
                (out * minitorch.tensor(_rand(2, 5, 8, seed=2))).sum()
                + (weights * minitorch.tensor(_rand(2, 5, 5, seed=3))).sum()
            ).backward()
        results.append(
            [out.numpy(), weights.numpy(), xs.grad.numpy()] + [p.value.grad.numpy() for p in mha.parameters()]
        )
    for a, c in zip(*results):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
