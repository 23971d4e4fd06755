"""Tasks 3.1 (parallel map / zip / reduce) and 3.2 (parallel matmul): the fast CPU backend.

The kernels of `minitorch/fast_ops.py` are compared with the simple backend and with NumPy,
in float64 and float32 (and int64 where an op makes sense for integers):

* through `FastBackend` on generated tensors in generated layouts (contiguous and
  permuted, broadcast pairs), with gradients (central differences, and the chain rule
  written out in NumPy);
* called directly on hand-picked layouts (`backend_cases.LAYOUT_CASES`: contiguous,
  scalar operands, bias rows, transposes, permuted outputs, empty and large outputs), and
  matmuls with odd sizes, 1 × 1, broadcast batches, transposed and strided operands.

`FastBackend` runs your kernels on every layout, contiguous ones included.

Compile time: every (scalar function, dtypes) pair is one kernel to compile (about 1–3 s
the first time, then loaded from Numba's cache), so the tests reuse a small set of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import fast_ops, jit, operators
from minitorch.tensor_data import TensorData
from minitorch.testing import grad_check
from backend_cases import (
    LAYOUT_CASES,
    MAPS,
    MATMUL_LAYOUTS,
    MATMUL_SIZES,
    REDUCES,
    ZIPS,
    check_close,
    empty,
    layout,
)
from backend_cases import run_matmul, same, tol
from backend_cases import both as _both
from tensor_strategies import Drawn, broadcastable_pair, tensors, to_minitorch

FAST = minitorch.FastBackend
SIMPLE = minitorch.SimpleBackend
CHECK = settings(max_examples=10, deadline=None)
DTYPES = [np.float64, np.float32]


def both(d: Drawn, dtype: type, domain: Callable = same) -> tuple[minitorch.Tensor, minitorch.Tensor]:
    """The drawn values on this backend and on the simple backend, in the drawn layout."""
    return _both(d, dtype, FAST, domain)


# ---- 3.1: map ---------------------------------------------------------------------------


@pytest.mark.task3_1
@pytest.mark.parametrize("name", sorted(MAPS))
@CHECK
@given(d=tensors())
def test_map_matches_simple_and_numpy(name: str, d: Drawn) -> None:
    reference, domain = MAPS[name]
    f, s = both(d, np.float64, domain)
    got = getattr(FAST, name)(f)
    check_close(got, getattr(SIMPLE, name)(s).numpy(), np.float64, f"{name} vs simple backend")
    check_close(got, reference(domain(d.array)), np.float64, f"{name} vs NumPy")


@pytest.mark.task3_1
@CHECK
@given(d=tensors(max_dims=4))
def test_map_float32(d: Drawn) -> None:
    f, s = both(d, np.float32)
    got = FAST.sigmoid_map(f)
    check_close(got, SIMPLE.sigmoid_map(s).numpy(), np.float32, "sigmoid float32 vs simple backend")
    check_close(got, 1 / (1 + np.exp(-d.array.astype(np.float32))), np.float32, "sigmoid float32 vs NumPy")


@pytest.mark.task3_1
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1)])
@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 2, 9)])
def test_map_broadcasts_into_a_permuted_out(shape: tuple[int, ...], order: tuple[int, ...]) -> None:
    """map(a, out): `a` of shape (shape[1], 1) broadcast into an `out` of any layout."""
    a = layout((shape[1], 1), (0, 1))
    out = layout(shape, order, values=np.zeros(shape))
    fast_ops.tensor_map(operators.neg)(*out.tuple(), *a.tuple())
    np.testing.assert_array_equal(out.to_numpy(), np.broadcast_to(-a.to_numpy(), shape))


@pytest.mark.task3_1
def test_map_int64_gives_float64() -> None:
    x = np.arange(-6, 6).reshape(3, 4)
    for order in [(0, 1), (1, 0)]:
        t = to_minitorch(x, order, FAST)
        assert t.dtype == np.int64
        check_close(FAST.neg_map(t), -x.astype(np.float64), np.float64, f"neg of int64, order {order}")


# ---- 3.1: zip ---------------------------------------------------------------------------


@pytest.mark.task3_1
@pytest.mark.parametrize("name", sorted(ZIPS))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_zip_broadcast_matches_simple_and_numpy(name: str, pair, data) -> None:
    reference, dom_a, dom_b = ZIPS[name]
    da, db = data.draw(tensors(shape=pair[0])), data.draw(tensors(shape=pair[1]))
    (fa, sa), (fb, sb) = both(da, np.float64, dom_a), both(db, np.float64, dom_b)
    got = getattr(FAST, name)(fa, fb)
    check_close(got, getattr(SIMPLE, name)(sa, sb).numpy(), np.float64, f"{name} vs simple backend")
    expected = reference(dom_a(da.array), dom_b(db.array))
    check_close(got, np.asarray(expected, dtype=np.float64), np.float64, f"{name} vs NumPy")


@pytest.mark.task3_1
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_zip_float32(pair, data) -> None:
    da, db = data.draw(tensors(shape=pair[0])), data.draw(tensors(shape=pair[1]))
    (fa, sa), (fb, sb) = both(da, np.float32), both(db, np.float32)
    got = FAST.mul_zip(fa, fb)
    check_close(got, SIMPLE.mul_zip(sa, sb).numpy(), np.float32, "mul float32 vs simple backend")
    expected = da.array.astype(np.float32) * db.array.astype(np.float32)
    check_close(got, expected, np.float32, "mul float32 vs NumPy")


@pytest.mark.task3_1
def test_zip_mixed_and_integer_dtypes() -> None:
    """float32 + float64 → float64; int64 + int64 → float64 (`tensor_ops.result_dtype`)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 1, 5)).astype(np.float32)
    y = rng.standard_normal((4, 1))
    got = FAST.add_zip(to_minitorch(x, (2, 0, 1), FAST), minitorch.from_numpy(y, backend=FAST))
    check_close(got, x.astype(np.float64) + y, np.float64, "float32 + float64")
    i = np.arange(12).reshape(3, 4)
    j = np.arange(4) - 2
    got = FAST.add_zip(to_minitorch(i, (1, 0), FAST), minitorch.from_numpy(j, backend=FAST))
    check_close(got, (i + j).astype(np.float64), np.float64, "int64 + int64")


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_kernels_on_every_layout(case: str, dtype: type) -> None:
    """`tensor_zip(mul)` and `tensor_map(neg)` called directly, on each layout of
    LAYOUT_CASES: contiguous ones too, which the kernels must handle like any other."""
    out_shape, out_order, operands = LAYOUT_CASES[case]
    a, b = (layout(shape, order, dtype, seed=k) for k, (shape, order) in enumerate(operands))
    out = layout(out_shape, out_order, dtype, values=np.zeros(out_shape))
    fast_ops.tensor_zip(operators.mul)(*out.tuple(), *a.tuple(), *b.tuple())
    check = dict(**tol(dtype), err_msg=f"mul, {case}")
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() * b.to_numpy(), **check)
    if a.shape == out.shape:
        fast_ops.tensor_map(operators.neg)(*out.tuple(), *a.tuple())
        np.testing.assert_array_equal(out.to_numpy(), -a.to_numpy(), err_msg=f"neg, {case}")


