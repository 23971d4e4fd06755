"""Task 4.3: max/average pooling (1-D, 2-D) and max-over-time pooling — values and gradients
against a NumPy definition on every CPU backend and against PyTorch over generated
windows, strides and paddings; central differences; ties; a clear error on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from tensor_strategies import to_minitorch

pytestmark = pytest.mark.task4_3
CHECK = settings(max_examples=25, deadline=None)


def _torch():
    return pytest.importorskip("torch")


def _check_against_torch(mt_fn, t_fn, x: np.ndarray, rng: np.random.Generator, permuted: bool = False, **kwargs) -> None:
    torch = _torch()
    order = tuple(reversed(range(x.ndim))) if permuted else tuple(range(x.ndim))
    X = to_minitorch(x, order).requires_grad_(True)
    out = mt_fn(X, **kwargs)
    tx = torch.tensor(x, requires_grad=True)
    t_out = t_fn(tx, **kwargs)
    assert out.shape == tuple(t_out.shape)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@st.composite
def pool2d_cases(draw):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = draw(st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(1, 3))))
    padding = (draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2)))
    h = draw(st.integers(max(1, kh - 2 * padding[0]), kh + 4))
    w = draw(st.integers(max(1, kw - 2 * padding[1]), kw + 4))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, w)
    return shape, (kh, kw), stride, padding, draw(st.booleans()), draw(st.integers(0, 2**31 - 1))


@CHECK
@given(pool2d_cases())
def test_max_pool2d_matches_torch(case) -> None:
    torch = _torch()
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    _check_against_torch(F.max_pool2d, torch.nn.functional.max_pool2d, rng.standard_normal(shape), rng, permuted,
                         kernel_size=kernel, stride=stride, padding=padding)


@CHECK
@given(pool2d_cases(), st.booleans())
def test_avg_pool2d_matches_torch(case, count_include_pad: bool) -> None:
    torch = _torch()
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    _check_against_torch(F.avg_pool2d, torch.nn.functional.avg_pool2d, rng.standard_normal(shape), rng, permuted,
                         kernel_size=kernel, stride=stride, padding=padding, count_include_pad=count_include_pad)


def test_max_pool2d_dilation_matches_torch() -> None:
    torch = _torch()
    rng = np.random.default_rng(0)
    _check_against_torch(F.max_pool2d, torch.nn.functional.max_pool2d, rng.standard_normal((2, 2, 7, 8)), rng,
                         kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=(1, 2))


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), (3, 2, 1), (4, 1, 2)])
def test_pool1d_matches_torch(kernel: int, stride, padding: int) -> None:
    torch = _torch()
    rng = np.random.default_rng(kernel)
    x = rng.standard_normal((2, 3, 9))
    _check_against_torch(F.max_pool1d, torch.nn.functional.max_pool1d, x, rng,
                         kernel_size=kernel, stride=stride, padding=padding)
    _check_against_torch(F.avg_pool1d, torch.nn.functional.avg_pool1d, x, rng,
                         kernel_size=kernel, stride=stride, padding=padding)


def test_max_over_time_matches_torch_amax() -> None:
    torch = _torch()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 7))
    _check_against_torch(F.max_over_time, lambda t: t.amax(dim=2), x, rng, permuted=True)


def test_max_over_time_gradient_goes_to_first_maximum() -> None:
    x = minitorch.tensor([[[1.0, 5.0, 5.0, 2.0], [3.0, 3.0, 3.0, 3.0]]], requires_grad=True)
    out = F.max_over_time(x)
    assert out.shape == (1, 2) and out.numpy().tolist() == [[5.0, 3.0]]
    out.backward(minitorch.tensor([[2.0, 7.0]]))
    assert x.grad is not None
    assert x.grad.numpy().tolist() == [[[0.0, 2.0, 0.0, 0.0], [7.0, 0.0, 0.0, 0.0]]]


def test_max_pool2d_ties_match_torch() -> None:
    """With ties inside a window, the gradient goes to the first maximum in row-major order."""
    torch = _torch()
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]]])
    _check_against_torch(F.max_pool2d, torch.nn.functional.max_pool2d, x, np.random.default_rng(2),
                         kernel_size=2, stride=1)


@pytest.mark.parametrize("fn", [F.max_pool2d, F.avg_pool2d])
def test_pool2d_central_differences(fn) -> None:
    rng = np.random.default_rng(3)
    # distinct values, well separated, so the argmax is stable under ±ε
    x = rng.permutation(60).reshape(1, 3, 4, 5) * 0.1
    grad_check(lambda t: fn(t, (2, 3), (1, 2), (1, 1)), minitorch.tensor(x))


def _pool_numpy(x: np.ndarray, k, s, p, reduce) -> np.ndarray:
    """The definition: reduce over each window of x [N, C, H, W] padded with NaN (skipped)."""
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])], constant_values=np.nan)
    oh, ow = (xp.shape[2] - k[0]) // s[0] + 1, (xp.shape[3] - k[1]) // s[1] + 1
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce(xp[:, :, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]].reshape(x.shape[:2] + (-1,)), axis=2)
    return out


CPU_BACKENDS = [pytest.param(minitorch.SimpleBackend, id="simple"), pytest.param(minitorch.FastBackend, id="fast")]


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_pooling_matches_the_definition_on_each_backend(backend) -> None:
    """Values against NumPy; gradients: max sends g to the window's first maximum, avg
    (count_include_pad=False) spreads g over the window's positions inside x."""
    rng = np.random.default_rng(5)
    x = np.round(rng.standard_normal((2, 2, 5, 6)) * 2) / 2  # ties
    X = to_minitorch(x, (3, 2, 1, 0), backend).requires_grad_(True)
    k, s, p = (3, 2), (2, 2), (1, 1)
    out = F.max_pool2d(X, k, s, p)
    np.testing.assert_array_equal(out.numpy(), _pool_numpy(x, k, s, p, np.nanmax))
    avg = F.avg_pool2d(X, k, s, p, count_include_pad=False)
    np.testing.assert_allclose(avg.numpy(), _pool_numpy(x, k, s, p, np.nanmean), rtol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=backend))
    assert X.grad is not None
    want = np.zeros_like(x)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-np.inf)
    for n, c, i, j in np.ndindex(*out.shape):
        window = xp[n, c, i * 2 : i * 2 + 3, j * 2 : j * 2 + 2]
        a, b = np.unravel_index(np.argmax(window), window.shape)  # the first maximum
        want[n, c, i * 2 + a - 1, j * 2 + b - 1] += g[n, c, i, j]
    np.testing.assert_allclose(X.grad.numpy(), want, rtol=1e-12)
    grad_check(lambda t: F.avg_pool1d(t, 3, 2, 1), minitorch.tensor(x[:, :, 0], backend=backend))
    grad_check(lambda t: F.max_pool1d(t, 2, 1), minitorch.tensor(rng.permutation(12).reshape(1, 2, 6) * 0.1, backend=backend))


