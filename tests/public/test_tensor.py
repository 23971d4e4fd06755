"""Tasks 2.3 (tensor ops forward) and 2.4 (tensor backward), on the simple backend.

Every op is checked on generated tensors that include permuted (non-contiguous) layouts:
  * forward values against the same expression in NumPy (2.3),
  * gradients against the derivative worked out by hand, written in NumPy (2.4),
  * gradients against central differences with a random upstream gradient (`grad_check`, 2.4).
The kit's own suite also checks the same ops against PyTorch (test_tensor_torch.py, not part
of a release).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.tensor import reduce_to_shape
from minitorch.testing import grad_check
from tensor_strategies import Drawn, broadcastable_pair, tensors, to_minitorch

B = minitorch.SimpleBackend
CHECK = settings(max_examples=8, deadline=None)


# Domain shaping keeps inputs away from kinks and poles so central differences are exact.
def anywhere(x: np.ndarray) -> np.ndarray:
    return x


def away_from_zero(x: np.ndarray) -> np.ndarray:
    return np.sign(x + 1e-12) * (np.abs(x) + 0.5)


def positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.5


def in_domain(d: Drawn, domain: Callable) -> Drawn:
    return Drawn(domain(d.array), d.order)


# ---- the functions under test, and their values and derivatives in NumPy -----------------


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def at_max(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """1.0 where x holds the maximum (along `axis`, or of all of x), else 0.0: a max passes
    its gradient to the maximum only (drawn values have no ties)."""
    return (x == x.max(axis=axis, keepdims=True)).astype(np.float64)


def composite_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """f = log(u) · x with u = σ(x²) + e^(x/2):  f' = log(u) + x · u'/u,
    u' = 2x · σ(x²)(1 − σ(x²)) + e^(x/2) / 2."""
    s = sigmoid(x * x)
    u = s + np.exp(x * 0.5)
    du = 2 * x * s * (1 - s) + 0.5 * np.exp(x * 0.5)
    return g * (np.log(u) + x * du / u)


class Unary(NamedTuple):
    """out = fn(x) on a minitorch tensor; `numpy` computes the same values, and `grad(x, g)`
    is ∂L/∂x for L = Σ out ⊙ g (g: the upstream gradient, of out's shape)."""

    fn: Callable
    numpy: Callable
    grad: Callable
    domain: Callable = anywhere


