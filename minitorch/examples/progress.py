"""What the examples' progress bars say about training: ``loss 1.234  acc 56.7 %  12 ms/step``.

Before the first step has finished there is no value yet, and the first step is the slow
one (on the fast and CUDA backends Numba compiles its kernels then): the bar says
``loss –  compiling…`` rather than ``loss nan  acc 0.0 %``, which reads as a diverged model.
A value that is not a number later on (a run that did diverge) is shown as it is.

    progress.add_task("train", total=steps, metrics=metrics(note=first_step_note("fast")))
    progress.update(task, completed=step, metrics=metrics(loss=0.69, ms=12.0))

The bar's column is `metrics_column()`. The elapsed column keeps running through an
evaluation: a task must not be stopped for one (rich's ``stop_task`` freezes its elapsed
time for good; ``start_task`` does not restart it).
"""

from __future__ import annotations

import math
from typing import Optional

from rich.progress import TextColumn

__all__ = ["PENDING", "first_step_note", "metric", "metrics", "metrics_column"]

#: What a metric reads before its first value.
PENDING = "–"


def metric(value: Optional[float], spec: str) -> str:
    """`value` formatted by `spec` (``".3f"``, ``".1%"``), or `PENDING` when there is none yet (None)."""
    if value is None:
        return PENDING
    if not math.isfinite(value):
        return str(value)  # nan or inf: a real value (divergence), shown as it is
    return format(value, spec)


def metrics(
    loss: Optional[float] = None,
    acc: Optional[float] = None,
    ms: Optional[float] = None,
    *,
    show_acc: bool = False,
    loss_spec: str = ".3f",
    ms_spec: str = ".0f",
    note: str = "",
) -> str:
    """The bar's text: ``loss 1.234  acc 56.7 %  12 ms/step`` (``acc`` when given or `show_acc`,
    ``ms`` once there is a value), then `note` (``compiling…``, ``evaluating…``)."""
    parts = [f"loss {metric(loss, loss_spec)}"]
    if acc is not None or show_acc:
        parts.append(f"acc {metric(None if acc is None else 100 * acc, '.1f')} %")
    if ms is not None:
        parts.append(f"{metric(ms, ms_spec)} ms/step")
    if note:
        parts.append(note)
    return "  ".join(parts)


def first_step_note(backend: str = "fast") -> str:
    """What the bar says while the first step runs: Numba compiles its kernels then, except on
    the simple backend (and in PyTorch)."""
    return "compiling…" if backend in ("fast", "cuda") else "first step…"


def metrics_column() -> TextColumn:
    """The column showing a task's ``metrics`` field (plain text, never markup)."""
    return TextColumn("{task.fields[metrics]}", markup=False)
