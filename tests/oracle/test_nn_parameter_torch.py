"""`nn.Parameter`, `ParameterList`, `F.linear` and `new_zeros` against torch's."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")


def _model(m):
    """The same code for both libraries: a module with raw parameters and a ParameterList."""

    class Net(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = m.nn.Parameter(m.tensor(np.arange(12.0).reshape(3, 4) / 10, dtype=m.float64))
            self.biases = m.nn.ParameterList([m.nn.Parameter(m.zeros(3, dtype=m.float64)) for _ in range(2)])

        def forward(self, x):
            h = m.nn.functional.linear(x, self.weight, self.biases[0])
            return m.tanh(h).new_zeros(h.shape[0], 3) + m.tanh(h) * self.biases[1].exp()

    return Net()


def test_a_pytorch_style_module_with_raw_parameters_matches_torch() -> None:
    x = np.random.default_rng(6).standard_normal((5, 4))
    ours, theirs = _model(minitorch), _model(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    out, t_out = ours(minitorch.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    t_out.sum().backward()
    for (n, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert isinstance(p, minitorch.Tensor) and isinstance(tp, torch.Tensor)
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12, err_msg=n)


@pytest.mark.parametrize(
    "make",
    [
        lambda m, ps: m.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda m, ps: m.optim.Adam(ps, lr=0.01),
        lambda m, ps: m.optim.AdamW([{"params": ps[:1]}, {"params": ps[1:], "weight_decay": 0.0}], lr=0.01),
    ],
    ids=["sgd-momentum", "adam", "adamw-groups"],
)
def test_optimizers_take_leaf_tensors_as_pytorch_does(make) -> None:
    x = np.random.default_rng(8).standard_normal((5, 3))
    w0 = np.random.default_rng(9).standard_normal((4, 3))

    def run(m):
        w = m.tensor(w0.T.copy()).t().detach().requires_grad_(True)  # a leaf that is not contiguous
        b = m.zeros(4, dtype=m.float64, requires_grad=True)
        opt = make(m, [w, b])
        for _ in range(3):
            opt.zero_grad()
            loss = (m.tanh(m.tensor(x) @ w.t() + b) ** 2).sum()
            loss.backward()
            opt.step()
        return w, b

    (w, b), (tw, tb) = run(minitorch), run(torch)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-12)


def test_an_optimizer_refuses_a_computed_tensor() -> None:
    w = minitorch.ones(2, requires_grad=True)
    with pytest.raises(
        TypeError, match="Parameters and leaf tensors that require grad, got a tensor computed from others"
    ):
        minitorch.optim.SGD([w * 2], lr=0.1)
