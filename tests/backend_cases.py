"""What every backend's tests share: the named backend ops with their NumPy equivalents,
input domains that keep them well defined, tolerances, and the comparison helper.

Used by the fast (task 3.1/3.2) and CUDA (task 3.3/3.4) backend tests, which check each
backend against the simple backend and NumPy on the same generated layouts.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import minitorch
from tensor_strategies import Drawn, to_minitorch


def same(x: np.ndarray) -> np.ndarray:
    return x


def positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.5


def away_from_zero(x: np.ndarray) -> np.ndarray:
    return np.sign(x + 1e-12) * (np.abs(x) + 0.5)


# name of the backend op: (NumPy equivalent, input domain)
MAPS: dict[str, tuple[Callable, Callable]] = {
    "neg_map": (np.negative, same),
    "sigmoid_map": (lambda x: 1 / (1 + np.exp(-x)), same),
    "relu_map": (lambda x: np.maximum(x, 0), same),
    "log_map": (np.log, positive),
    "exp_map": (np.exp, same),
    "id_map": (lambda x: x, same),
    "inv_map": (lambda x: 1 / x, away_from_zero),
    "tanh_map": (np.tanh, same),
}

# name of the backend op: (NumPy equivalent, domain of the first, of the second operand)
ZIPS: dict[str, tuple[Callable, Callable, Callable]] = {
    "add_zip": (np.add, same, same),
    "mul_zip": (np.multiply, same, same),
    "lt_zip": (lambda a, b: (a < b) * 1.0, same, same),
    "eq_zip": (lambda a, b: (a == b) * 1.0, same, same),
    "is_close_zip": (lambda a, b: (np.abs(a - b) < 1e-2) * 1.0, same, same),
    "relu_back_zip": (lambda a, b: (a > 0) * b, same, same),
    "log_back_zip": (lambda a, b: b / a, positive, same),
    "inv_back_zip": (lambda a, b: -b / (a * a), away_from_zero, same),
    "pow_zip": (np.power, positive, same),
}

REDUCES: dict[str, Callable] = {"add_reduce": np.sum, "mul_reduce": np.prod, "max_reduce": np.max}


def tol(dtype: type, terms: int = 1) -> dict[str, float]:
    """Tolerances for results that may sum `terms` values in another order than NumPy
    (rounding errors grow with the number of terms and cancellation)."""
    if np.dtype(dtype) == np.float32:
        return dict(rtol=2e-5, atol=2e-6 * terms)
    return dict(rtol=1e-10, atol=1e-12 * terms)


def both(
    d: Drawn, dtype: type, backend: minitorch.TensorBackend, domain: Callable = same
) -> tuple[minitorch.Tensor, minitorch.Tensor]:
    """The drawn values on `backend` and on the simple backend, in the drawn layout."""
    array = domain(d.array).astype(dtype)
    return to_minitorch(array, d.order, backend), to_minitorch(array, d.order, minitorch.SimpleBackend)


def check_close(got: minitorch.Tensor, expected: np.ndarray, dtype: type, what: str, terms: int = 1) -> None:
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype}, expected {np.dtype(dtype)}"
    np.testing.assert_allclose(got.numpy(), expected, **tol(dtype, terms), err_msg=what)
