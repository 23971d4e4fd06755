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
