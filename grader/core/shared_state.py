"""Fences that share state between calls: a Function's forward and its backward.

    shared_state(text, find_fences(text))  # -> groups of fences, e.g. (Mul.forward 1.2, Mul.backward 1.3)
    state_partners("a2", "2.4")            # -> {"2.3"}: the tasks of the forwards of 2.4's backwards

A forward saves in ``ctx`` what its backward reads back, in a layout of the student's
choosing, so a child tree never puts one half of such a pair next to the other half's
reference body unless it means to (`grader.trees.child_tree.build_tree`, `grader.grading.one_charge`).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .fences import Fence, package_fences
from .manifest import all_manifests, repo_root as _default_root

__all__ = ["shared_state", "state_partners"]


def shared_state(text: str, fences: Sequence[Fence]) -> list[tuple[Fence, ...]]:
    """Groups of fences that share state between calls, so that none of them can be graded
    next to another's reference body: the fences inside the methods of one class that take
    a ``ctx`` parameter. A Function's forward saves into the context what its backward
    reads back, and what it saves is the student's choice (the docstrings suggest one, the
    checks accept any): a backward that expects the input, run after the reference forward
    that saved the output, fails although both of the student's halves are right.

    Groups of two or more fences, in file order; [] for text that does not parse.
    """
    spans = _ctx_methods(text)
    groups: dict[int, list[Fence]] = {}
    for fence in fences:
        index = next((i for first, last, i in spans if first <= fence.begin <= last), None)
        if index is not None:
            groups.setdefault(index, []).append(fence)
    return sorted((tuple(g) for g in groups.values() if len(g) > 1), key=lambda g: g[0].begin)


@lru_cache(maxsize=256)
def _ctx_methods(text: str) -> tuple[tuple[int, int, int], ...]:
    """(first line, last line, class index) of every method of a class in `text` that takes
    a ``ctx`` parameter; () for text that does not parse. Cached: a grading builds several
    trees from the same reference and student files."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    spans: list[tuple[int, int, int]] = []
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for index, cls in enumerate(classes):
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                if any(arg.arg == "ctx" for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]):
                    spans.append((node.lineno, node.end_lineno or node.lineno, index))
    return tuple(spans)


def state_partners(stage: str, task: str, repo_root: Path | str | None = None) -> frozenset[str]:
    """The other tasks of `stage` with a fence that shares state (`shared_state`) with a
    fence of `task`: the task of a forward whose backward is `task`'s, and the reverse."""
    root = Path(repo_root).resolve() if repo_root is not None else _default_root()
    return _partners(root, stage, task)


@lru_cache(maxsize=None)
def _partners(root: Path, stage: str, task: str) -> frozenset[str]:
    """`state_partners` for one kit, read once per process (the kit does not change while
    it grades)."""
    manifest = all_manifests(root)[stage]
    mine = set(manifest.task(task).fences)
    task_of = {f: t.id for t in manifest.tasks for f in t.fences}
    found: set[str] = set()
    for rel, fences in package_fences(root / "minitorch").items():
        for group in shared_state((root / rel).read_text(encoding="utf-8"), fences):
            ids = {f.task for f in group}
            if ids & mine:
                found |= {task_of[f] for f in ids - mine if f in task_of}
    return frozenset(found)
