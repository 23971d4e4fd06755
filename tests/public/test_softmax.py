"""Task 4.4: softmax and log-softmax (and the classification losses built on them) —
against NumPy (the formulas and their gradients written out) on every backend including
CUDA, central differences, extreme logits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from tensor_strategies import tensors, to_minitorch

pytestmark = pytest.mark.task4_4
CHECK = settings(max_examples=25, deadline=None)


def _values_and_grads(fn, x: np.ndarray, g: np.ndarray, order=None):
    X = minitorch.tensor(x) if order is None else to_minitorch(x, order)
    X.requires_grad_(True)
    out = fn(X)
    out.backward(minitorch.tensor(g, dtype=out.dtype))
    assert X.grad is not None
    return out.numpy(), X.grad.numpy()


def _softmax_numpy(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _log_softmax_numpy(x: np.ndarray, dim: int) -> np.ndarray:
    """log softmax(x) = z − log Σ exp(z) with z = x − max(x): no overflow for any finite x."""
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))


def _softmax_grad_numpy(s: np.ndarray, g: np.ndarray, dim: int) -> np.ndarray:
    """∂L/∂x for s = softmax(x) and upstream g: s ⊙ (g − Σ_dim g ⊙ s)."""
    return s * (g - (g * s).sum(axis=dim, keepdims=True))


def _log_softmax_grad_numpy(s: np.ndarray, g: np.ndarray, dim: int) -> np.ndarray:
    """∂L/∂x for log_softmax(x) and upstream g: g − s ⊙ Σ_dim g (s = softmax(x))."""
    return g - s * g.sum(axis=dim, keepdims=True)


@CHECK
@given(tensors(min_dims=1, max_dims=3, max_side=5, low=-5, high=5), st.data())
def test_softmax_and_log_softmax_match_the_formulas(drawn, data) -> None:
    """Any dimension (negative too), input stored in a generated (permuted) layout."""
    x = drawn.array
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    g = np.random.default_rng(x.size).standard_normal(x.shape)
    s = _softmax_numpy(x, dim)
    got, got_grad = _values_and_grads(lambda t: F.softmax(t, dim), x, g, drawn.order)
    np.testing.assert_allclose(got, s, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_grad, _softmax_grad_numpy(s, g, dim), rtol=1e-9, atol=1e-12)
    got, got_grad = _values_and_grads(lambda t: F.log_softmax(t, dim), x, g, drawn.order)
    np.testing.assert_allclose(got, _log_softmax_numpy(x, dim), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_grad, _log_softmax_grad_numpy(s, g, dim), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_central_differences(fn, dim: int) -> None:
    x = minitorch.tensor(np.random.default_rng(dim).standard_normal((3, 4)))
    grad_check(lambda t: fn(t, dim), x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_extreme_logits_are_stable(dtype) -> None:
    """exp(1000) overflows: without subtracting the row's max first, these rows give inf/NaN."""
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -999.0], [1000.0, 1000.0, 1000.0]], dtype=dtype)
    g = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0], [1.0, 2.0, 3.0]], dtype=dtype)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    s = _softmax_numpy(x64, 1)
    expected = {
        F.softmax: (s, _softmax_grad_numpy(s, g64, 1)),
        F.log_softmax: (_log_softmax_numpy(x64, 1), _log_softmax_grad_numpy(s, g64, 1)),
    }
    for fn, (want, want_grad) in expected.items():
        got, got_grad = _values_and_grads(lambda t: fn(t, 1), x, g)
        assert np.all(np.isfinite(got)) and np.all(np.isfinite(got_grad))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(F.softmax(minitorch.tensor(x, dtype=dtype), 1).numpy().sum(1), 1.0, rtol=1e-6)


def test_the_softmax_module_does_not_shadow_max() -> None:
    """The maximum along a dimension is `Tensor.max(dim)` (one implementation); a function
    named `max` in nn/softmax.py would shadow Python's builtin there."""
    import minitorch.nn.softmax as module

    assert "max" not in vars(module) and "argmax" not in vars(module)