UNARY: dict[str, Unary] = {
    "neg": Unary(lambda x: -x, lambda x: -x, lambda x, g: -g),
    "add_const": Unary(lambda x: x + 3.5, lambda x: x + 3.5, lambda x, g: g),
    "rsub_const": Unary(lambda x: 2.0 - x, lambda x: 2.0 - x, lambda x, g: -g),
    "mul_const": Unary(lambda x: 2.5 * x, lambda x: 2.5 * x, lambda x, g: 2.5 * g),
    "div_const": Unary(lambda x: x / 4.0, lambda x: x / 4.0, lambda x, g: g / 4.0),
    "rdiv_const": Unary(lambda x: 2.0 / x, lambda x: 2.0 / x, lambda x, g: -2.0 / x**2 * g, away_from_zero),
    "square": Unary(lambda x: x**2, lambda x: x**2, lambda x, g: 2 * x * g),
    "cube": Unary(lambda x: x**3, lambda x: x**3, lambda x, g: 3 * x**2 * g),
    "sqrt": Unary(lambda x: x**0.5, np.sqrt, lambda x, g: 0.5 / np.sqrt(x) * g, positive),
    "sigmoid": Unary(lambda x: x.sigmoid(), sigmoid, lambda x, g: sigmoid(x) * (1 - sigmoid(x)) * g),
    "relu": Unary(lambda x: x.relu(), lambda x: np.maximum(x, 0.0), lambda x, g: (x > 0) * g, away_from_zero),
    "tanh": Unary(lambda x: x.tanh(), np.tanh, lambda x, g: (1 - np.tanh(x) ** 2) * g),
    "log": Unary(lambda x: x.log(), np.log, lambda x, g: g / x, positive),
    "exp": Unary(lambda x: x.exp(), np.exp, lambda x, g: np.exp(x) * g),
    "sum": Unary(lambda x: x.sum(), lambda x: x.sum(), lambda x, g: np.broadcast_to(g, x.shape)),
    "mean": Unary(lambda x: x.mean(), lambda x: x.mean(), lambda x, g: np.broadcast_to(g, x.shape) / x.size),
    "sum0": Unary(lambda x: x.sum(0), lambda x: x.sum(0), lambda x, g: np.broadcast_to(g, x.shape)),
    "sum_last_keepdim": Unary(
        lambda x: x.sum(-1, keepdim=True),
        lambda x: x.sum(-1, keepdims=True),
        lambda x, g: np.broadcast_to(g, x.shape),
    ),
    "mean0_keepdim": Unary(
        lambda x: x.mean(0, keepdim=True),
        lambda x: x.mean(0, keepdims=True),
        lambda x, g: np.broadcast_to(g, x.shape) / x.shape[0],
    ),
    "max_all": Unary(lambda x: x.max(), lambda x: x.max(), lambda x, g: at_max(x) * g),
    "max_last": Unary(
        lambda x: x.max(-1).values, lambda x: x.max(-1), lambda x, g: at_max(x, -1) * np.expand_dims(g, -1)
    ),
    "amax0": Unary(lambda x: x.amax(0), lambda x: x.max(0), lambda x, g: at_max(x, 0) * np.expand_dims(g, 0)),
    "transpose": Unary(
        lambda x: x.transpose(0, -1) * 1.0,
        lambda x: np.swapaxes(x, 0, -1) * 1.0,
        lambda x, g: np.swapaxes(g, 0, -1),
    ),
    "reshape": Unary(
        lambda x: x.reshape(-1) * 2.0, lambda x: x.reshape(-1) * 2.0, lambda x, g: 2.0 * g.reshape(x.shape)
    ),
    "contiguous_view": Unary(
        lambda x: x.contiguous().view(-1).exp(),
        lambda x: np.exp(x.reshape(-1)),
        lambda x, g: np.exp(x) * g.reshape(x.shape),
    ),
    "composite": Unary(
        lambda x: ((x * x).sigmoid() + (x * 0.5).exp()).log() * x,
        lambda x: np.log(sigmoid(x * x) + np.exp(x * 0.5)) * x,
        composite_grad,
    ),
}


def mixed_grads(a: np.ndarray, b: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f = σ(ab) − a/(b² + 1):  ∂f/∂a = σ'(ab)·b − 1/(b² + 1),  ∂f/∂b = σ'(ab)·a + 2ab/(b² + 1)²,
    with σ'(z) = σ(z)(1 − σ(z))."""
    ds = sigmoid(a * b) * (1 - sigmoid(a * b))
    return g * (ds * b - 1 / (b * b + 1)), g * (ds * a + 2 * a * b / (b * b + 1) ** 2)


class Binary(NamedTuple):
    """out = fn(a, b), broadcasting; `numpy` computes the same values, and `grads(a, b, g)`
    gives (∂L/∂a, ∂L/∂b) for L = Σ out ⊙ g in the broadcast shape (before summing back
    to each operand's shape); `domain` shapes b's values."""

    fn: Callable
    numpy: Callable
    grads: Callable
    domain: Callable = anywhere


BINARY: dict[str, Binary] = {
    "add": Binary(lambda a, b: a + b, lambda a, b: a + b, lambda a, b, g: (g, g)),
    "sub": Binary(lambda a, b: a - b, lambda a, b: a - b, lambda a, b, g: (g, -g)),
    "mul": Binary(lambda a, b: a * b, lambda a, b: a * b, lambda a, b, g: (g * b, g * a)),
    "div": Binary(
        lambda a, b: a / b, lambda a, b: a / b, lambda a, b, g: (g / b, -g * a / b**2), away_from_zero
    ),
    "mixed": Binary(
        lambda a, b: (a * b).sigmoid() - a / (b * b + 1.0),
        lambda a, b: sigmoid(a * b) - a / (b * b + 1.0),
        mixed_grads,
    ),
}


def sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a gradient of the broadcast shape back to an operand's `shape`: over the leading
    dimensions the operand lacks, then (keeping them) over those where it has size 1."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return grad.sum(axis=tuple(k for k, n in enumerate(shape) if n == 1), keepdims=True)


# a @ b for these shapes: 1-D operands, broadcast batch dimensions.
MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 2)),
    ((1, 2, 3), (6, 3, 1)),
    ((2, 4, 2, 3), (3, 4)),
]


