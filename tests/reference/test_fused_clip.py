"""The fused gradient clipping (`minitorch/accel/fused_clip.py`): the same total norm and the same
clipped gradients as the composed `clip_grad_norm_` of task 5.4 — norm types 2, 1, 3 and ∞,
clipping or not, float64 and float32, strided gradients, gradients shared by two tensors,
mixed dtypes, the parallel kernels, non-finite norms — that `clip_grad_norm_` takes it, that
it leaves gradients alone when nothing needs clipping, and torch. (Clipping edits `.grad`
after backward and is not differentiable: there is no gradient to check.)"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minitorch
from minitorch import fast_paths, nn
from minitorch.nn.utils import clip_grad_norm_

pytestmark = pytest.mark.library

from minitorch.accel import fused_clip  # noqa: E402

NORMS = [2.0, 1.0, 3.0, float("inf")]
SHAPES = [(4, 3), (5,), (2, 2, 2), (), (300, 256)]  # the last one ≥ fused_clip.PARALLEL_MIN elements


def _arrays(seed: int, scale: float) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * scale for s in SHAPES]


def _holders(arrays: list[np.ndarray], dtype, strided: bool = False) -> list[minitorch.Tensor]:
    """Tensors whose `.grad` holds `arrays` (2-D ones as transposed views when `strided`)."""
    holders = []
    for a in arrays:
        h = minitorch.zeros(*a.shape, dtype=dtype).requires_grad_(True)
        if strided and a.ndim == 2:
            h.grad = minitorch.tensor(np.ascontiguousarray(a.T), dtype=dtype).transpose(0, 1)
            assert not h.grad._tensor.is_contiguous()
        else:
            h.grad = minitorch.tensor(a, dtype=dtype)
        holders.append(h)
    return holders


def _clip(composed: bool, arrays, dtype, max_norm: float, norm_type: float, strided: bool = False):
    """(total, clipped gradients, the holders) on one path."""
    holders = _holders(arrays, dtype, strided)
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        total = clip_grad_norm_(holders, max_norm, norm_type=norm_type)
    return total, [h.grad.numpy() for h in holders], holders


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_norm", [0.5, 1e9], ids=["clips", "no-clip"])
@pytest.mark.parametrize("norm_type", NORMS)
def test_fused_matches_composed(norm_type, max_norm, dtype, strided, monkeypatch) -> None:
    calls = []
    original = fused_clip.clip_grad_norm_
    monkeypatch.setitem(
        fast_paths._registry, "clip_grad_norm_", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    arrays = _arrays(1, scale=2.0)
    fused = _clip(False, arrays, dtype, max_norm, norm_type, strided)
    assert calls, "clip_grad_norm_ did not take the fused path"
    composed = _clip(True, arrays, dtype, max_norm, norm_type, strided)
    assert len(calls) == 1
    tol = dict(rtol=1e-12, atol=0) if dtype == np.float64 else dict(rtol=1e-6, atol=1e-30)
    assert fused[0].shape == () and fused[0].dtype == np.dtype(dtype)
    np.testing.assert_allclose(fused[0].item(), composed[0].item(), **tol)
    for k, (a, c) in enumerate(zip(fused[1], composed[1])):
        assert a.dtype == np.dtype(dtype) and a.shape == c.shape
        np.testing.assert_allclose(a, c, err_msg=f"gradient {k}", **tol)


def test_no_clip_needed_leaves_the_gradients_as_they_are() -> None:
    arrays = _arrays(2, scale=1e-3)
    holders = _holders(arrays, np.float32, strided=True)
    before = [h.grad for h in holders]
    total = clip_grad_norm_(holders, 1.0)
    assert total.item() < 1.0
    assert all(h.grad is b for h, b in zip(holders, before))  # g · 1 = g: nothing to write
    for h, a in zip(holders, arrays):
        np.testing.assert_array_equal(h.grad.numpy(), a.astype(np.float32))


def test_clipping_makes_new_gradients_and_never_writes_shared_storage() -> None:
    a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = minitorch.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()  # the backward of + may hand one tensor to both
    shared = a.grad
    clip_grad_norm_([a, b], 1.0)
    expected = 1.0 / (2.0 + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [expected] * 2, rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), [expected] * 2, rtol=1e-15)
    np.testing.assert_array_equal(shared.numpy(), [1.0, 1.0])


def test_mixed_dtypes_keep_their_own_dtype() -> None:
    arrays = _arrays(3, scale=5.0)[:3]
    for composed in (False, True):
        holders = _holders(arrays[:2], np.float32) + _holders(arrays[2:], np.float64)
        with fast_paths.plain_only() if composed else contextlib.nullcontext():
            total = clip_grad_norm_(holders, 1.0)
        assert total.dtype == np.float32
        assert [h.grad.dtype for h in holders] == [np.float32, np.float32, np.float64]
        if composed:
            np.testing.assert_allclose(total.item(), fused_total, rtol=1e-6)
            for h, g in zip(holders, fused_grads):
                np.testing.assert_allclose(h.grad.numpy(), g, rtol=1e-6)
        fused_total, fused_grads = total.item(), [h.grad.numpy() for h in holders]


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the composed path's ∞ · 0
@pytest.mark.parametrize("norm_type", NORMS)
def test_non_finite_totals(norm_type) -> None:
    for bad in (np.inf, np.nan):
        arrays = [np.array([1.0, bad]), np.array([2.0])]
        for error in (True, False):
            results = []
            for composed in (False, True):
                holders = _holders(arrays, np.float64)
                with fast_paths.plain_only() if composed else contextlib.nullcontext():
                    if error:
                        with pytest.raises(RuntimeError, match="non-finite"):
                            clip_grad_norm_(holders, 1.0, norm_type=norm_type, error_if_nonfinite=True)
                        np.testing.assert_array_equal(holders[0].grad.numpy(), arrays[0])  # untouched
                        continue
                    total = clip_grad_norm_(holders, 1.0, norm_type=norm_type)
                results.append((total.item(), [h.grad.numpy() for h in holders]))
            if not error:
                (f_total, f_grads), (c_total, c_grads) = results
                np.testing.assert_array_equal(f_total, c_total)
                for f, c in zip(f_grads, c_grads):
                    np.testing.assert_array_equal(f, c)


def test_supports_only_cpu_float_gradients() -> None:
    h = minitorch.zeros(3).requires_grad_(True)
    h.grad = minitorch.tensor([1.0, 2.0, 3.0])
    assert fused_clip.supports([h])
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("no CUDA device")
    c = minitorch.zeros(3, backend=minitorch.CudaBackend).requires_grad_(True)
    c.grad = minitorch.tensor([1.0, 2.0, 3.0], backend=minitorch.CudaBackend)
    assert not fused_clip.supports([h, c])
    np.testing.assert_allclose(clip_grad_norm_([c], 1.0).item(), np.sqrt(14.0), rtol=1e-12)


@pytest.mark.parametrize("norm_type", NORMS)
def test_matches_torch_float64(norm_type) -> None:
    torch = pytest.importorskip("torch")
    arrays = _arrays(4, scale=3.0)
    params = [nn.Parameter(minitorch.zeros(*a.shape)) for a in arrays]
    t_params = [torch.zeros(a.shape, dtype=torch.float64, requires_grad=True) for a in arrays]
    for p, tp, a in zip(params, t_params, arrays):
        p.value.grad = minitorch.tensor(a)
        tp.grad = torch.tensor(a)
    total = clip_grad_norm_(params, 1.0, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), t_total.item(), rtol=1e-12)
    for p, tp in zip(params, t_params):
        np.testing.assert_allclose(p.value.grad.numpy(), tp.grad.numpy(), rtol=1e-12, atol=1e-300)
