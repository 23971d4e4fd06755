"""Scalar values and derivatives against PyTorch (float64): the oracle of the kit's own suite.

Not part of a release (students need no PyTorch): test_scalar.py checks the same expressions
against float references and central differences. Skipped where PyTorch is not installed.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import Scalar
from strategies import assert_close, fast
from test_scalar import ONE_ARG, ONE_IDS, TWO_ARG, TWO_IDS, upstream

torch = pytest.importorskip("torch")


@pytest.mark.task1_3
@pytest.mark.parametrize("name, fn, ref, values", ONE_ARG, ids=ONE_IDS)
@fast
@given(data=st.data())
def test_one_arg_matches_torch(name, fn, ref, values, data) -> None:
    a = data.draw(values, label="a")
    d = data.draw(upstream, label="d_output")
    x = Scalar(a)
    out = fn(x)
    out.backward(d)
    tx = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    tout = fn(tx)
    tout.backward(torch.tensor(d, dtype=torch.float64))
    assert_close(out.data, tout.item(), rtol=1e-9, atol=1e-9)
    assert_close(x.derivative, tx.grad.item(), rtol=1e-6, atol=1e-9)


@pytest.mark.task1_3
@pytest.mark.parametrize("name, fn, ref, values_a, values_b", TWO_ARG, ids=TWO_IDS)
@fast
@given(data=st.data())
def test_two_arg_matches_torch(name, fn, ref, values_a, values_b, data) -> None:
    a = data.draw(values_a, label="a")
    b = data.draw(values_b, label="b")
    d = data.draw(upstream, label="d_output")
    x, y = Scalar(a), Scalar(b)
    out = fn(x, y)
    out.backward(d)
    tx = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    fn(tx, ty).backward(torch.tensor(d, dtype=torch.float64))
    assert_close(out.data, fn(tx, ty).item(), rtol=1e-9, atol=1e-9)
    assert_close(x.derivative, tx.grad.item(), rtol=1e-6, atol=1e-9)
    assert_close(y.derivative, ty.grad.item(), rtol=1e-6, atol=1e-9)
