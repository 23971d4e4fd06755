"""Central differences of a NumPy function: the expected gradients of the A6 public tests.

The tests write each layer again as a NumPy formula `f`, then compare minitorch's `backward()`
with the gradients this module computes from `f` alone, so they need no PyTorch.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def numpy_gradients(
    f: Callable[..., np.ndarray],
    arrays: list[np.ndarray],
    upstream: np.ndarray | float = 1.0,
    eps: float = 1e-6,
) -> list[np.ndarray]:
    """Central differences of L = Σ f(*arrays) ⊙ upstream with respect to every array:

        ∂L/∂x_i ≈ Σ (f(x + ε e_i) − f(x − ε e_i)) ⊙ upstream / 2ε

    `upstream` is the gradient flowing into f's output (what `backward(upstream)` receives);
    for a scalar f (a loss) leave it at 1, which gives the plain gradient ∂f/∂x_i.
    Returns one array of the shape of each input, in the order of `arrays`.
    """
    grads = []
    for k, a in enumerate(arrays):
        grad = np.zeros_like(a)
        for idx in np.ndindex(*a.shape):
            up, down = list(arrays), list(arrays)
            up[k], down[k] = a.copy(), a.copy()
            up[k][idx] += eps
            down[k][idx] -= eps
            grad[idx] = np.sum((f(*up) - f(*down)) * upstream) / (2 * eps)
        grads.append(grad)
    return grads
