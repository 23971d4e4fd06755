"""Tasks 3.3 (CUDA map / zip / reduce) and 3.4 (CUDA tiled matmul).

Every CUDA op is compared with the simple backend and with NumPy on small generated
tensors, including permuted (non-contiguous) layouts, broadcasting, float32 and float64.

Without a GPU these tests run in Numba's CUDA simulator: start Python with
``NUMBA_ENABLE_CUDASIM=1`` (it must be set before Numba is imported). The simulator runs
every GPU thread as a Python thread, so it is slow (shapes here are tiny) but strict:
an out-of-bounds access raises IndexError, and the threads of a block really interleave,
so a missing ``cuda.syncthreads()`` gives wrong values. Sizes are chosen so that:

* element counts are not multiples of the block size (threads past the end must not write);
* matmul sizes are not multiples of TILE and the k axis spans several tiles (the zero
  padding, the bounds of the final write, and both barriers of the tile loop all matter);
* reduced dimensions are longer than a block, not powers of two, or of length 1.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import minitorch
from minitorch import operators
from minitorch.testing import grad_check
from backend_cases import MAPS, REDUCES, ZIPS, away_from_zero, check_close, positive, same, tol
from backend_cases import both as _both
from tensor_strategies import Drawn, broadcastable_pair, tensors, to_minitorch

pytestmark = [
    pytest.mark.skipif(
        not cuda.is_available(),
        reason="no CUDA GPU, and the CUDA simulator is off: run with NUMBA_ENABLE_CUDASIM=1 "
        "set in the environment before Python starts",
    ),
    pytest.mark.usefixtures("quick_thread_switches"),  # the simulator's barriers (conftest.py)
]

from minitorch import cuda_ops  # noqa: E402  (after the skip: imports numba.cuda only)

CUDA = minitorch.CudaBackend
SIMPLE = minitorch.SimpleBackend
# The simulator costs ~0.1 ms per thread and much more per barrier: few, small examples.
CHECK = settings(max_examples=4, deadline=None)
DTYPES = [np.float64, np.float32]


def both(d: Drawn, dtype: type, domain: Callable = same) -> tuple[minitorch.Tensor, minitorch.Tensor]:
    """The drawn values on this backend and on the simple backend, in the drawn layout."""
    return _both(d, dtype, CUDA, domain)


# ---- 3.3: map ---------------------------------------------------------------------------


@pytest.mark.task3_3
@pytest.mark.parametrize("name", sorted(MAPS))
@CHECK
@given(d=tensors(), dtype=st.sampled_from(DTYPES))
def test_map_matches_simple_and_numpy(name: str, d: Drawn, dtype: type) -> None:
    reference, domain = MAPS[name]
    c, s = both(d, dtype, domain)
    got = getattr(CUDA, name)(c)
    check_close(got, getattr(SIMPLE, name)(s).numpy(), dtype, f"{name} vs simple backend")
    check_close(got, reference(domain(d.array).astype(dtype)), dtype, f"{name} vs NumPy")


@pytest.mark.task3_3
@pytest.mark.parametrize("dtype", DTYPES)
def test_map_broadcasts_into_a_permuted_out(dtype: type) -> None:
    """map(a, out): `a` (3, 1) broadcast into a non-contiguous out of shape (2, 3, 4)."""
    a = minitorch.from_numpy(np.array([[1.0], [-2.0], [3.0]], dtype=dtype), backend=CUDA)
    out = minitorch.zeros(4, 3, 2, dtype=dtype, backend=CUDA).permute(2, 1, 0)
    result = CUDA.neg_map(a, out)
    assert result is out
    expected = np.broadcast_to(-np.array([[1.0], [-2.0], [3.0]]), (2, 3, 4))
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.task3_3
@pytest.mark.parametrize("size", [1, 33, 257])
def test_map_threads_past_the_end_do_not_write(size: int) -> None:
    """The launch rounds threads up to whole blocks (33 → 64 threads, 257 → 2 × 256): the
    extra threads must not touch memory (the simulator raises IndexError if they do)."""
    x = np.linspace(-1.0, 1.0, size)
    got = CUDA.exp_map(minitorch.from_numpy(x, backend=CUDA))
    np.testing.assert_allclose(got.numpy(), np.exp(x), rtol=1e-12)


# ---- 3.3: zip ---------------------------------------------------------------------------


@pytest.mark.task3_3
@pytest.mark.parametrize("name", sorted(ZIPS))
@CHECK
@given(pair=broadcastable_pair(), dtype=st.sampled_from(DTYPES), data=st.data())
def test_zip_broadcast_matches_simple_and_numpy(name: str, pair, dtype: type, data) -> None:
    reference, dom_a, dom_b = ZIPS[name]
    da, db = data.draw(tensors(shape=pair[0])), data.draw(tensors(shape=pair[1]))
    (ca, sa), (cb, sb) = both(da, dtype, dom_a), both(db, dtype, dom_b)
    got = getattr(CUDA, name)(ca, cb)
    check_close(got, getattr(SIMPLE, name)(sa, sb).numpy(), dtype, f"{name} vs simple backend")
    expected = reference(dom_a(da.array).astype(dtype), dom_b(db.array).astype(dtype))
    check_close(got, np.asarray(expected, dtype=dtype), dtype, f"{name} vs NumPy")


@pytest.mark.task3_3
def test_zip_mixed_dtypes_and_tail_block() -> None:
    """float32 + float64 → float64; 3 × 1 × 11 broadcast against 5 × 1 gives 165 elements
    (not a multiple of the block): the threads past the end must not write."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 1, 11)).astype(np.float32)
    y = rng.standard_normal((5, 1))
    a = to_minitorch(x, (2, 0, 1), CUDA)
    b = minitorch.from_numpy(y, backend=CUDA)
    got = CUDA.mul_zip(a, b)
    check_close(got, x.astype(np.float64) * y, np.float64, "float32 * float64")


