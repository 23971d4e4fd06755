"""Additive (Bahdanau) attention (task 6.1) against PyTorch (the project's own suite; not
shipped): values and every gradient (inputs and parameters) against the same computation
written by hand in PyTorch (float64). The torch-free tests are in test_additive_attention.py."""

from __future__ import annotations

import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from test_additive_attention import CPU_BACKENDS, DK, DQ, DV, NAMES, B, H, S, _args, _close, _padding, _rand

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_1


def _torch_additive(q, k, val, wq, wk, v, pad):
    """The same by hand in torch (differentiable; NaN for a fully padded row)."""
    e = torch.tanh((q @ wq.T).unsqueeze(1) + k @ wk.T) @ v
    if pad is not None:
        e = e.masked_fill(torch.tensor(pad), float("-inf"))
    a = torch.softmax(e, dim=-1)
    return (a.unsqueeze(1) @ val).squeeze(1), a


def _backward(context, weights, g1, g2, lib=minitorch, backend=None) -> None:
    if lib is minitorch:
        c, w = minitorch.tensor(g1, backend=backend), minitorch.tensor(g2, backend=backend)
    else:
        c, w = lib.tensor(g1), lib.tensor(g2)
    ((context * c).sum() + (weights * w).sum()).backward()


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("lengths", [None, [5, 2, 1]])
def test_values_and_gradients_match_torch(backend, lengths) -> None:
    arrays = _args()
    pad = _padding(lengths) if lengths is not None else None
    mt = [minitorch.tensor(a, backend=backend, requires_grad=True) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    mask = minitorch.tensor(pad, backend=backend) if pad is not None else None
    context, weights = F.additive_attention(*mt, key_padding_mask=mask)
    t_context, t_weights = _torch_additive(*tt, pad)
    _close(context, t_context, "context")
    _close(weights, t_weights, "weights")
    g1, g2 = _rand(B, DV, seed=10), _rand(B, S, seed=11)
    _backward(context, weights, g1, g2, backend=backend)
    _backward(t_context, t_weights, g1, g2, lib=torch)
    for name, m, t in zip(NAMES, mt, tt):
        _close(m.grad, t.grad, f"{name}.grad")


def test_module_values_and_parameter_gradients_match_torch() -> None:
    q, k, val, wq, wk, v = _args(seed=3)
    layer = nn.AdditiveAttention(DQ, DK, H)
    layer.load_state_dict({"query_proj.weight": wq, "key_proj.weight": wk, "v": v})
    pad = _padding([2, 5, 4])
    mq, mk, mval = (minitorch.tensor(a, requires_grad=True) for a in (q, k, val))
    context, weights = layer(mq, mk, mval, key_padding_mask=minitorch.tensor(pad))
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, val, wq, wk, v)]
    t_context, t_weights = _torch_additive(*tt, pad)
    _close(context, t_context, "context")
    _close(weights, t_weights, "weights")
    g1, g2 = _rand(B, DV, seed=10), _rand(B, S, seed=11)
    _backward(context, weights, g1, g2)
    _backward(t_context, t_weights, g1, g2, lib=torch)
    got = [
        mq.grad,
        mk.grad,
        mval.grad,
        layer.query_proj.weight.value.grad,
        layer.key_proj.weight.value.grad,
        layer.v.value.grad,
    ]
    for name, m, t in zip(NAMES, got, tt):
        _close(m, t.grad, f"{name}.grad")
