"""Task 5.4 against PyTorch (the project's own oracle; not shipped to students, whose public
tests in `test_clip_grad.py` use the formula in NumPy instead): clip_grad_norm_ and
clip_grad_value_ on the same gradients as torch.nn.utils (2-norm, 1-norm, 3-norm, inf-norm,
no clipping needed, None gradients, float32), and non-finite norms."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.utils import clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task5_4


def _params(grads: list, dtype=np.float64):
    """minitorch Parameters and torch tensors holding the same gradients (None: no gradient)."""
    params, t_params = [], []
    for g in grads:
        shape = (3,) if g is None else g.shape
        p = nn.Parameter(minitorch.zeros(*shape, dtype=dtype))
        t = torch.zeros(
            shape, dtype=torch.float64 if dtype == np.float64 else torch.float32, requires_grad=True
        )
        if g is not None:
            p.value.grad = minitorch.tensor(g, dtype=dtype)
            t.grad = torch.tensor(g, dtype=t.dtype)
        params.append(p)
        t_params.append(t)
    return params, t_params


def _grads(seed: int = 0, scale: float = 1.0) -> list:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((4, 3)) * scale,
        None,
        rng.standard_normal(5) * scale,
        rng.standard_normal((2, 2, 2)) * scale,
    ]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6], ids=["clips", "no-clip"])
def test_clip_grad_norm_matches_torch(norm_type, max_norm) -> None:
    params, t_params = _params(_grads(scale=2.0))
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type=norm_type)
    assert isinstance(total, minitorch.Tensor) and total.shape == ()
    np.testing.assert_allclose(total.item(), t_total.item(), rtol=1e-12)
    for k, (p, t) in enumerate(zip(params, t_params)):
        if t.grad is None:
            assert p.value.grad is None, f"parameter {k} had no gradient and must keep none"
            continue
        np.testing.assert_allclose(p.value.grad.numpy(), t.grad.numpy(), rtol=1e-12, err_msg=f"parameter {k}")
    if max_norm == 0.5:  # the clipped gradients have (almost exactly) the norm max_norm
        flat = np.concatenate([p.value.grad.numpy().ravel() for p in params if p.value.grad is not None])
        p_ = float(norm_type)
        norm = np.abs(flat).max() if np.isinf(p_) else np.sum(np.abs(flat) ** p_) ** (1 / p_)
        np.testing.assert_allclose(norm, 0.5, rtol=1e-5)


def test_clip_grad_norm_float32_and_parameters_of_a_model() -> None:
    params, t_params = _params(_grads(1, scale=3.0), dtype=np.float32)
    total = clip_grad_norm_(iter(params), 1.0)  # any iterable
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0)
    assert total.dtype == np.float32
    np.testing.assert_allclose(total.item(), t_total.item(), rtol=1e-6)
    for p, t in zip(params, t_params):
        if t.grad is not None:
            assert p.value.grad.dtype == np.float32
            np.testing.assert_allclose(p.value.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)
    layer = nn.Linear(3, 2)
    (layer(minitorch.ones(4, 3)) * 100.0).sum().backward()
    before = np.sqrt(sum((p.value.grad.numpy() ** 2).sum() for p in layer.parameters()))
    np.testing.assert_allclose(clip_grad_norm_(layer.parameters(), 1.0).item(), before, rtol=1e-12)


def test_non_finite_norms() -> None:
    grads = [np.array([1.0, np.inf]), np.array([2.0])]
    params, _ = _params(grads)
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(params[0].value.grad.numpy(), [1.0, np.inf])  # untouched
    params, t_params = _params([np.array([1.0, np.nan]), np.array([2.0])])
    total = clip_grad_norm_(params, 1.0)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0)
    assert np.isnan(total.item()) and np.isnan(t_total.item())
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("clip_value", [0.1, 1.0, 10.0])
def test_clip_grad_value_matches_torch(clip_value) -> None:
    params, t_params = _params(_grads(2, scale=2.0))
    assert clip_grad_value_(params, clip_value) is None
    torch.nn.utils.clip_grad_value_(t_params, clip_value)
    for p, t in zip(params, t_params):
        if t.grad is None:
            assert p.value.grad is None
            continue
        np.testing.assert_array_equal(p.value.grad.numpy(), t.grad.numpy())
        assert np.abs(p.value.grad.numpy()).max() <= clip_value
