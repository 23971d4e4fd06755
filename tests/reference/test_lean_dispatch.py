"""The fast backend's lean path for small operations (issue 15): serial twins of the
parallel kernels, outputs allocated without a fill, shared row-major layouts, one product
for a batch of rows. Each is a shortcut: these tests pin that it computes exactly what the
general path computes."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

import minitorch
from minitorch.accel import tuned_kernels
from minitorch.jit import serial_and_parallel
from minitorch.tensor_data import TensorData
from minitorch.tensor_functions import batched_matmul
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

FAST = minitorch.FastBackend


def _t(array: np.ndarray, grad: bool = False) -> minitorch.Tensor:
    t = minitorch.from_numpy(np.ascontiguousarray(array), backend=FAST)
    return t.requires_grad_() if grad else t


def test_serial_twin_is_a_separate_kernel_with_the_same_result() -> None:
    kernel = tuned_kernels.tensor_zip_fast(minitorch.operators.add)
    twin = tuned_kernels.serial_twin(kernel)
    assert twin is tuned_kernels.serial_twin(kernel)  # made once
    assert "parallel" not in twin.targetoptions and kernel.targetoptions.get("parallel")
    # a different name, so Numba's disk cache files the two compilations apart
    assert twin.py_func.__qualname__ == kernel.py_func.__qualname__ + "_serial"
    rng = np.random.default_rng(0)
    a, b = _t(rng.standard_normal((7, 9))), _t(rng.standard_normal((7, 9)))
    out_parallel, out_serial = a.zeros(), a.zeros()
    kernel(*out_parallel.tuple(), *a.tuple(), *b.tuple(), True)
    twin(*out_serial.tuple(), *a.tuple(), *b.tuple(), True)
    np.testing.assert_array_equal(out_parallel.numpy(), out_serial.numpy())
    np.testing.assert_array_equal(out_serial.numpy(), a.numpy() + b.numpy())


def test_launch_picks_the_serial_twin_below_the_threshold() -> None:
    @numba.njit(parallel=True)
    def fill(out: np.ndarray) -> None:  # pragma: no cover - compiled
        for i in numba.prange(len(out)):
            out[i] = i

    out = np.zeros(5)
    tuned_kernels.launch(fill, 10, 100, out)  # small: the twin
    assert getattr(fill, "_minitorch_serial", None) is not None
    np.testing.assert_array_equal(out, np.arange(5.0))
    out[:] = 0
    tuned_kernels.launch(fill, 1000, 100, out)  # large: the parallel kernel
    np.testing.assert_array_equal(out, np.arange(5.0))


def _double(out: np.ndarray, x: np.ndarray) -> None:
    for i in numba.prange(len(out)):
        out[i] = 2.0 * x[i]


def test_serial_and_parallel_are_cached_apart_and_agree() -> None:
    """Both compilations of one function must be distinct cached functions (Numba files its
    disk cache by function name and line, not by options: one shared entry would make one
    of the two run the other's code)."""
    serial, parallel = serial_and_parallel(_double)
    assert parallel.targetoptions.get("parallel") and "parallel" not in serial.targetoptions
    assert serial.py_func.__qualname__ == "_double_serial" and parallel.py_func.__qualname__ == "_double"
    # same cache folder, different cache files
    assert serial._cache._cache_path == parallel._cache._cache_path
    assert serial._cache._impl.filename_base != parallel._cache._impl.filename_base
    x = np.arange(6.0)
    a, b = np.zeros(6), np.zeros(6)
    serial(a, x)
    parallel(b, x)
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(b, 2 * x)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4), (2, 1, 3), (0, 4)])
def test_row_major_layout_matches_the_checked_constructor(shape) -> None:
    size = int(np.prod(shape)) if shape else 1
    storage = np.arange(size, dtype=np.float32)
    lean, checked = TensorData.row_major(storage, shape), TensorData(storage, shape)
    assert (lean.shape, lean.strides, lean.size, lean.dims) == (
        checked.shape,
        checked.strides,
        checked.size,
        checked.dims,
    )
    np.testing.assert_array_equal(lean._shape, checked._shape)
    np.testing.assert_array_equal(lean._strides, checked._strides)
    assert lean._storage is storage


