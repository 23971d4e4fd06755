"""In-place operations (`x[k] = v`, `add_`, `fill_`, `.data`, …): they write the tensor's own
storage (so every view sees them), and they are refused where autograd would be fooled —
a leaf that requires grad, a tensor with a grad_fn, a tensor saved for a pending backward."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library


def test_setitem_writes_through_views_as_numpy_does() -> None:
    x = minitorch.zeros(3, 4)
    expected = np.zeros((3, 4))
    for key, value in [
        ((slice(None), slice(0, None, 2)), 1.0),
        ((1,), minitorch.tensor([5.0, 6, 7, 8])),
        ((minitorch.tensor([0, 2]), 3), -1.0),
        ((minitorch.tensor([True, False, True]),), 9.0),
        ((Ellipsis, 1), minitorch.tensor([[2.0], [3.0], [4.0]]).view(3)),
    ]:
        x[key] = value
        expected[tuple(k.numpy() if isinstance(k, minitorch.Tensor) else k for k in key)] = (
            value.numpy() if isinstance(value, minitorch.Tensor) else value
        )
        np.testing.assert_array_equal(x.numpy(), expected)
    column = x[:, 1]  # a view: writing it writes x
    column[0] = 100.0
    assert x[0, 1].item() == 100.0


def test_a_positional_encoding_written_as_in_pytorch_code() -> None:
    pe = minitorch.zeros(6, 4)
    position = minitorch.arange(0, 6, dtype=minitorch.float64).unsqueeze(1)
    div_term = minitorch.exp(minitorch.arange(0, 4, 2).double() * (-math.log(10000.0) / 4))
    pe[:, 0::2] = minitorch.sin(position * div_term)
    pe[:, 1::2] = minitorch.cos(position * div_term)
    angles = np.arange(6)[:, None] * np.exp(np.arange(0, 4, 2) * (-math.log(10000.0) / 4))
    np.testing.assert_allclose(pe.numpy()[:, 0::2], np.sin(angles), rtol=1e-15)
    np.testing.assert_allclose(pe.numpy()[:, 1::2], np.cos(angles), rtol=1e-15)


def test_sin_and_cos_pass_central_differences() -> None:
    grad_check(lambda a: a.sin() * a.cos(), minitorch.tensor(np.linspace(-3, 3, 7)))


def test_the_update_methods_and_their_dtype_rule() -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0])
    assert x.add_(minitorch.tensor([1.0, 1.0, 1.0]), alpha=2) is x and x.tolist() == [3.0, 4.0, 5.0]
    x.sub_(1).mul_(2).div_(4)
    assert x.tolist() == [1.0, 1.5, 2.0]
    x.clamp_(max=1.5).masked_fill_(minitorch.tensor([True, False, False]), -1.0)
    assert x.tolist() == [-1.0, 1.5, 1.5]
    x.copy_(minitorch.tensor([7, 8, 9]))
    assert x.tolist() == [7.0, 8.0, 9.0] and x.dtype == minitorch.float64
    assert x.fill_(0.5).tolist() == [0.5] * 3 and x.zero_().tolist() == [0.0] * 3
    ids = minitorch.tensor([1, 2])
    with pytest.raises(
        RuntimeError, match="add_: result type float64 can't be cast to the desired output type int64"
    ):
        ids.add_(0.5)
    with pytest.raises(
        RuntimeError, match="output with shape \\(2,\\) doesn't match the broadcast shape \\(3, 2\\)"
    ):
        ids.add_(minitorch.zeros(3, 2, dtype=minitorch.int64))
    minitorch.manual_seed(0)
    u = minitorch.zeros(1000).uniform_(-1, 1)
    assert -1 <= u.numpy().min() and u.numpy().max() < 1 and abs(u.numpy().mean()) < 0.1
    assert abs(minitorch.zeros(2000).normal_(2.0, 0.5).numpy().std() - 0.5) < 0.05


def test_writes_that_would_fool_autograd_are_refused() -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"
    ):
        w.mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w[0] = 5.0
    with pytest.raises(RuntimeError, match="in-place operations on a tensor computed with gradients"):
        (w * 2).add_(1)
    with pytest.raises(RuntimeError, match="the value written requires grad"):
        minitorch.zeros(2)[0:2] = w
    with minitorch.no_grad():  # initialisation and optimizers write under no_grad
        w.mul_(2)
    w.data.add_(1)  # .data: the same storage outside the graph
    assert w.tolist() == [3.0, 5.0] and w.requires_grad


def test_a_tensor_saved_for_backward_and_written_after_makes_backward_refuse() -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    x = minitorch.tensor([3.0, 4.0])
    y = (x * w).sum()
    x.add_(1)
    with pytest.raises(
        RuntimeError,
        match="modified by an inplace operation: a tensor of shape \\(2,\\) saved by Mul.forward",
    ):
        y.backward()
    y2 = (x * w).sum()  # made after the write: fine
    y2.backward()
    assert w.grad.tolist() == [4.0, 5.0]


def test_data_assignment_keeps_the_tensor_and_changes_its_values() -> None:
    p = minitorch.tensor([1.0, 2.0], requires_grad=True)
    p.data = minitorch.tensor([[5.0, 6.0, 7.0]])
    assert p.shape == (1, 3) and p.requires_grad and p.tolist() == [[5.0, 6.0, 7.0]]
