"""Gradient checking for tensor functions: backward against central differences.

`grad_check(f, *inputs)` draws a random upstream gradient g of f's output shape, runs
`f(*inputs).backward(g)`, and compares every element of every input's `.grad` with the
central difference of the scalar L(x) = Σ f(x) ⊙ g. The outputs are differenced *before*
they are weighted and summed:

    ∂L/∂x_i ≈ Σ (f(x + ε e_i) − f(x − ε e_i)) ⊙ g / 2ε

which is L(x + ε e_i) − L(x − ε e_i) over 2ε, computed in an order that keeps its
precision. Summing first and differencing the two sums loses the small terms: each sum is
rounded to about ulp(|L|), so the quotient carries an error of about ulp(|L|) / 2ε — with
x = [0.109375, 63.0] and f = x³, L ≈ 250 000 and the error (≈ 1e-5) is larger than the
derivative's tolerance. Differencing the outputs first, the entries that x_i does not touch
cancel exactly (they are the same floats), and the error is that of the entries x_i moves.

A random g (instead of `.sum().backward()`, i.e. g = 1) catches backward passes that mix
up or drop entries of the upstream gradient.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from .tensor import Tensor
from .constructors import from_numpy
from .function import no_grad


def _forward(f: Callable[..., Tensor], arrays: list[np.ndarray], like: list[Tensor]) -> np.ndarray:
    """f on fresh tensors holding `arrays` (on the backends of `like`), outside the graph."""
    with no_grad():
        ts = [from_numpy(a, backend=t.backend) for a, t in zip(arrays, like)]
        return f(*ts).numpy().astype(np.float64)


def _central_difference(
    f: Callable[..., Tensor],
    arrays: list[np.ndarray],
    like: list[Tensor],
    g: np.ndarray,
    k: int,
    idx: tuple[int, ...],
    epsilon: float,
) -> float:
    """Σ (f(x + ε e_i) − f(x − ε e_i)) ⊙ g / 2ε for the element `idx` of input `k`.

    The outputs are differenced before the sum (see the module docstring): entries of
    f that do not depend on x_i cancel exactly instead of drowning the ones that do.
    """
    up = [a.copy() for a in arrays]
    down = [a.copy() for a in arrays]
    up[k][idx] += epsilon
    down[k][idx] -= epsilon
    delta = _forward(f, up, like) - _forward(f, down, like)
    return float(np.sum(delta * g) / (2 * epsilon))


def _input_names(f: Callable[..., Tensor], n: int) -> list[str]:
    """The names of f's first n positional parameters ("x", "weight" …), else "input k"."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    plain = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [f"input {plain[k]!r}" if k < len(plain) else f"input {k}" for k in range(n)]


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
    An input is named by f's parameter (``lambda x, w: …`` → "input 'w'") where f has one.
    """
    rng = np.random.default_rng(seed)
    for t in inputs:
        t.requires_grad_(True)
        t.grad = None
    out = f(*inputs)
    g = rng.standard_normal(out.shape)
    out.backward(from_numpy(g.astype(out.dtype), backend=out.backend))
    base = [t.numpy().astype(np.float64) for t in inputs]
    names = _input_names(f, len(inputs))
    for k, t in enumerate(inputs):
        if t.grad is None:
            raise AssertionError(f"{names[k]} (shape {t.shape}) received no gradient")
        got = t.grad.numpy()
        for idx in np.ndindex(*t.shape):
            expected = _central_difference(f, base, list(inputs), g, k, idx, epsilon)
            if not np.isclose(got[idx], expected, rtol=rtol, atol=atol):
                raise AssertionError(
                    f"gradient mismatch for {names[k]} (shape {t.shape}) at index {idx}: "
                    f"backward gives {got[idx]:.8g}, central difference gives {expected:.8g}"
                )
