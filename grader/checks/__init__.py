"""The hidden checks, one module per stage (`a0` … `a6`), registered by name
(A5 and A6 split their checks over `a5_*` / `a6_*` modules that `a5` / `a6` import).

Manifests name checks (``checks = ["operators_forward", …]``); `get_check(stage, name)`
finds them. `base` holds the registry and the `CheckContext` a check talks to, `probe`
builds probes, `compare` compares answers, `inputs` generates inputs, and `runner` runs
a check or a whole task against a student's session. Everything here runs in the trusted
parent only and is never copied into a child's reach.
"""

from __future__ import annotations

import importlib
from typing import Optional

from .base import REGISTRY, Check

STAGE_MODULES = ("a0", "a1", "a2", "a3", "a4", "a5", "a6")


def _load(stage: str) -> None:
    if stage in STAGE_MODULES:
        importlib.import_module(f"{__name__}.{stage}")


def get_check(stage: str, name: str) -> Optional[Check]:
    """The check `name` of `stage`, or None."""
    _load(stage)
    return REGISTRY.get((stage, name))


def stage_checks(stage: str) -> dict[str, Check]:
    """All checks registered for a stage, by name."""
    _load(stage)
    return {n: c for (s, n), c in REGISTRY.items() if s == stage}


__all__ = ["Check", "get_check", "stage_checks"]
