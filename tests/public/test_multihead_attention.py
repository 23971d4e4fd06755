"""Task 6.3: `nn.MultiheadAttention`, as `torch.nn.MultiheadAttention`.

Values and attention weights against the formulas written out in NumPy (float64, PyTorch's
parameter layout: in_proj_weight = [W_q; W_k; W_v]) and every gradient (query, key, value,
every parameter) against central differences of them: self- and cross-attention (S ≠ L),
both layouts and unbatched inputs, kdim/vdim, no bias, key_padding_mask and attn_mask
(bool, True = may NOT attend, and float; 2-D and 3-D; together), is_causal, need_weights
and per-head weights; state_dicts; the initialisation; fully masked rows (out_proj.bias,
never NaN); properties (rows sum to 1, causality); dropout in training mode only; central
differences of the layer itself; float32; errors. (The project's own suite also compares
with PyTorch: test_multihead_attention_torch.py, not shipped.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.multihead_attention import multi_head_attention
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_3

RTOL, ATOL = 1e-10, 1e-12
GRAD_RTOL, GRAD_ATOL = 1e-6, 1e-8  # against central differences
E, H = 8, 2


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _close(got: minitorch.Tensor, expected, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert got is not None, f"{what}: missing"
    exp = np.asarray(expected)
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=atol, err_msg=what)


def _module(seed: int = 0, **kwargs) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention(E, H, **kwargs) whose parameters (biases included: zeros
    would hide a missing one) are random normal values drawn from `seed`."""
    mha = nn.MultiheadAttention(E, H, **kwargs)
    rng = np.random.default_rng(seed)
    mha.load_state_dict(
        {name: 0.5 * rng.standard_normal(value.shape) for name, value in mha.state_dict().items()}
    )
    return mha


def _inputs(L: int, S: int, B, batch_first: bool, kdim: int = E, vdim: int = E, seed: int = 1):
    """query, key, value arrays in the layout asked (B None: unbatched)."""

    def shape(n, d):
        if B is None:
            return (n, d)
        return (B, n, d) if batch_first else (n, B, d)

    return (
        _rand(*shape(L, E), seed=seed),
        _rand(*shape(S, kdim), seed=seed + 1),
        _rand(*shape(S, vdim), seed=seed + 2),
    )


