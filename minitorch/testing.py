"""Gradient checking for tensor functions: backward against central differences.

`grad_check(f, *inputs)` draws a random upstream gradient g of f's output shape, runs
`f(*inputs).backward(g)`, and compares every element of every input's `.grad` with the
central difference of the scalar L(x) = Σ f(x) ⊙ g:

    ∂L/∂x_i ≈ (L(x + ε e_i) − L(x − ε e_i)) / 2ε

A random g (instead of `.sum().backward()`, i.e. g = 1) catches backward passes that mix
up or drop entries of the upstream gradient.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .tensor import Tensor
from .constructors import from_numpy
from .function import no_grad


def _loss(f: Callable[..., Tensor], arrays: list[np.ndarray], like: list[Tensor], g: np.ndarray) -> float:
    with no_grad():
        ts = [from_numpy(a, backend=t.backend) for a, t in zip(arrays, like)]
        out = f(*ts).numpy()
    return float(np.sum(out * g))


def grad_check(
    f: Callable[..., Tensor],
    *inputs: Tensor,
    seed: int = 0,
    epsilon: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> None:
    """Raise AssertionError naming the input, the element and both values on a mismatch.

    Inputs should be float64 (central differences need the precision); their `.grad` is reset.
    """
    rng = np.random.default_rng(seed)
    for t in inputs:
        t.requires_grad_(True)
        t.grad = None
    out = f(*inputs)
    g = rng.standard_normal(out.shape)
    out.backward(from_numpy(g.astype(out.dtype), backend=out.backend))
    base = [t.numpy().astype(np.float64) for t in inputs]
    for k, t in enumerate(inputs):
        if t.grad is None:
            raise AssertionError(f"input {k} (shape {t.shape}) received no gradient")
        got = t.grad.numpy()
        for idx in np.ndindex(*t.shape):
            up = [b.copy() for b in base]
            down = [b.copy() for b in base]
            up[k][idx] += epsilon
            down[k][idx] -= epsilon
            expected = (_loss(f, up, list(inputs), g) - _loss(f, down, list(inputs), g)) / (2 * epsilon)
            if not np.isclose(got[idx], expected, rtol=rtol, atol=atol):
                raise AssertionError(
                    f"gradient mismatch for input {k} (shape {t.shape}) at index {idx}: "
                    f"backward gives {got[idx]:.8g}, central difference gives {expected:.8g}"
                )