# ---- 3.3: reduce ------------------------------------------------------------------------


@pytest.mark.task3_3
@pytest.mark.parametrize("name", sorted(REDUCES))
@CHECK
@given(d=tensors(max_dims=3, max_side=4), dtype=st.sampled_from(DTYPES), data=st.data())
def test_reduce_matches_simple_and_numpy(name: str, d: Drawn, dtype: type, data) -> None:
    dim = data.draw(st.integers(0, len(d.array.shape) - 1), label="dim")
    c, s = both(d, dtype)
    got = getattr(CUDA, name)(c, dim)
    check_close(got, getattr(SIMPLE, name)(s, dim).numpy(), dtype, f"{name} over dim {dim} vs simple")
    expected = REDUCES[name](d.array.astype(dtype), axis=dim, keepdims=True)
    check_close(got, expected, dtype, f"{name} over dim {dim} vs NumPy")


@pytest.mark.task3_3
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 300])
def test_reduce_long_and_odd_dimensions(n: int, dtype: type) -> None:
    """n = 300 > 256 threads (each thread folds 1 or 2 values, then 8 tree steps); n = 5 runs
    8 threads of which 3 hold nothing; n = 1 has no tree at all. The reduced dimension is
    the middle one of a permuted layout."""
    rng = np.random.default_rng(n)
    x = rng.uniform(-1.0, 1.0, size=(1, n, 2)).astype(dtype)
    c = to_minitorch(x, (1, 2, 0), CUDA)
    check_close(CUDA.add_reduce(c, 1), x.sum(axis=1, keepdims=True), dtype, f"sum over {n}", terms=n)
    check_close(CUDA.max_reduce(c, 1), x.max(axis=1, keepdims=True), dtype, f"max over {n}")


@pytest.mark.task3_3
def test_reduce_folds_the_start_value_exactly_once() -> None:
    """With start 5, the sum is 5 + Σ (threads must not each start from the start value)."""
    x = np.arange(40.0).reshape(2, 20)
    t = minitorch.from_numpy(x, backend=CUDA)
    got = cuda_ops.CudaOps.reduce(operators.add, 5.0)(t, 1)
    np.testing.assert_array_equal(got.numpy(), x.sum(axis=1, keepdims=True) + 5.0)


class CountingFn:
    """A scalar function that counts its calls (simulator only: there device functions are
    plain Python, on a GPU this would not compile)."""

    def __init__(self, fn: Callable[..., float]):
        self.fn, self.calls = fn, []
        counted = lambda *args: self.calls.append(1) or fn(*args)  # noqa: E731
        self.counted = counted


