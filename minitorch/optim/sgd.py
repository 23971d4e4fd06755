"""Stochastic gradient descent with momentum and weight decay, as `torch.optim.SGD`."""

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
from .updates import sgd_update

_sgd_update = njit(inline="always")(sgd_update)  # inlined: the loop stays one SIMD loop


def _sgd(
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
    """One SGD step in place, entry by entry (`sgd_update`)."""
    for i in prange(theta.size):
        _sgd_update(i, theta, grad, buf, lr, momentum, dampening, weight_decay, nesterov, first)


_sgd_serial, _sgd_parallel = serial_and_parallel(_sgd)


class SGD(Optimizer):
    r"""Stochastic gradient descent, as `torch.optim.SGD`:

        g ← ∇θ + λ·θ                       (weight decay λ)
        b ← g (first step), else μ·b + (1 − dampening)·g   (momentum μ)
        θ ← θ − lr · (g + μ·b if nesterov else b)       (θ ← θ − lr·g without momentum)

    One kernel call per parameter (`_sgd`) updates b and θ element by element, in place.
    Each setting may differ per parameter group.
    """

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        self._buffers: dict[int, np.ndarray] = {}
        super().__init__(
            params,
            {
                "lr": lr,
                "momentum": momentum,
                "dampening": dampening,
                "weight_decay": weight_decay,
                "nesterov": nesterov,
            },
        )

    def _check_settings(self, group: dict[str, Any]) -> None:
        lr, momentum, weight_decay = group["lr"], group["momentum"], group["weight_decay"]
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(
                f"SGD: lr, momentum and weight_decay must be ≥ 0 (got {lr}, {momentum}, {weight_decay})"
            )
        if group["nesterov"] and (momentum <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening 0")

    def step(self) -> None:
        for group in self.param_groups:
            momentum = float(group["momentum"])
            for p in group["params"]:
                if tensor_of(p).grad is None:
                    continue
                gpu = on_gpu(p)
                if gpu:
                    theta, grad = gpu_arrays(p)
                else:
                    theta = values_of(p).reshape(-1)  # a view: the kernel writes the parameter's storage
                    grad = flat_grad(p, theta.dtype)
                buf = self._buffers.get(id(p))
                first = buf is None
                if momentum and first:  # b ← d (kernel)
                    buf = self._buffers[id(p)] = state_array(p)
                flat_buf = buf.reshape(-1) if momentum else theta[:0]  # unused without momentum
                settings = (
                    float(group["lr"]),
                    momentum,
                    float(group["dampening"]),
                    float(group["weight_decay"]),
                    bool(group["nesterov"]),
                    first,
                )
                if gpu:
                    from .on_gpu import sgd_step

                    sgd_step(theta, grad, flat_buf, *settings)
                else:
                    kernel = _sgd_parallel if theta.size >= PARALLEL_MIN else _sgd_serial
                    kernel(theta, grad, flat_buf, *settings)

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        return {
            i: {"momentum_buffer": on_host(self._buffers[id(p)])}
            for i, p in enumerate(self.parameters)
            if id(p) in self._buffers
        }

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        self._buffers[id(self.parameters[index])] = state["momentum_buffer"]
