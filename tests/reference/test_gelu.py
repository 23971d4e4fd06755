"""GELU (F.gelu, nn.GELU; exact and tanh) and the activation modules nn.ReLU / nn.Tanh:
values and gradients against PyTorch in float64 and float32 on the simple and fast
backends (and the CUDA backend, on the simulator or a GPU), known values, central
differences of the scalar operators and of the tensor function, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import cuda

import minitorch
from minitorch import nn, operators
from minitorch.nn import functional as F
from minitorch.nn.activation import get_activation
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
APPROX = ["none", "tanh"]
# both tails (where erf and tanh saturate), around 0, and ordinary values
X = np.concatenate(
    [
        np.linspace(-9.0, 9.0, 37),
        [-40.0, -1e-9, 0.0, 1e-9, 40.0],
        np.random.default_rng(0).standard_normal(20),
    ]
)


def _torch():
    return pytest.importorskip("torch")


def _run(x: np.ndarray, g: np.ndarray, approximate: str, backend, dtype) -> tuple[np.ndarray, np.ndarray]:
    t = minitorch.tensor(x, dtype=dtype, backend=backend, requires_grad=True)
    y = F.gelu(t, approximate=approximate)
    assert y.dtype == np.dtype(dtype) and y.backend is backend
    y.backward(minitorch.tensor(g, dtype=dtype, backend=backend))
    return y.numpy(), t.grad.numpy()


def _torch_run(x: np.ndarray, g: np.ndarray, approximate: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    torch = _torch()
    t = torch.tensor(x, dtype=dtype, requires_grad=True)
    y = torch.nn.functional.gelu(t, approximate=approximate)
    y.backward(torch.tensor(g, dtype=dtype))
    return y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("approximate", APPROX)
def test_values_and_gradients_match_torch_float64(backend, approximate) -> None:
    torch = _torch()
    x = X.reshape(2, -1)
    g = np.random.default_rng(1).standard_normal(x.shape)
    y, grad = _run(x, g, approximate, backend, minitorch.float64)
    t_y, t_grad = _torch_run(x, g, approximate, torch.float64)
    np.testing.assert_allclose(
        y, t_y, rtol=1e-14, atol=1e-15
    )  # atol: 1 + tanh(…) cancels in the far left tail
    np.testing.assert_allclose(grad, t_grad, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("approximate", APPROX)
def test_values_and_gradients_match_torch_float32(backend, approximate) -> None:
    torch = _torch()
    x = X.astype(np.float32)
    g = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    y, grad = _run(x, g, approximate, backend, minitorch.float32)
    # float32 rounding: up to ~|x|·2⁻²³ absolute where 1 + erf(x/√2) (or 1 + tanh) cancels, x < 0;
    # the fast kernels compute in double and round once, the simple ones partly in float32
    references = {
        "float64": _torch_run(x.astype(np.float64), g.astype(np.float64), approximate, torch.float64),
        "float32": _torch_run(x, g, approximate, torch.float32),
    }
    for name, (t_y, t_grad) in references.items():
        np.testing.assert_allclose(y, t_y, rtol=1e-5, atol=1e-6, err_msg=f"values against torch {name}")
        np.testing.assert_allclose(
            grad, t_grad, rtol=1e-5, atol=1e-6, err_msg=f"gradient against torch {name}"
        )


@pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU and the CUDA simulator is off")
@pytest.mark.parametrize("approximate", APPROX)
def test_values_and_gradients_on_the_cuda_backend(approximate) -> None:
    x = np.array([-5.0, -1.5, -0.3, 0.0, 0.7, 2.0, 6.0])
    g = np.random.default_rng(3).standard_normal(x.shape)
    y, grad = _run(x, g, approximate, minitorch.CudaBackend, minitorch.float64)
    exp_y, exp_grad = _run(x, g, approximate, minitorch.SimpleBackend, minitorch.float64)
    np.testing.assert_allclose(y, exp_y, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad, exp_grad, rtol=1e-13, atol=1e-15)


def test_known_values() -> None:
    phi1 = 0.5 * (1.0 + math.erf(1.0 / math.sqrt(2.0)))  # Φ(1) = 0.8413447…
    y = F.gelu(minitorch.tensor([0.0, 1.0, -1.0, 30.0, -30.0])).numpy()
    np.testing.assert_allclose(y, [0.0, phi1, -(1.0 - phi1), 30.0, 0.0], rtol=1e-15, atol=1e-300)
    assert abs(phi1 - 0.8413447460685429) < 1e-15
    # the tanh form is within 1e-3 of the exact one everywhere (Hendrycks & Gimpel)
    x = np.linspace(-8.0, 8.0, 401)
    exact = F.gelu(minitorch.tensor(x)).numpy()
    approx = F.gelu(minitorch.tensor(x), approximate="tanh").numpy()
    assert np.abs(exact - approx).max() < 1e-3 and np.abs(exact - approx).max() > 1e-5
    # minimum ≈ −0.17 near x ≈ −0.75
    assert -0.171 < exact.min() < -0.169 and abs(x[exact.argmin()] + 0.75) < 0.03


@pytest.mark.parametrize("approximate", APPROX)
def test_scalar_backward_is_the_derivative(approximate) -> None:
    f = operators.gelu_tanh if approximate == "tanh" else operators.gelu
    back = operators.gelu_tanh_back if approximate == "tanh" else operators.gelu_back
    for x in [-7.0, -2.5, -0.75, -0.1, 0.0, 0.3, 1.0, 3.3, 8.0]:
        h = 1e-6
        numeric = (f(x + h) - f(x - h)) / (2 * h)
        assert math.isclose(back(x, 1.0), numeric, rel_tol=1e-7, abs_tol=1e-9), x
        assert math.isclose(back(x, -2.5), -2.5 * back(x, 1.0), rel_tol=1e-15)


@pytest.mark.parametrize("approximate", APPROX)
def test_central_differences(approximate) -> None:
    x = minitorch.tensor(np.random.default_rng(4).standard_normal((3, 4)) * 2.0)
    grad_check(lambda x: F.gelu(x, approximate=approximate), x)


@pytest.mark.parametrize("approximate", APPROX)
def test_gelu_module(approximate) -> None:
    layer = nn.GELU(approximate)
    assert list(layer.parameters()) == []
    assert repr(layer) == f"GELU(approximate='{approximate}')"
    x = minitorch.tensor(X, requires_grad=True)
    np.testing.assert_array_equal(layer(x).numpy(), F.gelu(x, approximate).numpy())
    assert repr(nn.GELU()) == "GELU(approximate='none')"


def test_relu_and_tanh_modules_match_torch() -> None:
    torch = _torch()
    x = X.reshape(2, -1)
    g = np.random.default_rng(5).standard_normal(x.shape)
    for ours, theirs in [(nn.ReLU(), torch.nn.ReLU()), (nn.Tanh(), torch.nn.Tanh())]:
        assert repr(ours) == repr(theirs) and list(ours.parameters()) == []
        t = minitorch.tensor(x, requires_grad=True)
        tt = torch.tensor(x, requires_grad=True)
        y, ty = ours(t), theirs(tt)
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-15, atol=0)
        y.backward(minitorch.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(
            t.grad.numpy(), tt.grad.numpy(), rtol=1e-13, atol=1e-15
        )  # 1 − tanh² cancels


def test_get_activation() -> None:
    x = minitorch.tensor(X)
    np.testing.assert_array_equal(get_activation("relu")(x).numpy(), np.maximum(X, 0.0))
    np.testing.assert_array_equal(get_activation("gelu")(x).numpy(), F.gelu(x).numpy())
    layer = nn.GELU("tanh")
    assert get_activation(layer) is layer and get_activation(F.gelu) is F.gelu
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        get_activation("swish")


def test_errors() -> None:
    x = minitorch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="erf")
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        nn.GELU("fast")
    with pytest.raises(TypeError, match="gelu: input must be a float32 or float64 tensor"):
        F.gelu(minitorch.tensor([1, 2]))