# ---- forward (2.3) -----------------------------------------------------------------------


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors())
def test_unary_forward_matches_numpy(name: str, d: Drawn) -> None:
    case = UNARY[name]
    d = in_domain(d, case.domain)
    got = case.fn(d.tensor(B))
    expected = np.asarray(case.numpy(d.array))
    assert got.shape == expected.shape, f"{name}: shape {got.shape} vs NumPy {expected.shape}"
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_binary_broadcast_forward_matches_numpy(name: str, pair, data) -> None:
    case = BINARY[name]
    a = data.draw(tensors(shape=pair[0]))
    b = in_domain(data.draw(tensors(shape=pair[1])), case.domain)
    got = case.fn(a.tensor(B), b.tensor(B))
    expected = case.numpy(a.array, b.array)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
def test_forward_examples_by_hand() -> None:
    t = minitorch.tensor([[1.0, -2.0, 3.0], [0.0, 5.0, -6.0]], backend=B)
    np.testing.assert_array_equal((t < 1.0).numpy(), [[0, 1, 0], [1, 0, 1]])
    np.testing.assert_array_equal((t > 1.0).numpy(), [[0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal((t == 0.0).numpy(), [[0, 0, 0], [1, 0, 0]])
    assert t.sum().item() == 1.0
    np.testing.assert_array_equal(t.sum(1).numpy(), [2.0, -1.0])
    assert t.sum(1, keepdim=True).shape == (2, 1)
    assert t.max().item() == 5.0
    values, indices = t.max(1)
    np.testing.assert_array_equal(values.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(indices.numpy(), [2, 1])
    assert indices.dtype == np.int64
    assert t.is_close(t + 1e-4).all()
    assert not t.is_close(t + 1.0).all()
    assert t.mean().item() == pytest.approx(1 / 6)
    assert minitorch.tensor(3.0).shape == ()


@pytest.mark.task2_3
@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_matches_numpy(sa, sb) -> None:
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(sa), rng.standard_normal(sb)
    a = to_minitorch(x, tuple(reversed(range(len(sa)))), B)  # stored transposed: not contiguous
    b = minitorch.tensor(y, backend=B)
    out = a @ b
    expected = np.matmul(x, y)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
def test_permuted_tensor_is_copied_before_a_view() -> None:
    t = minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], backend=B)
    with pytest.raises(minitorch.ShapeError, match="contiguous"):
        t.permute(1, 0).view(6)
    np.testing.assert_array_equal(t.permute(1, 0).contiguous().view(6).numpy(), [1, 4, 2, 5, 3, 6])
    np.testing.assert_array_equal(t.permute(1, 0).reshape(6).numpy(), [1, 4, 2, 5, 3, 6])


@pytest.mark.task2_3
@pytest.mark.parametrize("a, b", [((5, 7, 5, 1), (1, 5, 1, 5)), ((2, 3), (3, 2)), ((4,), (5,))])
def test_op_on_shapes_that_do_not_broadcast_raises(a, b) -> None:
    x = minitorch.zeros(a, backend=B)
    y = minitorch.zeros(b, backend=B)
    with pytest.raises(minitorch.ShapeError, match="cannot broadcast"):
        x + y


@pytest.mark.task2_3
def test_reduce_to_shape_by_hand() -> None:
    """reduce_to_shape (task 2.2) sums with the Sum function, whose forward is task 2.3."""
    g = minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], backend=B)
    assert reduce_to_shape(g, (2, 3)) is g
    np.testing.assert_array_equal(reduce_to_shape(g, (3,)).numpy(), [5.0, 7.0, 9.0])
    np.testing.assert_array_equal(reduce_to_shape(g, (1, 3)).numpy(), [[5.0, 7.0, 9.0]])
    np.testing.assert_array_equal(reduce_to_shape(g, (2, 1)).numpy(), [[6.0], [15.0]])
    np.testing.assert_array_equal(reduce_to_shape(g, (1, 1)).numpy(), [[21.0]])
    np.testing.assert_array_equal(reduce_to_shape(g, (1,)).numpy(), [21.0])
    with pytest.raises(minitorch.ShapeError):
        reduce_to_shape(g, (4,))
    with pytest.raises(minitorch.ShapeError):
        reduce_to_shape(g, (2, 2, 3))


