"""One mistake, one charge: a task's points depend on its own code, not on the other tasks.

    if needs_second_look(task, whole_row, problems):
        alone_row = ...  # the task graded in a tree where the stage's other tasks are the reference
        row = charge_once(task, whole_row, alone_row, other_rows)

A submission is first graded as it is: the student's code for every task of the stage,
together (the *whole tree*). There a task Y can lose points to another task X that it
calls — one wrong line in `strides_from_shape` (2.1) fails every tensor operation of
2.2–2.4. So a task that loses points is graded a second time *alone*: in a tree of its own
where every other task of the stage is the reference (`grader.trees.build_tree(...,
isolate_task=Y)`). Only the checks that failed are run there, and each check that passes
alone counts as passed:

    a check of Y counts  ⇔  it passes in the whole tree  or  it passes with Y alone

so the points of Y depend on Y's own code: a check fails only when Y's code fails it both
with the student's other tasks and with the reference's.

A backward and its forward share state: what the forward saves in ``ctx`` the backward
reads back, in a layout of the student's choosing. So the alone tree keeps the student's
forward beside their backward (`grader.shared_state`), and a wrong forward (2.3's
``Permute.forward``) would still fail 2.4's backward checks there. When the partner's task
loses points too, the checks are therefore also run with the partner's reference
(``build_tree(..., with_partners=False)``, first, as the right half passes there), and
pass alone when they pass in either tree (`passed_in_either`): a backward that works after
the reference's forward is right. It works the other way too: the forward's task checks what its forward
saves by running the backward after it (``forwards_save_for_backward`` in 1.2 and 2.3), and
that check passes alone when it passes after the reference's backward. So a forward that
saves nothing costs the forward's task only, and a wrong backward the backward's only.

A notebook part is the student's cells, but they call the library the student wrote in the
stage's tasks (A5's notebook runs their `lstm_cell`). So while a task loses points, a part
that lost points is graded again in a tree where every task is the reference
(``build_tree(..., all_reference=True)``), and a cell that passes there counts
(`charge_notebook_once`): a wrong gate order costs 5.2, not 5.2 and the notebook. The same
rules hold as for a task: only the cells' verdicts leave that tree.

A task is looked at again only when another task of the stage loses points too (or when it
is graded by itself, `grader run --task`, where the others are not known): a mistake whose
task is the only one to fail is charged once already, and most submissions cost no more
to grade than before. (A task whose checks all pass is taken to be right; a mistake its
checks miss is what the mutation analysis, `grader check --mutants`, looks for.)

The second look is also skipped when it cannot change anything: a task with full marks, a task
not started (every body of its fences a stub, as released: `grader check` proves that a
release's stub scores 0 alone, invariant 3), a task whose body was stubbed because it breaks
the import (`BrokenFence`: it is broken alone too), and a task whose every failing check
stopped at a stub of its own (the same stub is reached whatever surrounds it).

What the second look gives the student, and what it does not:

* **Only verdicts leave it.** The alone tree holds the reference code of the stage's other
  tasks, which the student's code could read and put into an exception message, its
  output or the numbers it returns. So from that run the grader keeps each check's status
  and nothing else: every message, traceback and value a student reads comes from the
  whole tree, where only their own code runs (with the reference of earlier stages, which
  their release holds). What is left is one bit per check (passed or not) of a task that
  already lost points, per submission — a narrow channel, stated here so that nobody takes
  the second look for a vault. Nothing a child writes in one tree reaches the next: the
  jail gives each its own scratch, tmp and home (`grader.sandbox`; the ``bwrap`` and ``uid``
  tiers — the ``process`` tier is no boundary), and the alone trees are built only after
  the whole tree's child and the notebooks are done.
* **The root cause, where it was shown.** A check that fails in the whole tree and passes
  alone fails because of code outside the task: the feedback says so and names the other
  tasks of the stage that fail their own checks (and those checks: "task 2.1
  (strides_from_shape) fails its own checks"). A check that fails alone too is the task's own mistake,
  and the feedback says that instead of guessing about the other tasks.

Without ``one_charge`` (``grader run --whole-tree``) the whole tree's rows are the grade.
``--isolate`` grades every task alone (a diagnosis; its messages are shown, so it is for
trusted code only).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Mapping, Optional, Sequence

from .checks.runner import task_files, task_score
from .fence_guard import BrokenFence
from .fences import is_stub, student_bodies
from .intake import find_package, read_student_file
from .manifest import Task
from .results import Problem, TaskResult

__all__ = ["ALONE", "charge_once", "needs_second_look", "not_started", "passed_in_either"]

#: How the feedback names the second look.
ALONE = "with the reference in place of the stage's other tasks"


def needs_second_look(task: Task, whole: TaskResult, problems: Sequence[Problem], submission: Optional[Path] = None) -> bool:
    """Whether grading `task` alone could give it more points than `whole`, its row in the
    whole tree (see the module docstring for the cases that cannot); `submission`, the
    student's files, tells a task not started."""
    if whole.score >= whole.max_points:
        return False
    if submission is not None and not_started(task, submission):
        return False
    if any(isinstance(p, BrokenFence) and task.id in p.tasks for p in problems):
        return False
    failing = [c for c in whole.checks if c.status != "passed"]
    own_stubs = all(c.unfinished and c.raised_in_task == task.id for c in failing)
    return not (failing and own_stubs)


def not_started(task: Task, submission: Path) -> bool:
    """Whether every body of `task`'s fences in the student's files (`submission`, opened)
    is a stub or missing: the task as released."""
    package = find_package(submission)
    if package is None:
        return True
    for rel in task_files(task):
        text, _ = read_student_file(package, Path(rel).relative_to("minitorch"))
        if text is None:
            continue
        bodies = student_bodies(text, rel).bodies
        if any(fence in task.fences and not is_stub(body) for (fence, _, _), body in bodies.items()):
            return False
    return True


