"""The loss modules against PyTorch's: the same constructor arguments give the same values
and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "name, kwargs, x, t",
    [
        ("MSELoss", {}, RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
        ("BCELoss", {}, RNG.uniform(0.05, 0.95, (3, 4)), RNG.uniform(size=(3, 4))),
        ("NLLLoss", {"ignore_index": 2}, -RNG.uniform(0.1, 3, (6, 5)), np.array([0, 2, 4, 1, 2, 3])),
        (
            "CrossEntropyLoss",
            {"weight": np.array([0.5, 1.0, 2.0, 1.5, 0.25])},
            RNG.standard_normal((6, 5)),
            np.array([0, 2, 4, 1, 2, 3]),
        ),
        (
            "CrossEntropyLoss",
            {"ignore_index": 0},
            RNG.standard_normal((2, 5, 3)),
            np.array([[0, 1, 4], [2, 0, 3]]),
        ),
        (
            "CrossEntropyLoss",
            {"label_smoothing": 0.1},
            RNG.standard_normal((6, 5)),
            np.array([0, 2, 4, 1, 2, 3]),
        ),
        (
            "CrossEntropyLoss",
            {"label_smoothing": 0.25, "ignore_index": 2, "weight": np.array([0.5, 1.0, 2.0, 1.5, 0.25])},
            RNG.standard_normal((6, 5)),
            np.array([0, 2, 4, 1, 2, 3]),
        ),
        (
            "CrossEntropyLoss",
            {"label_smoothing": 1.0, "ignore_index": 0},
            RNG.standard_normal((2, 5, 3)),
            np.array([[0, 1, 4], [2, 0, 3]]),
        ),
    ],
)
def test_loss_modules_match_torch(
    name: str, kwargs: dict, x: np.ndarray, t: np.ndarray, reduction: str
) -> None:
    ours = getattr(nn, name)(
        **{k: minitorch.tensor(v) if k == "weight" else v for k, v in kwargs.items()}, reduction=reduction
    )
    theirs = getattr(torch.nn, name)(
        **{k: torch.tensor(v) if k == "weight" else v for k, v in kwargs.items()}, reduction=reduction
    )
    g = RNG.standard_normal(theirs(torch.tensor(x), torch.tensor(t)).shape)
    a = minitorch.tensor(x, requires_grad=True)
    out = ours(a, minitorch.tensor(t))
    out.backward(minitorch.tensor(g))
    ta = torch.tensor(x, requires_grad=True)
    t_out = theirs(ta, torch.tensor(t))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_pytorch_dtype_names_match_torch() -> None:
    for name in ("float", "double", "long", "bool"):
        assert str(getattr(minitorch, name)) == str(getattr(torch, name)).removeprefix("torch."), name
