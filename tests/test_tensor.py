"""Tasks 2.3 (tensor ops forward) and 2.4 (tensor backward), on the simple backend.

Every op is checked three ways on generated tensors that include permuted
(non-contiguous) layouts:
  * forward values against NumPy,
  * backward against central differences with a random upstream gradient (`grad_check`),
  * values and gradients against PyTorch in float64 (skipped without torch).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.testing import grad_check
from tensor_strategies import Drawn, broadcastable_pair, tensors, to_minitorch

B = minitorch.SimpleBackend
CHECK = settings(max_examples=8, deadline=None)


# Domain shaping keeps inputs away from kinks and poles so central differences are exact.
def away_from_zero(x: np.ndarray) -> np.ndarray:
    return np.sign(x + 1e-12) * (np.abs(x) + 0.5)


def positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.5


# name: (minitorch fn, torch fn, domain)
UNARY: dict[str, tuple[Callable, Callable, Callable]] = {
    "neg": (lambda x: -x, lambda x: -x, lambda x: x),
    "add_const": (lambda x: x + 3.5, lambda x: x + 3.5, lambda x: x),
    "rsub_const": (lambda x: 2.0 - x, lambda x: 2.0 - x, lambda x: x),
    "mul_const": (lambda x: 2.5 * x, lambda x: 2.5 * x, lambda x: x),
    "div_const": (lambda x: x / 4.0, lambda x: x / 4.0, lambda x: x),
    "rdiv_const": (lambda x: 2.0 / x, lambda x: 2.0 / x, away_from_zero),
    "square": (lambda x: x**2, lambda x: x**2, lambda x: x),
    "cube": (lambda x: x**3, lambda x: x**3, lambda x: x),
    "sqrt": (lambda x: x**0.5, lambda x: x**0.5, positive),
    "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), lambda x: x),
    "relu": (lambda x: x.relu(), lambda x: x.relu(), away_from_zero),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), lambda x: x),
    "log": (lambda x: x.log(), lambda x: x.log(), positive),
    "exp": (lambda x: x.exp(), lambda x: x.exp(), lambda x: x),
    "sum": (lambda x: x.sum(), lambda x: x.sum(), lambda x: x),
    "mean": (lambda x: x.mean(), lambda x: x.mean(), lambda x: x),
    "sum0": (lambda x: x.sum(0), lambda x: x.sum(0), lambda x: x),
    "sum_last_keepdim": (lambda x: x.sum(-1, keepdim=True), lambda x: x.sum(-1, keepdim=True), lambda x: x),
    "mean0_keepdim": (lambda x: x.mean(0, keepdim=True), lambda x: x.mean(0, keepdim=True), lambda x: x),
    "max_all": (lambda x: x.max(), lambda x: x.max(), lambda x: x),
    "max_last": (lambda x: x.max(-1).values, lambda x: x.max(-1).values, lambda x: x),
    "amax0": (lambda x: x.amax(0), lambda x: x.amax(0), lambda x: x),
    "transpose": (lambda x: x.transpose(0, -1) * 1.0, lambda x: x.transpose(0, -1) * 1.0, lambda x: x),
    "reshape": (lambda x: x.reshape(-1) * 2.0, lambda x: x.reshape(-1) * 2.0, lambda x: x),
    "contiguous_view": (lambda x: x.contiguous().view(-1).exp(), lambda x: x.contiguous().view(-1).exp(), lambda x: x),
    "composite": (
        lambda x: ((x * x).sigmoid() + (x * 0.5).exp()).log() * x,
        lambda x: ((x * x).sigmoid() + (x * 0.5).exp()).log() * x,
        lambda x: x,
    ),
}

BINARY: dict[str, tuple[Callable, Callable, Callable]] = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, lambda x: x),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, lambda x: x),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, lambda x: x),
    "div": (lambda a, b: a / b, lambda a, b: a / b, away_from_zero),
    "mixed": (lambda a, b: (a * b).sigmoid() - a / (b * b + 1.0), lambda a, b: (a * b).sigmoid() - a / (b * b + 1.0), lambda x: x),
}


def _prepare(d: Drawn, domain: Callable) -> Drawn:
    return Drawn(domain(d.array), d.order)


# ---- forward (2.3) -----------------------------------------------------------------------


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors())
def test_unary_forward_matches_torch(name: str, d: Drawn) -> None:
    torch = pytest.importorskip("torch")
    fn, tfn, domain = UNARY[name]
    d = _prepare(d, domain)
    got = fn(d.tensor(B))
    expected = tfn(torch.tensor(d.array)).numpy()
    assert got.shape == expected.shape, f"{name}: shape {got.shape} vs torch {expected.shape}"
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_binary_broadcast_forward_matches_torch(name: str, pair, data) -> None:
    torch = pytest.importorskip("torch")
    fn, tfn, domain = BINARY[name]
    a = _prepare(data.draw(tensors(shape=pair[0])), lambda x: x)
    b = _prepare(data.draw(tensors(shape=pair[1])), domain)
    got = fn(a.tensor(B), b.tensor(B))
    expected = tfn(torch.tensor(a.array), torch.tensor(b.array)).numpy()
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
@pytest.mark.parametrize(
    "sa, sb",
    [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
     ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 1))],
)
def test_matmul_matches_torch(sa, sb) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(sa), rng.standard_normal(sb)
    a = to_minitorch(x, tuple(reversed(range(len(sa)))), B).requires_grad_()
    b = minitorch.tensor(y, backend=B, requires_grad=True)
    out = a @ b
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    tout = ta @ tb
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12, atol=1e-12)


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
    fn, _, domain = UNARY[name]
    d = _prepare(d, domain)
    grad_check(fn, d.tensor(B))


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_binary_broadcast_gradient_central_difference(name: str, pair, data) -> None:
    fn, _, domain = BINARY[name]
    a = data.draw(tensors(shape=pair[0]))
    b = _prepare(data.draw(tensors(shape=pair[1])), domain)
    grad_check(fn, a.tensor(B), b.tensor(B))


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors(), seed=st.integers(0, 2**31 - 1))
def test_unary_gradient_matches_torch(name: str, d: Drawn, seed: int) -> None:
    torch = pytest.importorskip("torch")
    fn, tfn, domain = UNARY[name]
    d = _prepare(d, domain)
    x = d.tensor(B).requires_grad_()
    out = fn(x)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    tx = torch.tensor(d.array, requires_grad=True)
    tfn(tx).backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_binary_gradient_matches_torch(name: str, pair, data, seed: int) -> None:
    torch = pytest.importorskip("torch")
    fn, tfn, domain = BINARY[name]
    da = data.draw(tensors(shape=pair[0]))
    db = _prepare(data.draw(tensors(shape=pair[1])), domain)
    a, b = da.tensor(B).requires_grad_(), db.tensor(B).requires_grad_()
    out = fn(a, b)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    ta, tb = torch.tensor(da.array, requires_grad=True), torch.tensor(db.array, requires_grad=True)
    tfn(ta, tb).backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
def test_permute_gradient_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    a = minitorch.tensor(x, backend=B, requires_grad=True)
    out = a.permute(2, 0, 1) * minitorch.arange(24, backend=B).view(4, 2, 3)
    out.sum().backward()
    ta = torch.tensor(x, requires_grad=True)
    (ta.permute(2, 0, 1) * torch.arange(24.0, dtype=torch.float64).view(4, 2, 3)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


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
def test_max_ties_follow_torch() -> None:
    """max(dim) sends the gradient to the first maximum; amax and max() split it."""
    rows = [[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]]
    x = minitorch.tensor(rows, backend=B, requires_grad=True)
    x.max(1).values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    x.grad = None
    x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    x.grad = None
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    torch = pytest.importorskip("torch")
    t = torch.tensor(rows, requires_grad=True)
    t.max(1).values.sum().backward()
    np.testing.assert_allclose(x.max(1).indices.numpy(), t.max(1).indices.numpy())
    np.testing.assert_allclose(t.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    t.grad = None
    t.max().backward()
    np.testing.assert_allclose(t.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])


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