needs_simulator = pytest.mark.skipif(
    not cuda_ops.SIMULATOR, reason="counts calls of a Python function: simulator only"
)


@needs_simulator
@pytest.mark.task3_3
@pytest.mark.parametrize("size", [33, 257])
def test_map_and_zip_compute_each_element_exactly_once(size: int) -> None:
    """Threads past the end of the output (33 elements → a block of 64 threads, 257 → two
    blocks of 256) must do nothing: fn runs exactly once per output element. (A missing
    bounds check can be invisible in the values: `to_index` may wrap an ordinal past the
    end around to a valid index, and the thread rewrites an element with the same value.)"""
    x = minitorch.from_numpy(np.linspace(0.5, 2.0, size), backend=CUDA)
    neg = CountingFn(operators.neg)
    np.testing.assert_array_equal(cuda_ops.CudaOps.map(neg.counted)(x).numpy(), -x.numpy())
    assert len(neg.calls) == size, f"map called fn {len(neg.calls)} times for {size} elements"
    add = CountingFn(operators.add)
    np.testing.assert_array_equal(cuda_ops.CudaOps.zip(add.counted)(x, x).numpy(), 2 * x.numpy())
    assert len(add.calls) == size, f"zip called fn {len(add.calls)} times for {size} elements"


@needs_simulator
@pytest.mark.task3_3
@pytest.mark.parametrize("n", [1, 5, 300])
def test_reduce_applies_fn_n_times_per_output(n: int) -> None:
    """Folding n values and the start value takes exactly n applications of fn per output
    element, however the work is split between threads (strided loop + tree)."""
    x = minitorch.from_numpy(np.ones((2, n)), backend=CUDA)
    add = CountingFn(operators.add)
    got = cuda_ops.CudaOps.reduce(add.counted, 0.0)(x, 1)
    np.testing.assert_array_equal(got.numpy(), np.full((2, 1), float(n)))
    assert len(add.calls) == 2 * n, f"reduce of 2 × {n} called fn {len(add.calls)} times, expected {2 * n}"


@pytest.mark.task3_3
def test_empty_tensors() -> None:
    """Zero-size tensors launch nothing; a reduction over an empty dimension gives the start."""
    e = minitorch.zeros(0, 3, backend=CUDA)
    assert CUDA.exp_map(e).shape == (0, 3)
    assert CUDA.add_zip(e, minitorch.ones(3, backend=CUDA)).shape == (0, 3)
    np.testing.assert_array_equal(CUDA.add_reduce(e, 0).numpy(), np.zeros((1, 3)))
    np.testing.assert_array_equal(CUDA.mul_reduce(e, 0).numpy(), np.ones((1, 3)))