def _mask_arrays(kind: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A random mask in nn.MultiheadAttention's convention (bool True = may NOT attend, or a
    float added: −∞ there), that never masks key 0."""
    rng = np.random.default_rng(seed)
    ignore = rng.random(shape) < 0.4
    ignore[..., 0] = False
    if kind == "bool":
        return ignore
    return np.where(ignore, -np.inf, 0.3 * rng.standard_normal(shape))


def _numpy_mha(
    params: dict,
    query,
    key,
    value,
    key_padding_mask=None,
    attn_mask=None,
    batch_first=False,
    need_weights=True,
    average_attn_weights=True,
):
    """nn.MultiheadAttention's forward pass written out in NumPy; returns (output, weights or None).

    `params` holds the layer's state_dict. With d = E/H and h = 1 … H:

        q = query W_qᵀ + b_q,  k = key W_kᵀ + b_k,  v = value W_vᵀ + b_v   (W_q, W_k, W_v: the
            three [E, ·] blocks of in_proj_weight, or q/k/v_proj_weight)
        head_h = softmax(q_h k_hᵀ / √d + float masks, over the allowed keys) v_h   (q_h: columns h·d … h·d + d − 1)
        output = [head_1 … head_H] W_oᵀ + b_o

    A bool mask is True where a query may NOT attend (key_padding_mask [B, S] for every query
    and head; attn_mask [L, S], or [B·H, L, S] with index b·H + h); a row with no allowed
    key gets weight 0 everywhere.
    """
    batched = query.ndim == 3
    if not batched:  # a batch of one
        query, key, value = query[None], key[None], value[None]
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask[None]
    elif not batch_first:  # [L, B, E] → [B, L, E]
        query, key, value = query.swapaxes(0, 1), key.swapaxes(0, 1), value.swapaxes(0, 1)
    B, L, _ = query.shape
    S, d = key.shape[1], E // H
    if "in_proj_weight" in params:
        w_in = params["in_proj_weight"]  # [3E, E] = [W_q; W_k; W_v]
        w_q, w_k, w_v = w_in[:E], w_in[E : 2 * E], w_in[2 * E :]
    else:
        w_q, w_k, w_v = params["q_proj_weight"], params["k_proj_weight"], params["v_proj_weight"]
    b_q = b_k = b_v = b_o = np.zeros(E)
    if "in_proj_bias" in params:
        b_in = params["in_proj_bias"]  # [3E] = [b_q; b_k; b_v]
        b_q, b_k, b_v = b_in[:E], b_in[E : 2 * E], b_in[2 * E :]
        b_o = params["out_proj.bias"]

    def heads(x, n):  # [B, n, E] → [B, H, n, d]
        return x.reshape(B, n, H, d).transpose(0, 2, 1, 3)

    q, k, v = heads(query @ w_q.T + b_q, L), heads(key @ w_k.T + b_k, S), heads(value @ w_v.T + b_v, S)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d)  # [B, H, L, S]
    allowed = np.ones(scores.shape, dtype=bool)
    masks = []
    if key_padding_mask is not None:
        masks.append(key_padding_mask.reshape(B, 1, 1, S))
    if attn_mask is not None:
        masks.append(attn_mask.reshape(1, 1, L, S) if attn_mask.ndim == 2 else attn_mask.reshape(B, H, L, S))
    for mask in masks:
        if mask.dtype == bool:
            allowed = allowed & ~mask
        else:
            scores = scores + mask
    allowed = allowed & (scores > -np.inf)
    live = allowed.any(-1, keepdims=True)
    row_max = np.where(live, np.where(allowed, scores, -np.inf).max(-1, keepdims=True), 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, scores, row_max) - row_max), 0.0)
    total = e.sum(-1, keepdims=True)
    weights = e / np.where(total == 0.0, 1.0, total)  # [B, H, L, S]
    merged = (weights @ v).transpose(0, 2, 1, 3).reshape(B, L, E)  # the heads side by side
    out = merged @ params["out_proj.weight"].T + b_o
    if not batched:
        out = out[0]
    elif not batch_first:
        out = out.swapaxes(0, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(1)
    return out, weights if batched else weights[0]


def _compare(mha, q, k, v, same: str = "", **kwargs):
    """Run the module and the NumPy formulas on the same arrays and masks; compare outputs
    and weights, and every gradient (inputs and parameters) with central differences of
    the NumPy formulas.

    `same`: "qkv" passes one tensor as query, key and value (self-attention), "kv" one as key
    and value; masks in kwargs are NumPy arrays."""
    for p in mha.parameters():  # gradients of this call only
        p.value.grad = None
    inputs = {"qkv": [q], "kv": [q, k]}.get(same, [q, k, v])
    mt = [minitorch.tensor(a, requires_grad=True) for a in inputs]
    m_kw = {n: minitorch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
    np_kw = {n: a for n, a in kwargs.items() if n != "is_causal"}  # a hint: the mask given is the causal one
    out, weights = mha(*(mt * 3 if same == "qkv" else mt + mt[1:] if same == "kv" else mt), **m_kw)
    names = [n for n, _ in mha.named_parameters()]
    params = {n: p.value.numpy() for n, p in mha.named_parameters()}
    exp_out, exp_weights = _numpy_mha(params, q, k, v, batch_first=mha.batch_first, **np_kw)
    _close(out, exp_out, "attn_output")
    if exp_weights is None:
        assert weights is None, "need_weights=False must return None as the weights"
    else:
        _close(weights, exp_weights, "attn_weights")
    g = _rand(*out.shape, seed=99)
    loss, upstream = (out * minitorch.tensor(g)).sum(), [g.ravel()]
    if exp_weights is not None:  # the weights' gradient too
        g_w = _rand(*weights.shape, seed=98)
        loss, upstream = loss + (weights * minitorch.tensor(g_w)).sum(), upstream + [g_w.ravel()]
    loss.backward()

    def both(*arrays):  # the NumPy output and weights, flattened side by side
        x = {"qkv": arrays[:1] * 3, "kv": arrays[:2] + arrays[1:2]}.get(same, arrays[:3])
        o, w = _numpy_mha(dict(zip(names, arrays[len(inputs) :])), *x, batch_first=mha.batch_first, **np_kw)
        return np.concatenate([o.ravel()] + ([w.ravel()] if w is not None else []))

    expected = numpy_gradients(both, inputs + [params[n] for n in names], np.concatenate(upstream))
    input_names = {"qkv": ["query (= key = value)"], "kv": ["query", "key (= value)"]}.get(
        same, ["query", "key", "value"]
    )
    for name, t, exp in zip(input_names, mt, expected):
        _close(t.grad, exp, f"gradient of {name}", GRAD_RTOL, GRAD_ATOL)
    for (name, p), exp in zip(mha.named_parameters(), expected[len(inputs) :]):
        _close(p.value.grad, exp, f"gradient of {name}", GRAD_RTOL, GRAD_ATOL)
    return out, weights


LAYOUTS = [
    pytest.param(2, False, id="seq-first"),
    pytest.param(2, True, id="batch-first"),
    pytest.param(None, False, id="unbatched"),
]


@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_self_attention_matches_numpy(B, batch_first) -> None:
    mha = _module(batch_first=batch_first)
    q, _, _ = _inputs(5, 5, B, batch_first)
    _compare(mha, q, q, q, same="qkv")


@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_cross_attention_with_another_length_matches_numpy(B, batch_first) -> None:
    mha = _module(batch_first=batch_first)
    q, k, v = _inputs(3, 6, B, batch_first)
    _compare(mha, q, k, v)
    _compare(_module(seed=1, batch_first=batch_first), q, k, k, same="kv")


def test_the_heads_are_the_column_blocks_of_the_projections() -> None:
    """Two heads by hand: head h attends with columns h·d … h·d + d − 1 of the projected q, k, v."""
    mha = _module(seed=2, batch_first=True)
    q, k, v = _inputs(3, 4, 1, True, seed=4)
    w, b = mha.in_proj_weight.value.numpy(), mha.in_proj_bias.value.numpy()
    pq, pk, pv = (x[0] @ w[i * E : (i + 1) * E].T + b[i * E : (i + 1) * E] for i, x in enumerate((q, k, v)))
    d = E // H
    heads = []
    for h in range(H):
        cols = slice(h * d, (h + 1) * d)
        scores = pq[:, cols] @ pk[:, cols].T / np.sqrt(d)
        a = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append((a / a.sum(-1, keepdims=True)) @ pv[:, cols])
    expected = (
        np.concatenate(heads, axis=-1) @ mha.out_proj.weight.value.numpy().T + mha.out_proj.bias.value.numpy()
    )
    out, _ = mha(*(minitorch.tensor(x) for x in (q, k, v)))
    _close(out, expected[None], "attn_output")


@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_need_weights_and_per_head_weights_match_numpy(need_weights, average) -> None:
    mha = _module(batch_first=True)
    q, k, v = _inputs(3, 6, 2, True)
    _, weights = _compare(mha, q, k, v, need_weights=need_weights, average_attn_weights=average)
    if need_weights:
        assert weights.shape == ((2, 3, 6) if average else (2, H, 3, 6))
    _, weights = _compare(mha, q[0], k[0], v[0], need_weights=need_weights, average_attn_weights=average)
    if need_weights:
        assert weights.shape == ((3, 6) if average else (H, 3, 6))


def test_kdim_vdim_and_no_bias_match_numpy() -> None:
    mha = _module(kdim=5, vdim=3)
    assert [n for n, _ in mha.named_parameters()] == [
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert mha.in_proj_weight is None
    _compare(mha, *_inputs(3, 6, 2, False, kdim=5, vdim=3))
    _compare(_module(kdim=5, vdim=3, batch_first=True), *_inputs(3, 6, None, True, kdim=5, vdim=3))
    mha = _module(bias=False)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "out_proj.weight"]
    _compare(mha, *_inputs(3, 6, 2, False))


MASKS = [  # (key_padding_mask kind or None, attn_mask kind or None, attn_mask dims)
    pytest.param("bool", None, 2, id="kpm-bool"),
    pytest.param("float", None, 2, id="kpm-float"),
    pytest.param(None, "bool", 2, id="attn-bool-2d"),
    pytest.param(None, "float", 2, id="attn-float-2d"),
    pytest.param(None, "bool", 3, id="attn-bool-3d"),
    pytest.param(None, "float", 3, id="attn-float-3d"),
    pytest.param("bool", "bool", 2, id="kpm-bool+attn-bool"),
    pytest.param("float", "float", 3, id="kpm-float+attn-float-3d"),
    pytest.param("bool", "float", 2, id="kpm-bool+attn-float"),
    pytest.param("float", "bool", 3, id="kpm-float+attn-bool-3d"),
]


@pytest.mark.parametrize("kpm, attn, attn_dims", MASKS)
@pytest.mark.parametrize("B, batch_first", LAYOUTS)
def test_masks_match_numpy(kpm, attn, attn_dims, B, batch_first) -> None:
    L, S = 4, 6
    mha = _module(batch_first=batch_first)
    q, k, v = _inputs(L, S, B, batch_first)
    kwargs = {}
    if kpm is not None:
        kwargs["key_padding_mask"] = _mask_arrays(kpm, (S,) if B is None else (B, S), seed=5)
    if attn is not None:
        shape = (L, S) if attn_dims == 2 else (H * (B or 1), L, S)
        kwargs["attn_mask"] = _mask_arrays(attn, shape, seed=6)
    for need_weights in (True, False):
        _compare(mha, q, k, v, need_weights=need_weights, **kwargs)


def test_the_mask_polarity_is_true_may_not_attend() -> None:
    """A bool attn_mask True at (i, j) takes key j away from query i: with every key but
    key 1 masked for query 0, query 0's weights are one-hot on key 1 in every head."""
    mha = _module(batch_first=True)
    q, k, v = _inputs(2, 3, 1, True)
    banned = np.array([[True, False, True], [False, False, False]])
    _, weights = mha(
        *(minitorch.tensor(x) for x in (q, k, v)),
        attn_mask=minitorch.tensor(banned),
        average_attn_weights=False,
    )
    np.testing.assert_array_equal(weights.numpy()[0, :, 0], [[0.0, 1.0, 0.0]] * H)
    assert (weights.numpy()[0, :, 1] > 0.0).all()


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_padding", [False, True])
def test_is_causal_with_the_causal_mask_matches_numpy(need_weights, with_padding) -> None:
    L = 5
    causal = np.triu(np.ones((L, L), dtype=bool), 1)  # True above the diagonal: the future is masked
    mha = _module(batch_first=True)
    q, _, _ = _inputs(L, L, 2, True)
    kwargs = {"attn_mask": causal, "is_causal": True, "need_weights": need_weights}
    if with_padding:
        kwargs["key_padding_mask"] = _mask_arrays("bool", (2, L), seed=7)
    _compare(mha, q, q, q, same="qkv", **kwargs)


