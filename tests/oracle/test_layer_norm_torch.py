"""LayerNorm and F.layer_norm (task 6.4) against PyTorch (the project's own suite; not
shipped): values and every gradient in float64, the functional form with another eps. The
torch-free tests are in test_layer_norm.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_4


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 3.0 + 1.5  # not already normal


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_values_and_gradients_match_torch(shape, normalized) -> None:
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
    np.testing.assert_allclose(
        layer.weight.value.grad.numpy(), t_layer.weight.grad.numpy(), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        layer.bias.value.grad.numpy(), t_layer.bias.grad.numpy(), rtol=1e-10, atol=1e-12
    )


def test_functional_form_and_eps_match_torch() -> None:
    x = _rand(3, 8) * 1e-3  # small variance: eps matters
    out = F.layer_norm(minitorch.tensor(x), (8,), eps=1e-4)
    expected = torch.nn.functional.layer_norm(torch.tensor(x), (8,), eps=1e-4)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
