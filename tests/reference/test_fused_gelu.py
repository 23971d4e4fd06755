"""The fused exact GELU (`minitorch/accel/fused_gelu.py`): its erf within 3 ulp of the C
library's over the float64 range (special values exact), the GELU and its gradient within a
few ulp of the plain path (`operators.gelu`, `operators.gelu_back`) in float64 and float32,
on contiguous and strided inputs, small (one thread) and large (parallel); one graph node;
the cases it leaves to the plain path; central differences. Its agreement with PyTorch is
tests/reference/test_gelu.py's, which runs the fast backend through this path."""

from __future__ import annotations

import contextlib
import math

import numba
import numpy as np
import pytest

import minitorch
from minitorch import fast_paths
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

from minitorch.accel import fused_gelu  # noqa: E402


@numba.njit
def _erf_of(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.size):
        out[i] = fused_gelu.erf(values[i])


def _ulps(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|got − expected| in units of the last place of `expected` (of the smallest normal near 0)."""
    spacing = np.spacing(np.maximum(np.abs(expected), np.finfo(expected.dtype).tiny))
    return np.abs(got - expected) / spacing


def test_erf_is_within_3_ulp_of_the_c_library() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.linspace(-7.0, 7.0, 140_001),  # both pieces, where they meet (±1) and the ends (±6)
            rng.standard_normal(50_000) * 3.0,
            np.geomspace(1e-300, 1e-2, 500),  # tiny values: erf(x) ≈ 2x/√π
            -np.geomspace(1e-300, 1e-2, 500),
            np.nextafter([1.0, 6.0], 0.0),
            [1.0, 6.0, 30.0, -1e300],
        ]
    )
    got = np.empty_like(x)
    _erf_of(x, got)
    expected = np.array([math.erf(v) for v in x])
    ulps = _ulps(got, expected)
    worst = int(np.argmax(ulps))
    assert ulps.max() <= 3.0, f"erf({x[worst]!r}) = {got[worst]!r}, the C library's {expected[worst]!r}"
    assert ulps.mean() < 0.2


def test_erf_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    got = np.empty_like(x)
    _erf_of(x, got)
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert not np.signbit(got[0]) and np.signbit(got[1])
    assert np.isnan(got[4])


def _run(plain: bool, x: np.ndarray, g: np.ndarray, dtype, transpose: bool = False):
    """(y, ∂x, the node that made y) of F.gelu on one path; `transpose` feeds a strided view."""
    xs = minitorch.tensor((x.T if transpose else x).astype(dtype), requires_grad=True)
    x_in = xs.transpose(0, 1) if transpose else xs
    assert x_in._tensor.is_contiguous() != transpose
    with fast_paths.plain_only() if plain else contextlib.nullcontext():
        y = F.gelu(x_in)
        y.backward(minitorch.tensor(g.astype(dtype)))
    grad = xs.grad.numpy().T if transpose else xs.grad.numpy()
    return y.numpy(), grad, y.history.last_fn


@pytest.mark.parametrize(
    ("size", "parallel"),
    [pytest.param((7, 9), False, id="one-thread"), pytest.param((300, 80), True, id="parallel")],
)
@pytest.mark.parametrize("transpose", [False, True], ids=["contiguous", "strided"])
def test_fused_matches_the_plain_path_float64(size, parallel: bool, transpose: bool) -> None:
    assert (size[0] * size[1] >= fused_gelu.PARALLEL_MIN) == parallel
    rng = np.random.default_rng(1)
    x = rng.standard_normal(size) * 4.0  # both erf pieces and the saturated ends
    g = rng.standard_normal(size)
    y, grad, node = _run(False, x, g, np.float64, transpose)
    assert node is fused_gelu.GeluFunction, "the fused path was not taken"
    plain_y, plain_grad, plain_node = _run(True, x, g, np.float64, transpose)
    assert plain_node is not fused_gelu.GeluFunction
    # a few ulp of erf, times |x|/2 where 1 + erf(x/√2) cancels (x < 0)
    np.testing.assert_allclose(y, plain_y, rtol=4e-15, atol=2e-15)
    np.testing.assert_allclose(grad, plain_grad, rtol=4e-15, atol=2e-15)


def test_fused_matches_the_plain_path_float32() -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((64, 300)) * 4.0).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    y, grad, node = _run(False, x, g, np.float32)
    assert node is fused_gelu.GeluFunction and y.dtype == np.float32 and grad.dtype == np.float32
    plain_y, plain_grad, _ = _run(True, x, g, np.float32)
    # both compute in float64 and round once: equal, or one float32 ulp apart where the
    # float64 values straddle a rounding boundary
    assert _ulps(y, plain_y).max() <= 1.0
    assert _ulps(grad, plain_grad).max() <= 1.0


def test_the_cases_it_leaves_to_the_plain_path() -> None:
    x = minitorch.tensor([[-1.0, 0.5], [2.0, -3.0]], requires_grad=True)
    assert F.gelu(x, approximate="tanh").history.last_fn is not fused_gelu.GeluFunction
    with pytest.raises(RuntimeError, match="approximate argument"):
        F.gelu(x, approximate="erf")  # the plain path's own error
    with pytest.raises(Exception) as fused_error:
        F.gelu(minitorch.tensor([1, 2, 3]))  # an integer tensor: the plain path's error
    with fast_paths.plain_only(), pytest.raises(type(fused_error.value)) as plain_error:
        F.gelu(minitorch.tensor([1, 2, 3]))
    assert str(fused_error.value) == str(plain_error.value)
    simple = minitorch.tensor([0.5, -0.5], backend=minitorch.SimpleBackend, requires_grad=True)
    y = F.gelu(simple)  # a CPU backend too: fused, and the output stays on it
    assert y.history.last_fn is fused_gelu.GeluFunction and y.backend is minitorch.SimpleBackend
    empty = minitorch.zeros((0, 3))
    assert F.gelu(empty).shape == (0, 3)


def test_module_and_activation_use_it() -> None:
    x = minitorch.tensor([[0.3, -2.0, 5.0]], requires_grad=True)
    assert minitorch.nn.GELU()(x).history.last_fn is fused_gelu.GeluFunction
    assert minitorch.nn.activation.get_activation("gelu")(x).history.last_fn is fused_gelu.GeluFunction


def test_grad_check_on_the_fused_path() -> None:
    x = minitorch.tensor(np.random.default_rng(3).standard_normal((3, 5)) * 3.0, requires_grad=True)
    grad_check(lambda t: F.gelu(t), x)
    assert F.gelu(x).history.last_fn is fused_gelu.GeluFunction