@pytest.mark.parametrize(
    "shape, strides", [((1, 3, 4), (0, 4, 1)), ((1, 4, 3), (0, 1, 4)), ((2, 3), (1, 2)), ((), ())]
)
def test_view_layout_matches_the_checked_constructor(shape, strides) -> None:
    storage = np.arange(12, dtype=np.float64)
    for _ in range(2):  # made, then taken from the shared layouts
        lean, checked = TensorData.view_of(storage, shape, strides), TensorData(storage, shape, strides)
        assert (lean.shape, lean.strides, lean.size, lean.dims) == (
            checked.shape,
            checked.strides,
            checked.size,
            checked.dims,
        )
        np.testing.assert_array_equal(lean._shape, checked._shape)
        np.testing.assert_array_equal(lean._strides, checked._strides)
        assert lean._storage is storage


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [3, 100, 40_000])  # below and above the parallel threshold
def test_outputs_allocated_without_a_fill_are_fully_written(dtype, size) -> None:
    """Every element of a map/zip/reduce/matmul output is written by the kernel: the same
    result as NumPy for contiguous, broadcast and transposed operands of both sizes."""
    rng = np.random.default_rng(size)
    x = rng.standard_normal((size // 4 + 1, 4)).astype(dtype)
    y = rng.standard_normal((1, 4)).astype(dtype)
    for _ in range(3):  # fresh outputs reuse freed memory that holds old values
        a, b = _t(x), _t(y)
        np.testing.assert_allclose((a + b).numpy(), x + y, rtol=1e-6)
        np.testing.assert_allclose(a.exp().numpy(), np.exp(x), rtol=1e-6)
        np.testing.assert_allclose(a.T.contiguous().numpy(), x.T)
        np.testing.assert_allclose(a.sum(0).numpy(), x.sum(0), rtol=1e-4)
        np.testing.assert_allclose((a.T @ a).numpy(), x.T @ x, rtol=1e-4, atol=1e-3)
        assert (a + b).dtype == dtype


def test_one_product_for_a_batch_of_rows_matches_the_batched_product() -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 5, 4)), rng.standard_normal((4, 6))
    a, b = _t(x), _t(w)
    np.testing.assert_allclose(batched_matmul(a, b).numpy(), x @ w, rtol=1e-12)
    # a non-contiguous a takes the general path: same values
    at = _t(x.transpose(1, 0, 2).copy()).permute(1, 0, 2)
    assert not at._tensor.is_contiguous()
    np.testing.assert_allclose(batched_matmul(at, b).numpy(), x @ w, rtol=1e-12)
    # b with leading batch dimensions of size 1
    np.testing.assert_allclose(batched_matmul(a, _t(w[None, None])).numpy(), (x @ w)[None], rtol=1e-12)