@pytest.mark.task2_3
def test_matmul_shape_errors_are_clear() -> None:
    a, b = minitorch.zeros(2, 3, backend=B), minitorch.zeros(4, 5, backend=B)
    with pytest.raises(minitorch.ShapeError, match=r"\(2, 3\) and \(4, 5\)"):
        a @ b
    with pytest.raises(minitorch.ShapeError, match="cannot broadcast"):
        minitorch.zeros(2, 2, 3, backend=B) @ minitorch.zeros(3, 3, 4, backend=B)


@pytest.mark.task2_3
def test_float32_stays_float32() -> None:
    a = minitorch.rand(2, 3, dtype=minitorch.float32, backend=B)
    assert (a * 2.0 + a.exp()).dtype == np.float32
    assert (a @ a.transpose(0, 1)).dtype == np.float32
    assert (a + minitorch.rand(2, 3, backend=B)).dtype == np.float64


# ---- backward (2.4) ----------------------------------------------------------------------


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors(max_side=3))
def test_unary_gradient_central_difference(name: str, d: Drawn) -> None:
    case = UNARY[name]
    grad_check(case.fn, in_domain(d, case.domain).tensor(B))


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_binary_broadcast_gradient_central_difference(name: str, pair, data) -> None:
    case = BINARY[name]
    a = data.draw(tensors(shape=pair[0]))
    b = in_domain(data.draw(tensors(shape=pair[1])), case.domain)
    grad_check(case.fn, a.tensor(B), b.tensor(B))


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors(), seed=st.integers(0, 2**31 - 1))
def test_unary_gradient_by_hand(name: str, d: Drawn, seed: int) -> None:
    case = UNARY[name]
    d = in_domain(d, case.domain)
    x = d.tensor(B).requires_grad_()
    out = case.fn(x)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    assert x.grad.shape == x.shape
    np.testing.assert_allclose(x.grad.numpy(), case.grad(d.array, g), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_binary_gradient_by_hand(name: str, pair, data, seed: int) -> None:
    case = BINARY[name]
    da = data.draw(tensors(shape=pair[0]))
    db = in_domain(data.draw(tensors(shape=pair[1])), case.domain)
    a, b = da.tensor(B).requires_grad_(), db.tensor(B).requires_grad_()
    out = case.fn(a, b)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    grad_a, grad_b = (np.broadcast_to(v, out.shape) for v in case.grads(da.array, db.array, g))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    np.testing.assert_allclose(a.grad.numpy(), sum_to_shape(grad_a, a.shape), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), sum_to_shape(grad_b, b.shape), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_gradient_by_hand(sa, sb) -> None:
    """out = a @ b:  ∂L/∂a = g @ bᵀ,  ∂L/∂b = aᵀ @ g, summed over broadcast batch dimensions.
    A 1-D a is multiplied as a row [1, k] and a 1-D b as a column [k, 1]."""
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(sa), rng.standard_normal(sb)
    a = to_minitorch(x, tuple(reversed(range(len(sa)))), B).requires_grad_()
    b = minitorch.tensor(y, backend=B, requires_grad=True)
    out = a @ b
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    y2 = y.reshape(-1, 1) if y.ndim == 1 else y
    g2 = g.reshape(np.matmul(x2, y2).shape)
    expected_a = sum_to_shape(g2 @ np.swapaxes(y2, -1, -2), x2.shape).reshape(x.shape)
    expected_b = sum_to_shape(np.swapaxes(x2, -1, -2) @ g2, y2.shape).reshape(y.shape)
    np.testing.assert_allclose(a.grad.numpy(), expected_a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), expected_b, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_4
def test_permute_gradient_by_hand() -> None:
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    a = minitorch.tensor(x, backend=B, requires_grad=True)
    w = minitorch.arange(24, backend=B).view(4, 2, 3)
    (a.permute(2, 0, 1) * w).sum().backward()
    # out[k, i, j] = a[i, j, k] · w[k, i, j], so ∂L/∂a[i, j, k] = w[k, i, j]: w permuted back.
    np.testing.assert_allclose(a.grad.numpy(), np.arange(24.0).reshape(4, 2, 3).transpose(1, 2, 0))


@pytest.mark.task2_4
def test_gradients_accumulate_and_shared_subexpressions() -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], backend=B, requires_grad=True)
    y = x * x  # x used twice in one op
    z = (y + x).sum()  # and again downstream (a diamond)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 1)
    (x * 3.0).sum().backward()  # a second backward accumulates, as in PyTorch
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 4)


