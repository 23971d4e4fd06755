"""Task 6.2: `F.scaled_dot_product_attention` (and `scaled_dot_product_attention_with_weights`).

Values against the formulas written out in NumPy (float64) and every gradient (query, key,
value, a float mask) against central differences of them, for self- and cross-attention
(S ≠ L, Ev ≠ E), broadcast leading dimensions, bool and float masks (True = MAY attend),
is_causal with L < S and L > S, a given scale; hand-computed values; fully masked rows
(zeros, no NaN); properties (rows sum to 1, masked keys get weight 0, causality); dropout;
central differences of the function itself; float32; both CPU backends; errors. (The
project's own suite also compares with PyTorch: test_scaled_dot_product_attention_torch.py,
not shipped.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn import functional as F
from minitorch.nn.attention import scaled_dot_product_attention_with_weights
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_2

RTOL, ATOL = 1e-10, 1e-12
CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _numpy_sdpa(q, k, v, mask=None, is_causal=False, scale=None) -> tuple[np.ndarray, np.ndarray]:
    """The lecture's formulas in NumPy: scores = Q Kᵀ · scale (scale = 1/√E unless given),
    plus a float mask; key j is allowed for query i where a bool mask is True (True = MAY
    attend), where is_causal keeps j ≤ i, and where the score is not −∞; weights = the
    softmax over the allowed keys (0 elsewhere, and 0 for a row with nothing allowed);
    output = weights V. Leading dimensions broadcast. Returns (output, weights)."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale  # [.., L, S]
    allowed = np.ones(scores.shape, dtype=bool)
    if is_causal:
        allowed = allowed & np.tril(np.ones(scores.shape[-2:], dtype=bool))
    if mask is not None and mask.dtype == bool:
        allowed = allowed & mask
    elif mask is not None:
        scores = scores + mask
    scores, allowed = np.broadcast_arrays(scores, allowed & (scores > -np.inf))
    live = allowed.any(-1, keepdims=True)  # rows with a key to attend to
    row_max = np.where(live, np.where(allowed, scores, -np.inf).max(-1, keepdims=True), 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, scores, row_max) - row_max), 0.0)
    total = e.sum(-1, keepdims=True)
    weights = e / np.where(total == 0.0, 1.0, total)
    return weights @ v, weights


def _close(got: minitorch.Tensor, expected, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert got is not None, f"{what}: no gradient"
    exp = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=atol, err_msg=what)


def _bool_mask(shape: tuple[int, ...], seed: int, empty_row: bool = True) -> np.ndarray:
    """A random bool mask (True = may attend), with query 0 masked entirely when `empty_row`."""
    mask = np.random.default_rng(seed).random(shape) > 0.4
    mask[..., 1, 0] = True  # query 1 keeps a key whatever the draw
    if empty_row:
        mask[..., 0, :] = False
    return mask


