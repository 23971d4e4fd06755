"""Basic indexing `x[key]` (minitorch/indexing.py): views that match NumPy/PyTorch, share
storage, feed every backend's kernels, and backpropagate (central differences, PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

KEYS = [
    1,
    -1,
    (0, 2),
    (slice(None), 1),
    (Ellipsis, slice(1, 3)),
    (slice(None, None, 2),),
    (slice(1, None), slice(None, None, 2), -1),
    (None, 0),
    (0, None, Ellipsis, None),
    (slice(-2, None), Ellipsis, slice(3, 1)),
    (slice(5, 100),),
    (1, 2, 3),
    Ellipsis,
    (slice(None), slice(None, None, 3), slice(1, 4, 2)),
]
SHAPE = (3, 4, 5)


def key_id(key: object) -> str:
    return repr(key).replace("slice", "s").replace("Ellipsis", "...")


@pytest.mark.parametrize("key", KEYS, ids=key_id)
@pytest.mark.parametrize("backend", [minitorch.SimpleBackend, minitorch.FastBackend], ids=lambda b: b.name)
def test_values_match_numpy_and_share_storage(key: object, backend) -> None:  # noqa: ANN001
    a = np.arange(60.0).reshape(SHAPE)
    x = minitorch.tensor(a, backend=backend)
    got = x[key]
    np.testing.assert_array_equal(got.numpy(), a[key])
    assert np.shares_memory(got._tensor._storage, x._tensor._storage) or got.numel() == 0
    # the view feeds the backend's kernels like any tensor
    np.testing.assert_array_equal((got * 2.0).numpy(), a[key] * 2.0)
    np.testing.assert_array_equal(got.contiguous().numpy(), a[key])


def test_indexing_a_permuted_view() -> None:
    a = np.arange(60.0).reshape(SHAPE)
    x = minitorch.tensor(a).permute(2, 0, 1)
    np.testing.assert_array_equal(x[1:4, -1, ::2].numpy(), a.transpose(2, 0, 1)[1:4, -1, ::2])


@pytest.mark.parametrize("key", KEYS[:10], ids=key_id)
def test_gradient_central_difference(key: object) -> None:
    x = minitorch.tensor(np.random.default_rng(0).standard_normal(SHAPE))
    grad_check(lambda t: t[key] * 1.5, x)


def test_overlapping_picks_accumulate() -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x[0] * 3.0 + x[0:2].sum() + x[-1]).backward()
    assert x.grad.tolist() == [4.0, 1.0, 1.0]


@pytest.mark.parametrize("key", KEYS, ids=key_id)
def test_matches_torch(key: object) -> None:
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal(SHAPE)
    x = minitorch.tensor(a, requires_grad=True)
    y = torch.tensor(a, requires_grad=True)
    ours, theirs = x[key], y[key]
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    g = np.random.default_rng(2).standard_normal(theirs.shape)
    ours.backward(minitorch.tensor(g))
    theirs.backward(torch.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


def test_errors_match_torch() -> None:
    x = minitorch.zeros(2, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="got str"):
        x["a"]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(minitorch.tensor(1.0))


def test_iteration_yields_rows() -> None:
    x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert [row.tolist() for row in x] == [[1.0, 2.0], [3.0, 4.0]]