def test_causal_output_at_t_does_not_depend_on_later_positions() -> None:
    L, t = 6, 2
    mha = _module(batch_first=True)
    causal = minitorch.tensor(np.triu(np.ones((L, L), dtype=bool), 1))
    x = _rand(2, L, E, seed=3)
    out, _ = mha(*[minitorch.tensor(x)] * 3, attn_mask=causal, is_causal=True)
    x2 = x.copy()
    x2[:, t + 1 :] = _rand(2, L - t - 1, E, seed=4) * 10.0
    out2, _ = mha(*[minitorch.tensor(x2)] * 3, attn_mask=causal, is_causal=True)
    np.testing.assert_allclose(out2.numpy()[:, : t + 1], out.numpy()[:, : t + 1], rtol=1e-13, atol=1e-14)
    assert not np.allclose(out2.numpy()[:, t + 1 :], out.numpy()[:, t + 1 :])


def test_state_dict_has_torch_names_and_shapes_and_loads_back() -> None:
    minitorch.manual_seed(3)
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    state = mha.state_dict()
    assert {k: v.shape for k, v in state.items()} == {  # torch.nn.MultiheadAttention(8, 2)'s
        "in_proj_weight": (3 * E, E),
        "in_proj_bias": (3 * E,),
        "out_proj.weight": (E, E),
        "out_proj.bias": (E,),
    }
    q, k, v = _inputs(3, 4, 2, True)
    out, weights = mha(minitorch.tensor(q), minitorch.tensor(k), minitorch.tensor(v))
    exp_out, exp_weights = _numpy_mha(state, q, k, v, batch_first=True)
    _close(out, exp_out, "output")
    _close(weights, exp_weights, "weights")
    back = nn.MultiheadAttention(E, H, batch_first=True)
    back.load_state_dict(state)
    np.testing.assert_array_equal(back(*(minitorch.tensor(a) for a in (q, k, v)))[0].numpy(), out.numpy())


