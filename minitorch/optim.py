"""Optimizers: SGD (momentum, weight decay) and Adam, with PyTorch's update rules.

An optimizer holds the parameters (`Parameter` objects whose `.value` is a tensor) and,
after `loss.backward()`, `step()` moves each parameter against its gradient. No graph is
recorded: each parameter is updated in place, in its own storage (every tensor that shares
it sees the new values), by ONE Numba kernel call that reads the gradient and updates the
state (momentum buffer; Adam's m and v) and the parameter in a single pass over the
elements. Written with NumPy, the same update would be ten whole-array operations, each
reading and writing every element again and allocating a temporary.

The kernels follow `torch.optim`'s single-tensor code operation by operation (the same
formulas in the same order), so a float64 run agrees with PyTorch to rounding (~1e-15).
Arithmetic is float64 also for float32 parameters (their state is kept in float32).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
from numba import prange

from .jit import serial_and_parallel
from .module import Parameter

#: From this many elements a parameter's update runs on all threads (`prange`); smaller
#: ones run on the calling thread, for which waking the thread pool would cost more.
PARALLEL_MIN = 1 << 16


def _values(p: Parameter) -> np.ndarray:
    """The parameter's values as a NumPy array that shares its storage (made contiguous)."""
    t = p.value
    if not t._tensor.is_contiguous():
        p.update(t.contiguous().detach().requires_grad_(True))
        t = p.value
    return t._tensor._storage[: t.numel()].reshape(t.shape)


def _flat_grad(p: Parameter, dtype: np.dtype) -> np.ndarray:
    """The gradient as a flat C-contiguous array of `dtype`: its storage itself (no copy)
    when it is contiguous and of that dtype, else a copy. Only read, never written."""
    g = p.value.grad
    data = g._tensor
    if data.is_contiguous() and data.dtype == dtype:
        return data._storage[: g.numel()]
    return np.ascontiguousarray(g.numpy(), dtype=dtype).reshape(-1)


# ## The kernels: one pass over the elements of one parameter (flat arrays)


def _sgd(theta: np.ndarray, grad: np.ndarray, buf: np.ndarray, lr: float, momentum: float, dampening: float,
         weight_decay: float, nesterov: bool, first: bool) -> None:
    """θ ← θ − lr·d in place, d as in `SGD`'s docstring; `buf` (momentum > 0 only) is b."""
    for i in prange(theta.size):
        d = float(grad[i])
        if weight_decay != 0.0:
            d = d + weight_decay * theta[i]
        if momentum != 0.0:
            b = d if first else momentum * buf[i] + (1.0 - dampening) * d
            buf[i] = b
            d = d + momentum * b if nesterov else b
        theta[i] = theta[i] - lr * d


def _adam(theta: np.ndarray, grad: np.ndarray, m: np.ndarray, v: np.ndarray, beta1: float, beta2: float,
          weight_decay: float, step_size: float, bias_correction2_sqrt: float, eps: float) -> None:
    """One Adam step in place, as `torch.optim.Adam`: m, v and θ (see `Adam`'s docstring)."""
    for i in prange(theta.size):
        g = float(grad[i])
        if weight_decay != 0.0:
            g = g + weight_decay * theta[i]
        mi = m[i] + (1.0 - beta1) * (g - m[i])  # = β₁·m + (1 − β₁)·g, PyTorch's lerp
        vi = v[i] * beta2 + (1.0 - beta2) * g * g
        m[i] = mi
        v[i] = vi
        theta[i] = theta[i] - step_size * mi / (math.sqrt(vi) / bias_correction2_sqrt + eps)


_sgd_serial, _sgd_parallel = serial_and_parallel(_sgd)
_adam_serial, _adam_parallel = serial_and_parallel(_adam)