# ---- 3.1: reduce ------------------------------------------------------------------------


@pytest.mark.task3_1
@pytest.mark.parametrize("name", sorted(REDUCES))
@CHECK
@given(d=tensors(max_dims=4, max_side=4), data=st.data())
def test_reduce_matches_simple_and_numpy(name: str, d: Drawn, data) -> None:
    dim = data.draw(st.integers(0, len(d.array.shape) - 1), label="dim")
    f, s = both(d, np.float64)
    got = getattr(FAST, name)(f, dim)
    check_close(got, getattr(SIMPLE, name)(s, dim).numpy(), np.float64, f"{name} over dim {dim} vs simple")
    expected = REDUCES[name](d.array, axis=dim, keepdims=True)
    check_close(got, expected, np.float64, f"{name} over dim {dim} vs NumPy", terms=d.array.shape[dim])


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_reduce_kernel_layouts(dim: int, order: tuple[int, ...], dtype: type) -> None:
    """`tensor_reduce(add)` called directly over each dimension of a (3, 1100, 5) tensor,
    contiguous and permuted: more than a CHUNK of outputs when reducing dim 0 or 2."""
    a = layout((3, 1100, 5), order, dtype)
    out_shape = list(a.shape)
    out_shape[dim] = 1
    out = empty(tuple(out_shape), dtype)
    fast_ops.tensor_reduce(operators.add)(*out.tuple(), *a.tuple(), dim)
    expected = a.to_numpy().astype(np.float64).sum(axis=dim, keepdims=True)
    np.testing.assert_allclose(out.to_numpy(), expected, **tol(dtype, a.shape[dim]))


