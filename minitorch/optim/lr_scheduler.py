r"""Learning-rate schedules (`optim.lr_scheduler`, as `torch.optim.lr_scheduler`).

A scheduler changes the `lr` of each parameter group of an optimizer once per
`scheduler.step()` (called after `optimizer.step()`, usually once per epoch). It counts the
calls in `last_epoch` (0 when made) and computes each group's new rate from its current
one, as PyTorch does, so schedules agree with PyTorch's to rounding:

    StepLR(step_size, γ)          lr ← γ·lr every step_size steps
    MultiStepLR(milestones, γ)    lr ← γ·lr at each milestone
    ExponentialLR(γ)              lr ← γ·lr every step
    LinearLR(s, e, n)             lr_t = base · (s + (e − s)·min(t, n)/n): a linear warm-up
    CosineAnnealingLR(T, η_min)   lr_t = η_min + (base − η_min)·(1 + cos(π t / T))/2
    LambdaLR(f)                   lr_t = base · f(t)

(`base` is each group's rate when the scheduler was made, kept as `group["initial_lr"]`.)
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Iterable, Union

from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "LinearLR",
    "CosineAnnealingLR",
    "LambdaLR",
]


class LRScheduler:
    """Base class: `step()` sets every group's lr to `get_lr()`; `get_last_lr()` reads them."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if last_epoch != -1:
            raise ValueError(
                f"{type(self).__name__}: resuming with last_epoch is not supported; use load_state_dict"
            )
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self.step()

    def get_lr(self) -> list[float]:
        """Each group's rate for step `last_epoch`, from its current one."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance the schedule one step and set the groups' rates."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The rates the last `step()` set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The schedule's own state (not the optimizer's; not LambdaLR's functions)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def _current(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """lr ← γ·lr every `step_size` steps."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class MultiStepLR(LRScheduler):
    """lr ← γ·lr at each step in `milestones` (γ^k where a milestone is listed k times)."""

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._current()]


class ExponentialLR(LRScheduler):
    """lr ← γ·lr every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class LinearLR(LRScheduler):
    """The factor of the base rate goes linearly from `start_factor` to `end_factor` over
    `total_iters` steps, then stays (a warm-up with the defaults' start below 1)."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current()]
        if self.last_epoch > self.total_iters:
            return self._current()
        # the ratio of this step's factor to the last one's
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [lr * ratio for lr in self._current()]


class CosineAnnealingLR(LRScheduler):
    """lr_t = η_min + (base − η_min)·(1 + cos(π t / T_max))/2, computed from the last rate as
    PyTorch does (and rising again after T_max)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return self._current()
        if (t - 1 - T) % (2 * T) == 0:
            return [
                lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                for lr, base in zip(self._current(), self.base_lrs)
            ]
        return [
            (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - low) + low
            for lr in self._current()
        ]


class LambdaLR(LRScheduler):
    """lr_t = base · f(t), one f for all groups or one per group."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Union[Callable[[int], float], list[Callable[[int], float]]],
        last_epoch: int = -1,
    ) -> None:
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: expected {n} lr_lambdas, got {len(self.lr_lambdas)}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]
