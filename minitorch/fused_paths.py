"""The reference's fused fast paths, and how the library finds them.

A chain of small operations that is one thing to a user — an LSTM step, LayerNorm,
softmax + cross-entropy, attention — runs faster as one kernel with one graph node than as
ten tensor operations with ten. The reference ships such *fused* versions in modules of
their own (`minitorch/nn/fused_*.py`). A student's assignment is the *composed* version
(the fenced code), so those modules are ``reference_only`` in the manifest of the stage
whose task they would replace: a release of that stage, and the grader's tree for it,
leave them out, and every call reaches the student's code. From the next stage on (where
there is one) they ship, and the student's models train at the reference's speed.

A call site asks for its fused module each time it runs:

    fused = fused_paths.find("nn.fused_norm")
    if fused is not None:
        return fused.layer_norm(input, ...)
    ... the composed version (the task's fence) ...

`find` returns None when the module is absent (a release) or inside `composed_only()`,
the switch the tests use to compare the two paths (values and gradients) on the same
inputs. Only a module in this package counts: an editable install of another copy of
minitorch cannot lend its own.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Iterator, Optional

__all__ = ["find", "composed_only"]

_PACKAGE = __package__ or "minitorch"
_HERE = Path(__file__).resolve().parent
_found: dict[str, Optional[ModuleType]] = {}
_composed_only = False


def _load(name: str) -> Optional[ModuleType]:
    full = f"{_PACKAGE}.{name}"
    try:
        spec = importlib.util.find_spec(full)
    except ModuleNotFoundError:  # a parent package is missing
        return None
    if spec is None or spec.origin is None:
        return None
    if not Path(spec.origin).resolve().is_relative_to(_HERE):
        return None
    return importlib.import_module(full)


def find(name: str) -> Optional[ModuleType]:
    """The fused module `minitorch.<name>` (e.g. "nn.fused_norm"), or None when it is not
    shipped here or the composed paths are forced (`composed_only`)."""
    if _composed_only:
        return None
    if name not in _found:
        _found[name] = _load(name)
    return _found[name]


@contextlib.contextmanager
def composed_only() -> Iterator[None]:
    """Inside this block every call site takes its composed path (the task's code), as in a
    student's tree: tests compare it with the fused path on the same inputs."""
    global _composed_only
    previous = _composed_only
    _composed_only = True
    try:
        yield
    finally:
        _composed_only = previous
