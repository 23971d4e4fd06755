"""Tensor values and gradients against PyTorch (float64): the oracle of the kit's own suite.

Not part of a release (students need no PyTorch): test_tensor.py checks the same functions
against NumPy and derivatives worked out by hand. Each function of test_tensor.py's UNARY and
BINARY tables is written with methods that PyTorch's tensors have too, so the same `fn` runs
on both. Skipped where PyTorch is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from tensor_strategies import Drawn, broadcastable_pair, tensors, to_minitorch
from test_tensor import BINARY, CHECK, MATMUL_SHAPES, UNARY, B, in_domain

torch = pytest.importorskip("torch")


# ---- forward (2.3) -----------------------------------------------------------------------


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors())
def test_unary_forward_matches_torch(name: str, d: Drawn) -> None:
    fn, domain = UNARY[name].fn, UNARY[name].domain
    d = in_domain(d, domain)
    got = fn(d.tensor(B))
    expected = fn(torch.tensor(d.array)).numpy()
    assert got.shape == expected.shape, f"{name}: shape {got.shape} vs torch {expected.shape}"
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data())
def test_binary_broadcast_forward_matches_torch(name: str, pair, data) -> None:
    fn, domain = BINARY[name].fn, BINARY[name].domain
    a = data.draw(tensors(shape=pair[0]))
    b = in_domain(data.draw(tensors(shape=pair[1])), domain)
    got = fn(a.tensor(B), b.tensor(B))
    expected = fn(torch.tensor(a.array), torch.tensor(b.array)).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_matches_torch(sa, sb) -> None:
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


# ---- backward (2.4) ----------------------------------------------------------------------


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(UNARY))
@CHECK
@given(d=tensors(), seed=st.integers(0, 2**31 - 1))
def test_unary_gradient_matches_torch(name: str, d: Drawn, seed: int) -> None:
    fn, domain = UNARY[name].fn, UNARY[name].domain
    d = in_domain(d, domain)
    x = d.tensor(B).requires_grad_()
    out = fn(x)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    tx = torch.tensor(d.array, requires_grad=True)
    fn(tx).backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
@pytest.mark.parametrize("name", sorted(BINARY))
@CHECK
@given(pair=broadcastable_pair(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_binary_gradient_matches_torch(name: str, pair, data, seed: int) -> None:
    fn, domain = BINARY[name].fn, BINARY[name].domain
    da = data.draw(tensors(shape=pair[0]))
    db = in_domain(data.draw(tensors(shape=pair[1])), domain)
    a, b = da.tensor(B).requires_grad_(), db.tensor(B).requires_grad_()
    out = fn(a, b)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=B))
    ta, tb = torch.tensor(da.array, requires_grad=True), torch.tensor(db.array, requires_grad=True)
    fn(ta, tb).backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task2_4
def test_permute_gradient_matches_torch() -> None:
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    a = minitorch.tensor(x, backend=B, requires_grad=True)
    out = a.permute(2, 0, 1) * minitorch.arange(24, backend=B).view(4, 2, 3)
    out.sum().backward()
    ta = torch.tensor(x, requires_grad=True)
    (ta.permute(2, 0, 1) * torch.arange(24.0, dtype=torch.float64).view(4, 2, 3)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


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
    t = torch.tensor(rows, requires_grad=True)
    t.max(1).values.sum().backward()
    np.testing.assert_allclose(x.max(1).indices.numpy(), t.max(1).indices.numpy())
    np.testing.assert_allclose(t.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    t.grad = None
    t.max().backward()
    np.testing.assert_allclose(t.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
