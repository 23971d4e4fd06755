"""`gather`, `topk`, `multinomial` and `norm`: what each picks or draws, gradients by central
differences, and errors that name the call."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

X = np.random.default_rng(4).standard_normal((3, 4, 5))


def test_gather_picks_along_its_dimension() -> None:
    index = np.random.default_rng(1).integers(0, 4, (3, 2, 5))
    out = minitorch.tensor(X).gather(1, minitorch.tensor(index))
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(X, index, axis=1))
    grad_check(lambda a: a.gather(1, minitorch.tensor(index)) * 2.0, minitorch.tensor(X))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        minitorch.tensor(X).gather(1, minitorch.tensor(np.full((3, 1, 5), 4)))
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        minitorch.tensor(X).gather(1, minitorch.tensor(np.zeros((3, 1, 5))))


@pytest.mark.parametrize("dim, largest", [(-1, True), (1, False), (0, True)])
def test_topk_gives_the_k_extreme_values_in_order_and_their_gradient(dim: int, largest: bool) -> None:
    values, indices = minitorch.tensor(X).topk(2, dim=dim, largest=largest)
    order = np.argsort(-X if largest else X, axis=dim, kind="stable")
    expected = np.take(order, [0, 1], axis=dim)
    np.testing.assert_array_equal(indices.numpy(), expected)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(X, expected, axis=dim))
    grad_check(lambda a: a.topk(2, dim=dim, largest=largest).values, minitorch.tensor(X))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        minitorch.tensor(X).topk(9, dim=dim)


def test_multinomial_draws_in_proportion_and_repeatably() -> None:
    weights = minitorch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
    minitorch.manual_seed(5)
    draws = minitorch.multinomial(weights, 4000, replacement=True)
    assert draws.shape == (2, 4000) and draws.dtype == minitorch.int64
    assert abs((draws.numpy()[0] == 1).mean() - 0.75) < 0.03 and (draws.numpy()[1] == 2).all()
    minitorch.manual_seed(5)
    np.testing.assert_array_equal(
        minitorch.multinomial(weights, 4000, replacement=True).numpy(), draws.numpy()
    )
    no_repeat = minitorch.multinomial(minitorch.tensor([1.0, 1.0, 1.0]), 3)
    assert sorted(no_repeat.tolist()) == [0, 1, 2]
    with pytest.raises(
        RuntimeError, match="cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"
    ):
        minitorch.multinomial(weights, 3)
    with pytest.raises(RuntimeError, match="element < 0"):
        minitorch.multinomial(minitorch.tensor([1.0, -1.0]), 1)


@pytest.mark.parametrize("p, dim, keepdim", [(2, None, False), (1, 1, False), (3, 2, True), (2, 0, True)])
def test_norm_is_the_p_norm_and_its_gradient(p: float, dim, keepdim: bool) -> None:
    out = minitorch.tensor(X).norm(p, dim, keepdim)
    expected = np.sum(np.abs(X) ** p, axis=dim, keepdims=keepdim) ** (1 / p)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    grad_check(lambda a: a.norm(p, dim, keepdim), minitorch.tensor(X))


def test_the_norm_of_zeros_passes_a_zero_gradient() -> None:
    a = minitorch.zeros(2, 3, requires_grad=True)
    a.norm(dim=1).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3)))
    assert minitorch.tensor([3.0, -4.0]).norm(float("inf")).item() == 4.0
    with pytest.raises(RuntimeError, match="p must be a number ≥ 1"):
        minitorch.tensor([1.0]).norm(0.5)


def test_variable_is_the_tensor_itself() -> None:
    x = minitorch.tensor([1.0])
    assert (
        minitorch.autograd.Variable(x) is x
        and minitorch.autograd.Variable(x, requires_grad=True).requires_grad
    )
