"""What every backend's tests share: the named backend ops with their NumPy equivalents,
input domains that keep them well defined, tolerances, and the comparison helper.

Used by the fast (task 3.1/3.2) and CUDA (task 3.3/3.4) backend tests, which check each
backend against the simple backend and NumPy on the same generated layouts, and by the
reference's own backend tests: the hand-picked layouts of `LAYOUT_CASES` and the
raw-storage helpers `layout` and `empty`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import minitorch
from minitorch.tensor_data import TensorData
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


# ---- raw layouts, for calling kernels directly -------------------------------------------


def layout(
    shape: tuple[int, ...],
    order: tuple[int, ...],
    dtype: type = np.float64,
    values: np.ndarray | None = None,
    seed: int = 0,
) -> TensorData:
    """A TensorData of `shape` whose storage holds the dimensions in `order` (a permuted,
    non-contiguous layout unless order is the identity); random values unless given."""
    if values is None:
        values = np.random.default_rng(seed).standard_normal(shape)
    values = np.asarray(values, dtype=dtype).reshape(shape)
    base = values.transpose(order).copy(order="C")
    data = TensorData(base.ravel(), base.shape).permute(*np.argsort(order))
    assert data.shape == tuple(shape)
    return data


def empty(shape: tuple[int, ...], dtype: type = np.float64, fill: float = 0.0) -> TensorData:
    """A contiguous TensorData of `shape` filled with `fill`."""
    return TensorData(np.full(int(np.prod(shape)), fill, dtype=dtype), shape)


#: Elementwise layouts: name → (out shape, out storage order, [(operand shape, order)]).
#: Contiguous and identically permuted operands, a scalar operand, bias rows and columns,
#: transposes, permuted outputs, an empty output, and outputs of more than 2¹⁴ elements
#: (several threads).
LAYOUT_CASES: dict[str, tuple] = {
    "contiguous": ((4, 5), (0, 1), [((4, 5), (0, 1)), ((4, 5), (0, 1))]),
    "same permutation": ((4, 5, 3), (2, 0, 1), [((4, 5, 3), (2, 0, 1)), ((4, 5, 3), (2, 0, 1))]),
    "tensor with scalar": ((3, 4), (0, 1), [((3, 4), (0, 1)), ((), ())]),
    "scalar with tensor": ((1, 3), (0, 1), [((), ()), ((1, 3), (0, 1))]),
    "bias row": ((6, 17), (0, 1), [((6, 17), (0, 1)), ((17,), (0,))]),
    "transposed with column": ((6, 17), (0, 1), [((6, 17), (1, 0)), ((6, 1), (0, 1))]),
    "both broadcast, long rows": ((2, 3, 8), (0, 1, 2), [((3, 8), (1, 0)), ((2, 1, 8), (2, 0, 1))]),
    "permuted out, long rows": ((3, 5, 9), (2, 1, 0), [((3, 5, 9), (0, 1, 2)), ((5, 9), (0, 1))]),
    "one transposed": ((4, 5), (0, 1), [((4, 5), (1, 0)), ((4, 5), (0, 1))]),
    "short bias row": ((5, 3), (0, 1), [((5, 3), (0, 1)), ((3,), (0,))]),
    "both broadcast, short rows": ((4, 2, 3), (0, 1, 2), [((4, 1, 3), (2, 1, 0)), ((2, 1), (1, 0))]),
    "permuted out, short rows": ((2, 3, 4), (2, 0, 1), [((3, 1), (0, 1)), ((2, 3, 4), (0, 1, 2))]),
    "empty": ((0, 3), (0, 1), [((0, 3), (1, 0)), ((3,), (0,))]),
    "large, reversed": ((2048, 3, 3), (0, 1, 2), [((2048, 3, 3), (2, 1, 0)), ((3, 1), (0, 1))]),
    "large, transposed out": ((200, 100), (1, 0), [((200, 100), (0, 1)), ((100,), (0,))]),
    "large, contiguous": ((200, 100), (0, 1), [((200, 100), (0, 1)), ((200, 100), (0, 1))]),
}


# ---- matmul cases ---------------------------------------------------------------------

# (a batch, b batch, I, K, J): 1 × 1, odd sizes that cut 8 × 16 tiles, exact tiles,
# broadcast batches on either side.
MATMUL_SIZES = [
    (1, 1, 1, 1, 1),
    (3, 1, 1, 1, 1),
    (1, 1, 7, 5, 3),
    (2, 2, 8, 16, 16),
    (1, 3, 9, 17, 33),
    (2, 1, 37, 29, 45),
    (1, 1, 65, 40, 31),
]

# How each operand is laid out: storage order of (batch, row, column).
MATMUL_LAYOUTS = {
    "contiguous": ((0, 1, 2), (0, 1, 2)),
    "a transposed": ((0, 2, 1), (0, 1, 2)),
    "b transposed": ((0, 1, 2), (0, 2, 1)),
    "batch innermost": ((1, 2, 0), (2, 1, 0)),  # no unit stride in the matrices (if batch > 1)
}


def run_matmul(kernel: Callable, a: TensorData, b: TensorData, dtype: type) -> np.ndarray:
    """Call a matmul kernel on raw storages; `out` starts as NaN (every entry must be written)."""
    batch = max(a.shape[0], b.shape[0])
    out = empty((batch, a.shape[1], b.shape[2]), dtype, fill=np.nan)
    kernel(*out.tuple(), *a.tuple(), *b.tuple())
    return out.to_numpy()
