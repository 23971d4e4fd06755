"""Task 5.4: gradient clipping, checked without PyTorch. clip_grad_norm_ against its formula
in NumPy (2-norm, 1-norm, 3-norm, inf-norm, no clipping needed, None gradients, float32) and
by hand, clip_grad_value_ against np.clip, the 0-d total norm, non-finite norms, and the
ways of passing parameters. (The project's own suite also compares them with
torch.nn.utils: `test_clip_grad_torch.py`.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.utils import clip_grad_norm_, clip_grad_value_

pytestmark = pytest.mark.task5_4


def numpy_clip_grad_norm(grads: list, max_norm: float, norm_type: float) -> tuple[float, list]:
    """The formula, for the gradients that are not None:

        total = (Σ over all entries of all gradients |g|^p)^(1/p)      (p = inf: max |g|)
        coef  = min(1, max_norm / (total + 1e−6))
        g ← coef · g

    Returns (total, the clipped gradients; None stays None)."""
    present = [np.abs(g).ravel() for g in grads if g is not None]
    entries = np.concatenate(present)
    if np.isinf(norm_type):
        total = float(entries.max())
    else:
        total = float(np.sum(entries**norm_type) ** (1.0 / norm_type))
    coef = min(1.0, max_norm / (total + 1e-6))
    return total, [None if g is None else g * coef for g in grads]


def _params(grads: list, dtype=np.float64) -> list:
    """minitorch Parameters holding the given gradients (None: no gradient)."""
    params = []
    for g in grads:
        shape = (3,) if g is None else g.shape
        p = nn.Parameter(minitorch.zeros(*shape, dtype=dtype))
        if g is not None:
            p.value.grad = minitorch.tensor(g, dtype=dtype)
        params.append(p)
    return params


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
def test_clip_grad_norm_matches_the_formula(norm_type, max_norm) -> None:
    grads = _grads(scale=2.0)
    params = _params(grads)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected_total, expected = numpy_clip_grad_norm(grads, max_norm, float(norm_type))
    assert isinstance(total, minitorch.Tensor) and total.shape == ()
    np.testing.assert_allclose(total.item(), expected_total, rtol=1e-12)
    for k, (p, e) in enumerate(zip(params, expected)):
        if e is None:
            assert p.value.grad is None, f"parameter {k} had no gradient and must keep none"
            continue
        np.testing.assert_allclose(p.value.grad.numpy(), e, rtol=1e-12, err_msg=f"parameter {k}")
    if max_norm == 0.5:  # the clipped gradients have (almost exactly) the norm max_norm
        flat = np.concatenate([p.value.grad.numpy().ravel() for p in params if p.value.grad is not None])
        p_ = float(norm_type)
        norm = np.abs(flat).max() if np.isinf(p_) else np.sum(np.abs(flat) ** p_) ** (1 / p_)
        np.testing.assert_allclose(norm, 0.5, rtol=1e-5)
    else:  # nothing to clip: the gradients keep their values
        for p, g in zip(params, grads):
            if g is not None:
                np.testing.assert_allclose(p.value.grad.numpy(), g, rtol=1e-12)


def test_clip_grad_norm_by_hand() -> None:
    """Gradients (3, 4) and (12,): 2-norm √(9 + 16 + 144) = 13, 1-norm 19, inf-norm 12.
    With max_norm 6.5 the 2-norm clipping halves every entry (up to the 1e-6)."""
    for norm_type, total in [(2.0, 13.0), (1.0, 19.0), ("inf", 12.0)]:
        params = _params([np.array([3.0, 4.0]), np.array([12.0])])
        assert clip_grad_norm_(params, 1e6, norm_type=norm_type).item() == pytest.approx(total, rel=1e-12)
    params = _params([np.array([3.0, 4.0]), np.array([12.0])])
    clip_grad_norm_(params, 6.5)
    coef = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(params[0].value.grad.numpy(), [3 * coef, 4 * coef], rtol=1e-12)
    np.testing.assert_allclose(params[1].value.grad.numpy(), [12 * coef], rtol=1e-12)


def test_clip_grad_norm_float32_and_parameters_of_a_model() -> None:
    grads = [None if g is None else g.astype(np.float32) for g in _grads(1, scale=3.0)]
    params = _params(grads, dtype=np.float32)
    total = clip_grad_norm_(iter(params), 1.0)  # any iterable
    expected_total, expected = numpy_clip_grad_norm(
        [None if g is None else g.astype(np.float64) for g in grads], 1.0, 2.0
    )
    assert total.dtype == np.float32
    np.testing.assert_allclose(total.item(), expected_total, rtol=1e-6)
    for p, e in zip(params, expected):
        if e is not None:
            assert p.value.grad.dtype == np.float32
            np.testing.assert_allclose(p.value.grad.numpy(), e, rtol=1e-5, atol=1e-7)
    layer = nn.Linear(3, 2)
    (layer(minitorch.ones(4, 3)) * 100.0).sum().backward()
    before = np.sqrt(sum((p.value.grad.numpy() ** 2).sum() for p in layer.parameters()))
    np.testing.assert_allclose(clip_grad_norm_(layer.parameters(), 1.0).item(), before, rtol=1e-12)


def test_clip_grad_norm_accepts_tensors_and_a_single_parameter() -> None:
    t = minitorch.tensor([3.0, 4.0], requires_grad=True)
    (t * minitorch.tensor([3.0, 4.0])).sum().backward()  # grad = (3, 4): norm 5
    assert clip_grad_norm_(t, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(t.grad.numpy(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)], rtol=1e-12)
    p = nn.Parameter(minitorch.tensor([0.0, 0.0]))
    p.value.grad = minitorch.tensor([0.0, 0.0])
    assert clip_grad_norm_(p, 1.0).item() == 0.0  # all zero: the 1e-6 keeps it finite
    np.testing.assert_array_equal(p.value.grad.numpy(), [0.0, 0.0])
    nothing = clip_grad_norm_([nn.Parameter(minitorch.zeros(2))], 1.0)  # no gradients at all
    assert nothing.shape == () and nothing.item() == 0.0


def test_clipping_does_not_write_into_shared_gradient_storage() -> None:
    a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = minitorch.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()  # the backward of + may hand one tensor to both
    clip_grad_norm_([a, b], 1.0)
    expected = 1.0 / (2.0 + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [expected] * 2, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), [expected] * 2, rtol=1e-12)


def test_non_finite_norms() -> None:
    params = _params([np.array([1.0, np.inf]), np.array([2.0])])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(params[0].value.grad.numpy(), [1.0, np.inf])  # untouched
    params = _params([np.array([1.0, np.nan]), np.array([2.0])])
    total = clip_grad_norm_(params, 1.0)
    assert np.isnan(total.item())  # a NaN entry makes the sum NaN
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("clip_value", [0.1, 1.0, 10.0])
def test_clip_grad_value_clamps_every_entry(clip_value) -> None:
    grads = _grads(2, scale=2.0)
    params = _params(grads)
    assert clip_grad_value_(params, clip_value) is None
    for p, g in zip(params, grads):
        if g is None:
            assert p.value.grad is None
            continue
        np.testing.assert_array_equal(p.value.grad.numpy(), np.clip(g, -clip_value, clip_value))
        assert np.abs(p.value.grad.numpy()).max() <= clip_value


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="clip_grad_norm_"):
        clip_grad_norm_([1.0], 1.0)
    with pytest.raises(ValueError, match="norm_type must be a positive number"):
        clip_grad_norm_([], 1.0, norm_type=0)
    with pytest.raises(TypeError, match="clip_grad_value_"):
        clip_grad_value_(["w"], 1.0)
