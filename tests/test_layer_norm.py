"""LayerNorm and F.layer_norm (first piece of the attention stage): values and every
gradient against PyTorch (float64), central differences, float32, errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.task6_4


def _torch():
    return pytest.importorskip("torch")


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 3.0 + 1.5  # not already normal


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_values_and_gradients_match_torch(shape, normalized) -> None:
    torch = _torch()
    x = _rand(*shape)
    norm_shape = (normalized,) if isinstance(normalized, int) else normalized
    w, b = _rand(*norm_shape, seed=1), _rand(*norm_shape, seed=2)
    layer = nn.LayerNorm(normalized)
    layer.load_state_dict({"weight": w, "bias": b})
    t_layer = torch.nn.LayerNorm(normalized).double()
    with torch.no_grad():
        t_layer.weight.copy_(torch.tensor(w))
        t_layer.bias.copy_(torch.tensor(b))
    xs = minitorch.tensor(x, requires_grad=True)
    t_x = torch.tensor(x, requires_grad=True)
    out, t_out = layer(xs), t_layer(t_x)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(3).standard_normal(shape)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(xs.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.weight.value.grad.numpy(), t_layer.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.bias.value.grad.numpy(), t_layer.bias.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_functional_form_and_eps_match_torch() -> None:
    torch = _torch()
    x = _rand(3, 8) * 1e-3  # small variance: eps matters
    out = F.layer_norm(minitorch.tensor(x), (8,), eps=1e-4)
    expected = torch.nn.functional.layer_norm(torch.tensor(x), (8,), eps=1e-4)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_central_differences() -> None:
    x = minitorch.tensor(_rand(3, 2, 4))
    w, b = minitorch.tensor(_rand(2, 4, seed=1)), minitorch.tensor(_rand(2, 4, seed=2))
    grad_check(lambda x, w, b: F.layer_norm(x, (2, 4), w, b), x, w, b)


def test_rows_come_out_with_mean_zero_and_variance_one() -> None:
    x = _rand(5, 16)
    y = nn.LayerNorm(16)(minitorch.tensor(x)).numpy()
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), np.var(x, -1) / (np.var(x, -1) + 1e-5), rtol=1e-10)


def test_parameters_float32_and_no_affine() -> None:
    layer = nn.LayerNorm((2, 3), dtype=minitorch.float32)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert layer.weight.value.shape == (2, 3) and layer.weight.value.dtype == np.float32
    out = layer(minitorch.tensor(_rand(4, 2, 3), dtype=minitorch.float32))
    assert out.dtype == np.float32
    assert list(nn.LayerNorm(3, elementwise_affine=False).parameters()) == []
    assert [n for n, _ in nn.LayerNorm(3, bias=False).named_parameters()] == ["weight"]


def test_errors_name_the_shapes() -> None:
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\].*\[\*, 4\].*\[2, 3\]"):
        F.layer_norm(minitorch.tensor(_rand(2, 3)), 4)
    with pytest.raises(ValueError, match="positive"):
        nn.LayerNorm(0)
