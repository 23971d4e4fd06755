"""One optimizer step of one entry of a parameter, for the CPU and the GPU alike.

`sgd._sgd` and `adam._adam` run these in a `prange` loop over the entries (compiled by Numba
for the CPU, inlined into the loop); `on_gpu` compiles them as CUDA device functions, one
GPU thread per entry. One text, so both backends take the same steps to the last bit of
their arithmetic. The formulas are in the docstrings of `SGD` and of the `adam` module.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["sgd_update", "adam_update"]


def sgd_update(
    i: int,
    theta: np.ndarray,
    grad: np.ndarray,
    buf: np.ndarray,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    first: bool,
) -> None:
    """θ[i] ← θ[i] − lr·d in place, d as in `SGD`'s docstring; `buf` (momentum > 0 only) is
    b. The CPU kernel (`sgd._sgd`) and the GPU's (`on_gpu`) both run it."""
    d = float(grad[i])
    if weight_decay != 0.0:
        d = d + weight_decay * theta[i]
    if momentum != 0.0:
        b = d if first else momentum * buf[i] + (1.0 - dampening) * d
        buf[i] = b
        d = d + momentum * b if nesterov else b
    theta[i] = theta[i] - lr * d


def adam_update(
    i: int,
    theta: np.ndarray,
    grad: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    beta1: float,
    beta2: float,
    weight_decay: float,
    shrink: float,
    step_size: float,
    bias_correction2_sqrt: float,
    eps: float,
) -> None:
    """One Adam step of entry i, in place: m[i], v[i] and θ[i] (the `adam` module's docstring).
    `weight_decay` is Adam's L2 term (0 for AdamW), `shrink` AdamW's factor 1 − lr·λ (1 for
    Adam), applied first and rounded to θ's dtype, as PyTorch does. The CPU kernel (`adam._adam`)
    and the GPU's (`on_gpu`) both run it."""
    if shrink != 1.0:
        theta[i] = theta[i] * shrink
    g = float(grad[i])
    if weight_decay != 0.0:
        g = g + weight_decay * theta[i]
    mi = m[i] + (1.0 - beta1) * (g - m[i])  # = β₁·m + (1 − β₁)·g, PyTorch's lerp
    vi = v[i] * beta2 + (1.0 - beta2) * g * g
    m[i] = mi
    v[i] = vi
    theta[i] = theta[i] - step_size * mi / (math.sqrt(vi) / bias_correction2_sqrt + eps)
