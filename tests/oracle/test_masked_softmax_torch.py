"""Task 6.1: `masked_softmax` against PyTorch (the project's own suite; not shipped).

Values and gradients against PyTorch's softmax of the −∞-filled scores (float64) wherever a
row has an allowed position; rows with nothing allowed give zeros by definition. The
torch-free tests of the same function are in test_masked_softmax.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn.masked_softmax import masked_softmax
from test_masked_softmax import _case

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_1


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 6), (2, 2, 3, 4)])
def test_values_and_gradients_match_torch_where_a_row_has_an_allowed_position(shape) -> None:
    scores, mask = _case(shape)
    upstream = np.random.default_rng(1).standard_normal(shape)
    s = minitorch.tensor(scores, requires_grad=True)
    out = masked_softmax(s, minitorch.tensor(mask))
    (out * minitorch.tensor(upstream)).sum().backward()

    t_s = torch.tensor(scores, requires_grad=True)
    t_out = torch.softmax(t_s.masked_fill(~torch.tensor(mask), float("-inf")), -1)
    live = mask.any(-1)  # rows with an allowed position: torch is defined there
    t_out = torch.where(
        torch.tensor(live)[..., None], t_out, torch.zeros(())
    )  # … and 0 elsewhere, by definition
    (t_out * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.grad.numpy(), t_s.grad.numpy(), rtol=1e-10, atol=1e-13)
