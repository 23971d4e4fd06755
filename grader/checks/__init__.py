"""The hidden checks: one folder per stage (`a0/` … `a6/`), one module per task
(``a2/task_2_4.py``: every check of task 2.4, each registered with ``@check("2.4", name)``),
all imported when a check of the stage is first asked for; a stage's other modules hold
what several of its tasks share.

Manifests name checks (``checks = ["operators_forward", …]``) under their task;
`get_check(stage, name)` finds them. `base` holds the registry and the `CheckContext` a
check talks to, `gradcheck` its gradient check, `probe` builds probes, `compare` compares
answers, `inputs` generates inputs, and `runner` runs a check or a whole task against a
student's session. Everything here runs in the trusted parent only and is never copied into
a child's reach.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Optional

from .base import REGISTRY, Check

STAGE_MODULES = ("a0", "a1", "a2", "a3", "a4", "a5", "a6")


def _load(stage: str) -> None:
    """Import every task module of the stage (``grader/checks/<stage>/task_*.py``): importing
    one registers its checks. (A computed name: the architecture test does not see these
    imports, and needs not — the stage folders sit below nothing else of `checks`.)"""
    if stage not in STAGE_MODULES:
        return
    package = importlib.import_module(f"{__name__}.{stage}")
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name.startswith("task_"):
            importlib.import_module(f"{package.__name__}.{module.name}")


def get_check(stage: str, name: str) -> Optional[Check]:
    """The check `name` of `stage`, or None."""
    _load(stage)
    return REGISTRY.get((stage, name))


def stage_checks(stage: str) -> dict[str, Check]:
    """All checks registered for a stage, by name."""
    _load(stage)
    return {n: c for (s, n), c in REGISTRY.items() if s == stage}


__all__ = ["Check", "get_check", "stage_checks"]