def test_initialisation_as_torch() -> None:
    minitorch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4)
    w = mha.in_proj_weight.value.numpy()
    bound = np.sqrt(6.0 / (16 + 48))  # xavier-uniform of a [3E, E] weight
    assert w.shape == (48, 16) and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    out_w = mha.out_proj.weight.value.numpy()
    assert np.abs(out_w).max() <= 1 / 4 and np.abs(out_w).max() > 0.9 / 4  # Linear's U(−1/√E, 1/√E)
    assert (mha.in_proj_bias.value.numpy() == 0).all() and (mha.out_proj.bias.value.numpy() == 0).all()
    sep = nn.MultiheadAttention(16, 4, kdim=4, vdim=32)
    for name, fan_in in (("q_proj_weight", 16), ("k_proj_weight", 4), ("v_proj_weight", 32)):
        w = getattr(sep, name).value.numpy()
        b = np.sqrt(6.0 / (16 + fan_in))
        assert w.shape == (16, fan_in) and np.abs(w).max() <= b and np.abs(w).max() > 0.8 * b, name
    assert all(p.value.requires_grad for p in sep.parameters())


def test_fully_masked_rows_give_out_proj_bias_and_no_nan() -> None:
    L, S = 4, 5
    mha = _module(batch_first=True)
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
    # the other rows as the formulas give them (and the dead ones too: b_o)
    params = {n: p.value.numpy() for n, p in mha.named_parameters()}
    exp_out, _ = _numpy_mha(params, q, k, v, key_padding_mask=kpm, attn_mask=attn, batch_first=True)
    _close(out, exp_out, "attn_output")


