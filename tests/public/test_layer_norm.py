"""LayerNorm and F.layer_norm (task 6.4): values against the formula written out in NumPy
(float64) and by hand, every gradient against central differences of it, central
differences of the layer itself, float32, errors. (The project's own suite also compares
with PyTorch: test_layer_norm_torch.py, not shipped.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_4


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 3.0 + 1.5  # not already normal


def _numpy_layer_norm(x: np.ndarray, n_dims: int, weight=None, bias=None, eps: float = 1e-5) -> np.ndarray:
    """The lecture's formula in NumPy over the last `n_dims` dimensions: μ and the biased
    σ² of each group, y = (x − μ) / √(σ² + ε) · weight + bias."""
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_values_and_gradients_match_numpy(shape, normalized) -> None:
    """The layer against the NumPy formula; the gradients of x, weight and bias against
    central differences of it."""
    x = _rand(*shape)
    norm_shape = (normalized,) if isinstance(normalized, int) else normalized
    w, b = _rand(*norm_shape, seed=1), _rand(*norm_shape, seed=2)
    layer = nn.LayerNorm(normalized)
    layer.load_state_dict({"weight": w, "bias": b})
    xs = minitorch.tensor(x, requires_grad=True)
    out = layer(xs)

    def numpy_layer(x, w, b):
        return _numpy_layer_norm(x, len(norm_shape), w, b)

    np.testing.assert_allclose(out.numpy(), numpy_layer(x, w, b), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(3).standard_normal(shape)
    out.backward(minitorch.tensor(g))
    exp_x, exp_w, exp_b = numpy_gradients(numpy_layer, [x, w, b], g)
    np.testing.assert_allclose(xs.grad.numpy(), exp_x, rtol=1e-6, atol=1e-8, err_msg="x.grad")
    np.testing.assert_allclose(
        layer.weight.value.grad.numpy(), exp_w, rtol=1e-6, atol=1e-8, err_msg="weight.grad"
    )
    np.testing.assert_allclose(
        layer.bias.value.grad.numpy(), exp_b, rtol=1e-6, atol=1e-8, err_msg="bias.grad"
    )


def test_hand_computed_values_and_eps_under_the_root() -> None:
    """x = [1, 2, 3, 6]: μ = 3, σ² = (4 + 1 + 0 + 9) / 4 = 3.5 (biased: divide by N)."""
    x = minitorch.tensor(np.array([[1.0, 2.0, 3.0, 6.0]]))
    expected = np.array([-2.0, -1.0, 0.0, 3.0]) / np.sqrt(3.5 + 0.5)
    np.testing.assert_allclose(F.layer_norm(x, (4,), eps=0.5).numpy()[0], expected, rtol=1e-14)
    np.testing.assert_allclose(
        F.layer_norm(x, 4, eps=0.0).numpy()[0], [-2.0, -1.0, 0.0, 3.0] / np.sqrt(3.5), rtol=1e-14
    )


def test_functional_form_and_eps_match_numpy() -> None:
    x = _rand(3, 8) * 1e-3  # small variance: eps matters
    out = F.layer_norm(minitorch.tensor(x), (8,), eps=1e-4)
    np.testing.assert_allclose(out.numpy(), _numpy_layer_norm(x, 1, eps=1e-4), rtol=1e-12, atol=1e-12)


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