def test_linear_on_a_batch_of_sequences_matches_torch_in_values_and_gradients() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4))
    layer = minitorch.nn.Linear(4, 5, backend=FAST)
    t_layer = torch.nn.Linear(4, 5).double()
    with torch.no_grad():
        t_layer.weight.copy_(torch.tensor(layer.weight.value.numpy()))
        t_layer.bias.copy_(torch.tensor(layer.bias.value.numpy()))
    xs, t_x = _t(x, grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = layer(xs), t_layer(t_x)
    assert out.shape == (2, 3, 5)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    g = rng.standard_normal((2, 3, 5))
    out.backward(_t(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(xs.grad.numpy(), t_x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(layer.weight.value.grad.numpy(), t_layer.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(layer.bias.value.grad.numpy(), t_layer.bias.grad.numpy(), rtol=1e-12)


def test_linear_on_a_batch_of_sequences_passes_a_gradient_check() -> None:
    layer = minitorch.nn.Linear(3, 2, backend=FAST)
    x = _t(np.random.default_rng(3).standard_normal((2, 2, 3)), grad=True)
    grad_check(lambda x: layer(x), x)


def test_strided_batches_are_multiplied_in_place_with_the_same_values() -> None:
    """Operands whose batch dimensions merge (a transposed aᵀ, heads split out of a
    sequence) are passed as strided 3-D views, others copied: the values are NumPy's."""
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 5, 6))
    a, b = _t(x), _t(y)
    np.testing.assert_allclose(
        batched_matmul(a.transpose(-1, -2), b).numpy(), np.swapaxes(x, -1, -2) @ y, rtol=1e-12
    )
    heads = _t(x.transpose(0, 2, 1, 3).copy()).permute(
        0, 2, 1, 3
    )  # [2, 3, 5, 4] from [2, 5, 3, 4]: batch does not merge
    np.testing.assert_allclose(
        batched_matmul(heads.transpose(-1, -2), b).numpy(), np.swapaxes(x, -1, -2) @ y, rtol=1e-12
    )
    wide = _t(rng.standard_normal((2, 1, 4, 5)))  # a batch dimension of size 1, broadcast
    np.testing.assert_allclose(batched_matmul(wide, _t(y)).numpy(), wide.numpy() @ y, rtol=1e-12)


def test_a_backend_reduce_takes_a_negative_dimension() -> None:
    x = np.random.default_rng(9).standard_normal((3, 4))
    a = _t(x)
    np.testing.assert_allclose(a.backend.add_reduce(a, -1).numpy(), x.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(a.backend.add_reduce(a, 0).numpy(), x.sum(0, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((2, 3), (1, 3, 4)),  # a not 3-D
        ((1, 3, 4), (1, 5, 2)),  # inner sizes differ
        ((2, 3, 4), (3, 4, 2)),  # batches 2 and 3 do not broadcast
    ],
)
def test_the_lean_matrix_multiply_refuses_what_the_plain_one_refuses(a_shape, b_shape) -> None:
    """`TunedOps.matrix_multiply` reads the layouts' tuples; a call it does not accept gets
    the ShapeError of `TensorOps.matrix_multiply`, word for word."""
    from minitorch.accel.tuned_ops import TunedOps

    a, b = _t(np.ones(a_shape)), _t(np.ones(b_shape))
    with pytest.raises(minitorch.ShapeError) as plain:
        minitorch.TensorOps.matrix_multiply(a, b)
    with pytest.raises(minitorch.ShapeError, match=re.escape(str(plain.value))):
        TunedOps.matrix_multiply(a, b)


@pytest.mark.parametrize(
    "dtypes", [(np.float32, np.float32), (np.float64, np.float32), (np.float64, np.float64)]
)
def test_the_lean_matrix_multiply_equals_the_kernel_it_routes_to(dtypes) -> None:
    """Broadcast batches, transposed operands, tiny and tiled sizes, mixed dtypes: the lean
    path's output equals the backend's matmul kernel (`tuned_ops.matmul`, the kernel
    contract on NumPy arrays) run on the same operands, bit for bit, in the plain path's dtype."""
    from minitorch.accel import tuned_ops

    rng = np.random.default_rng(11)
    cases = [((1, 3, 4), (1, 4, 2)), ((3, 40, 50), (1, 50, 36)), ((1, 64, 64), (4, 64, 16))]
    for a_shape, b_shape in cases:
        for transpose_a in (False, True):
            x = rng.standard_normal(a_shape).astype(dtypes[0])
            a = _t(np.swapaxes(x, 1, 2)).permute(0, 2, 1) if transpose_a else _t(x)
            b = _t(rng.standard_normal(b_shape).astype(dtypes[1]))
            got = tuned_ops.TunedOps.matrix_multiply(a, b)
            want_dtype = minitorch.tensor_ops.result_dtype(a.dtype, b.dtype)
            assert got.dtype == want_dtype
            want = minitorch.from_numpy(np.zeros(got.shape, dtype=want_dtype), backend=FAST)
            tuned_ops.matmul(*want.tuple(), *a.tuple(), *b.tuple())
            np.testing.assert_array_equal(got.numpy(), want.numpy())
            np.testing.assert_allclose(got.numpy(), a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)


def test_the_dense_paths_take_only_row_major_operands() -> None:
    """A map or zip runs its flat loop only when every operand is row-major like the new
    output: a transposed square operand (same shape, other strides) and a broadcast one go
    through the general kernel, with NumPy's values."""
    rng = np.random.default_rng(12)
    x, y = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    a, b = _t(x), _t(y)
    np.testing.assert_array_equal((a + b.T).numpy(), x + y.T)
    np.testing.assert_array_equal((a.T + b).numpy(), x.T + y)
    np.testing.assert_array_equal((a + _t(y[:1])).numpy(), x + y[:1])
    np.testing.assert_array_max_ulp(a.T.exp().numpy(), np.exp(x.T), maxulp=2)  # fast_exp: ≤ 2 ulp
    np.testing.assert_array_equal(a.T.sum(1).numpy(), x.T.sum(1))


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1)])  # contiguous (a reshape), permuted (strided)
def test_numpy_view_shares_the_storage_in_the_layout(order) -> None:
    """`TensorData.numpy_view` (the fused kernels' way in): the values in the layout's shape,
    and a view — writing through it writes the tensor."""
    x = np.arange(24.0).reshape(2, 3, 4)
    data = _t(x).permute(*order)._tensor
    view = data.numpy_view()
    np.testing.assert_array_equal(view, x.transpose(order))
    view[(1,) * 3] = -1.0
    assert data.to_numpy()[(1,) * 3] == -1.0 and np.shares_memory(view, data._storage)
