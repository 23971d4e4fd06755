r"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), as `torch.optim`.

    g ← ∇θ + λ·θ                       (Adam's weight decay: an L2 term in the gradient)
    θ ← θ · (1 − lr·λ)                 (AdamW's instead: decoupled from the gradient)
    m ← β₁·m + (1 − β₁)·g,      v ← β₂·v + (1 − β₂)·g²
    m̂ = m / (1 − β₁ᵗ),          v̂ = v / (1 − β₂ᵗ)
    θ ← θ − lr · m̂ / (√v̂ + ε)

computed in the order PyTorch uses (so that float64 runs agree to rounding, ~1e-15):

    m ← m + (1 − β₁)·(g − m)                                (lerp)
    θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)

With Adam's L2 term, the decay of a weight is divided by √v̂ like the rest of the gradient,
so weights with large gradients are decayed less; AdamW shrinks every weight by the same
factor, which is what weight decay was meant to do (and what transformers are trained with).
One kernel call per parameter (`_adam`) updates m, v and θ element by element, in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ..device_memory import on_host
from ..jit import njit, serial_and_parallel
from .optimizer import (
    PARALLEL_MIN,
    Optimizer,
    Params,
    flat_grad,
    gpu_arrays,
    on_gpu,
    state_array,
    tensor_of,
    values_of,
)
from .updates import adam_update

_adam_update = njit(inline="always")(adam_update)  # inlined: the loop stays one SIMD loop


def _adam(
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
    """One Adam step in place: m, v and θ, entry by entry (`adam_update`)."""
    for i in prange(theta.size):
        _adam_update(
            i, theta, grad, m, v, beta1, beta2, weight_decay, shrink, step_size, bias_correction2_sqrt, eps
        )


_adam_serial, _adam_parallel = serial_and_parallel(_adam)


class Adam(Optimizer):
    """Adam, as `torch.optim.Adam` (weight decay as an L2 term; see the module docstring).
    Each setting may differ per parameter group. (`amsgrad` is not supported.)"""

    #: Whether weight decay is AdamW's (decoupled) rather than an L2 term.
    decoupled = False

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        if amsgrad:
            raise ValueError(f"{type(self).__name__}: amsgrad is not supported by minitorch")
        self._state: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})

    def _check_settings(self, group: dict[str, Any]) -> None:
        lr, betas = group["lr"], group["betas"]
        if lr < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(
                f"{type(self).__name__}: need lr ≥ 0 and betas in [0, 1), got lr={lr}, betas={betas}"
            )
        if group["eps"] < 0 or group["weight_decay"] < 0:
            raise ValueError(
                f"{type(self).__name__}: eps and weight_decay must be ≥ 0, got {group['eps']}, {group['weight_decay']}"
            )

    def step(self) -> None:
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, wd = float(group["lr"]), float(group["weight_decay"])
            l2, shrink = (0.0, 1.0 - lr * wd) if self.decoupled else (wd, 1.0)
            for p in group["params"]:
                if tensor_of(p).grad is None:
                    continue
                gpu = on_gpu(p)
                if gpu:
                    flat, grad = gpu_arrays(p)
                else:
                    flat = values_of(p).reshape(-1)  # a view: the kernel writes the parameter's storage
                    grad = flat_grad(p, flat.dtype)
                if id(p) not in self._state:
                    self._state[id(p)] = (0, state_array(p), state_array(p))
                t, m, v = self._state[id(p)]
                t += 1
                self._state[id(p)] = (t, m, v)
                bias_correction1 = 1 - b1**t
                bias_correction2 = 1 - b2**t
                settings = (
                    float(b1),
                    float(b2),
                    l2,
                    shrink,
                    lr / bias_correction1,
                    bias_correction2**0.5,
                    float(group["eps"]),
                )
                if gpu:
                    from .on_gpu import adam_step

                    adam_step(flat, grad, m.reshape(-1), v.reshape(-1), *settings)
                else:
                    kernel = _adam_parallel if flat.size >= PARALLEL_MIN else _adam_serial
                    kernel(flat, grad, m.reshape(-1), v.reshape(-1), *settings)

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        out = {}
        for i, p in enumerate(self.parameters):
            if id(p) in self._state:
                t, m, v = self._state[id(p)]
                out[i] = {"step": t, "exp_avg": on_host(m), "exp_avg_sq": on_host(v)}
        return out

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        self._state[id(self.parameters[index])] = (int(state["step"]), state["exp_avg"], state["exp_avg_sq"])


class AdamW(Adam):
    """AdamW, as `torch.optim.AdamW`: Adam with decoupled weight decay θ ← θ·(1 − lr·λ),
    λ = 0.01 by default (module docstring)."""

    decoupled = True

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
