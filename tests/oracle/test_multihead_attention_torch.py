"""Task 6.3: `nn.MultiheadAttention` against `torch.nn.MultiheadAttention` (the project's own
suite; not shipped).

Values, attention weights and every gradient (query, key, value, every parameter) against
PyTorch in float64: self- and cross-attention (S ≠ L), both layouts and unbatched inputs,
kdim/vdim, no bias, key_padding_mask and attn_mask (bool, True = may NOT attend, and float;
2-D and 3-D; together), is_causal, need_weights and per-head weights; state_dicts both
ways; fully masked rows (out_proj.bias, never NaN — torch gives NaN); and the tests that
take their module's weights from a torch module (causality, rows sum to 1, dropout, central
differences, float32). The torch-free tests are in test_multihead_attention.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.multihead_attention import multi_head_attention
from minitorch.testing import grad_check
from test_multihead_attention import ATOL, LAYOUTS, MASKS, RTOL, E, H, _inputs, _rand

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_3


def _close(got: minitorch.Tensor, expected, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert got is not None, f"{what}: missing"
    exp = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=atol, err_msg=what)


def _pair(**kwargs):
    """A torch MultiheadAttention (float64, random non-zero biases) and a minitorch one
    loaded from its state_dict (as NumPy arrays)."""
    torch.manual_seed(0)
    t_mha = torch.nn.MultiheadAttention(E, H, **kwargs).double()
    with torch.no_grad():
        for name, p in t_mha.named_parameters():
            if "bias" in name:  # torch starts them at 0: make them matter
                p.copy_(torch.randn(p.shape, dtype=torch.float64))
    mha = nn.MultiheadAttention(E, H, **kwargs)
    mha.load_state_dict({k: v.detach().numpy() for k, v in t_mha.state_dict().items()})
    return mha, t_mha


def _mask_arrays(kind: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A random mask in nn.MultiheadAttention's convention (bool True = may NOT attend, or a
    float added: −∞ there), that never masks key 0 (so torch gives no NaN)."""
    rng = np.random.default_rng(seed)
    ignore = rng.random(shape) < 0.4
    ignore[..., 0] = False
    if kind == "bool":
        return ignore
    return np.where(ignore, -np.inf, 0.3 * rng.standard_normal(shape))