@pytest.mark.task3_3
def test_tensor_api_on_the_cuda_backend() -> None:
    """The Tensor methods route through the CUDA backend (0-d results included)."""
    x = np.array([[1.0, -2.0, 3.0], [0.0, 5.0, -6.0]])
    t = minitorch.tensor(x, backend=CUDA)
    assert t.backend is CUDA
    assert t.sum().item() == 1.0
    np.testing.assert_array_equal(t.sum(1).numpy(), [2.0, -1.0])
    values, indices = t.max(1)
    np.testing.assert_array_equal(values.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(indices.numpy(), [2, 1])
    np.testing.assert_allclose((t * 2.0 - t.exp()).numpy(), x * 2.0 - np.exp(x), rtol=1e-12)
    assert (minitorch.tensor(2.0, backend=CUDA) * 3.0).item() == 6.0


@pytest.mark.task3_3
def test_kernels_compile_once_per_function_and_dtype() -> None:
    """The compiled kernel is cached per (kind, function, dtype) and reused."""
    a = minitorch.ones(3, backend=CUDA)
    CUDA.add_zip(a, a)
    key = ("zip", operators.add, np.dtype(np.float64))
    kernel = cuda_ops._KERNELS[key]
    CUDA.add_zip(a, a * 2.0)
    assert cuda_ops._KERNELS[key] is kernel
    f = minitorch.ones(3, dtype=minitorch.float32, backend=CUDA)
    CUDA.add_zip(f, f)
    assert cuda_ops._KERNELS[("zip", operators.add, np.dtype(np.float32))] is not kernel


# ---- 3.4: matmul ------------------------------------------------------------------------


def _matmul_case(shape_a, shape_b, dtype, order_a=None, order_b=None, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape_a).astype(dtype)
    y = rng.standard_normal(shape_b).astype(dtype)
    order_a = order_a or tuple(range(len(shape_a)))
    order_b = order_b or tuple(range(len(shape_b)))
    return x, y, to_minitorch(x, order_a, CUDA), to_minitorch(y, order_b, CUDA)


@pytest.mark.task3_4
@CHECK
@given(
    batch=st.sampled_from([(1, 1), (2, 2), (1, 3), (2, 1)]),
    n=st.integers(1, 6),
    k=st.integers(1, 6),
    m=st.integers(1, 6),
    transpose_a=st.booleans(),
    transpose_b=st.booleans(),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_matmul_matches_simple_and_numpy(batch, n, k, m, transpose_a, transpose_b, dtype, seed) -> None:
    x, y, a, b = _matmul_case(
        (batch[0], n, k),
        (batch[1], k, m),
        dtype,
        (0, 2, 1) if transpose_a else None,
        (0, 2, 1) if transpose_b else None,
        seed,
    )
    got = cuda_ops.CudaOps.matrix_multiply(a, b)
    sa, sb = to_minitorch(x, (0, 1, 2), SIMPLE), to_minitorch(y, (0, 1, 2), SIMPLE)
    expected = (x.astype(np.float64) @ y.astype(np.float64)).astype(dtype)
    check_close(got, minitorch.SimpleOps.matrix_multiply(sa, sb).numpy(), dtype, "matmul vs simple", terms=k)
    check_close(got, expected, dtype, "matmul vs NumPy", terms=k)


@pytest.mark.task3_4
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((1, 5, 40), (1, 40, 3)),  # k spans 3 tiles (16 + 16 + 8): both barriers matter
        ((2, 19, 37), (1, 37, 21)),  # 2 × 2 output tiles, ragged edges, batch broadcast of b
        ((1, 33, 3), (2, 3, 17)),  # 3 row tiles, 2 column tiles, batch broadcast of a
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_several_tiles_ragged_edges(shape_a, shape_b, dtype) -> None:
    """Sizes that are not multiples of TILE = 16 and a k axis of several tiles; `a` is
    stored transposed. A missing bounds check raises IndexError in the simulator, a missing
    `syncthreads` mixes tiles up and gives wrong values."""
    assert cuda_ops.TILE == 16, "the shapes below are chosen for TILE = 16"
    x, y, a, b = _matmul_case(shape_a, shape_b, dtype, order_a=(0, 2, 1))
    got = cuda_ops.CudaOps.matrix_multiply(a, b)
    expected = (x.astype(np.float64) @ y.astype(np.float64)).astype(dtype)
    check_close(got, expected, dtype, "tiled matmul", terms=shape_a[2])


@pytest.mark.task3_4
def test_matmul_operator_broadcasts_batches_and_mixes_dtypes() -> None:
    """`@` on 4-D × 3-D tensors (batch broadcast via stride 0); float32 @ float64 → float64."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
    y = rng.standard_normal((2, 4, 2))
    got = minitorch.from_numpy(x, backend=CUDA) @ minitorch.from_numpy(y, backend=CUDA)
    check_close(got, x.astype(np.float64) @ y, np.float64, "batched @")
    f32 = minitorch.from_numpy(x, backend=CUDA) @ minitorch.from_numpy(y.astype(np.float32), backend=CUDA)
    check_close(f32, x @ y.astype(np.float32), np.float32, "float32 @", terms=4)


# ---- gradients through the CUDA backend -------------------------------------------------


def _smooth_elementwise(a: minitorch.Tensor, b: minitorch.Tensor) -> minitorch.Tensor:
    return (a * b).sigmoid() * a.exp().sum(1, keepdim=True)


def _smooth(a: minitorch.Tensor, b: minitorch.Tensor) -> minitorch.Tensor:
    return (a @ b).sigmoid() * a.exp().sum(1, keepdim=True)


@pytest.mark.task3_3
def test_elementwise_gradient_through_cuda_backend_central_difference() -> None:
    """Backward of map, zip (with a broadcast b) and reduce on the CUDA backend against
    central differences of its own forward, with a random upstream gradient."""
    rng = np.random.default_rng(5)
    a = minitorch.from_numpy(rng.standard_normal((2, 3)), backend=CUDA)
    b = minitorch.from_numpy(rng.standard_normal((3,)), backend=CUDA)
    grad_check(_smooth_elementwise, a, b)


@pytest.mark.task3_4
def test_gradient_through_cuda_backend_central_difference() -> None:
    """Backward of matmul, map, zip and reduce on the CUDA backend against central
    differences of its own forward, with a random upstream gradient."""
    rng = np.random.default_rng(5)
    a = minitorch.from_numpy(rng.standard_normal((2, 3)), backend=CUDA)
    b = minitorch.from_numpy(rng.standard_normal((3, 2)), backend=CUDA)
    grad_check(_smooth, a, b)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _composite(p: minitorch.Tensor, a: minitorch.Tensor) -> minitorch.Tensor:
    """relu(σ(p) · Σ_1 exp(a)) + max_0 p, for p = a · b or p = a @ b (`_composite_numpy`
    is the same function in NumPy, with its backward)."""
    return (p.sigmoid() * a.exp().sum(1, keepdim=True)).relu() + p.max(0).values


def _composite_numpy(
    p: np.ndarray, a: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_composite` in NumPy, and its backward for the upstream gradient g by the chain rule:
    returns (out, ∂L/∂p, the part of ∂L/∂a that comes through exp(a)).

    With s = σ(p), e = Σ_1 exp(a) and q = s · e:
        ∂L/∂p = g · [q > 0] · e · s (1 − s)  +  (Σ_0 g) sent to the first row holding max_0 p
        ∂L/∂a (through e) = Σ_1 (g · [q > 0] · s) · exp(a)
    """
    s, e = _sigmoid(p), np.exp(a).sum(axis=1, keepdims=True)
    q = s * e
    out = np.maximum(q, 0) + p.max(axis=0)
    through_relu = g * (q > 0)
    grad_p = through_relu * e * s * (1 - s)
    first_max = p.argmax(axis=0)  # NumPy's argmax is the first maximum, as max's backward
    grad_p[first_max, np.arange(p.shape[1])] += g.sum(axis=0)
    grad_a = (through_relu * s).sum(axis=1, keepdims=True) * np.exp(a)
    return out, grad_p, grad_a


@pytest.mark.task3_3
def test_elementwise_gradient_through_cuda_backend_matches_the_chain_rule() -> None:
    """p = a · b (b broadcast over rows): ∂L/∂a = ∂L/∂p · b + (the part through exp(a)),
    ∂L/∂b = Σ_0 ∂L/∂p · a. Exercises map, zip, sum and max (forward and backward)."""
    rng = np.random.default_rng(6)
    x, y, g = rng.standard_normal((2, 3)), rng.standard_normal((3,)), rng.standard_normal((2, 3))
    a = minitorch.tensor(x, backend=CUDA, requires_grad=True)
    b = minitorch.tensor(y, backend=CUDA, requires_grad=True)
    out = _composite(a * b, a)
    out.backward(minitorch.tensor(g, backend=CUDA))
    want, grad_p, grad_a = _composite_numpy(x * y, x, g)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    assert a.grad is not None and b.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), grad_p * y + grad_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), (grad_p * x).sum(axis=0), rtol=1e-10, atol=1e-12)


@pytest.mark.task3_4
def test_gradient_through_cuda_backend_matches_the_chain_rule() -> None:
    """p = a @ b: ∂L/∂a = ∂L/∂p @ bᵀ + (the part through exp(a)), ∂L/∂b = aᵀ @ ∂L/∂p."""
    rng = np.random.default_rng(6)
    x, y, g = rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    a = minitorch.tensor(x, backend=CUDA, requires_grad=True)
    b = minitorch.tensor(y, backend=CUDA, requires_grad=True)
    out = _composite(a @ b, a)
    out.backward(minitorch.tensor(g, backend=CUDA))
    want, grad_p, grad_a = _composite_numpy(x @ y, x, g)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    assert a.grad is not None and b.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), grad_p @ y.T + grad_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), x.T @ grad_p, rtol=1e-10, atol=1e-12)