@pytest.mark.task2_4
def test_backward_errors_are_actionable() -> None:
    x = minitorch.tensor([1.0, 2.0], backend=B, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (x * 2.0).backward()
    with pytest.raises(minitorch.ShapeError, match=r"shape \(2,\)"):
        (x * 2.0).backward(minitorch.tensor([1.0, 2.0, 3.0], backend=B))
    with pytest.raises(RuntimeError, match="does not require grad"):
        minitorch.tensor([1.0], backend=B).sum().backward()


@pytest.mark.task2_4
def test_no_grad_and_detach_record_nothing() -> None:
    x = minitorch.tensor([1.0, 2.0], backend=B, requires_grad=True)
    with minitorch.no_grad():
        y = x * 2.0
    assert not y.requires_grad
    assert not x.detach().requires_grad
    z = (x * 3.0).detach() * x
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])  # the detached factor is a constant


@pytest.mark.task2_4
def test_comparisons_have_no_gradient() -> None:
    x = minitorch.tensor([1.0, -2.0], backend=B, requires_grad=True)
    ((x < 0.0) * x + (x == 1.0) * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


@pytest.mark.task2_4
def test_max_gradient_with_ties() -> None:
    """max(dim) sends the gradient to the first maximum (its index, as PyTorch's); amax and
    max() split it among the tied maxima."""
    rows = [[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]]
    x = minitorch.tensor(rows, backend=B, requires_grad=True)
    np.testing.assert_array_equal(x.max(1).indices.numpy(), [1, 0])
    x.max(1).values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    x.grad = None
    x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    x.grad = None
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])


@pytest.mark.task2_4
@settings(max_examples=40, deadline=None)
@given(broadcastable_pair(), st.integers(0, 2**31 - 1))
def test_broadcast_zip_and_gradient_shapes(pair, seed: int) -> None:
    """a * b broadcasts like NumPy; each gradient comes back in its operand's shape
    (`reduce_to_shape`, task 2.2, sums it over the broadcast copies)."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(pair[0]), rng.standard_normal(pair[1])
    a = minitorch.tensor(x, backend=minitorch.SimpleBackend, requires_grad=True)
    b = minitorch.tensor(y, backend=minitorch.SimpleBackend, requires_grad=True)
    out = a * b
    np.testing.assert_allclose(out.numpy(), x * y)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=minitorch.SimpleBackend))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    # ∂/∂a Σ g·a·b = Σ over broadcast copies of g·b
    expected_a = np.broadcast_to(g * np.broadcast_to(y, g.shape), g.shape)
    extra = expected_a.ndim - x.ndim
    expected_a = expected_a.sum(axis=tuple(range(extra)))
    expected_a = expected_a.sum(axis=tuple(k for k, s in enumerate(x.shape) if s == 1), keepdims=True)
    np.testing.assert_allclose(a.grad.numpy(), expected_a.reshape(x.shape), rtol=1e-12, atol=1e-12)


@pytest.mark.task2_4
def test_long_chain_has_no_recursion_limit() -> None:
    x = minitorch.tensor([0.5], backend=B, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.item() == 1.0


@pytest.mark.library
def test_deepcopy_gives_a_new_leaf_with_its_own_storage_and_gradient() -> None:
    import copy

    a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = copy.deepcopy(a)
    assert b.requires_grad and b.is_leaf() and b.unique_id != a.unique_id
    (a * 3.0 + b * 5.0).sum().backward()  # each copy receives its own gradient
    assert a.grad.tolist() == [3.0, 3.0] and b.grad.tolist() == [5.0, 5.0]
    b._tensor._storage[0] = 7.0  # the storage is not shared
    assert a.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="graph leaves.*Mul"):
        copy.deepcopy(a * 2.0)