def _compare(mha, t_mha, q, k, v, same: str = "", rtol: float = RTOL, **kwargs):
    """Run both modules on the same arrays and masks; compare outputs, weights and every gradient.

    `same`: "qkv" passes one tensor as query, key and value (self-attention), "kv" one as key
    and value; masks in kwargs are NumPy arrays."""
    for p in mha.parameters():  # gradients of this call only
        p.value.grad = None
    t_mha.zero_grad()
    mt = [minitorch.tensor(a, requires_grad=True) for a in (q, k, v)]
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    if same == "qkv":
        mt, tt = [mt[0]] * 3, [tt[0]] * 3
    elif same == "kv":
        mt, tt = [mt[0], mt[1], mt[1]], [tt[0], tt[1], tt[1]]
    m_kw = {n: minitorch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
    t_kw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
    out, weights = mha(*mt, **m_kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about mixed mask types
        t_out, t_weights = t_mha(*tt, **t_kw)
    _close(out, t_out, "attn_output", rtol)
    if t_weights is None:
        assert weights is None, "need_weights=False must return None as the weights"
    else:
        _close(weights, t_weights, "attn_weights", rtol)
    g = _rand(*out.shape, seed=99)
    loss, t_loss = (out * minitorch.tensor(g)).sum(), (t_out * torch.tensor(g)).sum()
    if t_weights is not None:  # the weights' gradient too
        g_w = _rand(*weights.shape, seed=98)
        loss, t_loss = (
            loss + (weights * minitorch.tensor(g_w)).sum(),
            t_loss + (t_weights * torch.tensor(g_w)).sum(),
        )
    loss.backward()
    t_loss.backward()
    for name, a, b in zip(("query", "key", "value"), mt, tt):
        _close(a.grad, b.grad, f"gradient of {name}", rtol)
    t_params = dict(t_mha.named_parameters())
    names = [n for n, _ in mha.named_parameters()]
    assert names == list(t_params), f"parameters {names}, torch has {list(t_params)}"
    for name, p in mha.named_parameters():
        _close(p.value.grad, t_params[name].grad, f"gradient of {name}", rtol)
    return out, weights


@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_self_attention_matches_torch(B, batch_first) -> None:
    mha, t_mha = _pair(batch_first=batch_first)
    q, _, _ = _inputs(5, 5, B, batch_first)
    _compare(mha, t_mha, q, q, q, same="qkv")


@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_cross_attention_with_another_length_matches_torch(B, batch_first) -> None:
    mha, t_mha = _pair(batch_first=batch_first)
    q, k, v = _inputs(3, 6, B, batch_first)
    _compare(mha, t_mha, q, k, v)
    _compare(*_pair(batch_first=batch_first), q, k, k, same="kv")


@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_need_weights_and_per_head_weights_match_torch(need_weights, average) -> None:
    mha, t_mha = _pair(batch_first=True)
    q, k, v = _inputs(3, 6, 2, True)
    _, weights = _compare(mha, t_mha, q, k, v, need_weights=need_weights, average_attn_weights=average)
    if need_weights:
        assert weights.shape == ((2, 3, 6) if average else (2, H, 3, 6))
    _, weights = _compare(
        mha, t_mha, q[0], k[0], v[0], need_weights=need_weights, average_attn_weights=average
    )
    if need_weights:
        assert weights.shape == ((3, 6) if average else (H, 3, 6))


def test_kdim_vdim_and_no_bias_match_torch() -> None:
    mha, t_mha = _pair(kdim=5, vdim=3)
    assert [n for n, _ in mha.named_parameters()] == [
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert mha.in_proj_weight is None
    _compare(mha, t_mha, *_inputs(3, 6, 2, False, kdim=5, vdim=3))
    _compare(*_pair(kdim=5, vdim=3, batch_first=True), *_inputs(3, 6, None, True, kdim=5, vdim=3))
    mha, t_mha = _pair(bias=False)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "out_proj.weight"]
    _compare(mha, t_mha, *_inputs(3, 6, 2, False))


@pytest.mark.parametrize("kpm, attn, attn_dims", MASKS)
@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_masks_match_torch(kpm, attn, attn_dims, B, batch_first) -> None:
    L, S = 4, 6
    mha, t_mha = _pair(batch_first=batch_first)
    q, k, v = _inputs(L, S, B, batch_first)
    kwargs = {}
    if kpm is not None:
        kwargs["key_padding_mask"] = _mask_arrays(kpm, (S,) if B is None else (B, S), seed=5)
    if attn is not None:
        shape = (L, S) if attn_dims == 2 else (H * (B or 1), L, S)
        kwargs["attn_mask"] = _mask_arrays(attn, shape, seed=6)
    for need_weights in (True, False):
        _compare(mha, t_mha, q, k, v, need_weights=need_weights, **kwargs)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_padding", [False, True])
def test_is_causal_with_the_causal_mask_matches_torch(need_weights, with_padding) -> None:
    L = 5
    causal = np.triu(np.ones((L, L), dtype=bool), 1)  # True above the diagonal: the future is masked
    mha, t_mha = _pair(batch_first=True)
    q, _, _ = _inputs(L, L, 2, True)
    kwargs = {"attn_mask": causal, "is_causal": True, "need_weights": need_weights}
    if with_padding:
        kwargs["key_padding_mask"] = _mask_arrays("bool", (2, L), seed=7)
    _compare(mha, t_mha, q, q, q, same="qkv", **kwargs)


def test_causal_output_at_t_does_not_depend_on_later_positions() -> None:
    L, t = 6, 2
    mha, _ = _pair(batch_first=True)
    causal = minitorch.tensor(np.triu(np.ones((L, L), dtype=bool), 1))
    x = _rand(2, L, E, seed=3)
    out, _ = mha(*[minitorch.tensor(x)] * 3, attn_mask=causal, is_causal=True)
    x2 = x.copy()
    x2[:, t + 1 :] = _rand(2, L - t - 1, E, seed=4) * 10.0
    out2, _ = mha(*[minitorch.tensor(x2)] * 3, attn_mask=causal, is_causal=True)
    np.testing.assert_allclose(out2.numpy()[:, : t + 1], out.numpy()[:, : t + 1], rtol=1e-13, atol=1e-14)
    assert not np.allclose(out2.numpy()[:, t + 1 :], out.numpy()[:, t + 1 :])


def test_state_dicts_load_both_ways() -> None:
    minitorch.manual_seed(3)
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    t_mha = torch.nn.MultiheadAttention(E, H, batch_first=True).double()
    state = mha.state_dict()
    assert {k: v.shape for k, v in state.items()} == {
        k: tuple(v.shape) for k, v in t_mha.state_dict().items()
    }
    t_mha.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    q, k, v = _inputs(3, 4, 2, True)
    out, weights = mha(minitorch.tensor(q), minitorch.tensor(k), minitorch.tensor(v))
    t_out, t_weights = t_mha(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    _close(out, t_out, "output of torch with minitorch's state_dict")
    _close(weights, t_weights, "weights of torch with minitorch's state_dict")
    back = nn.MultiheadAttention(E, H, batch_first=True)
    back.load_state_dict({k: v.detach().numpy() for k, v in t_mha.state_dict().items()})
    np.testing.assert_array_equal(back(*(minitorch.tensor(a) for a in (q, k, v)))[0].numpy(), out.numpy())


def test_fully_masked_rows_give_out_proj_bias_and_no_nan() -> None:
    L, S = 4, 5
    mha, t_mha = _pair(batch_first=True)
    q, k, v = _inputs(L, S, 2, True)
    kpm = np.zeros((2, S), dtype=bool)
    kpm[1] = True  # batch element 1: every key is padding
    attn = np.zeros((L, S), dtype=bool)
    attn[2] = True  # query 2 may attend to nothing, in every batch element
    mt = [minitorch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out, weights = mha(*mt, key_padding_mask=minitorch.tensor(kpm), attn_mask=minitorch.tensor(attn))
    dead = np.zeros((2, L), dtype=bool)
    dead[1], dead[:, 2] = True, True
    bias = mha.out_proj.bias.value.numpy()
    np.testing.assert_allclose(
        out.numpy()[dead], np.broadcast_to(bias, (dead.sum(), E)), rtol=1e-14, atol=1e-15
    )
    assert (weights.numpy()[dead] == 0.0).all()
    np.testing.assert_allclose(weights.numpy()[~dead].sum(-1), 1.0, rtol=1e-12)
    out.backward(minitorch.tensor(_rand(*out.shape, seed=9)))
    for t in mt:
        assert np.isfinite(t.grad.numpy()).all()
    for name, p in mha.named_parameters():
        assert np.isfinite(p.value.grad.numpy()).all(), f"NaN in the gradient of {name}"
    # torch gives NaN on those rows and the same values elsewhere
    t_out, t_weights = t_mha(
        *(torch.tensor(a) for a in (q, k, v)),
        key_padding_mask=torch.tensor(kpm),
        attn_mask=torch.tensor(attn),
    )
    t_out = t_out.detach().numpy()
    assert np.isnan(t_out[dead]).all()
    np.testing.assert_allclose(out.numpy()[~dead], t_out[~dead], rtol=RTOL, atol=ATOL)


def test_weights_rows_sum_to_one_and_padding_gets_no_weight() -> None:
    mha, _ = _pair(batch_first=True)
    q, k, v = _inputs(4, 6, 3, True)
    kpm = _mask_arrays("bool", (3, 6), seed=2)
    _, weights = mha(
        *(minitorch.tensor(a) for a in (q, k, v)),
        key_padding_mask=minitorch.tensor(kpm),
        average_attn_weights=False,
    )
    w = weights.numpy()  # [B, H, L, S]
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (w.transpose(0, 3, 1, 2)[kpm] == 0.0).all(), "a padding key got weight"


def test_dropout_only_in_training_mode() -> None:
    p = 0.5
    mha, _ = _pair(batch_first=True, dropout=p)
    clean, _ = _pair(batch_first=True)
    args = [minitorch.tensor(a) for a in _inputs(6, 8, 2, True)]
    mha.eval()
    out_eval, w_eval = mha(*args, average_attn_weights=False)
    out_clean, _ = clean(*args)
    np.testing.assert_array_equal(out_eval.numpy(), mha(*args)[0].numpy(), "eval mode must be deterministic")
    np.testing.assert_allclose(out_eval.numpy(), out_clean.numpy(), rtol=1e-13, atol=1e-14)
    mha.train()
    minitorch.manual_seed(0)
    out_train, w_train = mha(*args, average_attn_weights=False)
    w_eval, w_train = w_eval.numpy(), w_train.numpy()
    zeroed = w_train == 0.0
    assert 0.2 < zeroed.mean() < 0.8, f"dropout p={p} zeroed a fraction {zeroed.mean():.2f} of the weights"
    np.testing.assert_allclose(w_train[~zeroed], w_eval[~zeroed] / (1 - p), rtol=1e-12)
    assert not np.allclose(out_train.numpy(), out_eval.numpy())
    minitorch.manual_seed(0)
    np.testing.assert_array_equal(mha(*args, average_attn_weights=False)[0].numpy(), out_train.numpy())


def test_central_differences() -> None:
    mha, _ = _pair()
    kpm = minitorch.tensor(_mask_arrays("bool", (2, 4), seed=3))
    attn = minitorch.tensor(_mask_arrays("float", (3, 4), seed=4))
    q, k, v = (minitorch.tensor(a) for a in _inputs(3, 4, 2, False))
    w_grad = minitorch.tensor(_rand(2, 3, 4, seed=6))

    def module(q, k, v):
        out, weights = mha(q, k, v, key_padding_mask=kpm, attn_mask=attn)
        return out.sum() + (weights * w_grad).sum()  # both outputs (the weights' rows sum to 1: weight them)

    grad_check(module, q, k, v)
    rng = np.random.default_rng(5)
    params = [
        minitorch.tensor(rng.standard_normal(s))
        for s in [(4, 4), (4, 3), (4, 5), (4,), (4,), (4,), (4, 4), (4,)]
    ]
    qs, ks, vs = (
        minitorch.tensor(_rand(*s, seed=n)) for n, s in enumerate([(2, 3, 4), (2, 5, 3), (2, 5, 5)])
    )
    causal = minitorch.tensor(np.tril(np.ones((3, 5), dtype=bool)))

    def functional(q, k, v, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o):
        return multi_head_attention(q, k, v, 2, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o, attn_mask=causal)[0]

    grad_check(functional, qs, ks, vs, *params)


@pytest.mark.parametrize(
    "backend",
    [pytest.param(minitorch.SimpleBackend, id="simple"), pytest.param(minitorch.FastBackend, id="fast")],
)
def test_float32_and_backends(backend) -> None:
    mha, _ = _pair(batch_first=True)
    mha32 = nn.MultiheadAttention(E, H, batch_first=True, dtype=minitorch.float32, backend=backend)
    mha32.load_state_dict(mha.state_dict())
    assert all(p.value.dtype == np.float32 and p.value.backend is backend for p in mha32.parameters())
    arrays = _inputs(3, 5, 2, True)
    kpm = minitorch.tensor(_mask_arrays("bool", (2, 5), seed=3))
    expected, w64 = mha(*(minitorch.tensor(a) for a in arrays), key_padding_mask=kpm)
    args = [minitorch.tensor(a, dtype=minitorch.float32, backend=backend, requires_grad=True) for a in arrays]
    out, weights = mha32(*args, key_padding_mask=kpm)
    assert out.dtype == np.float32 and weights.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weights.numpy(), w64.numpy(), rtol=1e-4, atol=1e-6)
    out.sum().backward()
    assert all(a.grad.dtype == np.float32 for a in args)
    assert all(p.value.grad.dtype == np.float32 for p in mha32.parameters())
