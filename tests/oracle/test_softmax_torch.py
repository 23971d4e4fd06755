"""Task 4.4 against PyTorch: softmax and log-softmax over generated tensors and extreme
logits, cross_entropy (weights, reductions, ignored targets, the sequence layout, extreme
logits) and nll_loss.

The project's own oracle, kept apart from `test_softmax.py` (the public tests, which check
the same things against NumPy formulas and run without PyTorch): not shipped to students,
and skipped where torch is missing.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.nn import functional as F
from tensor_strategies import tensors
from test_softmax import _values_and_grads

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task4_4
CHECK = settings(max_examples=25, deadline=None)


@CHECK
@given(tensors(min_dims=1, max_dims=3, max_side=5, low=-5, high=5), st.data())
def test_softmax_and_log_softmax_match_torch(drawn, data) -> None:
    x = drawn.array
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    g = np.random.default_rng(x.size).standard_normal(x.shape)
    for mt_fn, t_fn in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        got, got_grad = _values_and_grads(lambda t: mt_fn(t, dim), x, g, drawn.order)
        tx = torch.tensor(x, requires_grad=True)
        t_out = t_fn(tx, dim)
        t_out.backward(torch.tensor(g))
        np.testing.assert_allclose(got, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got_grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_extreme_logits_match_torch(dtype) -> None:
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -999.0], [1000.0, 1000.0, 1000.0]], dtype=dtype)
    g = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0], [1.0, 2.0, 3.0]], dtype=dtype)
    for mt_fn, t_fn in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        got, got_grad = _values_and_grads(lambda t: mt_fn(t, 1), x, g)
        assert np.all(np.isfinite(got)) and np.all(np.isfinite(got_grad))
        tx = torch.tensor(x, requires_grad=True)
        t_out = t_fn(tx, 1)
        t_out.backward(torch.tensor(g))
        np.testing.assert_allclose(got, t_out.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_grad, tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(F.softmax(minitorch.tensor(x, dtype=dtype), 1).numpy().sum(1), 1.0, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# cross_entropy and nll_loss


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_matches_torch(reduction: str, weighted: bool) -> None:
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((6, 4)) * 3
    target = np.array([0, 3, -100, 2, 1, 3])
    weight = rng.uniform(0.5, 2.0, 4) if weighted else None
    X = minitorch.tensor(logits, requires_grad=True)
    W = minitorch.tensor(weight) if weighted else None
    out = F.cross_entropy(X, minitorch.tensor(target, dtype=minitorch.int64), weight=W, reduction=reduction)
    tx = torch.tensor(logits, requires_grad=True)
    t_out = torch.nn.functional.cross_entropy(
        tx, torch.tensor(target), weight=None if weight is None else torch.tensor(weight), reduction=reduction
    )
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_sequence_layout_and_ignore_index_match_torch() -> None:
    """Input [N, C, T] with target [N, T] (per-token classification, padding ignored)."""
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((2, 5, 3))
    target = np.array([[1, 4, 0], [2, 0, 0]])
    X = minitorch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(X, minitorch.tensor(target, dtype=minitorch.int64), ignore_index=0)
    tx = torch.tensor(logits, requires_grad=True)
    t_out = torch.nn.functional.cross_entropy(tx, torch.tensor(target), ignore_index=0)
    np.testing.assert_allclose(out.item(), t_out.item(), rtol=1e-12)
    out.backward()
    t_out.backward()
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_extreme_logits_match_torch() -> None:
    logits = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 1000.0]])
    target = np.array([0, 0, 0])
    X = minitorch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(X, minitorch.tensor(target, dtype=minitorch.int64))
    out.backward()
    t_out = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(target))
    assert np.isfinite(out.item()) and X.grad is not None and np.all(np.isfinite(X.grad.numpy()))
    np.testing.assert_allclose(out.item(), t_out.item(), rtol=1e-12)


def test_nll_loss_matches_torch_and_all_ignored_is_nan() -> None:
    lp = np.log(np.random.default_rng(9).dirichlet(np.ones(3), size=4))
    target = np.array([2, 1, 1, 0])
    out = F.nll_loss(minitorch.tensor(lp), minitorch.tensor(target, dtype=minitorch.int64))
    np.testing.assert_allclose(
        out.item(), torch.nn.functional.nll_loss(torch.tensor(lp), torch.tensor(target)).item()
    )
    ignored = F.nll_loss(minitorch.tensor(lp), minitorch.tensor([-100] * 4, dtype=minitorch.int64))
    assert np.isnan(ignored.item())
