"""Task 6.2: `F.scaled_dot_product_attention` against PyTorch (the project's own suite; not
shipped): values and every gradient (query, key, value, a float mask) in float64 for the
cases of test_scaled_dot_product_attention.py, and the weights' values and gradients. The
torch-free tests are in test_scaled_dot_product_attention.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn import functional as F
from minitorch.nn.attention import scaled_dot_product_attention_with_weights
from test_scaled_dot_product_attention import CASES, _bool_mask, _close, _float_mask, _rand

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_2


@pytest.mark.parametrize("q_shape, k_shape, v_shape, mask, kwargs", CASES)
def test_values_and_gradients_match_torch(q_shape, k_shape, v_shape, mask, kwargs) -> None:
    q, k, v = _rand(*q_shape, seed=1), _rand(*k_shape, seed=2), _rand(*v_shape, seed=3)
    mt = [minitorch.tensor(a, requires_grad=True) for a in (q, k, v)]
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    mt_mask = t_mask = None
    if mask is not None:
        kind, shape = mask
        m = _bool_mask(shape, seed=4) if kind == "bool" else _float_mask(shape, seed=4)
        mt_mask = minitorch.tensor(m, requires_grad=kind == "float")
        t_mask = torch.tensor(m, requires_grad=kind == "float")
    out = F.scaled_dot_product_attention(*mt, attn_mask=mt_mask, **kwargs)
    t_out = torch.nn.functional.scaled_dot_product_attention(*tt, attn_mask=t_mask, **kwargs)
    _close(out, t_out, "output")
    g = _rand(*out.shape, seed=5)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    for name, a, b in zip("qkv", mt, tt):
        _close(a.grad, b.grad, f"gradient of {name}")
    if mask is not None and mask[0] == "float":
        _close(mt_mask.grad, t_mask.grad, "gradient of the float attn_mask")


def test_weights_are_the_softmax_of_the_scaled_scores_and_rows_sum_to_one() -> None:
    q, k, v = _rand(2, 4, 5, seed=1), _rand(2, 6, 5, seed=2), _rand(2, 6, 3, seed=3)
    mask = _bool_mask((2, 4, 6), seed=4)
    mq, mk = minitorch.tensor(q, requires_grad=True), minitorch.tensor(k, requires_grad=True)
    out, weights = scaled_dot_product_attention_with_weights(
        mq, mk, minitorch.tensor(v), minitorch.tensor(mask)
    )
    tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
    scores = tq @ tk.transpose(-2, -1) / np.sqrt(5)
    expected = torch.softmax(scores.masked_fill(~torch.tensor(mask), float("-inf")), -1).nan_to_num(0.0)
    _close(weights, expected, "weights")
    g = _rand(2, 4, 6, seed=7)  # the weights' own gradient (a plot, an auxiliary loss)
    (weights * minitorch.tensor(g)).sum().backward()
    (expected * torch.tensor(g)).sum().backward()
    _close(mq.grad, tq.grad, "gradient of q through the weights")
    _close(mk.grad, tk.grad, "gradient of k through the weights")
    w = weights.numpy()
    live = mask.any(-1)
    np.testing.assert_allclose(w[live].sum(-1), 1.0, rtol=1e-12)
    assert (w[~mask] == 0.0).all(), "a masked key got weight"
    _close(out, w @ v, "output = weights @ value")
