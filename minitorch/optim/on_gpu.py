"""The optimizers' updates on the GPU, for parameters of the CUDA backend.

One GPU thread per entry runs the same code as the CPU kernels' loop bodies —
`updates.sgd_update`, `updates.adam_update`, compiled here for the GPU — so both backends
take the same steps. The
parameter, its gradient and the optimizer's state (the momentum buffer, Adam's m and v)
stay in GPU memory (`device_memory`): a training step brings nothing back to the host but
what host code asks for (the loss, say). Imported only when a CUDA parameter is updated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from ..cuda_ops import launch_per_element
from .updates import adam_update, sgd_update

__all__ = ["adam_step", "sgd_step"]

_adam_update = cuda.jit(device=True)(adam_update)
_sgd_update = cuda.jit(device=True)(sgd_update)


@cuda.jit
def _adam(theta, grad, m, v, beta1, beta2, weight_decay, shrink, step_size, bias_correction2_sqrt, eps):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < theta.size:
        _adam_update(
            i, theta, grad, m, v, beta1, beta2, weight_decay, shrink, step_size, bias_correction2_sqrt, eps
        )


@cuda.jit
def _sgd(theta, grad, buf, lr, momentum, dampening, weight_decay, nesterov, first):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < theta.size:
        _sgd_update(i, theta, grad, buf, lr, momentum, dampening, weight_decay, nesterov, first)


def adam_step(theta: np.ndarray, grad: np.ndarray, m: np.ndarray, v: np.ndarray, *settings: Any) -> None:
    """`adam._adam`'s step on the GPU copies of the flat arrays; θ, m and v are written there."""
    launch_per_element(_adam, theta.size, theta, grad, m, v, *settings, written=(0, 2, 3))


def sgd_step(theta: np.ndarray, grad: np.ndarray, buf: np.ndarray, *settings: Any) -> None:
    """`sgd._sgd`'s step on the GPU copies; θ (and the buffer, with momentum) written there."""
    momentum = settings[1]
    launch_per_element(_sgd, theta.size, theta, grad, buf, *settings, written=(0, 2) if momentum else (0,))
