"""Tasks 3.1 and 3.2 against PyTorch: gradients through the fast backend.

The project's own oracle, kept apart from `test_fast_ops.py` (the public tests, which run
without PyTorch): these tests are not shipped to students and skip where torch is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from tensor_strategies import to_minitorch

torch = pytest.importorskip("torch")

FAST = minitorch.FastBackend


@pytest.mark.task3_1
def test_elementwise_gradients_through_fast_backend_match_torch() -> None:
    """f(a, b) = Σ_dim1 (σ(a · b) + exp(a) / 2): values and grads equal torch's."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4, 2)), rng.standard_normal((4, 1))

    def f(a: minitorch.Tensor, b: minitorch.Tensor) -> minitorch.Tensor:
        return ((a * b).sigmoid() + a.exp() * 0.5).sum(1)

    a = to_minitorch(x, (2, 0, 1), FAST).requires_grad_(True)
    b = minitorch.from_numpy(y, backend=FAST).requires_grad_(True)
    g = rng.standard_normal((3, 2))
    out = f(a, b)
    out.backward(minitorch.from_numpy(g, backend=FAST))
    ta = torch.tensor(x, requires_grad=True)
    tb = torch.tensor(y, requires_grad=True)
    tout = ((ta * tb).sigmoid() + ta.exp() * 0.5).sum(1)
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


@pytest.mark.task3_2
def test_matmul_gradients_through_fast_backend_match_torch() -> None:
    """f(x, w, c) = tanh(x @ wᵀ + c) on a case large enough for the reference's tiled kernel."""

    def f(x: minitorch.Tensor, w: minitorch.Tensor, c: minitorch.Tensor) -> minitorch.Tensor:
        return (x @ w.transpose(0, 1) + c).tanh()

    rng = np.random.default_rng(1)
    for s in [(3, 4), (5, 4), (5,)]:  # the draws of the small central-difference case
        rng.standard_normal(s)
    arrays = [rng.standard_normal(s) * 0.2 for s in [(2, 50, 40), (36, 40), (36,)]]
    g = rng.standard_normal((2, 50, 36))
    ts = [minitorch.from_numpy(v, backend=FAST).requires_grad_(True) for v in arrays]
    out = f(*ts)
    out.backward(minitorch.from_numpy(g, backend=FAST))
    tts = [torch.tensor(v, requires_grad=True) for v in arrays]
    tout = (tts[0] @ tts[1].T + tts[2]).tanh()
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-9, atol=1e-12)
    for k, (mine, theirs) in enumerate(zip(ts, tts)):
        np.testing.assert_allclose(
            mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"gradient of input {k}"
        )
