"""Optimizers: SGD (momentum, weight decay) and Adam, with PyTorch's update rules.

An optimizer holds the parameters (`Parameter` objects whose `.value` is a tensor) and,
after `loss.backward()`, `step()` moves each parameter against its gradient. The updates
are arithmetic on the parameters' storage done in place with NumPy (no graph is recorded).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .module import Parameter


def _values(p: Parameter) -> np.ndarray:
    """The parameter's values as a NumPy array that shares its storage (made contiguous)."""
    t = p.value
    if not t._tensor.is_contiguous():
        p.update(t.contiguous().detach().requires_grad_(True))
        t = p.value
    return t._tensor._storage[: t.numel()].reshape(t.shape)


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
            self._set_per_parameter(i, {k: np.array(v, copy=True) for k, v in st.items()})


class SGD(Optimizer):
    r"""Stochastic gradient descent, as `torch.optim.SGD`:

        g ← ∇θ + λ·θ                       (weight decay λ)
        b ← g (first step), else μ·b + (1 − dampening)·g   (momentum μ)
        θ ← θ − lr · (g + μ·b if nesterov else b)
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
            theta = _values(p)
            g = p.value.grad.numpy().astype(theta.dtype, copy=False)
            if self.weight_decay:
                g = g + self.weight_decay * theta
            if self.momentum:
                buf = self._buffers.get(id(p))
                if buf is None:
                    buf = g.copy()
                else:
                    buf *= self.momentum
                    buf += (1.0 - self.dampening) * g
                self._buffers[id(p)] = buf
                g = g + self.momentum * buf if self.nesterov else buf
            theta -= self.lr * g

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
            g = p.value.grad.numpy().astype(theta.dtype, copy=False)
            if self.weight_decay:
                g = g + self.weight_decay * theta
            if id(p) not in self._state:
                self._state[id(p)] = (0, np.zeros_like(theta), np.zeros_like(theta))
            t, m, v = self._state[id(p)]
            t += 1
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            self._state[id(p)] = (t, m, v)
            m_hat = m / (1 - b1**t)
            v_hat = v / (1 - b2**t)
            theta -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        out = {}
        for i, p in enumerate(self.parameters):
            if id(p) in self._state:
                t, m, v = self._state[id(p)]
                out[i] = {"step": t, "exp_avg": m, "exp_avg_sq": v}
        return out

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        self._state[id(self.parameters[index])] = (int(state["step"]), state["exp_avg"], state["exp_avg_sq"])
