"""Start the child on a submission's tree so that an import failure costs only its fences.

    session, problems = start_tree(partial(build_tree, stage, sub, tree), partial(Session, tree, scratch, limits))
    row = broken_task_row(task, problems) or grade_task(task, ...)

Without this, one fence that stops ``import minitorch`` would fail every task of the stage.
`grader.trees.fence_guard` already stubs the bodies that do not compile or leave their function
while the tree is written, so a tree that still fails to import fails for a reason only
running it shows (an exception raised at import time, a crash). `start_tree` starts the
child; when the import fails it looks for the student's body responsible:

1. the innermost frame of the import's traceback that lies in a student's body names it;
2. otherwise bisection: with every student body stubbed the tree must import (if it does
   not, the failure is not the student's code and stands, for every task, as before); the
   shortest prefix of the bodies, in file order, whose import fails ends with the culprit.

The culprit is stubbed (`build_tree(stub_fences=…)`) and reported as a `BrokenFence`, and
the child is started again, for at most `MAX_CULPRITS` culprits. An import that runs past
the start timeout is not searched (every try could cost that timeout again): it stands.

`broken_task_row` is the row of a task with a `BrokenFence`: no points, no check run, the
reason in its feedback. Its other tasks are graded on the tree with the stub.
"""

from __future__ import annotations

from typing import AbstractSet, Callable, Optional, Sequence

from grader.checks.runner import task_files
from grader.trees.fence_guard import BrokenFence, PlacedFence, broken_message, fences_in
from grader.core.manifest import Task
from grader.core.results import CheckResult, Problem, TaskResult
from grader.sandbox.child_process import ChildStartFailed
from grader.sandbox.session import Session
from grader.trees.child_tree import ChildTree

__all__ = ["MAX_CULPRITS", "broken_task_row", "start_tree"]

#: How many bodies the search stubs before it lets an import failure stand.
MAX_CULPRITS = 5

FenceRef = tuple[str, str, str, int]
#: ``build(stub_fences=…)`` writes the tree with those bodies stubbed (`grader.trees.child_tree.build_tree`).
Builder = Callable[..., ChildTree]


def _start(session: Session) -> Optional[ChildStartFailed]:
    try:
        session.ensure()
    except ChildStartFailed as exc:
        return exc
    return None


def _traced(
    failure: ChildStartFailed, placed: Sequence[PlacedFence]
) -> tuple[Optional[PlacedFence], Optional[int]]:
    """The student's body holding the innermost frame of the import's traceback."""
    frames = failure.error.traceback if failure.error is not None else ()
    for frame in reversed(frames):
        line = frame.get("line")
        hit = fences_in(placed, str(frame.get("file")), line) if isinstance(line, int) else None
        if hit is not None:
            return hit, line
    return None, None


def _bisect(
    build: Builder,
    open_session: Callable[[], Session],
    stubbed: AbstractSet[FenceRef],
    placed: Sequence[PlacedFence],
) -> Optional[PlacedFence]:
    """The body whose import fails, found by stubbing a suffix of `placed`; None when the
    tree fails with all of them stubbed. Leaves the tree in an arbitrary state."""

    def fails(kept: int) -> bool:
        build(stub_fences=frozenset(stubbed) | {p.ref for p in placed[kept:]})
        session = open_session()
        try:
            return _start(session) is not None
        finally:
            session.close()

    if not placed or fails(0):
        return None
    good, bad = 0, len(placed)  # keeping placed[:good] imports, keeping placed[:bad] does not
    while bad - good > 1:
        middle = (good + bad) // 2
        if fails(middle):
            bad = middle
        else:
            good = middle
    return placed[bad - 1]


def _reason(failure: ChildStartFailed) -> str:
    if failure.error is None:
        return f"stops minitorch from importing ({failure.message})"
    first = failure.error.message.splitlines()[0] if failure.error.message else ""
    return f"does not import: {failure.error.type}" + (f": {first}" if first else "")


def start_tree(build: Builder, open_session: Callable[[], Session]) -> tuple[Session, list[Problem]]:
    """Build the tree, start its child, and stub the student's bodies that break the import.

    Args:
        build: ``build(stub_fences=…)`` writes the tree with those bodies stubbed
            (`grader.trees.child_tree.build_tree` with its other arguments bound).
        open_session: a new session on that tree.

    Returns:
        The session (started; or holding the import failure that no body explains, which
        each check then reports as today) and the problems: the build's, plus a
        `BrokenFence` per body stubbed here.
    """
    stubbed: set[FenceRef] = set()
    found: list[Problem] = []
    searching = True
    while True:
        tree = build(stub_fences=frozenset(stubbed))
        session = open_session()
        failure = _start(session)
        if failure is None or failure.status != "error" or not searching or len(found) >= MAX_CULPRITS:
            return session, tree.problems + found
        session.close()
        culprit, line = _traced(failure, tree.placed)
        if culprit is None:
            culprit = _bisect(build, open_session, stubbed, tree.placed)
        if culprit is None:
            searching = False  # not the student's bodies: rebuild the tree as it was, let it fail
            continue
        stubbed.add(culprit.ref)
        found.append(broken_message(culprit, line, _reason(failure)))


def broken_task_row(task: Task, problems: Sequence[Problem]) -> Optional[TaskResult]:
    """The row of `task` when a body of its own was stubbed (`BrokenFence`): 0 points, its
    checks not run, the reasons and the task's other problems in its feedback. None when
    the task has no broken body."""
    broken = [p for p in problems if isinstance(p, BrokenFence) and task.id in p.tasks]
    if not broken:
        return None
    files = task_files(task)
    others = [p for p in problems if p not in broken and p.concerns(task.id, files)]
    why = broken[0].message
    checks = [CheckResult(name, "", "error", f"not run: {why}") for name in task.checks]
    lines = [f"✗ not graded: {p.message}" for p in broken]
    if others:
        lines += ["Problems with the submitted files:", *(f"  {p.message}" for p in others)]
    if task.hint:
        lines.append(f"Hint: {task.hint}")
    return TaskResult(
        id=task.id,
        title=task.title,
        max_points=task.points,
        score=0.0,
        status="error",
        message=why,
        feedback="\n".join(lines),
        checks=checks,
    )