def test_softmax_needs_a_dimension() -> None:
    with pytest.raises(TypeError, match="dim"):
        F.softmax(minitorch.zeros(2, 3))
    with pytest.raises(IndexError, match=r"dimension 2 is out of range for a tensor of shape \(2, 3\)"):
        F.log_softmax(minitorch.zeros(2, 3), 2)


# ---------------------------------------------------------------------------------------
# every backend: softmax is made of tensor operations, so it runs wherever they do


@pytest.mark.parametrize(
    "backend",
    [pytest.param(minitorch.SimpleBackend, id="simple"), pytest.param(minitorch.FastBackend, id="fast")],
)
def test_softmax_and_log_softmax_match_numpy_on_each_cpu_backend(backend) -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4, 2)) * 4
    g = rng.standard_normal(x.shape)
    for dim in (0, 1, -1):
        s = _softmax_numpy(x, dim)
        X = to_minitorch(x, (2, 0, 1), backend).requires_grad_(True)
        out = F.softmax(X, dim)
        out.backward(minitorch.tensor(g, backend=backend))
        np.testing.assert_allclose(out.numpy(), s, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(X.grad.numpy(), _softmax_grad_numpy(s, g, dim), rtol=1e-10, atol=1e-14)
        X = minitorch.tensor(x, backend=backend, requires_grad=True)
        out = F.log_softmax(X, dim)
        out.backward(minitorch.tensor(g, backend=backend))
        np.testing.assert_allclose(out.numpy(), np.log(s), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(X.grad.numpy(), _log_softmax_grad_numpy(s, g, dim), rtol=1e-10, atol=1e-14)


def test_softmax_and_log_softmax_run_on_the_cuda_backend() -> None:
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("no CUDA GPU and the CUDA simulator is off (NUMBA_ENABLE_CUDASIM=1)")
    x = np.array([[1.0, -2.0, 3.0], [1000.0, 0.0, -1000.0]])
    g = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, -3.0]])
    s = _softmax_numpy(x, 1)
    for fn, want, want_grad in (
        (F.softmax, s, _softmax_grad_numpy(s, g, 1)),
        (F.log_softmax, _log_softmax_numpy(x, 1), _log_softmax_grad_numpy(s, g, 1)),
    ):
        X = minitorch.tensor(x, backend=minitorch.CudaBackend, requires_grad=True)
        out = fn(X, 1)
        assert out.backend is minitorch.CudaBackend
        out.backward(minitorch.tensor(g, backend=minitorch.CudaBackend))
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(X.grad.numpy(), want_grad, rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------------------------------
# cross_entropy and nll_loss


def _cross_entropy_numpy(
    logits: np.ndarray,
    target: np.ndarray,
    weight=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    g=1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-entropy with classes on axis 1 ([N, C] or [N, C, T]) and its gradient for the
    upstream gradient g: returns (loss, ∂L/∂logits).

    Each position m with target t_m ≠ ignore_index has loss ℓ_m = −w[t_m] log softmax(x_m)[t_m]
    (w = 1 without weights) and ∂ℓ_m/∂x_m = w[t_m] (softmax(x_m) − onehot(t_m)); an ignored
    position has loss 0 and gradient 0. 'none' keeps the ℓ_m, 'sum' adds them, 'mean'
    divides the sum by Σ w[t_m] over the positions that are not ignored.
    """
    x = np.moveaxis(logits, 1, -1)  # classes last: [..., C]
    classes = x.shape[-1]
    kept = target != ignore_index
    t = np.where(kept, target, 0)
    w = (np.ones(classes) if weight is None else weight)[t] * kept  # w[t_m], 0 where ignored
    onehot = np.eye(classes)[t]
    losses = -w * (_log_softmax_numpy(x, -1) * onehot).sum(axis=-1)
    dlosses = w[..., None] * (_softmax_numpy(x, -1) - onehot)  # ∂ℓ_m/∂x_m
    if reduction == "none":
        loss, grad = losses, dlosses * np.asarray(g)[..., None]
    elif reduction == "sum":
        loss, grad = losses.sum(), dlosses * g
    else:
        loss, grad = losses.sum() / w.sum(), dlosses * g / w.sum()
    return loss, np.moveaxis(grad, -1, 1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_matches_the_definition(reduction: str, weighted: bool) -> None:
    """Six examples, one of them ignored (target −100), with or without class weights."""
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((6, 4)) * 3
    target = np.array([0, 3, -100, 2, 1, 3])
    weight = rng.uniform(0.5, 2.0, 4) if weighted else None
    X = minitorch.tensor(logits, requires_grad=True)
    W = minitorch.tensor(weight) if weighted else None
    out = F.cross_entropy(X, minitorch.tensor(target, dtype=minitorch.int64), weight=W, reduction=reduction)
    g = rng.standard_normal(out.shape)
    want, want_grad = _cross_entropy_numpy(logits, target, weight, reduction=reduction, g=g)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    if reduction == "none":
        assert out.numpy()[2] == 0.0  # the ignored example
    out.backward(minitorch.tensor(g))
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), want_grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(X.grad.numpy()[2], 0.0)


def test_cross_entropy_sequence_layout_and_ignore_index() -> None:
    """Input [N, C, T] with target [N, T] (per-token classification, padding ignored)."""
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((2, 5, 3))
    target = np.array([[1, 4, 0], [2, 0, 0]])
    X = minitorch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(X, minitorch.tensor(target, dtype=minitorch.int64), ignore_index=0)
    want, want_grad = _cross_entropy_numpy(logits, target, ignore_index=0)
    np.testing.assert_allclose(out.item(), want, rtol=1e-12)
    out.backward()
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), want_grad, rtol=1e-10, atol=1e-12)


def test_cross_entropy_extreme_logits() -> None:
    """By hand (e^−1000 and e^−2000 are 0 in float64): target 0 everywhere, so the losses
    are log(1 + e^−2000) = 0, 2000 and 1000, their mean 1000; the gradient of the mean is
    (softmax − onehot) / 3 = [0, 0], [−1, 1] / 3, [−1, 1] / 3."""
    logits = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 1000.0]])
    X = minitorch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(X, minitorch.tensor([0, 0, 0], dtype=minitorch.int64))
    out.backward()
    assert np.isfinite(out.item()) and X.grad is not None and np.all(np.isfinite(X.grad.numpy()))
    np.testing.assert_allclose(out.item(), 1000.0, rtol=1e-12)
    np.testing.assert_allclose(
        X.grad.numpy(), [[0.0, 0.0], [-1 / 3, 1 / 3], [-1 / 3, 1 / 3]], rtol=1e-12, atol=1e-15
    )


def test_cross_entropy_central_differences() -> None:
    target = minitorch.tensor([2, 0, 1], dtype=minitorch.int64)
    x = minitorch.tensor(np.random.default_rng(8).standard_normal((3, 3)))
    grad_check(lambda t: F.cross_entropy(t, target), x)


def test_nll_loss_is_the_mean_negative_log_probability_and_all_ignored_is_nan() -> None:
    lp = np.log(np.random.default_rng(9).dirichlet(np.ones(3), size=4))
    target = np.array([2, 1, 1, 0])
    out = F.nll_loss(minitorch.tensor(lp), minitorch.tensor(target, dtype=minitorch.int64))
    np.testing.assert_allclose(out.item(), -lp[np.arange(4), target].mean(), rtol=1e-12)
    ignored = F.nll_loss(minitorch.tensor(lp), minitorch.tensor([-100] * 4, dtype=minitorch.int64))
    assert np.isnan(ignored.item())


def test_classification_loss_errors() -> None:
    logits = minitorch.zeros(3, 4)
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.cross_entropy(logits, minitorch.tensor([0, 4, 1], dtype=minitorch.int64))
    with pytest.raises(minitorch.ShapeError, match=r"needs a target of shape \(3,\)"):
        F.cross_entropy(logits, minitorch.tensor([0, 1], dtype=minitorch.int64))
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(logits, minitorch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, minitorch.tensor([0, 1, 2], dtype=minitorch.int64), reduction="avg")
