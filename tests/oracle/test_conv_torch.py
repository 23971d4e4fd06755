"""Tasks 4.1 and 4.2 against PyTorch: conv1d/conv2d values and gradients over generated
cases, string padding, float32, and state dicts exchanged with torch's layers.

The project's own oracle, kept apart from `test_conv.py` (the public tests, which check the
same things against NumPy loops and run without PyTorch): not shipped to students, and
skipped where torch is missing. The generated cases are the public file's strategies.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from test_conv import _inputs, conv1d_cases, conv2d_cases

torch = pytest.importorskip("torch")

CHECK = settings(max_examples=25, deadline=None)


def _compare(mt_out, t_out, mt_inputs, t_inputs, g, rtol=1e-9, atol=1e-10):
    """Same values, and the same gradients for the upstream gradient g."""
    np.testing.assert_allclose(mt_out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    mt_out.backward(minitorch.tensor(g, dtype=mt_out.dtype))
    t_out.backward(torch.tensor(g, dtype=t_out.dtype))
    for k, (a, b) in enumerate(zip(mt_inputs, t_inputs)):
        if b is None:
            continue
        assert a.grad is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {k}")


# ---------------------------------------------------------------------------------------
# conv1d


@pytest.mark.task4_1
@CHECK
@given(conv1d_cases())
def test_conv1d_matches_torch(case) -> None:
    n, c_in, c_out, length, k, stride, padding, dilation, bias, permuted, seed = case
    rng = np.random.default_rng(seed)
    x, w, b, X, W, B = _inputs(rng, (n, c_in, length), (c_out, c_in, k), c_out, bias, permuted)
    out = F.conv1d(X, W, B, stride, padding, dilation)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    t_out = torch.nn.functional.conv1d(tx, tw, tb, stride, padding, dilation)
    assert out.shape == tuple(t_out.shape)
    _compare(out, t_out, [X, W, B], [tx, tw, tb], rng.standard_normal(out.shape))


@pytest.mark.task4_1
@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("k", [3, 4])
def test_conv1d_string_padding_matches_torch(padding: str, k: int) -> None:
    rng = np.random.default_rng(k)
    x, w = rng.standard_normal((2, 3, 9)), rng.standard_normal((2, 3, k))
    out = F.conv1d(minitorch.tensor(x), minitorch.tensor(w), padding=padding, dilation=2)
    expected = torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w), padding=padding, dilation=2)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task4_1
def test_conv1d_float32_matches_torch() -> None:
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4, 11), (5, 4, 3), (5,)))
    X, W, B = (minitorch.tensor(a, dtype=minitorch.float32, requires_grad=True) for a in (x, w, b))
    out = F.conv1d(X, W, B, stride=2, padding=1)
    assert out.dtype == np.float32
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    t_out = torch.nn.functional.conv1d(tx, tw, tb, stride=2, padding=1)
    _compare(
        out, t_out, [X, W, B], [tx, tw, tb], rng.standard_normal(out.shape).astype(np.float32), 1e-4, 1e-5
    )
    assert X.grad is not None and X.grad.dtype == np.float32 and W.grad.dtype == np.float32


@pytest.mark.task4_1
def test_conv1d_layer_loads_torch_state_dict() -> None:
    t_layer = torch.nn.Conv1d(4, 5, 3, stride=2, padding=1, dilation=2).double()
    layer = nn.Conv1d(4, 5, 3, stride=2, padding=1, dilation=2)
    layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((2, 4, 12))
    np.testing.assert_allclose(
        layer(minitorch.tensor(x)).numpy(), t_layer(torch.tensor(x)).detach().numpy(), rtol=1e-10
    )
    # and back: our state_dict loads into torch
    t_layer2 = torch.nn.Conv1d(4, 5, 3, stride=2, padding=1, dilation=2).double()
    t_layer2.load_state_dict({k: torch.tensor(v) for k, v in layer.state_dict().items()})
    assert torch.equal(t_layer2.weight, t_layer.weight)


# ---------------------------------------------------------------------------------------
# conv2d


@pytest.mark.task4_2
@CHECK
@given(conv2d_cases())
def test_conv2d_matches_torch(case) -> None:
    n, c_in, c_out, h, w_, kh, kw, stride, padding, dilation, bias, permuted, seed = case
    rng = np.random.default_rng(seed)
    x, w, b, X, W, B = _inputs(rng, (n, c_in, h, w_), (c_out, c_in, kh, kw), c_out, bias, permuted)
    out = F.conv2d(X, W, B, stride, padding, dilation)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    t_out = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation)
    assert out.shape == tuple(t_out.shape)
    _compare(out, t_out, [X, W, B], [tx, tw, tb], rng.standard_normal(out.shape))


@pytest.mark.task4_2
def test_conv2d_same_padding_matches_torch() -> None:
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((1, 2, 6, 7)), rng.standard_normal((3, 2, 4, 3))
    out = F.conv2d(minitorch.tensor(x), minitorch.tensor(w), padding="same")
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    assert out.shape == (1, 3, 6, 7)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.task4_2
def test_conv2d_layer_loads_torch_state_dict() -> None:
    t_layer = torch.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=1).double()
    layer = nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=1)
    assert layer.weight.value.shape == tuple(t_layer.weight.shape)
    bound = 1 / np.sqrt(3 * 3 * 2)
    assert np.all(np.abs(layer.weight.value.numpy()) <= bound)
    layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    x = np.random.default_rng(7).standard_normal((2, 3, 6, 5))
    np.testing.assert_allclose(
        layer(minitorch.tensor(x)).numpy(), t_layer(torch.tensor(x)).detach().numpy(), rtol=1e-10
    )
