"""`gather`, `topk` and `norm` against torch: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

X = np.random.default_rng(8).standard_normal((3, 4, 5))
INDEX = np.random.default_rng(2).integers(0, 4, (3, 3, 5))

CASES = {
    "gather": lambda m, x: m.gather(x, 1, m.tensor(INDEX)),
    "topk": lambda m, x: m.topk(x, 3, dim=2).values,
    "topk_smallest": lambda m, x: m.topk(x, 2, dim=0, largest=False).values,
    "norm": lambda m, x: m.norm(x),
    "norm_dim": lambda m, x: m.norm(x, 3, 1, True),
    "norm_1": lambda m, x: x.norm(1, 2),
    "norm_inf": lambda m, x: x.norm(float("inf"), 1),
}


@pytest.mark.parametrize("name", CASES)
def test_picking_and_norms_match_torch(name: str) -> None:
    a, ta = minitorch.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out, t_out = CASES[name](minitorch, a), CASES[name](torch, ta)
    g = np.random.default_rng(0).standard_normal(t_out.shape)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_topk_indices_match_torch() -> None:
    ours, theirs = minitorch.topk(minitorch.tensor(X), 3, dim=1), torch.topk(torch.tensor(X), 3, dim=1)
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
