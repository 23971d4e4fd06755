"""In-place operations against torch's: the same values after the same writes."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

WRITES = {
    "setitem_slice": lambda m, x: x.__setitem__((slice(None), slice(1, None, 2)), 7.0),
    "setitem_index_tensor": lambda m, x: x.__setitem__(
        m.tensor([2, 0]), m.tensor(np.array([1.0, 2.0, 3.0, 4.0]))
    ),
    "setitem_mask": lambda m, x: x.__setitem__(x > 0.5, -1.0),
    "setitem_rows_cols": lambda m, x: x.__setitem__((m.tensor([0, 1]), m.tensor([3, 2])), 5.0),
    "add_alpha": lambda m, x: x.add_(m.ones(4), alpha=-0.5),
    "mul_broadcast": lambda m, x: x.mul_(m.tensor(np.array([[2.0], [3.0], [4.0]]))),
    "clamp_": lambda m, x: x.clamp_(min=0.2, max=0.7),
    "masked_fill_": lambda m, x: x.masked_fill_(x < 0.3, 0.0),
    "copy_": lambda m, x: x.copy_(m.arange(4)),
    "sin_cos": lambda m, x: x.copy_(m.sin(x) + m.cos(x)),
}


@pytest.mark.parametrize("name", WRITES)
def test_in_place_writes_match_torch(name: str) -> None:
    values = np.random.default_rng(0).uniform(size=(3, 4))
    ours, theirs = minitorch.tensor(values), torch.tensor(values)
    WRITES[name](minitorch, ours)
    WRITES[name](torch, theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15, atol=0)


def test_sin_and_cos_gradients_match_torch() -> None:
    values = np.linspace(-2, 2, 9)
    a, ta = minitorch.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (minitorch.sin(a) * minitorch.cos(a * 2)).sum().backward()
    (torch.sin(ta) * torch.cos(ta * 2)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-14)


def test_the_same_writes_are_refused() -> None:
    for m in (torch, minitorch):
        w = m.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(
            RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"
        ):
            w.add_(1)
        ids = m.tensor([1, 2])
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            ids.add_(0.5)