def _culprits(others: Sequence[TaskResult], names: bool = True) -> str:
    """ "task 2.1 (strides_from_shape) fails its own checks: fix it first" for the other
    tasks that lose points in their final rows (graded alone where that gave more), with
    their failing checks unless `names` is false; "" when none do (or were not graded)."""
    failing = [r for r in others if r.kind == "task" and r.score < r.max_points]
    parts = []
    for r in failing:
        checks = [c.name for c in r.checks if c.status != "passed"] if names else []
        parts.append(f"task {r.id}" + (f" ({', '.join(checks)})" if checks else ""))
    if not parts:
        return ""
    if len(parts) == 1:
        return f"{parts[0]} fails its own checks: fix it first"
    return f"{', '.join(parts[:-1])} and {parts[-1]} fail their own checks: fix them first"


def charge_once(task: Task, whole: TaskResult, alone: TaskResult, others: Sequence[TaskResult] = ()) -> TaskResult:
    """The graded row of `task`: `whole` (its row in the whole tree) with each check that
    passes in `alone` (the checks that failed, graded alone) counted as passed.

    Args:
        whole: the task's row in the student's whole tree (its messages are shown).
        alone: its failing checks graded alone; only their statuses are read.
        others: the final rows of the stage's other tasks (empty when only this task was
            graded): the ones that lose points even so are named as the cause.
    """
    seconds = whole.seconds + alone.seconds
    rescued = {c.name for c in alone.checks if c.status == "passed"}
    if not rescued:
        if not _culprits(others):  # nothing else fails: nothing to tell apart
            return replace(whole, seconds=seconds)
        note = f"graded again {ALONE}, this task fails the same checks: the mistake is in this task's own code"
        return replace(whole, seconds=seconds, feedback=_join(whole.feedback, f"Note: {note}"))
    checks = [c if c.name not in rescued else
              replace(c, status="passed", grader_error="", message=f"passes {ALONE}; with your own code: {c.message}")
              for c in whole.checks]
    score = task_score(task, checks)
    names = [c.name for c in whole.checks if c.name in rescued]
    many = len(names) > 1
    cause = _culprits(others) or "the cause is in your code of another task"
    head = (f"{', '.join(names)} fail{'' if many else 's'} with your code for the other tasks and pass{'' if many else 'es'} "
            f"with the reference in their place, so {'they count' if many else 'it counts'}: {cause}")
    failing = [c for c in checks if c.status != "passed"]
    fix = _culprits(others, names=False) or "the cause is in your code of another task"
    short = f"{'passes' if not failing else 'passes more checks'} with the reference for the other tasks: {fix}"
    feedback = _join(f"{score:g} of {whole.max_points:g} points: {head}.", "With your own code for every task:", whole.feedback)
    return replace(whole, score=score, status=failing[0].status if failing else "passed",
                   message=failing[0].message if failing else short, checks=checks, seconds=seconds, feedback=feedback,
                   messages=[short] + [f"{c.name}: {c.message}" for c in failing])


def charge_notebook_once(whole: TaskResult, alone: TaskResult, cell_points: Mapping[str, float],
                         others: Sequence[TaskResult] = ()) -> TaskResult:
    """The graded row of a notebook part: `whole` (its test cells over the student's code of
    the stage's tasks) with each cell that passes in `alone` (the same notebook over the
    reference's code of every task) counted as passed.

    A notebook part is graded on its own cells, but they call the library the student wrote
    in the tasks: a cell that fails only because a task's code is wrong is that task's
    mistake, charged there. As for a task, only the cells' statuses are read from `alone`;
    the score is nbgrader's (a cell scores its points when it passes, `cell_points`),
    scaled to the part's points; `others`: the stage's final task rows, named as the cause.
    """
    seconds = whole.seconds + alone.seconds
    failed = [c.name for c in whole.checks if c.status != "passed"]
    rescued = [name for name in failed if any(c.name == name and c.status == "passed" for c in alone.checks)]
    if not rescued:
        return replace(whole, seconds=seconds)
    checks = [c if c.name not in rescued else
              replace(c, status="passed", message=f"passes with the reference for the tasks; with your own code: {c.message}")
              for c in whole.checks]
    total = sum(cell_points.get(c.name, 0.0) for c in checks)
    earned = sum(cell_points.get(c.name, 0.0) for c in checks if c.status == "passed")
    score = max(whole.score, round(whole.max_points * earned / total, 4) if total > 0 else 0.0)
    cause = _culprits(others) or "the cause is in your code of a task"
    many = len(rescued) > 1
    head = (f"{', '.join(rescued)} fail{'' if many else 's'} with your code for the tasks and pass{'' if many else 'es'} "
            f"with the reference in its place, so {'they count' if many else 'it counts'}: {cause}")
    still = [c for c in checks if c.status != "passed"]
    return replace(whole, score=score, status=whole.status if still else "passed", checks=checks, seconds=seconds,
                   message=f"{earned:g} of {total:g} notebook points ({len(rescued)} cell{'s' if many else ''} "
                           f"with the reference for the tasks)",
                   feedback=_join(f"{score:g} of {whole.max_points:g} points: {head}.", "With your own code for every task:",
                                  whole.feedback))


def passed_in_either(first: TaskResult, second: TaskResult) -> TaskResult:
    """`first` with each check that fails there and passes in `second` taken from `second`
    (two alone trees of one task; only the statuses are read, by `charge_once`)."""
    won = {c.name: c for c in second.checks if c.status == "passed"}
    return replace(first, checks=[won.get(c.name, c) if c.status != "passed" else c for c in first.checks],
                   seconds=first.seconds + second.seconds)


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)