@pytest.mark.task3_1
def test_reduce_start_value_and_empty_dimension() -> None:
    """`out` arrives holding the start value; a dimension of size 0 leaves it unchanged."""
    a = layout((2, 3), (1, 0))
    out = empty((2, 1), fill=-np.inf)
    fast_ops.tensor_reduce(operators.max)(*out.tuple(), *a.tuple(), 1)
    np.testing.assert_array_equal(out.to_numpy(), a.to_numpy().max(axis=1, keepdims=True))
    out = empty((1, 4), fill=7.0)
    fast_ops.tensor_reduce(operators.add)(*out.tuple(), *empty((0, 4)).tuple(), 0)
    np.testing.assert_array_equal(out.to_numpy(), np.full((1, 4), 7.0))
    out = empty((3, 1, 0))  # nothing to fill
    fast_ops.tensor_reduce(operators.add)(*out.tuple(), *empty((3, 2, 0)).tuple(), 1)


# ---- 3.2: matmul ------------------------------------------------------------------------

#: The kernel of task 3.2, and the one `FastBackend` uses (in your release, the same kernel;
#: in later stages' faster backend, one that may pick another loop for large products).
MATMUL_KERNELS = {
    "tensor_matmul": fast_ops.tensor_matmul,
    "backend": minitorch.FastBackend.ops.matmul_kernel(),
}


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lay", sorted(MATMUL_LAYOUTS))
@pytest.mark.parametrize("size", MATMUL_SIZES, ids=[str(s) for s in MATMUL_SIZES])
def test_matmul_kernels(size, lay: str, dtype: type) -> None:
    ba, bb, i, k, j = size
    order_a, order_b = MATMUL_LAYOUTS[lay]
    a = layout((ba, i, k), order_a, dtype, seed=1)
    b = layout((bb, k, j), order_b, dtype, seed=2)
    expected = a.to_numpy().astype(np.float64) @ b.to_numpy().astype(np.float64)
    for name, kernel in MATMUL_KERNELS.items():
        got = run_matmul(kernel, a, b, dtype)
        np.testing.assert_allclose(got, expected, **tol(dtype, k), err_msg=f"{name} kernel, {lay}, {size}")


@pytest.mark.task3_2
@settings(max_examples=15, deadline=None)
@given(
    dims=st.tuples(st.integers(1, 20), st.integers(1, 20), st.integers(1, 20)),
    batches=st.sampled_from([(1, 1), (1, 3), (3, 1), (2, 2)]),
    lay=st.sampled_from(sorted(MATMUL_LAYOUTS)),
    seed=st.integers(0, 2**16),
)
def test_matmul_generated(dims, batches, lay: str, seed: int) -> None:
    (i, k, j), (ba, bb) = dims, batches
    order_a, order_b = MATMUL_LAYOUTS[lay]
    a = layout((ba, i, k), order_a, seed=seed)
    b = layout((bb, k, j), order_b, seed=seed + 1)
    expected = a.to_numpy() @ b.to_numpy()
    for name, kernel in MATMUL_KERNELS.items():
        got = run_matmul(kernel, a, b, np.float64)
        np.testing.assert_allclose(got, expected, **tol(np.float64, k), err_msg=f"{name} kernel, {lay}")


