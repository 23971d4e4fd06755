"""What a student reads when their code raised: the call, what was expected, and for a
`NotImplementedError` which function of which task is still unwritten.

    ZeroDivisionError in operators.inv(0.0): expected inf, got ZeroDivisionError("float division by zero")
    not implemented yet: operators.inv (task 0.1)
    depends on task 0.1: finish `operators.sigmoid` first (it is not implemented yet)
    fails because it reaches `tensor_data.strides_from_shape` (also task 2.1), which is not implemented yet: finish that first

A stub raises ``NotImplementedError("Task X.Y: Title (function) — write your code between
the markers")`` (`grader.core.fences.stub_line`); the innermost frame of the traceback (frames
in the child's tree only) names the file and the function that raised. The reference's
fences tell which task that function belongs to, so the message can say when the check
of one task stopped at a stub of *another* task (a dependency the student has not done
yet) rather than leave the student looking for the mistake in the task being graded.
A check that stopped at a stub of its *own* task which another check of the task reports
says that it only reaches it (`reaches_stub`); `grader.checks.runner` decides which, as it
sees every check of the task.

Parent side only: expected values come from the reference run in this process and are
only ever written into feedback, never sent to the child. Nothing here runs code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import numpy as np

from grader.sandbox.answers import ErrorInfo
from grader.core.fences import Fence, package_fences
from grader.core.manifest import Task, repo_root
from .compare import fmt_array

__all__ = [
    "Origin",
    "belongs_to",
    "depends_on_broken",
    "depends_on_stub",
    "error_message",
    "inputs_text",
    "join_lines",
    "not_implemented_message",
    "raised_in",
    "raised_in_other",
    "reaches_stub",
    "short",
]

_STUB_TASK = re.compile(r"^Task (\d+\.\d+)\b")
_STUB_FUNCTION = re.compile(r"\(([\w.<>]+)\) — write your code between the markers")
_STUB_TAIL = "write your code between the markers"


@dataclass(frozen=True)
class Origin:
    """Where an exception was raised, as the student knows it.

    Attributes:
        function: module and qualified name inside ``minitorch``, e.g. "operators.sigmoid",
            "scalar.Scalar.__add__".
        task: the task whose fence lies in that function ("0.1"); None when unknown (a
            helper the student wrote, a function without a fence).
    """

    function: str
    task: Optional[str]


@lru_cache(maxsize=1)
def _reference_fences() -> dict[str, tuple[Fence, ...]]:
    """``minitorch/…`` path → the reference's fences in it (parsed once per process)."""
    return {rel: tuple(fs) for rel, fs in package_fences(repo_root() / "minitorch").items()}


def _module(rel: str) -> str:
    """ "minitorch/nn/conv.py" → "nn.conv"."""
    path = rel.removesuffix(".py")
    parts = path.split("/")
    return ".".join(parts[1:] if parts[0] == "minitorch" and len(parts) > 1 else parts)


def raised_in(error: ErrorInfo) -> Optional[Origin]:
    """The function that raised `error` and its task, or None when nothing tells.

    The innermost frame names the file and the function (line numbers differ between the
    student's tree and the reference, so fences are matched by file and name); a stub's
    message ("Task 0.1: Operators (sigmoid) — …") names the task and the qualified
    function, which settles names that several classes share ("forward").
    """
    stated, named = _STUB_TASK.match(error.message), _STUB_FUNCTION.search(error.message)
    task, qualname = (stated.group(1) if stated else None), (named.group(1) if named else None)
    if error.traceback:
        rel, name = str(error.traceback[-1].get("file", "?")), str(error.traceback[-1].get("function", "?"))
        candidates = [f for f in _reference_fences().get(rel, ()) if f.function.rsplit(".", 1)[-1] == name]
    else:  # no frame in the tree (a compiled kernel): where the stub's function is fenced
        candidates = [f for rel, fs in _reference_fences().items() for f in fs if f.function == qualname]
        rel, name = (_file_of(candidates[0]) if candidates else "?"), qualname or "?"
    for keep in (lambda f: f.task == task, lambda f: f.function == qualname):
        candidates = [f for f in candidates if keep(f)] or candidates
    if not candidates and task is None and qualname is None:
        return None if not error.traceback else Origin(f"{_module(rel)}.{name}", None)
    functions, tasks = {f.function for f in candidates}, {f.task for f in candidates}
    function = functions.pop() if len(functions) == 1 else qualname or name
    if task is None and len(tasks) == 1:
        task = tasks.pop()
    return Origin(f"{_module(rel)}.{function}" if rel != "?" else function, task)