def _float_mask(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A float mask: −∞ where a bool mask says no (query 0: every key), small biases elsewhere."""
    allowed = _bool_mask(shape, seed)
    return np.where(allowed, 0.5 * _rand(*shape, seed=seed + 1), -np.inf)


# (query shape, key shape, value shape, attn_mask: None | "bool" | "float" with its shape, kwargs)
CASES = [
    pytest.param((2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5), None, {}, id="self-attention-B2-H3"),
    pytest.param((2, 4, 6), (2, 7, 6), (2, 7, 3), None, {}, id="cross-L4-S7-Ev3"),
    pytest.param((4, 6), (7, 6), (7, 3), None, {}, id="no-batch"),
    pytest.param((2, 1, 4, 5), (1, 3, 6, 5), (6, 2), None, {}, id="broadcast-batch"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("bool", (2, 4, 6)), {}, id="bool-mask"),
    pytest.param((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), ("bool", (4, 6)), {}, id="bool-mask-broadcast"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("float", (2, 4, 6)), {}, id="float-mask"),
    pytest.param(
        (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), ("float", (2, 1, 4, 6)), {}, id="float-mask-broadcast"
    ),
    pytest.param((2, 5, 4), (2, 5, 4), (2, 5, 3), None, {"is_causal": True}, id="causal-L=S"),
    pytest.param((2, 3, 4), (2, 6, 4), (2, 6, 3), None, {"is_causal": True}, id="causal-L<S"),
    pytest.param((2, 6, 4), (2, 3, 4), (2, 3, 3), None, {"is_causal": True}, id="causal-L>S"),
    pytest.param((2, 4, 5), (2, 6, 5), (2, 6, 3), ("bool", (4, 6)), {"scale": 0.7}, id="scale"),
]


@pytest.mark.parametrize("q_shape, k_shape, v_shape, mask, kwargs", CASES)
def test_values_and_gradients_match_numpy(q_shape, k_shape, v_shape, mask, kwargs) -> None:
    """The output against the NumPy formulas; the gradients of q, k, v (and of a float mask)
    against central differences of them."""
    q, k, v = _rand(*q_shape, seed=1), _rand(*k_shape, seed=2), _rand(*v_shape, seed=3)
    mt = [minitorch.tensor(a, requires_grad=True) for a in (q, k, v)]
    arrays, m, mt_mask = [q, k, v], None, None
    if mask is not None:
        kind, shape = mask
        m = _bool_mask(shape, seed=4) if kind == "bool" else _float_mask(shape, seed=4)
        mt_mask = minitorch.tensor(m, requires_grad=kind == "float")
    out = F.scaled_dot_product_attention(*mt, attn_mask=mt_mask, **kwargs)
    _close(out, _numpy_sdpa(q, k, v, m, **kwargs)[0], "output")
    g = _rand(*out.shape, seed=5)
    out.backward(minitorch.tensor(g))
    if mask is not None and mask[0] == "float":

        def output(q, k, v, m):
            return _numpy_sdpa(q, k, v, m, **kwargs)[0]

        arrays.append(m)
        got = [*mt, mt_mask]
    else:

        def output(q, k, v):
            return _numpy_sdpa(q, k, v, m, **kwargs)[0]

        got = mt
    for name, t, expected in zip(
        ["q", "k", "v", "the float attn_mask"], got, numpy_gradients(output, arrays, g)
    ):
        _close(t.grad, expected, f"gradient of {name}", rtol=1e-6, atol=1e-8)


def test_hand_computed_attention() -> None:
    """One query, two keys with scores 0 and ln 3 after scaling: weights 1/4 and 3/4."""
    q = minitorch.tensor(np.array([[2.0, 0.0]]))  # E = 2: scale 1/√2
    k = minitorch.tensor(np.array([[0.0, 1.0], [np.log(3.0) / np.sqrt(2.0), 0.0]]))
    v = minitorch.tensor(np.array([[4.0, 0.0], [0.0, 8.0]]))
    out, weights = scaled_dot_product_attention_with_weights(q, k, v)
    np.testing.assert_allclose(weights.numpy(), [[0.25, 0.75]], rtol=1e-14)
    np.testing.assert_allclose(out.numpy(), [[1.0, 6.0]], rtol=1e-14)
    only_first = minitorch.tensor(np.array([[True, False]]))  # True = may attend
    out = F.scaled_dot_product_attention(q, k, v, only_first)
    np.testing.assert_allclose(out.numpy(), [[4.0, 0.0]], rtol=1e-14)


def test_weights_are_the_softmax_of_the_scaled_scores_and_rows_sum_to_one() -> None:
    q, k, v = _rand(2, 4, 5, seed=1), _rand(2, 6, 5, seed=2), _rand(2, 6, 3, seed=3)
    mask = _bool_mask((2, 4, 6), seed=4)
    mq, mk = minitorch.tensor(q, requires_grad=True), minitorch.tensor(k, requires_grad=True)
    out, weights = scaled_dot_product_attention_with_weights(
        mq, mk, minitorch.tensor(v), minitorch.tensor(mask)
    )
    _close(weights, _numpy_sdpa(q, k, v, mask)[1], "weights")
    g = _rand(2, 4, 6, seed=7)  # the weights' own gradient (a plot, an auxiliary loss)
    (weights * minitorch.tensor(g)).sum().backward()

    def weights_of(q, k):
        return _numpy_sdpa(q, k, v, mask)[1]

    exp_q_grad, exp_k_grad = numpy_gradients(weights_of, [q, k], g)
    _close(mq.grad, exp_q_grad, "gradient of q through the weights", rtol=1e-6, atol=1e-8)
    _close(mk.grad, exp_k_grad, "gradient of k through the weights", rtol=1e-6, atol=1e-8)
    w = weights.numpy()
    live = mask.any(-1)
    np.testing.assert_allclose(w[live].sum(-1), 1.0, rtol=1e-12)
    assert (w[~mask] == 0.0).all(), "a masked key got weight"
    _close(out, w @ v, "output = weights @ value")


def test_a_fully_masked_row_gives_zeros_and_no_nan_in_any_gradient() -> None:
    q, k, v = (
        minitorch.tensor(_rand(*shape, seed=s), requires_grad=True)
        for s, shape in ((1, (2, 4, 5)), (2, (2, 6, 5)), (3, (2, 6, 3)))
    )
    for mask in (minitorch.tensor(_bool_mask((4, 6), seed=4)), minitorch.tensor(_float_mask((4, 6), seed=4))):
        for t in (q, k, v):
            t.grad = None
        out, weights = scaled_dot_product_attention_with_weights(q, k, v, attn_mask=mask)
        assert (weights.numpy()[:, 0] == 0.0).all() and (out.numpy()[:, 0] == 0.0).all()
        out.backward(minitorch.tensor(_rand(2, 4, 3, seed=6)))
        for name, t in zip("qkv", (q, k, v)):
            assert np.isfinite(t.grad.numpy()).all(), f"NaN or inf in the gradient of {name}"
        assert (q.grad.numpy()[:, 0] == 0.0).all(), "a query that attends to nothing must get gradient 0"


def test_causal_output_at_t_does_not_depend_on_later_positions() -> None:
    q, k, v = _rand(2, 6, 4, seed=1), _rand(2, 6, 4, seed=2), _rand(2, 6, 3, seed=3)
    out = F.scaled_dot_product_attention(
        minitorch.tensor(q), minitorch.tensor(k), minitorch.tensor(v), is_causal=True
    )
    t = 2
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    for a, s in ((q2, 7), (k2, 8), (v2, 9)):
        a[:, t + 1 :] = _rand(*a[:, t + 1 :].shape, seed=s) * 10.0
    out2 = F.scaled_dot_product_attention(
        minitorch.tensor(q2), minitorch.tensor(k2), minitorch.tensor(v2), is_causal=True
    )
    np.testing.assert_array_equal(out2.numpy()[:, : t + 1], out.numpy()[:, : t + 1])
    assert not np.allclose(out2.numpy()[:, t + 1 :], out.numpy()[:, t + 1 :]), "later positions should change"


def test_causal_equals_the_bool_lower_triangle_and_its_float_form() -> None:
    q, k, v = (minitorch.tensor(_rand(2, 4, 3, seed=s)) for s in (1, 2, 3))
    tril = np.tril(np.ones((4, 4), dtype=bool))
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    as_bool = F.scaled_dot_product_attention(q, k, v, attn_mask=minitorch.tensor(tril)).numpy()
    as_float = F.scaled_dot_product_attention(
        q, k, v, attn_mask=minitorch.tensor(np.where(tril, 0.0, -np.inf))
    ).numpy()
    np.testing.assert_allclose(causal, as_bool, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(causal, as_float, rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(causal[:, 0], v.numpy()[:, 0], "query 0 sees key 0 only")


def test_dropout_zeroes_weights_and_scales_the_rest() -> None:
    p = 0.5
    q, k, v = (minitorch.tensor(_rand(3, 8, 4, seed=s)) for s in (1, 2, 3))
    _, clean = scaled_dot_product_attention_with_weights(q, k, v)
    minitorch.manual_seed(0)
    out, dropped = scaled_dot_product_attention_with_weights(q, k, v, dropout_p=p)
    clean, dropped = clean.numpy(), dropped.numpy()
    zeroed = dropped == 0.0
    assert 0.2 < zeroed.mean() < 0.8, f"dropout p={p} zeroed a fraction {zeroed.mean():.2f} of the weights"
    np.testing.assert_allclose(dropped[~zeroed], clean[~zeroed] / (1 - p), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), dropped @ v.numpy(), rtol=1e-12, atol=1e-14)
    minitorch.manual_seed(0)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    np.testing.assert_array_equal(again.numpy(), out.numpy(), "the same seed must give the same dropout")
    assert (F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0.0).all()


def test_central_differences() -> None:
    q, k, v = (minitorch.tensor(_rand(*s, seed=n)) for n, s in enumerate([(2, 3, 4), (2, 5, 4), (2, 5, 2)]))
    bool_mask = minitorch.tensor(_bool_mask((3, 5), seed=4))
    float_mask = minitorch.tensor(np.where(_bool_mask((3, 5), seed=5), _rand(3, 5, seed=6), -np.inf))
    grad_check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)
    grad_check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask), q, k, v)
    grad_check(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask, scale=0.3), q, k, v
    )
    grad_check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_backends_and_float32(backend) -> None:
    arrays = [_rand(2, 3, 4, seed=1), _rand(2, 5, 4, seed=2), _rand(2, 5, 3, seed=3)]
    mask = _bool_mask((3, 5), seed=4)
    expected = F.scaled_dot_product_attention(
        *(minitorch.tensor(a) for a in arrays), attn_mask=minitorch.tensor(mask)
    )
    for dtype, rtol in ((minitorch.float64, 1e-12), (minitorch.float32, 1e-5)):
        args = [minitorch.tensor(a, dtype=dtype, backend=backend, requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(*args, attn_mask=minitorch.tensor(mask, backend=backend))
        assert out.dtype == dtype and out.shape == (2, 3, 3)
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=rtol, atol=rtol)
        out.sum().backward()
        assert all(a.grad is not None and a.grad.dtype == dtype for a in args)


def test_errors_name_the_function_and_the_shapes() -> None:
    q, k, v = (minitorch.tensor(_rand(*s, seed=n)) for n, s in enumerate([(2, 3, 4), (2, 5, 4), (2, 5, 6)]))
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: Explicit attn_mask should not be set"
    ):
        sdpa(q, k, v, attn_mask=minitorch.tensor(np.ones((3, 5), dtype=bool)), is_causal=True)
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: .*same E.*\(2, 3, 4\).*\(2, 5, 3\)"
    ):
        sdpa(q, minitorch.tensor(_rand(2, 5, 3)), v)
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: .*same S.*\(2, 5, 4\).*\(2, 4, 6\)"
    ):
        sdpa(q, k, minitorch.tensor(_rand(2, 4, 6)))
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: the batch dimensions .*\(3,\)"):
        sdpa(q, minitorch.tensor(_rand(3, 5, 4)), minitorch.tensor(_rand(3, 5, 6)))
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: attn_mask .*\(2, 3, 5\).*\(4, 5\)"
    ):
        sdpa(q, k, v, attn_mask=minitorch.tensor(np.ones((4, 5), dtype=bool)))
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: attn_mask must broadcast .*\(3, 3, 5\)"
    ):
        sdpa(q, k, v, attn_mask=minitorch.tensor(np.ones((3, 3, 5), dtype=bool)))
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: Expected attn_mask dtype to be bool or float"
    ):
        sdpa(q, k, v, attn_mask=minitorch.tensor(np.ones((3, 5), dtype=np.int64)))
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: .*at least 2 dimensional.*\(4,\)"):
        sdpa(minitorch.tensor(_rand(4)), k, v)
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: .*same dtype"):
        sdpa(q, k.float(), v)
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: dropout probability .* 1.5"):
        sdpa(q, k, v, dropout_p=1.5)
    with pytest.raises(NotImplementedError, match="enable_gqa"):
        sdpa(q, k, v, enable_gqa=True)
    with pytest.raises(TypeError, match="scaled_dot_product_attention: query must be a float"):
        sdpa(minitorch.tensor(np.ones((2, 3, 4), dtype=np.int64)), k, v)
