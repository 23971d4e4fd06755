"""Embedding (library code used by the text models): lookup, gradient accumulation into
repeated ids (scatter-add), padding_idx, state dicts, errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library


def _torch():
    return pytest.importorskip("torch")


def _ids(values) -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values), dtype=minitorch.int64)


@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_lookup_and_gradients_match_torch(padding_idx) -> None:
    torch = _torch()
    ids = np.array([[1, 3, 3, 0], [2, 3, 0, 5], [5, 5, 5, 1]])  # repeated ids and padding
    weight = np.random.default_rng(0).standard_normal((6, 4))
    layer = nn.Embedding(6, 4, padding_idx=padding_idx)
    t_layer = torch.nn.Embedding(6, 4, padding_idx=padding_idx).double()
    with torch.no_grad():
        t_layer.weight.copy_(torch.tensor(weight))
    layer.load_state_dict({"weight": weight})
    out = layer(_ids(ids))
    t_out = t_layer(torch.tensor(ids))
    assert out.shape == (3, 4, 4)
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    grad = layer.weight.value.grad
    assert grad is not None
    np.testing.assert_allclose(grad.numpy(), t_layer.weight.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_repeated_ids_accumulate() -> None:
    weight = minitorch.tensor(np.zeros((3, 2)), requires_grad=True)
    out = F.embedding(_ids([2, 0, 2, 2]), weight)
    out.backward(minitorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]))
    assert weight.grad is not None
    assert weight.grad.numpy().tolist() == [[3.0, 4.0], [0.0, 0.0], [13.0, 16.0]]


def test_padding_row_starts_at_zero_and_gets_no_gradient() -> None:
    minitorch.manual_seed(0)
    layer = nn.Embedding(10, 3, padding_idx=2)
    w = layer.weight.value.numpy()
    assert np.all(w[2] == 0) and np.all(w[[0, 1, 3]] != 0)
    layer(_ids([[2, 2, 1]])).sum().backward()
    grad = layer.weight.value.grad
    assert grad is not None
    assert np.all(grad.numpy()[2] == 0) and np.all(grad.numpy()[1] == 1)


def test_init_is_standard_normal() -> None:
    minitorch.manual_seed(1)
    w = nn.Embedding(2000, 16).weight.value.numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1.0) < 0.02


def test_central_differences() -> None:
    ids = _ids([[0, 1, 1], [3, 0, 2]])
    weight = minitorch.tensor(np.random.default_rng(2).standard_normal((4, 3)))
    grad_check(lambda w: F.embedding(ids, w), weight)


def test_float32_and_state_dict_round_trip_with_torch() -> None:
    torch = _torch()
    t_layer = torch.nn.Embedding(7, 5, padding_idx=0)
    layer = nn.Embedding(7, 5, padding_idx=0, dtype=minitorch.float32)
    layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    ids = np.array([[0, 6, 3]])
    out = layer(_ids(ids))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), t_layer(torch.tensor(ids)).detach().numpy())
    back = torch.nn.Embedding(7, 5)
    back.load_state_dict({k: torch.tensor(v) for k, v in layer.state_dict().items()})
    assert torch.equal(back.weight, t_layer.weight)


@pytest.mark.parametrize(
    "backend",
    [pytest.param(minitorch.SimpleBackend, id="simple"), pytest.param(minitorch.FastBackend, id="fast")],
)
def test_gather_and_scatter_add_on_each_cpu_backend(backend) -> None:
    """Lookup and scatter-add are backend kernels: the same results on every CPU backend,
    a strided (transposed) table read in place, the padding row left without gradient."""
    table = np.random.default_rng(3).standard_normal((4, 5))
    weight = minitorch.tensor(np.ascontiguousarray(table.T), backend=backend).permute(1, 0).detach()
    weight.requires_grad_(True)
    ids = np.array([[3, 1, 3], [0, 3, 2]])
    out = F.embedding(_ids(ids), weight, padding_idx=1)
    assert out.backend is backend and out.shape == (2, 3, 5)
    np.testing.assert_array_equal(out.numpy(), table[ids])
    g = np.random.default_rng(4).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=backend))
    want = np.zeros_like(table)
    np.add.at(want, ids.reshape(-1), g.reshape(-1, 5))
    want[1] = 0.0
    assert weight.grad is not None
    np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-12)


def test_errors() -> None:
    layer = nn.Embedding(5, 2)
    with pytest.raises(IndexError, match="id 5 is out of range for 5 embeddings"):
        layer(_ids([1, 5]))
    with pytest.raises(IndexError, match="id -1 is out of range"):
        layer(_ids([-1]))
    with pytest.raises(TypeError, match="int64"):
        layer(minitorch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="padding_idx 7 must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=7)
