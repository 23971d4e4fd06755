"""PyTorch's free functions against torch's: values, and gradients of the differentiable ones."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

X = np.random.default_rng(9).uniform(0.5, 2.0, (3, 4, 5))

CASES = {
    "exp": lambda m, x: m.exp(x),
    "log": lambda m, x: m.log(x),
    "tanh": lambda m, x: m.tanh(x),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "relu": lambda m, x: m.relu(x - 1.0),
    "sqrt": lambda m, x: m.sqrt(x),
    "abs": lambda m, x: m.abs(x - 1.0),
    "pow": lambda m, x: m.pow(x, 1.5),
    "sum": lambda m, x: m.sum(x, 1),
    "mean": lambda m, x: m.mean(x, 2, keepdim=True),
    "var": lambda m, x: m.var(x, 1),
    "std": lambda m, x: m.std(x),
    "max": lambda m, x: m.max(x, 1).values,
    "min": lambda m, x: m.min(x, 2).values,
    "min_all": lambda m, x: m.min(x),
    "matmul": lambda m, x: m.matmul(x, x.transpose(1, 2)),
    "bmm": lambda m, x: m.bmm(x, x.transpose(1, 2)),
    "t": lambda m, x: m.t(m.sum(x, 0)),
    "flatten": lambda m, x: m.flatten(x, 0, 1),
    "narrow": lambda m, x: m.narrow(x, 1, 1, 2),
    "softmax": lambda m, x: m.softmax(x, 1),
    "log_softmax": lambda m, x: m.log_softmax(x, -1),
    "clone": lambda m, x: m.clone(x) * 3.0,
    "squeeze": lambda m, x: m.squeeze(m.unsqueeze(x, 1), 1),
}


@pytest.mark.parametrize("name", CASES)
def test_free_functions_match_torch(name: str) -> None:
    a = minitorch.tensor(X, requires_grad=True)
    out = CASES[name](minitorch, a)
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    ta = torch.tensor(X, requires_grad=True)
    t_out = CASES[name](torch, ta)
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.argmax(x),
        lambda m, x: m.argmax(x, 1),
        lambda m, x: m.argmin(x, 2, keepdim=True),
        lambda m, x: m.full((2, 3), 7),
        lambda m, x: m.full((2,), 0.5),
        lambda m, x: m.eye(3, 2),
        lambda m, x: m.linspace(-1.0, 1.0, 5),
        lambda m, x: m.zeros_like(x),
        lambda m, x: m.ones_like(x, dtype=m.long),
    ],
)
def test_index_and_constructor_functions_match_torch(call) -> None:
    ours, theirs = call(minitorch, minitorch.tensor(X)), call(torch, torch.tensor(X))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.") or (
        ours.dtype == minitorch.float64 and theirs.dtype == torch.float32
    )


@pytest.mark.parametrize("data", [[[1, 2], [3]], [[[1], [2]], [[3], [4, 5]]], [1, [2]]])
def test_ragged_nested_lists_fail_as_in_torch(data) -> None:
    with pytest.raises((ValueError, TypeError)) as theirs:
        torch.tensor(data)
    with pytest.raises(theirs.type) as ours:
        minitorch.tensor(data)
    if theirs.type is ValueError:
        assert str(theirs.value) in str(ours.value)


# Ties on purpose (integers as floats) and broadcasting: at a tie PyTorch gives half the
# gradient to each input.
A = np.array([[1.0, 2.0, 3.0, 2.0], [0.0, -1.0, 5.0, 5.0]])
B = np.array([2.0, 2.0, 1.0, 5.0])
TWO = {
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "max_of_two": lambda m, a, b: m.max(a, b),
    "min_of_two": lambda m, a, b: m.min(b, a),
}


@pytest.mark.parametrize("name", TWO)
def test_elementwise_max_min_match_torch_at_ties(name: str) -> None:
    a, b = minitorch.tensor(A, requires_grad=True), minitorch.tensor(B, requires_grad=True)
    out = TWO[name](minitorch, a, b)
    g = np.random.default_rng(2).standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    t_out = TWO[name](torch, ta, tb)
    t_out.backward(torch.tensor(g))
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


def test_elementwise_max_of_integers_and_nan_match_torch() -> None:
    ints = minitorch.maximum(minitorch.tensor([1, 5, 3]), minitorch.tensor([3, 2, 3]))
    t_ints = torch.maximum(torch.tensor([1, 5, 3]), torch.tensor([3, 2, 3]))
    assert ints.dtype == minitorch.int64
    np.testing.assert_array_equal(ints.numpy(), t_ints.numpy())
    nan = [1.0, float("nan"), 2.0]
    np.testing.assert_array_equal(
        minitorch.minimum(minitorch.tensor(nan), minitorch.tensor([0.0, 1.0, float("nan")])).numpy(),
        torch.minimum(
            torch.tensor(nan, dtype=torch.float64),
            torch.tensor([0.0, 1.0, float("nan")], dtype=torch.float64),
        ).numpy(),
    )