@pytest.mark.task3_2
def test_matmul_integer_and_strided_operands() -> None:
    """int64 operands give float64; a view with a step-2 row stride."""
    x = np.arange(24).reshape(2, 3, 4)
    y = np.arange(20).reshape(1, 4, 5) - 7
    a = TensorData(x.ravel(), x.shape)
    b = TensorData(y.ravel(), y.shape)
    big = np.random.default_rng(0).standard_normal((1, 80, 40))
    strided = TensorData(big.ravel(), (1, 40, 40), (3200, 80, 1))  # every other row of big
    for name, kernel in MATMUL_KERNELS.items():
        out = empty((2, 3, 5))
        kernel(*out.tuple(), *a.tuple(), *b.tuple())
        np.testing.assert_array_equal(out.to_numpy(), (x @ y).astype(np.float64), err_msg=name)
        out = empty((1, 40, 40))
        kernel(*out.tuple(), *strided.tuple(), *strided.tuple())
        np.testing.assert_allclose(
            out.to_numpy(), big[:, ::2] @ big[:, ::2], **tol(np.float64, 40), err_msg=name
        )


# ---- gradients through the fast backend -------------------------------------------------


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


@pytest.mark.task3_1
def test_elementwise_gradients_through_fast_backend() -> None:
    """f(a, b) = Σ_dim1 (σ(a · b) + exp(a) / 2): grads by central differences."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4, 2)), rng.standard_normal((4, 1))

    def f(a: minitorch.Tensor, b: minitorch.Tensor) -> minitorch.Tensor:
        return ((a * b).sigmoid() + a.exp() * 0.5).sum(1)

    a, b = to_minitorch(x, (2, 0, 1), FAST), minitorch.from_numpy(y, backend=FAST)
    grad_check(f, a, b)


@pytest.mark.task3_1
def test_elementwise_gradients_match_the_chain_rule_in_numpy() -> None:
    """The same f(a, b) = Σ_dim1 (σ(a · b) + exp(a) / 2) with a (3, 4, 2) permuted and
    b (4, 1) broadcast, and an upstream gradient g (3, 2). Written out with σ' = σ (1 − σ):

        ∂L/∂a = g · (σ'(a b) b + exp(a) / 2)        (g broadcast over dim 1)
        ∂L/∂b = Σ over the broadcast dims 0 and 2 of g · σ'(a b) a
    """
    rng = np.random.default_rng(0)
    x, y, g = rng.standard_normal((3, 4, 2)), rng.standard_normal((4, 1)), rng.standard_normal((3, 2))
    a = to_minitorch(x, (2, 0, 1), FAST).requires_grad_(True)
    b = minitorch.from_numpy(y, backend=FAST).requires_grad_(True)
    out = ((a * b).sigmoid() + a.exp() * 0.5).sum(1)
    out.backward(minitorch.from_numpy(g, backend=FAST))

    s = _sigmoid(x * y)
    g_wide = g[:, None, :]  # the upstream gradient, broadcast back over the summed dim 1
    np.testing.assert_allclose(out.numpy(), (s + np.exp(x) * 0.5).sum(1), rtol=1e-10)
    assert a.grad is not None and b.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), g_wide * (s * (1 - s) * y + np.exp(x) * 0.5), rtol=1e-10)
    np.testing.assert_allclose(
        b.grad.numpy(), (g_wide * s * (1 - s) * x).sum(axis=(0, 2))[:, None], rtol=1e-10
    )


@pytest.mark.task3_2
def test_matmul_gradients_through_fast_backend() -> None:
    """f(x, w, c) = tanh(x @ wᵀ + c): central differences on a small case."""

    def f(x: minitorch.Tensor, w: minitorch.Tensor, c: minitorch.Tensor) -> minitorch.Tensor:
        return (x @ w.transpose(0, 1) + c).tanh()

    rng = np.random.default_rng(1)
    x, w, c = (minitorch.from_numpy(rng.standard_normal(s), backend=FAST) for s in [(3, 4), (5, 4), (5,)])
    grad_check(f, x, w, c)


@pytest.mark.task3_2
def test_matmul_gradients_match_the_chain_rule_in_numpy() -> None:
    """tanh(x @ wᵀ + c) for x (2, 50, 40), w (36, 40), c (36,): with z = x @ wᵀ + c and
    d = g · (1 − tanh²(z)) (g the upstream gradient),

        ∂L/∂x = d @ w,   ∂L/∂w = Σ_batch dᵀ @ x,   ∂L/∂c = Σ_(batch, rows) d.
    """
    rng = np.random.default_rng(1)
    x, w, c = (rng.standard_normal(s) * 0.2 for s in [(2, 50, 40), (36, 40), (36,)])
    g = rng.standard_normal((2, 50, 36))
    tx, tw, tc = (minitorch.from_numpy(v, backend=FAST).requires_grad_(True) for v in (x, w, c))
    out = (tx @ tw.transpose(0, 1) + tc).tanh()
    out.backward(minitorch.from_numpy(g, backend=FAST))

    y = np.tanh(x @ w.T + c)
    d = g * (1 - y**2)
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-9, atol=1e-12)
    expected = {"x": (tx, d @ w), "w": (tw, np.einsum("bij,bik->jk", d, x)), "c": (tc, d.sum(axis=(0, 1)))}
    for name, (t, want) in expected.items():
        assert t.grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-9, atol=1e-11, err_msg=f"gradient of {name}")


# ---- the on-disk kernel cache -----------------------------------------------------------


@pytest.mark.library
def test_scalar_identity_is_stable_and_distinguishes_closures() -> None:
    assert jit._identity(operators.add) == jit._identity(operators.add)
    assert jit._identity(operators.add) != jit._identity(operators.mul)
    scale = [(lambda c: lambda x: x * c)(c) for c in (2.0, 3.0)]
    assert jit._identity(scale[0]) != jit._identity(scale[1])
    assert jit.jit_scalar(operators.add) is jit.jit_scalar(operators.add)
    assert fast_ops.tensor_map(operators.neg) is fast_ops.tensor_map(operators.neg)


@pytest.mark.library
def test_kernels_load_from_the_disk_cache_in_a_new_process(tmp_path) -> None:
    """A kernel closing over a scalar function compiles in one process and is loaded, not
    recompiled, in the next (Numba's default would recompile it in every process)."""
    script = textwrap.dedent(
        """
        import numpy as np
        from minitorch import fast_ops, operators
        from minitorch.tensor_data import TensorData
        a = TensorData(np.arange(6.0), (2, 3))
        out = TensorData(np.zeros(6), (2, 3))
        kernel = fast_ops.tensor_map(operators.neg)
        kernel(*out.tuple(), *a.tuple())
        assert out.to_numpy().tolist() == [[-0.0, -1.0, -2.0], [-3.0, -4.0, -5.0]]
        stats = kernel.stats
        print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    root = Path(minitorch.__file__).resolve().parent.parent
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, cwd=root, capture_output=True, text=True)
        for _ in range(2)
    ]
    first, second = (tuple(int(v) for v in r.stdout.split()) for r in runs)
    assert first == (0, 1), runs[0].stdout + runs[0].stderr
    assert second == (1, 0), runs[1].stdout + runs[1].stderr