def test_weights_rows_sum_to_one_and_padding_gets_no_weight() -> None:
    mha = _module(batch_first=True)
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
    mha = _module(batch_first=True, dropout=p)
    clean = _module(batch_first=True)  # the same weights, no dropout
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
    mha = _module()
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
    mha = _module(batch_first=True)
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


def test_errors_name_the_module_and_the_shapes() -> None:
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(NotImplementedError, match="add_bias_kv"):
        nn.MultiheadAttention(E, H, add_bias_kv=True)
    with pytest.raises(NotImplementedError, match="add_zero_attn"):
        nn.MultiheadAttention(E, H, add_zero_attn=True)
    mha = nn.MultiheadAttention(E, H)
    q, k, v = (minitorch.tensor(a) for a in _inputs(3, 5, 2, False))
    name = r"MultiheadAttention\(embed_dim=8, num_heads=2\): "
    with pytest.raises(
        AssertionError, match=name + r"was expecting embedding dimension of 8, but got 6 .*\(3, 2, 6\)"
    ):
        mha(minitorch.tensor(_rand(3, 2, 6)), k, v)
    with pytest.raises(RuntimeError, match=name + r"key and value must have 8 and 8 features.*\(5, 2, 7\)"):
        mha(q, minitorch.tensor(_rand(5, 2, 7)), v)
    with pytest.raises(
        AssertionError, match=name + r"key's sequence and batch dims .*\(5, 2, 8\).*\(4, 2, 8\)"
    ):
        mha(q, k, minitorch.tensor(_rand(4, 2, E)))
    with pytest.raises(
        RuntimeError, match=name + r"query and key must have the same batch size.*\(3, 2, 8\).*\(5, 3, 8\)"
    ):
        mha(q, minitorch.tensor(_rand(5, 3, E)), minitorch.tensor(_rand(5, 3, E)))
    with pytest.raises(
        AssertionError, match=name + r"query should be unbatched 2D or batched 3D .*\(1, 3, 2, 8\)"
    ):
        mha(minitorch.tensor(_rand(1, 3, 2, E)), k, v)
    with pytest.raises(
        AssertionError,
        match=name + r"For batched \(3-D\) `query`, expected `key` and `value` to be 3-D.*\(5, 8\)",
    ):
        mha(q, minitorch.tensor(_rand(5, E)), v)
    with pytest.raises(
        AssertionError, match=name + r"expected key_padding_mask of shape \(2, 5\).*got \(2, 4\)"
    ):
        mha(q, k, v, key_padding_mask=minitorch.tensor(np.zeros((2, 4), dtype=bool)))
    with pytest.raises(
        RuntimeError, match=name + r"The shape of the 2D attn_mask is \(3, 4\), but should be \(3, 5\)"
    ):
        mha(q, k, v, attn_mask=minitorch.tensor(np.zeros((3, 4), dtype=bool)))
    with pytest.raises(
        RuntimeError, match=name + r"The shape of the 3D attn_mask is \(2, 3, 5\), but should be \(4, 3, 5\)"
    ):
        mha(q, k, v, attn_mask=minitorch.tensor(np.zeros((2, 3, 5), dtype=bool)))
    with pytest.raises(
        AssertionError, match=name + r"Expected `attn_mask` shape to be \(2, 3, 5\).*got \(4, 3, 5\)"
    ):
        mha(q[:, 0], k[:, 0], v[:, 0], attn_mask=minitorch.tensor(np.zeros((4, 3, 5), dtype=bool)))
    with pytest.raises(AssertionError, match=name + r"expected `attn_mask` to be `None`, 2-D or 3-D .*4-D"):
        mha(q, k, v, attn_mask=minitorch.tensor(np.zeros((1, 4, 3, 5), dtype=bool)))
    with pytest.raises(AssertionError, match=name + r"only bool and floating types of attn_mask"):
        mha(q, k, v, attn_mask=minitorch.tensor(np.zeros((3, 5), dtype=np.int64)))
    with pytest.raises(RuntimeError, match=name + r"Need attn_mask if specifying the is_causal hint"):
        mha(q, k, v, is_causal=True)
    with pytest.raises(TypeError, match=name + r"query must be a float"):
        mha(minitorch.tensor(np.zeros((3, 2, E), dtype=np.int64)), k, v)
