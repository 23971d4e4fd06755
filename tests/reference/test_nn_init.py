"""`minitorch.nn.init`: each function fills the tensor it is given in place (a Parameter's
held tensor, a view's cells in its base) with the distribution its formula names."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import init

pytestmark = pytest.mark.library


def test_a_parameter_is_filled_in_place_and_keeps_learning() -> None:
    layer = nn.Linear(30, 20)
    weight = layer.weight.value
    assert init.zeros_(layer.weight) is layer.weight
    assert layer.weight.value is weight and weight.requires_grad
    np.testing.assert_array_equal(weight.numpy(), np.zeros((20, 30)))
    optimizer = minitorch.optim.SGD(layer.parameters(), lr=0.1)
    init.constant_(layer.bias, 0.5)
    layer(minitorch.ones(4, 30)).sum().backward()
    optimizer.step()  # the optimizer holds the same storage: it sees the filled values
    np.testing.assert_allclose(layer.bias.value.numpy(), 0.5 - 0.1 * 4)


def test_a_view_is_filled_through_its_strides_and_the_rest_is_untouched() -> None:
    base = minitorch.zeros(3, 4)
    column = base[:, 1]
    init.ones_(column)
    expected = np.zeros((3, 4))
    expected[:, 1] = 1
    np.testing.assert_array_equal(base.numpy(), expected)
    init.eye_(base.permute(1, 0))
    np.testing.assert_array_equal(base.numpy(), np.eye(4).T[:3])


def test_a_tensor_whose_elements_share_memory_cannot_be_filled() -> None:
    """(`expand` copies in this library; a tensor over a storage with a stride of 0 is made here
    directly, as a library kernel could.)"""
    shared = minitorch.Tensor.make(np.zeros(3), (4, 3), (0, 1))
    with pytest.raises(RuntimeError, match="more than one element .* single memory location"):
        init.normal_(shared)


def test_fans_and_gains() -> None:
    assert init._fans("x", minitorch.zeros(8, 3, 5)) == (15, 40)
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(minitorch.zeros(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(minitorch.zeros(5, 5), mode="fan_avg")


@pytest.mark.parametrize(
    "fill, low, high, std",
    [
        (lambda t: init.uniform_(t, -0.5, 1.5), -0.5, 1.5, 2 / math.sqrt(12)),
        (lambda t: init.normal_(t, 0.0, 0.3), None, None, 0.3),
        (lambda t: init.trunc_normal_(t, 0.0, 1.0, -1.0, 1.5), -1.0, 1.5, None),
        (
            lambda t: init.xavier_uniform_(t, gain=2.0),
            -2 * math.sqrt(6 / 700),
            2 * math.sqrt(6 / 700),
            2 * math.sqrt(2 / 700),
        ),
        (lambda t: init.xavier_normal_(t), None, None, math.sqrt(2 / 700)),
        (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), -1 / math.sqrt(300), 1 / math.sqrt(300), None),
        (
            lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
            None,
            None,
            math.sqrt(2 / 400),
        ),
    ],
)
def test_each_distribution_has_its_bounds_and_spread(fill, low, high, std) -> None:
    minitorch.manual_seed(3)
    t = minitorch.zeros(400, 300)
    fill(t)
    x = t.numpy()
    if low is not None:
        assert low <= x.min() and x.max() <= high
        assert x.min() < low + 0.01 * (high - low) and x.max() > high - 0.01 * (high - low)
    if std is not None:
        assert x.std() == pytest.approx(std, rel=0.02)
    minitorch.manual_seed(3)
    again = minitorch.zeros(400, 300)
    fill(again)
    np.testing.assert_array_equal(again.numpy(), x)  # manual_seed makes it repeatable


@pytest.mark.parametrize("shape", [(4, 9), (9, 4), (6, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape) -> None:
    t = init.orthogonal_(minitorch.zeros(*shape), gain=2.0)
    m = t.numpy().reshape(shape[0], -1) / 2.0
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] == small else m.T @ m
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)


def test_random_fills_need_a_float_tensor_and_fills_of_constants_do_not() -> None:
    with pytest.raises(
        TypeError, match="nn.init.normal_: the tensor must be float32 or float64, got dtype int64"
    ):
        init.normal_(minitorch.zeros(3, dtype=minitorch.int64))
    ids = init.constant_(minitorch.zeros(3, dtype=minitorch.int64), 7)
    np.testing.assert_array_equal(ids.numpy(), [7, 7, 7])
    with pytest.raises(
        TypeError, match="expected a minitorch Tensor or a Parameter holding one, got ndarray"
    ):
        init.zeros_(np.zeros(3))
    with pytest.raises(ValueError, match="generator= is not supported"):
        init.uniform_(minitorch.zeros(3), generator=object())
