"""Task 4.3 against PyTorch: max/average pooling (1-D, 2-D, dilation, ties, float32) and
max-over-time pooling, values and gradients over generated windows, strides and paddings.

The project's own oracle, kept apart from `test_pooling.py` (the public tests, which check
the same things against a NumPy definition and run without PyTorch): not shipped to
students, and skipped where torch is missing. The generated cases are the public file's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.nn import functional as F
from tensor_strategies import to_minitorch
from test_pooling import pool2d_cases

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task4_3
CHECK = settings(max_examples=25, deadline=None)


def _check_against_torch(
    mt_fn, t_fn, x: np.ndarray, rng: np.random.Generator, permuted: bool = False, **kwargs
) -> None:
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


@CHECK
@given(pool2d_cases())
def test_max_pool2d_matches_torch(case) -> None:
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    _check_against_torch(
        F.max_pool2d,
        torch.nn.functional.max_pool2d,
        rng.standard_normal(shape),
        rng,
        permuted,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
    )


@CHECK
@given(pool2d_cases(), st.booleans())
def test_avg_pool2d_matches_torch(case, count_include_pad: bool) -> None:
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    _check_against_torch(
        F.avg_pool2d,
        torch.nn.functional.avg_pool2d,
        rng.standard_normal(shape),
        rng,
        permuted,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        count_include_pad=count_include_pad,
    )


def test_max_pool2d_dilation_matches_torch() -> None:
    rng = np.random.default_rng(0)
    _check_against_torch(
        F.max_pool2d,
        torch.nn.functional.max_pool2d,
        rng.standard_normal((2, 2, 7, 8)),
        rng,
        kernel_size=(3, 2),
        stride=(2, 1),
        padding=1,
        dilation=(1, 2),
    )


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), (3, 2, 1), (4, 1, 2)])
def test_pool1d_matches_torch(kernel: int, stride, padding: int) -> None:
    rng = np.random.default_rng(kernel)
    x = rng.standard_normal((2, 3, 9))
    _check_against_torch(
        F.max_pool1d,
        torch.nn.functional.max_pool1d,
        x,
        rng,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
    )
    _check_against_torch(
        F.avg_pool1d,
        torch.nn.functional.avg_pool1d,
        x,
        rng,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
    )


def test_max_over_time_matches_torch_amax() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 7))
    _check_against_torch(F.max_over_time, lambda t: t.amax(dim=2), x, rng, permuted=True)


def test_max_pool2d_ties_match_torch() -> None:
    """With ties inside a window, the gradient goes to the first maximum in row-major order."""
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]]])
    _check_against_torch(
        F.max_pool2d, torch.nn.functional.max_pool2d, x, np.random.default_rng(2), kernel_size=2, stride=1
    )


def test_max_pool2d_float32_matches_torch() -> None:
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5)).astype(np.float32)
    out = F.max_pool2d(minitorch.tensor(x, dtype=minitorch.float32), 2)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), torch.nn.functional.max_pool2d(torch.tensor(x), 2).numpy())
