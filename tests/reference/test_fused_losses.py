"""The fused softmax + cross-entropy (`minitorch/accel/fused_losses.py`): the same values and
gradients as the composed `cross_entropy` (nll_loss ∘ log_softmax of task 4.4) — float64 and
float32, every reduction, class weights, ignore_index, the [N, C], [N, C, d…] and unbatched
layouts, non-contiguous logits, both CPU backends, the parallel kernels — one graph node,
the same errors, the cases it leaves to the composed path, central differences, and torch."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minitorch
from minitorch import fast_paths
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

from minitorch.accel import fused_losses  # noqa: E402

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-6)}


def _case(shape: tuple[int, ...], seed: int, ignore: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Logits of `shape` and matching class-index targets (every 3rd set to `ignore`)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3.0
    classes = shape[0] if len(shape) == 1 else shape[1]
    t_shape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, classes, t_shape)
    if ignore is not None and t.ndim:
        t.reshape(-1)[::3] = ignore
    return x, t


def _run(
    composed: bool,
    x: np.ndarray,
    t: np.ndarray,
    dtype,
    backend=None,
    weight=None,
    layout: str = "plain",
    **kw,
):
    """(loss, ∂x) of cross_entropy on one path. `layout` "transposed" feeds [N, C] logits as a
    transposed view, "permuted" feeds [N, C, T] as [N, T, C].permute(0, 2, 1) (non-contiguous)."""
    if layout == "transposed":
        leaf = minitorch.tensor(x.T.astype(dtype), requires_grad=True, backend=backend)
        logits = leaf.transpose(0, 1)
    elif layout == "permuted":
        leaf = minitorch.tensor(np.moveaxis(x, 1, 2).astype(dtype), requires_grad=True, backend=backend)
        logits = leaf.permute(0, 2, 1)
    else:
        leaf = logits = minitorch.tensor(x.astype(dtype), requires_grad=True, backend=backend)
    assert logits.shape == x.shape
    assert logits._tensor.is_contiguous() == (layout == "plain")
    w = None if weight is None else minitorch.tensor(weight.astype(dtype), backend=backend)
    target = minitorch.tensor(t, dtype=minitorch.int64, backend=backend)
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        loss = F.cross_entropy(logits, target, weight=w, **kw)
        g = np.random.default_rng(99).standard_normal(loss.shape)
        loss.backward(minitorch.tensor(g.astype(dtype), backend=backend))
    grad = leaf.grad.numpy()
    if layout == "transposed":
        grad = grad.T
    elif layout == "permuted":
        grad = np.moveaxis(grad, 2, 1)
    return loss, grad


def _compare(fused, composed, dtype) -> None:
    assert fused[0].history.last_fn is fused_losses.CrossEntropyFunction, "the fused path was not taken"
    assert composed[0].history.last_fn is not fused_losses.CrossEntropyFunction
    assert fused[0].shape == composed[0].shape
    assert fused[0].dtype == np.dtype(dtype) and fused[1].dtype == np.dtype(dtype)
    np.testing.assert_allclose(fused[0].numpy(), composed[0].numpy(), err_msg="loss", **TOL[dtype])
    np.testing.assert_allclose(fused[1], composed[1], err_msg="∂x", **TOL[dtype])


SHAPES = [
    pytest.param((6, 4), id="2d"),
    pytest.param((3, 5, 4), id="sequence"),  # [N, C, T], target [N, T]
    pytest.param((2, 3, 2, 3), id="two-extra-dims"),
    pytest.param((7,), id="unbatched"),  # [C], 0-d target
    pytest.param((300, 65), id="parallel-kernels"),  # ≥ PARALLEL_MIN logits
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", ["plain", "weight", "ignore_index", "weight+ignore_index"])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_matches_composed_values_and_gradients(shape, options, reduction, dtype) -> None:
    ignore = 1 if "ignore_index" in options else None  # a real class id, ignored
    x, t = _case(shape, seed=len(shape) * 7 + shape[-1], ignore=ignore)
    classes = shape[0] if len(shape) == 1 else shape[1]
    weight = np.random.default_rng(3).uniform(0.2, 2.0, classes) if "weight" in options else None
    kw = dict(weight=weight, reduction=reduction)
    if ignore is not None:
        kw["ignore_index"] = ignore
    _compare(_run(False, x, t, dtype, **kw), _run(True, x, t, dtype, **kw), dtype)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout, shape", [("transposed", (5, 4)), ("permuted", (3, 6, 5))])
def test_non_contiguous_logits_and_both_backends(layout, shape, dtype, backend) -> None:
    x, t = _case(shape, seed=11, ignore=-100)
    for reduction in ("mean", "none"):
        fused = _run(False, x, t, dtype, backend=backend, layout=layout, reduction=reduction)
        composed = _run(True, x, t, dtype, backend=backend, layout=layout, reduction=reduction)
        _compare(fused, composed, dtype)
        assert fused[0].backend is backend


def test_ignored_rows_get_no_gradient_and_all_ignored_mean_is_nan() -> None:
    x, t = _case((6, 3), seed=4, ignore=-100)
    loss, grad = _run(False, x, t, np.float64, reduction="none")
    ignored = t == -100
    assert np.all(loss.numpy()[ignored] == 0.0) and np.all(grad[ignored] == 0.0)
    assert np.all(np.abs(grad[~ignored]).sum(1) > 0)
    everything = np.full(4, -100)
    fused = _run(False, x[:4], everything, np.float64)
    composed = _run(True, x[:4], everything, np.float64)
    assert np.isnan(fused[0].item()) and np.isnan(composed[0].item())
    np.testing.assert_array_equal(np.isnan(fused[1]), np.isnan(composed[1]))
    np.testing.assert_array_equal(_run(False, x[:4], everything, np.float64, reduction="sum")[0].numpy(), 0.0)


def test_one_graph_node_and_targets_as_arrays() -> None:
    x, t = _case((4, 3), seed=5)
    logits = minitorch.tensor(x, requires_grad=True)
    loss = F.cross_entropy(logits, t)  # a NumPy array of class ids is accepted, as in the composed path
    assert loss.history.last_fn is fused_losses.CrossEntropyFunction
    assert [i for i in loss.history.inputs if isinstance(i, minitorch.Tensor)] == [logits]
    with fast_paths.plain_only():
        expected = F.cross_entropy(logits, list(t))
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-14)


def test_extreme_logits_are_finite() -> None:
    x = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 1000.0]])
    t = np.zeros(3, dtype=np.int64)
    fused, composed = _run(False, x, t, np.float64), _run(True, x, t, np.float64)
    assert np.isfinite(fused[0].item()) and np.all(np.isfinite(fused[1]))
    _compare(fused, composed, np.float64)


def test_the_same_errors_as_the_composed_path() -> None:
    logits = minitorch.zeros(3, 4)
    cases = [
        (IndexError, "target 4 is out of bounds for 4 classes", dict(target=[0, 4, 1])),
        (minitorch.ShapeError, r"needs a target of shape \(3,\)", dict(target=[0, 1])),
        (TypeError, "int64", dict(target=minitorch.tensor([0.0, 1.0, 2.0]))),
        (ValueError, "reduction", dict(target=[0, 1, 2], reduction="avg")),
        (minitorch.ShapeError, "weight must have shape", dict(target=[0, 1, 2], weight=minitorch.ones(3))),
        (
            TypeError,
            "weight",
            dict(target=[0, 1, 2], weight=minitorch.tensor([1, 1, 1, 1], dtype=minitorch.int64)),
        ),
    ]
    for error, message, kw in cases:
        target = kw.pop("target")
        if not isinstance(target, minitorch.Tensor):
            target = minitorch.tensor(target, dtype=minitorch.int64)
        for composed in (False, True):
            with fast_paths.plain_only() if composed else contextlib.nullcontext():
                with pytest.raises(error, match=message):
                    F.cross_entropy(logits, target, **kw)


def test_unsupported_cases_take_the_composed_path(monkeypatch) -> None:
    calls = []
    original = fused_losses.CrossEntropyFunction.apply
    monkeypatch.setattr(
        fused_losses.CrossEntropyFunction, "apply", lambda *a: calls.append(1) or original(*a)
    )
    empty = minitorch.tensor(np.zeros((0, 3)), requires_grad=True)
    target = minitorch.tensor(np.zeros(0, dtype=np.int64))
    assert np.isnan(F.cross_entropy(empty, target).item())  # the composed path's answer: 0 / 0
    assert F.cross_entropy(empty, target, reduction="none").shape == (0,)
    assert not calls
    assert not fused_losses.supports(minitorch.tensor([[1, 2]], dtype=minitorch.int64), None)
    F.cross_entropy(minitorch.tensor(np.ones((2, 3))), minitorch.tensor([0, 2], dtype=minitorch.int64))
    assert calls, "a supported call did not take the fused path"


def test_cuda_logits_take_the_composed_path() -> None:
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("no CUDA device")
    x, t = _case((4, 5), seed=6)
    logits = minitorch.tensor(x, backend=minitorch.CudaBackend)
    assert not fused_losses.supports(logits, None)
    loss = F.cross_entropy(logits, minitorch.tensor(t, dtype=minitorch.int64, backend=minitorch.CudaBackend))
    with fast_paths.plain_only():
        expected = F.cross_entropy(minitorch.tensor(x), minitorch.tensor(t, dtype=minitorch.int64))
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)


def test_grad_check_on_the_fused_path() -> None:
    x, t = _case((3, 4, 2), seed=7)
    t[0, 1] = 2  # ignored below
    weight = minitorch.tensor([0.5, 1.0, 2.0, 1.5])
    target = minitorch.tensor(t, dtype=minitorch.int64)
    for reduction in ("mean", "sum", "none"):
        grad_check(
            lambda x: F.cross_entropy(x, target, weight=weight, ignore_index=2, reduction=reduction),
            minitorch.tensor(x),
        )
    grad_check(
        lambda x: F.cross_entropy(x, minitorch.tensor(1, dtype=minitorch.int64)), minitorch.tensor(x[0, :, 0])
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4)])
def test_matches_torch_float64(shape, reduction) -> None:
    torch = pytest.importorskip("torch")
    x, t = _case(shape, seed=8, ignore=-100)
    weight = np.random.default_rng(9).uniform(0.5, 2.0, shape[1])
    fused = _run(False, x, t, np.float64, weight=weight, reduction=reduction)
    assert fused[0].history.last_fn is fused_losses.CrossEntropyFunction
    tx = torch.tensor(x, requires_grad=True)
    t_loss = torch.nn.functional.cross_entropy(
        tx, torch.tensor(t), weight=torch.tensor(weight), reduction=reduction
    )
    t_loss.backward(torch.tensor(np.random.default_rng(99).standard_normal(t_loss.shape)))
    np.testing.assert_allclose(fused[0].numpy(), t_loss.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fused[1], tx.grad.numpy(), rtol=1e-10, atol=1e-13)