class Optimizer:
    """Base class: keeps the parameters that have tensor values."""

    def __init__(self, parameters: Iterable[Parameter]):
        self.parameters: Sequence[Parameter] = [p for p in parameters if hasattr(p.value, "grad")]
        if not self.parameters:
            raise ValueError("optimizer got an empty parameter list")

    def zero_grad(self) -> None:
        """Forget the gradients of the last backward pass."""
        for p in self.parameters:
            p.value.grad = None

    def step(self) -> None:
        raise NotImplementedError

    # Saving and restoring (checkpoints). As in PyTorch, the per-parameter state is keyed by
    # the parameter's position in the list given to the optimizer, so it can be loaded into
    # an optimizer built the same way over another copy of the model.

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        """The state of the parameter at position i, for each i that has one."""
        return {}

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """{"state": {i: {name: value}}}: copies of the per-parameter state (as torch)."""
        return {"state": {i: {k: np.array(v, copy=True) for k, v in st.items()}
                          for i, st in self._per_parameter().items()}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` returned (copies are taken)."""
        for i, st in state_dict["state"].items():
            i = int(i)
            if not 0 <= i < len(self.parameters):
                raise ValueError(f"{type(self).__name__}.load_state_dict: state for parameter {i}, "
                                 f"but the optimizer has {len(self.parameters)} parameters")
            shape = self.parameters[i].value.shape
            for name, value in st.items():
                if np.ndim(value) and np.shape(value) != shape:
                    raise ValueError(f"{type(self).__name__}.load_state_dict: {name} of parameter {i} has shape "
                                     f"{np.shape(value)}, the parameter {shape}")
            # C order: the kernels update the state through flat views of these arrays
            self._set_per_parameter(i, {k: np.array(v, copy=True, order="C") for k, v in st.items()})


class SGD(Optimizer):
    r"""Stochastic gradient descent, as `torch.optim.SGD`:

        g ← ∇θ + λ·θ                       (weight decay λ)
        b ← g (first step), else μ·b + (1 − dampening)·g   (momentum μ)
        θ ← θ − lr · (g + μ·b if nesterov else b)       (θ ← θ − lr·g without momentum)

    One kernel call per parameter (`_sgd`) updates b and θ element by element, in place.
    """

    def __init__(
        self,
        parameters: Iterable[Parameter],
        lr: float = 1.0,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ):
        super().__init__(parameters)
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be ≥ 0 (got {lr}, {momentum}, {weight_decay})")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening 0")
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.dampening, self.nesterov = dampening, nesterov
        self._buffers: dict[int, np.ndarray] = {}

    def step(self) -> None:
        for p in self.parameters:
            if p.value.grad is None:
                continue
            theta = _values(p).reshape(-1)  # a view: the kernel writes the parameter's storage
            grad = _flat_grad(p, theta.dtype)
            buf = self._buffers.get(id(p))
            first = buf is None
            if self.momentum and first:
                buf = self._buffers[id(p)] = np.empty_like(theta).reshape(p.value.shape)  # b ← d (kernel)
            flat_buf = buf.reshape(-1) if self.momentum else theta[:0]  # unused without momentum
            kernel = _sgd_parallel if theta.size >= PARALLEL_MIN else _sgd_serial
            kernel(theta, grad, flat_buf, float(self.lr), float(self.momentum), float(self.dampening),
                   float(self.weight_decay), bool(self.nesterov), first)

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        return {i: {"momentum_buffer": self._buffers[id(p)]}
                for i, p in enumerate(self.parameters) if id(p) in self._buffers}

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        self._buffers[id(self.parameters[index])] = state["momentum_buffer"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba, 2015), as `torch.optim.Adam`:

        g ← ∇θ + λ·θ
        m ← β₁·m + (1 − β₁)·g,      v ← β₂·v + (1 − β₂)·g²
        m̂ = m / (1 − β₁ᵗ),          v̂ = v / (1 − β₂ᵗ)
        θ ← θ − lr · m̂ / (√v̂ + ε)

    computed in the order PyTorch uses (so that float64 runs agree to rounding, ~1e-15):

        m ← m + (1 − β₁)·(g − m)                                (lerp)
        θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)

    One kernel call per parameter (`_adam`) updates m, v and θ element by element, in place.
    """

    def __init__(
        self,
        parameters: Iterable[Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        super().__init__(parameters)
        if lr < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"Adam: need lr ≥ 0 and betas in [0, 1), got lr={lr}, betas={betas}")
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self._state: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}

    def step(self) -> None:
        b1, b2 = self.betas
        for p in self.parameters:
            if p.value.grad is None:
                continue
            theta = _values(p)
            if id(p) not in self._state:
                self._state[id(p)] = (0, np.zeros_like(theta), np.zeros_like(theta))
            t, m, v = self._state[id(p)]
            t += 1
            self._state[id(p)] = (t, m, v)
            bias_correction1 = 1 - b1**t
            bias_correction2 = 1 - b2**t
            flat = theta.reshape(-1)  # a view: the kernel writes the parameter's storage
            kernel = _adam_parallel if flat.size >= PARALLEL_MIN else _adam_serial
            kernel(flat, _flat_grad(p, theta.dtype), m.reshape(-1), v.reshape(-1), float(b1), float(b2),
                   float(self.weight_decay), float(self.lr / bias_correction1), bias_correction2**0.5,
                   float(self.eps))

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        out = {}
        for i, p in enumerate(self.parameters):
            if id(p) in self._state:
                t, m, v = self._state[id(p)]
                out[i] = {"step": t, "exp_avg": m, "exp_avg_sq": v}
        return out

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        self._state[id(self.parameters[index])] = (int(state["step"]), state["exp_avg"], state["exp_avg_sq"])
