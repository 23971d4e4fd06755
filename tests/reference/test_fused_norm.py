"""The fused LayerNorm (`minitorch/accel/fused_norm.py`): the same values and gradients as the
composed `layer_norm` of task 6.4 (float64 and float32, with and without weight / bias,
several normalized shapes, non-contiguous inputs, both CPU backends, the parallel kernels),
one graph node, the cases it leaves to the composed path, central differences, and torch."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minitorch
from minitorch import fast_paths
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

from minitorch.accel import fused_norm  # noqa: E402

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-5)}


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 3.0 + 1.5  # not already normal


def _run(
    composed: bool,
    x: np.ndarray,
    normalized,
    w,
    b,
    g: np.ndarray,
    dtype,
    backend=None,
    eps=1e-5,
    transpose: bool = False,
):
    """(y, ∂x, ∂w, ∂b) of layer_norm on one path; `transpose` feeds a transposed (strided) view."""
    make = lambda a: minitorch.tensor(a.astype(dtype), requires_grad=True, backend=backend)  # noqa: E731
    xs = make(x.swapaxes(0, 1) if transpose else x)
    x_in = xs.transpose(0, 1) if transpose else xs  # the same values as x, non-contiguous
    assert x_in._tensor.is_contiguous() != transpose
    ws = make(w) if w is not None else None
    bs = make(b) if b is not None else None
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        y = F.layer_norm(x_in, normalized, ws, bs, eps)
        y.backward(minitorch.tensor(g.astype(dtype), backend=backend))
    grad_x = xs.grad.numpy().swapaxes(0, 1) if transpose else xs.grad.numpy()
    return y, grad_x, ws.grad.numpy() if ws is not None else None, bs.grad.numpy() if bs is not None else None


SHAPES = [
    pytest.param((4, 6), (6,), id="2d"),
    pytest.param((2, 3, 5), (5,), id="3d"),
    pytest.param((2, 3, 4), (3, 4), id="two-normalized-dims"),
    pytest.param((7,), (7,), id="one-row"),
    pytest.param((5, 80, 64), (64,), id="parallel-kernels"),  # ≥ PARALLEL_MIN values
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("affine", ["weight+bias", "weight", "bias", "none"])
@pytest.mark.parametrize("shape, normalized", SHAPES)
def test_fused_matches_composed_values_and_gradients(shape, normalized, affine, dtype) -> None:
    x, g = _rand(*shape, seed=1), _rand(*shape, seed=2)
    w = _rand(*normalized, seed=3) if "weight" in affine else None
    b = _rand(*normalized, seed=4) if "bias" in affine else None
    fused = _run(False, x, normalized, w, b, g, dtype)
    composed = _run(True, x, normalized, w, b, g, dtype)
    assert fused[0].history.last_fn is fused_norm.LayerNormFunction, "the fused path was not taken"
    assert fused[0].dtype == np.dtype(dtype) and fused[0].shape == shape
    for what, a, c in zip(
        ("y", "∂x", "∂weight", "∂bias"),
        (fused[0].numpy(),) + fused[1:],
        (composed[0].numpy(),) + composed[1:],
    ):
        if c is None:
            assert a is None
            continue
        assert a.dtype == np.dtype(dtype), f"{what}: dtype {a.dtype}"
        np.testing.assert_allclose(a, c, err_msg=what, **TOL[dtype])


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_contiguous_input_both_backends_and_eps(backend, dtype) -> None:
    x, g = _rand(6, 4, 8, seed=5), _rand(6, 4, 8, seed=6)
    w, b = _rand(8, seed=7), _rand(8, seed=8)
    fused = _run(False, x, (8,), w, b, g, dtype, backend=backend, eps=0.5, transpose=True)
    composed = _run(True, x, (8,), w, b, g, dtype, backend=backend, eps=0.5, transpose=True)
    assert fused[0].history.last_fn is fused_norm.LayerNormFunction
    assert fused[0].backend is backend
    np.testing.assert_allclose(fused[0].numpy(), composed[0].numpy(), **TOL[dtype])
    for a, c in zip(fused[1:], composed[1:]):
        np.testing.assert_allclose(a, c, **TOL[dtype])


def test_constant_rows_do_not_divide_by_zero() -> None:
    x = np.full((3, 5), 2.5)
    fused = _run(False, x, (5,), None, None, _rand(3, 5, seed=1), np.float64)
    composed = _run(True, x, (5,), None, None, _rand(3, 5, seed=1), np.float64)
    np.testing.assert_allclose(fused[0].numpy(), 0.0)
    np.testing.assert_allclose(fused[1], composed[1], rtol=1e-10, atol=1e-12)


def test_unsupported_cases_take_the_composed_path(monkeypatch) -> None:
    calls = []
    original = fused_norm.LayerNormFunction.apply
    monkeypatch.setattr(fused_norm.LayerNormFunction, "apply", lambda *a: calls.append(1) or original(*a))
    x32 = minitorch.tensor(_rand(3, 4).astype(np.float32), requires_grad=True)
    w64 = minitorch.tensor(_rand(4, seed=1), requires_grad=True)  # float64 weight, float32 input: promotes
    y = F.layer_norm(x32, 4, w64)
    assert not calls and y.dtype == np.float64
    with fast_paths.plain_only():
        expected = F.layer_norm(x32, 4, w64)
    np.testing.assert_array_equal(y.numpy(), expected.numpy())
    w_scalar = minitorch.tensor(_rand(1, seed=2))  # broadcasts in the composed code, not normalized_shape
    F.layer_norm(minitorch.tensor(_rand(3, 4)), 4, w_scalar)
    assert not calls
    F.layer_norm(minitorch.tensor(_rand(3, 4)), 4)
    assert calls, "a supported call did not take the fused path"


def test_grad_check_on_the_fused_path() -> None:
    x = minitorch.tensor(_rand(3, 2, 5, seed=1))
    w, b = minitorch.tensor(_rand(2, 5, seed=2)), minitorch.tensor(_rand(2, 5, seed=3))
    grad_check(lambda x, w, b: F.layer_norm(x, (2, 5), w, b, 1e-3), x, w, b)
    grad_check(lambda x: F.layer_norm(x, 5), minitorch.tensor(_rand(4, 5, seed=4)))


def test_matches_torch_float64() -> None:
    torch = pytest.importorskip("torch")
    x, g, w, b = _rand(3, 7, 12, seed=1), _rand(3, 7, 12, seed=2), _rand(12, seed=3), _rand(12, seed=4)
    y, dx, dw, db = _run(False, x, (12,), w, b, g, np.float64)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.layer_norm(tx, (12,), tw, tb, 1e-5)
    ty.backward(torch.tensor(g))
    for a, t in ((y.numpy(), ty), (dx, tx.grad), (dw, tw.grad), (db, tb.grad)):
        np.testing.assert_allclose(a, t.detach().numpy(), rtol=1e-10, atol=1e-12)
