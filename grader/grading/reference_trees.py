"""The trees that hold reference code of the stage's tasks, each graded and then deleted:

    alone = partial(grade_alone, stage, sub_dir, scratch, limits, isolation, reference, ref_child)
    row, output = alone(task, result, last=False)  # as grader.grading.grade does

* `grade_alone` — a task alone: the stage's other tasks the reference (its forward or
  backward partner the student's unless ``with_partners=False``), for a second look and
  for ``--isolate``;
* `grade_repaired` — the repaired tree of `grader.grading.second_looks`: the student's whole
  tree with the tasks shown wrong (the roots) from the reference, the failing checks of
  every task still waiting in one child;
* `notebooks_alone` — the notebook parts that lost points, again over the reference of every
  task (`one_charge.charge_notebook_once`).

The student's code could read the reference in these trees, so each is deleted as soon as
its child is gone (but the last alone tree of ``--isolate``, where the notebooks run). A
grade builds them only once every child of the whole tree is gone and keeps nothing of them
but verdicts (`grader.grading.one_charge`); ``--isolate``, for trusted code, shows what
they say.
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path
from typing import AbstractSet, Optional

from grader.checks.runner import grade_task
from grader.core.manifest import Manifest, Task
from grader.core.results import GradeResult, TaskResult
from grader.notebooks.grading import cell_points, grade_notebook, notebook_not_started
from grader.sandbox.child.executor import Executor
from grader.sandbox.session import Limits, ReferenceChild, Session
from grader.trees.child_tree import build_tree
from .import_guard import broken_task_row, start_tree
from .one_charge import charge_notebook_once

__all__ = ["grade_alone", "grade_repaired", "notebooks_alone"]


def grade_alone(
    stage: str,
    sub_dir: Path,
    scratch: Path,
    limits: Limits,
    isolation: str,
    reference: Executor,
    ref_child: ReferenceChild,
    t: Task,
    result: GradeResult,
    *,
    last: bool,
    only: Optional[AbstractSet[str]] = None,
    with_partners: bool = True,
) -> tuple[TaskResult, list[str]]:
    """Task `t` graded alone, in a tree of its own where the stage's other tasks are the
    reference (`build_tree(..., isolate_task=t.id, with_partners=…)`), its checks named in
    `only` (all when None); the tree's problems join `result`'s.
    The tree is deleted afterwards unless it is the `last` (notebooks of ``--isolate``).
    Returns the row and the child's output."""
    tree, work = scratch / f"tree-{t.id}", scratch / f"s-{t.id}"
    work.mkdir()
    session, problems = start_tree(
        partial(build_tree, stage, sub_dir, tree, isolate_task=t.id, with_partners=with_partners),
        partial(Session, tree, work, limits, tier=isolation),
    )
    try:
        result.problems.extend(p for p in problems if p not in result.problems)
        row = broken_task_row(t, problems) or grade_task(
            t, stage, reference, session, limits, problems, ref_child, only=only
        )
        return row, session.outputs
    finally:
        session.close()
        if not last:  # it holds the reference of the stage's other tasks: no later child may find it
            shutil.rmtree(tree, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def grade_repaired(
    stage: str,
    sub_dir: Path,
    scratch: Path,
    limits: Limits,
    isolation: str,
    reference: Executor,
    ref_child: ReferenceChild,
    result: GradeResult,
    roots: frozenset[str],
    todo: list[tuple[Task, set[str]]],
) -> dict[str, TaskResult]:
    """The checks `todo` names of each of its tasks, graded in one child over the repaired
    tree: the student's whole tree with the tasks `roots` from the reference
    (`build_tree(..., reference_tasks=roots)`, deleted afterwards; `second_looks.second_looks`).
    The tree's problems join `result`'s. Returns each task's row (only statuses are read)."""
    tree, work = scratch / "tree-repaired", scratch / "s-repaired"
    work.mkdir()
    session, problems = start_tree(
        partial(build_tree, stage, sub_dir, tree, reference_tasks=roots),
        partial(Session, tree, work, limits, tier=isolation),
    )
    try:
        result.problems.extend(p for p in problems if p not in result.problems)
        return {
            t.id: broken_task_row(t, problems)
            or grade_task(t, stage, reference, session, limits, problems, ref_child, only=only)
            for t, only in todo
        }
    finally:
        session.close()
        shutil.rmtree(tree, ignore_errors=True)  # it holds the reference of the roots
        shutil.rmtree(work, ignore_errors=True)


def notebooks_alone(
    stage: str,
    manifest: Manifest,
    sub_dir: Path,
    scratch: Path,
    limits: Limits,
    rows: list[TaskResult],
    task_rows: list[TaskResult],
) -> list[TaskResult]:
    """One mistake, one charge for the notebook parts (`one_charge.charge_notebook_once`):
    while a task of the stage loses points, a part that lost points on cells that ran, and
    is not as released (`notebook_not_started`), is graded again in a tree where every task
    is the reference; `rows` are the parts' rows
    in the whole tree (in the manifest's order), `task_rows` the tasks' final rows."""
    if not any(r.score < r.max_points for r in task_rows):
        return rows
    again = [
        (nb, row)
        for nb, row in zip(manifest.notebooks, rows)
        if row.score < row.max_points
        and any(c.status != "passed" for c in row.checks)
        and not notebook_not_started(nb, sub_dir)
    ]
    if not again:
        return rows
    tree = scratch / "tree-reference"
    try:
        build_tree(stage, sub_dir, tree, all_reference=True)
        charged = {
            row.id: charge_notebook_once(
                row, grade_notebook(nb, sub_dir, tree, scratch, limits), cell_points(nb), task_rows
            )
            for nb, row in again
        }
    finally:
        shutil.rmtree(tree, ignore_errors=True)  # it holds the reference of every task
    return [charged.get(row.id, row) for row in rows]
