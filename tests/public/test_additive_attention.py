"""Additive (Bahdanau) attention (task 6.1): values against the lecture's formulas written
in NumPy (float64) and every gradient (inputs and parameters) against central differences
of them, padding masks (a fully padded row gives zero weights, a zero context and no NaN
anywhere), precomputed projected keys, central differences of the layer itself, float32,
errors. (The project's own suite also compares with PyTorch: test_additive_attention_torch.py,
not shipped.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_1

RTOL, ATOL = 1e-10, 1e-12
CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
B, S, DQ, DK, DV, H = 3, 5, 4, 6, 2, 7
NAMES = ["query", "keys", "values", "w_query", "w_key", "v"]


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _args(seed: int = 0, batch: int = B) -> list[np.ndarray]:
    """query, keys, values, w_query, w_key, v as float64 arrays."""
    shapes = [(batch, DQ), (batch, S, DK), (batch, S, DV), (H, DQ), (H, DK), (H,)]
    return [_rand(*shape, seed=seed + k) for k, shape in enumerate(shapes)]


def _padding(lengths: list[int], t: int = S) -> np.ndarray:
    """key_padding_mask [B, T]: True at the positions past each row's length."""
    return np.arange(t)[None, :] >= np.asarray(lengths)[:, None]


def _numpy_additive(q, k, val, wq, wk, v, pad) -> tuple[np.ndarray, np.ndarray]:
    """The lecture's formulas in NumPy (rows with a real token only)."""
    e = np.tanh((q @ wq.T)[:, None, :] + k @ wk.T) @ v
    if pad is not None:
        e = np.where(pad, -np.inf, e)
    a = np.exp(e - e.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("bs,bsd->bd", a, val), a


def _close(got: minitorch.Tensor, expected, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert got is not None, f"{what}: no gradient"
    exp = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=atol, err_msg=what)


def _backward(context, weights, g1, g2, backend=None) -> None:
    c, w = minitorch.tensor(g1, backend=backend), minitorch.tensor(g2, backend=backend)
    ((context * c).sum() + (weights * w).sum()).backward()


def _expected_gradients(arrays: list[np.ndarray], pad, g1: np.ndarray, g2: np.ndarray) -> list[np.ndarray]:
    """The gradients of L = Σ context ⊙ g1 + Σ weights ⊙ g2 with respect to query, keys,
    values, w_query, w_key and v: central differences of the NumPy formulas."""

    def both(*args):  # [B, Dv + S]: the two outputs side by side
        return np.concatenate(_numpy_additive(*args, pad), axis=-1)

    return numpy_gradients(both, arrays, np.concatenate([g1, g2], axis=-1))


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("lengths", [None, [5, 2, 1]])
def test_values_and_gradients_match_numpy(backend, lengths) -> None:
    arrays = _args()
    pad = _padding(lengths) if lengths is not None else None
    mt = [minitorch.tensor(a, backend=backend, requires_grad=True) for a in arrays]
    mask = minitorch.tensor(pad, backend=backend) if pad is not None else None
    context, weights = F.additive_attention(*mt, key_padding_mask=mask)
    exp_context, exp_weights = _numpy_additive(*arrays, pad)
    _close(context, exp_context, "context")
    _close(weights, exp_weights, "weights")
    g1, g2 = _rand(B, DV, seed=10), _rand(B, S, seed=11)
    _backward(context, weights, g1, g2, backend=backend)
    for name, m, expected in zip(NAMES, mt, _expected_gradients(arrays, pad, g1, g2)):
        _close(m.grad, expected, f"{name}.grad", rtol=1e-6, atol=1e-8)


def test_module_values_and_parameter_gradients_match_numpy() -> None:
    q, k, val, wq, wk, v = arrays = _args(seed=3)
    layer = nn.AdditiveAttention(DQ, DK, H)
    layer.load_state_dict({"query_proj.weight": wq, "key_proj.weight": wk, "v": v})
    pad = _padding([2, 5, 4])
    mq, mk, mval = (minitorch.tensor(a, requires_grad=True) for a in (q, k, val))
    context, weights = layer(mq, mk, mval, key_padding_mask=minitorch.tensor(pad))
    exp_context, exp_weights = _numpy_additive(*arrays, pad)
    _close(context, exp_context, "context")
    _close(weights, exp_weights, "weights")
    g1, g2 = _rand(B, DV, seed=10), _rand(B, S, seed=11)
    _backward(context, weights, g1, g2)
    got = [
        mq.grad,
        mk.grad,
        mval.grad,
        layer.query_proj.weight.value.grad,
        layer.key_proj.weight.value.grad,
        layer.v.value.grad,
    ]
    for name, m, expected in zip(NAMES, got, _expected_gradients(arrays, pad, g1, g2)):
        _close(m, expected, f"{name}.grad", rtol=1e-6, atol=1e-8)


def test_values_match_the_formulas_in_numpy() -> None:
    arrays = _args(seed=5)
    pad = _padding([5, 3, 1])
    context, weights = F.additive_attention(*(minitorch.tensor(a) for a in arrays), minitorch.tensor(pad))
    exp_context, exp_weights = _numpy_additive(*arrays, pad)
    _close(context, exp_context, "context")
    _close(weights, exp_weights, "weights")


def test_weights_sum_to_one_and_padding_gets_nothing() -> None:
    arrays = _args(seed=7)
    pad = _padding([5, 3, 1])
    mt = [minitorch.tensor(a, requires_grad=True) for a in arrays]
    context, weights = F.additive_attention(*mt, key_padding_mask=minitorch.tensor(pad))
    a = weights.numpy()
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    assert np.all(a[pad] == 0.0) and np.all(a[~pad] > 0.0)
    # keys and values at padded positions change nothing, and get no gradient
    changed = list(arrays)
    changed[1] = np.where(pad[..., None], 1e3 * _rand(B, S, DK, seed=20), arrays[1])
    changed[2] = np.where(pad[..., None], 1e3 * _rand(B, S, DV, seed=21), arrays[2])
    context2, _ = F.additive_attention(*(minitorch.tensor(x) for x in changed), minitorch.tensor(pad))
    np.testing.assert_allclose(context.numpy(), context2.numpy(), rtol=1e-12, atol=1e-12)
    context.sum().backward()
    assert np.all(mt[1].grad.numpy()[pad] == 0.0) and np.all(mt[2].grad.numpy()[pad] == 0.0)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_fully_padded_row_gives_zeros_and_no_nan(backend) -> None:
    arrays = _args(seed=9)
    pad = _padding([4, 0, 2])  # row 1 is all padding
    mt = [minitorch.tensor(a, backend=backend, requires_grad=True) for a in arrays]
    context, weights = F.additive_attention(*mt, key_padding_mask=minitorch.tensor(pad, backend=backend))
    assert np.all(weights.numpy()[1] == 0.0) and np.all(context.numpy()[1] == 0.0)
    g1, g2 = _rand(B, DV, seed=10), _rand(B, S, seed=11)
    _backward(context, weights, g1, g2, backend=backend)
    for name, m in zip(NAMES, mt):
        assert np.all(np.isfinite(m.grad.numpy())), f"{name}.grad has NaN or inf"
    for name, m in zip(NAMES[:3], mt[:3]):
        assert np.all(m.grad.numpy()[1] == 0.0), f"{name}.grad of the empty row is not zero"
    # the other rows are computed as without the empty one
    keep = [0, 2]
    sub = [a[keep] if k < 3 else a for k, a in enumerate(arrays)]
    mt2 = [minitorch.tensor(a, requires_grad=True) for a in sub]
    c2, a2 = F.additive_attention(*mt2, key_padding_mask=minitorch.tensor(pad[keep]))
    _close(context, np.insert(c2.numpy(), 1, 0.0, axis=0), "context")
    _backward(c2, a2, g1[keep], g2[keep])
    for k, (name, m, m2) in enumerate(zip(NAMES, mt, mt2)):
        expected = np.insert(m2.grad.numpy(), 1, 0.0, axis=0) if k < 3 else m2.grad.numpy()
        _close(m.grad, expected, f"{name}.grad")


@pytest.mark.parametrize("lengths", [None, [5, 1]])
def test_central_differences(lengths) -> None:
    pad = minitorch.tensor(_padding(lengths)) if lengths is not None else None
    inputs = [minitorch.tensor(a) for a in _args(seed=13, batch=2)]

    def both(query, keys, values, w_query, w_key, v):
        context, weights = F.additive_attention(query, keys, values, w_query, w_key, v, pad)
        return minitorch.cat([context, weights], dim=-1)

    grad_check(both, *inputs)


def test_projected_keys_give_the_same_values_and_gradients() -> None:
    q, k, val, *_ = _args(seed=15)
    pad = minitorch.tensor(_padding([5, 3, 2]))
    layer = nn.AdditiveAttention(DQ, DK, H)
    mk = minitorch.tensor(k, requires_grad=True)
    c1, a1 = layer(minitorch.tensor(q), mk, minitorch.tensor(val), pad)
    c1.sum().backward()
    grads = [p.value.grad.numpy().copy() for p in layer.parameters()] + [mk.grad.numpy().copy()]
    for p in layer.parameters():  # (Module has no zero_grad; optimizers do)
        p.value.grad = None
    mk2 = minitorch.tensor(k, requires_grad=True)
    projected = layer.project_keys(mk2)
    assert projected.shape == (B, S, H)
    _close(projected, np.asarray(k @ layer.key_proj.weight.value.numpy().T), "project_keys")
    total = None
    for step in range(2):  # a decoder: several queries, the keys projected once
        query = minitorch.tensor(q) if step == 0 else minitorch.tensor(q) * 0.0
        c2, a2 = layer(query, mk2, minitorch.tensor(val), pad, projected_keys=projected)
        if step == 0:
            _close(c2, c1.numpy(), "context")
            _close(a2, a1.numpy(), "weights")
            total = c2.sum()
    total.backward()
    got = [p.value.grad.numpy() for p in layer.parameters()] + [mk2.grad.numpy()]
    for g, e in zip(got, grads):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


def test_values_default_to_the_keys_and_unbatched_input() -> None:
    q, k, *_ = _args(seed=17)
    layer = nn.AdditiveAttention(DQ, DK, H)
    w = [layer.query_proj.weight.value.numpy(), layer.key_proj.weight.value.numpy(), layer.v.value.numpy()]
    context, weights = layer(minitorch.tensor(q), minitorch.tensor(k))
    exp_context, exp_weights = _numpy_additive(q, k, k, *w, None)
    _close(context, exp_context, "context")
    _close(weights, exp_weights, "weights")
    pad = _padding([3])[0]
    c, a = layer(minitorch.tensor(q[0]), minitorch.tensor(k[0]), key_padding_mask=minitorch.tensor(pad))
    exp_c, exp_a = _numpy_additive(q[:1], k[:1], k[:1], *w, pad[None])
    _close(c, exp_c[0], "unbatched context")
    _close(a, exp_a[0], "unbatched weights")


def test_module_parameters_initialisation_and_float32() -> None:
    minitorch.manual_seed(0)
    layer = nn.AdditiveAttention(DQ, DK, 64)
    assert sorted(name for name, _ in layer.named_parameters()) == [
        "key_proj.weight",
        "query_proj.weight",
        "v",
    ]
    assert layer.query_proj.weight.value.shape == (64, DQ) and layer.query_proj.bias is None
    assert layer.key_proj.weight.value.shape == (64, DK) and layer.key_proj.bias is None
    v = layer.v.value.numpy()
    assert v.shape == (64,) and np.all(np.abs(v) <= 1.0 / math.sqrt(64)) and v.std() > 0.03
    arrays = _args(seed=19)
    layer32 = nn.AdditiveAttention(DQ, DK, H, dtype=minitorch.float32)
    layer32.load_state_dict({"query_proj.weight": arrays[3], "key_proj.weight": arrays[4], "v": arrays[5]})
    assert all(p.value.dtype == np.float32 for p in layer32.parameters())
    pad = _padding([5, 3, 1])
    c, a = layer32(*(minitorch.tensor(x, dtype=minitorch.float32) for x in arrays[:3]), minitorch.tensor(pad))
    assert c.dtype == np.float32 and a.dtype == np.float32
    exp_c, exp_a = _numpy_additive(*arrays, pad)
    _close(c, exp_c, "context float32", rtol=1e-5, atol=1e-5)
    _close(a, exp_a, "weights float32", rtol=1e-5, atol=1e-6)
    assert "hidden_size=7" in repr(layer32)


def test_errors_name_the_function_and_the_shapes() -> None:
    q, k, val, wq, wk, v = (minitorch.tensor(a) for a in _args())
    f = F.additive_attention
    with pytest.raises(
        ValueError, match=r"additive_attention: keys must have shape \[B, S, Dk\] with B = 3.*\(2, 5, 6\)"
    ):
        f(q, minitorch.tensor(_rand(2, S, DK)), val, wq, wk, v)
    with pytest.raises(
        ValueError,
        match=r"additive_attention: values must have shape \[B, S, Dv\] = \[3, 5, Dv\].*\(3, 4, 2\)",
    ):
        f(q, k, minitorch.tensor(_rand(B, 4, DV)), wq, wk, v)
    with pytest.raises(
        ValueError, match=r"additive_attention: w_query must have shape \[H, Dq\] = \(7, 4\).*got \(7, 5\)"
    ):
        f(q, k, val, minitorch.tensor(_rand(H, 5)), wk, v)
    with pytest.raises(
        ValueError, match=r"additive_attention: w_key must have shape \[H, Dk\] = \(7, 6\).*got \(6, 6\)"
    ):
        f(q, k, val, wq, minitorch.tensor(_rand(6, DK)), v)
    with pytest.raises(ValueError, match=r"additive_attention: query must have shape \[B, Dq\]"):
        f(minitorch.tensor(_rand(B, 1, DQ)), k, val, wq, wk, v)
    with pytest.raises(
        ValueError, match=r"additive_attention: projected_keys must have shape \[B, S, H\] = \(3, 5, 7\)"
    ):
        f(q, k, val, wq, wk, v, projected_keys=minitorch.tensor(_rand(B, S, 3)))
    with pytest.raises(
        ValueError, match=r"additive_attention: key_padding_mask must have shape \(3, 5\), got \(3, 4\)"
    ):
        f(q, k, val, wq, wk, v, minitorch.tensor(np.zeros((B, 4), dtype=bool)))
    with pytest.raises(TypeError, match=r"additive_attention: key_padding_mask must be a bool tensor"):
        f(q, k, val, wq, wk, v, minitorch.tensor(np.zeros((B, S))))
    layer = nn.AdditiveAttention(DQ, DK, H)
    with pytest.raises(
        ValueError, match=r"AdditiveAttention\(4, 6, 7\): query must have shape \[B, 4\].*\(3, 5\)"
    ):
        layer(minitorch.tensor(_rand(B, 5)), k)
    with pytest.raises(
        ValueError, match=r"AdditiveAttention\(4, 6, 7\): keys must have shape \[B, S, 6\].*\(3, 5, 2\)"
    ):
        layer(q, val)
    with pytest.raises(ValueError, match=r"AdditiveAttention.project_keys: keys must have shape \[B, S, 6\]"):
        layer.project_keys(val)
    with pytest.raises(ValueError, match=r"AdditiveAttention: hidden_size must be a positive integer"):
        nn.AdditiveAttention(DQ, DK, 0)