def _file_of(fence: Fence) -> str:
    return next(rel for rel, fs in _reference_fences().items() if fence in fs)


def belongs_to(task_id: str, task: Task) -> bool:
    """Whether a fence of task `task_id` is graded with `task`."""
    return task_id == task.id or task_id in task.fences


def not_implemented_message(error: ErrorInfo, graded: Optional[Task] = None) -> str:
    """The one-line message for a NotImplementedError; `graded` is the task being graded."""
    origin = raised_in(error)
    first = error.message.splitlines()[0] if error.message else ""
    if origin is None:
        return f"not implemented yet ({first or 'NotImplementedError'})"
    where = origin.function + (f" (task {origin.task})" if origin.task else "")
    if graded is not None and origin.task is not None and not belongs_to(origin.task, graded):
        return depends_on_stub(origin.task, origin.function)
    own = first if first and _STUB_TAIL not in first else ""  # a stub's text only repeats the name
    return f"not implemented yet: {where}" + (f" — {own}" if own else "")


def depends_on_stub(task_id: str, function: str) -> str:
    """A check of one task stopped at a stub of another: ``depends on task 2.1: finish
    `tensor_data.strides_from_shape` first (it is not implemented yet)``."""
    return f"depends on task {task_id}: finish `{function}` first (it is not implemented yet)"


def reaches_stub(task_id: str, function: str) -> str:
    """A check stopped at a stub of its own task that another check of the task reports: the
    check does not blame the function it is named after."""
    return f"fails because it reaches `{function}` (also task {task_id}), which is not implemented yet: finish that first"


def depends_on_broken(task_id: str, function: str, message: str) -> str:
    """The student's code raised inside a function of task `task_id`, which fails too."""
    return f"depends on task {task_id}, which fails: fix `{function}` first — {message}"


def raised_in_other(task_id: str, function: str, message: str) -> str:
    """The student's code raised inside a function of another task, not known to fail."""
    return f"{message} (raised in `{function}` of task {task_id}, which this check uses)"


def short(text: str, limit: int = 100) -> str:
    """`text` cut to `limit` characters (one line of the report's table)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_message(label: str, error: ErrorInfo, expected: Optional[str] = None) -> str:
    """``ValueError in f(x): expected 2.0, got ValueError("bad arg")`` (the call, what the
    reference gave, what the student's code raised); without an expected value
    ``ValueError in f(x): bad arg``."""
    first = error.message.splitlines()[0] if error.message else ""
    if expected is None:
        return f"{error.type} in {label}" + (f": {first}" if first else "")
    raised = f"{error.type}({short(first, 80)!r})" if first else error.type
    return f"{error.type} in {label}: expected {short(expected, 80)}, got {raised}"


def inputs_text(inputs: dict[str, Any]) -> str:
    """One line per named input: ``x = [1.0, 2.0]  (shape (2,), float64)``."""
    lines = []
    for k, v in inputs.items():
        if isinstance(v, np.ndarray):
            lines.append(f"{k} = {fmt_array(v)}  (shape {v.shape}, {v.dtype})")
        else:
            lines.append(f"{k} = {v!r}")
    return "\n".join(lines)


def join_lines(*parts: str) -> str:
    """The non-empty parts, one per line (the blocks of a check's details)."""
    return "\n".join(p for p in parts if p)
