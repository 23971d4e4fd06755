"""Attention pooling (task 6.1) against PyTorch (the project's own suite; not shipped):
values and every gradient against the same computation written by hand in PyTorch
(float64). The torch-free tests are in test_attention_pooling.py."""

from __future__ import annotations

import pytest

import minitorch
from minitorch.nn import functional as F
from test_attention_pooling import CPU_BACKENDS, _close, _padding, _rand

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_1


def _torch_pooling(values, weight, pad):
    """The same by hand in torch (differentiable; NaN for a fully padded row)."""
    s = values @ weight
    if pad is not None:
        s = s.masked_fill(torch.tensor(pad), float("-inf"))
    a = torch.softmax(s, dim=-1)
    return (a.unsqueeze(1) @ values).squeeze(1), a


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("lengths", [None, [5, 2, 1, 4]])
def test_values_and_gradients_match_torch(backend, lengths) -> None:
    v, w = _rand(4, 5, 3), _rand(3, seed=1)
    pad = _padding(lengths, 5) if lengths is not None else None
    mv = minitorch.tensor(v, backend=backend, requires_grad=True)
    mw = minitorch.tensor(w, backend=backend, requires_grad=True)
    mask = minitorch.tensor(pad, backend=backend) if pad is not None else None
    pooled, weights = F.attention_pooling(mv, mw, mask)
    tv, tw = torch.tensor(v, requires_grad=True), torch.tensor(w, requires_grad=True)
    t_pooled, t_weights = _torch_pooling(tv, tw, pad)
    _close(pooled, t_pooled, "pooled")
    _close(weights, t_weights, "weights")
    g1, g2 = _rand(4, 3, seed=2), _rand(4, 5, seed=3)
    (
        (pooled * minitorch.tensor(g1, backend=backend)).sum()
        + (weights * minitorch.tensor(g2, backend=backend)).sum()
    ).backward()
    ((t_pooled * torch.tensor(g1)).sum() + (t_weights * torch.tensor(g2)).sum()).backward()
    _close(mv.grad, tv.grad, "values.grad")
    _close(mw.grad, tw.grad, "weight.grad")