def test_max_pool_of_a_window_of_minus_infinity_points_inside_the_input() -> None:
    """A window holding only −inf has max −inf and (like PyTorch) its gradient goes to its
    first position inside x, never outside the input."""
    x = minitorch.tensor([[[[-np.inf, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]]]], requires_grad=True)
    out = F.max_pool2d(x, 2, stride=1, padding=1)  # out [1, 1, 3, 4]
    assert out.numpy()[0, 0, 0, 0] == -np.inf and out.numpy()[0, 0, 1, 3] == 2.0
    out.sum().backward()
    assert x.grad is not None
    # the windows seeing only −inf send their gradient to (0, 0) or (1, 0), as PyTorch does
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[4.0, 0.0, 2.0], [2.0, 0.0, 4.0]])


def test_pooling_on_the_cuda_backend_says_it_is_not_implemented() -> None:
    x = minitorch.zeros(1, 2, 4, 4, backend=minitorch.CudaBackend)
    with pytest.raises(NotImplementedError, match=r"max pooling.*CUDA backend"):
        F.max_pool2d(x, 2)
    with pytest.raises(NotImplementedError, match=r"average pooling.*CUDA backend"):
        F.avg_pool2d(x, 2)


def test_max_pool2d_float32_keeps_dtype() -> None:
    torch = _torch()
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5)).astype(np.float32)
    out = F.max_pool2d(minitorch.tensor(x, dtype=minitorch.float32), 2)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), torch.nn.functional.max_pool2d(torch.tensor(x), 2).numpy())


@pytest.mark.parametrize(
    "fn,shape,kwargs,message",
    [
        (F.max_pool2d, (2, 3, 5), {"kernel_size": 2}, "max_pool2d: input must be 4-D"),
        (F.avg_pool2d, (1, 1, 3, 3), {"kernel_size": 4}, "larger than the padded input"),
        (F.max_pool2d, (1, 1, 5, 5), {"kernel_size": 2, "padding": 2}, "at most half the window"),
        (F.max_pool1d, (2, 5), {"kernel_size": 2}, "max_pool1d: input must be 3-D"),
        (F.max_over_time, (2, 5), {}, "max_over_time: input must be 3-D"),
        (F.max_pool2d, (1, 1, 4, 4), {"kernel_size": 0}, "kernel_size must be an integer ≥ 1"),
    ],
)
def test_pooling_errors(fn, shape, kwargs, message) -> None:
    with pytest.raises((ValueError, minitorch.ShapeError)) as info:
        fn(minitorch.zeros(*shape), **kwargs)
    assert message in str(info.value)
