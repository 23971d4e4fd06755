"""Task 4.4: dropout — inverted scaling, evaluation identity, p = 0 and p = 1, the gradient
is the mask, seeded masks, and the Dropout layer following `module.training`."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F

pytestmark = pytest.mark.task4_4


def _x(shape=(200, 50), dtype=np.float64) -> minitorch.Tensor:
    values = np.random.default_rng(0).uniform(1.0, 2.0, shape)  # no zeros: a 0 output means dropped
    return minitorch.tensor(values, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_kept_units_are_scaled_and_about_p_are_dropped(p: float) -> None:
    minitorch.manual_seed(1)
    x = _x()
    out = F.dropout(x, p).numpy()
    xs = x.numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], xs[kept] / (1 - p), rtol=1e-12)
    # 10,000 Bernoulli draws: the kept fraction is within 5 standard deviations of 1 − p
    sd = np.sqrt(p * (1 - p) / kept.size)
    assert abs(kept.mean() - (1 - p)) < 5 * sd


def test_gradient_is_the_scaled_mask() -> None:
    minitorch.manual_seed(2)
    x = _x((30, 20))
    out = F.dropout(x, 0.3)
    g = np.random.default_rng(3).standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    mask = (out.numpy() != 0) / 0.7
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), g * mask, rtol=1e-12)


def test_evaluation_mode_and_p_zero_are_the_identity() -> None:
    x = _x((4, 5))
    np.testing.assert_array_equal(F.dropout(x, 0.5, training=False).numpy(), x.numpy())
    np.testing.assert_array_equal(F.dropout(x, 0.0).numpy(), x.numpy())


def test_p_one_drops_everything_without_nan() -> None:
    x = _x((4, 5))
    out = F.dropout(x, 1.0)
    assert np.all(out.numpy() == 0)
    out.sum().backward()
    assert x.grad is not None and np.all(x.grad.numpy() == 0)


def test_masks_follow_the_seed_and_keep_the_dtype() -> None:
    x = _x((10, 10), np.float32)
    minitorch.manual_seed(7)
    a = F.dropout(x, 0.5)
    minitorch.manual_seed(7)
    b = F.dropout(x, 0.5)
    c = F.dropout(x, 0.5)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(b.numpy(), c.numpy())


@pytest.mark.parametrize(
    "backend",
    [pytest.param(minitorch.SimpleBackend, id="simple"), pytest.param(minitorch.FastBackend, id="fast")],
)
def test_the_mask_lives_on_the_input_backend(backend) -> None:
    """The same seed gives the same mask on every backend; the output stays on the input's
    backend and keeps its dtype."""
    values = np.random.default_rng(4).uniform(1.0, 2.0, (6, 7))
    x = minitorch.tensor(values, dtype=minitorch.float32, backend=backend, requires_grad=True)
    minitorch.manual_seed(11)
    out = F.dropout(x, 0.4)
    assert out.backend is backend and out.dtype == np.float32
    minitorch.manual_seed(11)
    reference = F.dropout(minitorch.tensor(values, dtype=minitorch.float32), 0.4)
    np.testing.assert_array_equal(out.numpy(), reference.numpy())
    out.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), (out.numpy() != 0) / np.float32(0.6), rtol=1e-6)


def test_dropout_layer_respects_training_mode() -> None:
    layer = nn.Dropout(0.5)
    x = _x((20, 20))
    assert np.any(layer(x).numpy() == 0)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    layer.train()
    assert np.any(layer(x).numpy() == 0)
    assert repr(layer) == "Dropout(p=0.5)"


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_invalid_probability(p: float) -> None:
    with pytest.raises(ValueError, match="dropout: p must be a probability"):
        F.dropout(_x((2, 2)), p)
    with pytest.raises(ValueError, match="Dropout: p must be a probability"):
        nn.Dropout(p)
