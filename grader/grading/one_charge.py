"""One mistake, one charge: a task's points depend on its own code, not on the other tasks.

    if needs_second_look(task, whole_row, problems):
        alone_row = ...  # the task graded in a tree where the stage's other tasks are the reference
        row = charge_once(task, whole_row, alone_row, other_rows)

A submission is first graded as it is: the student's code for every task of the stage,
together (the *whole tree*). There a task Y can lose points to another task X that it
calls — one wrong line in `strides_from_shape` (2.1) fails every tensor operation of
2.2–2.4. So a task that loses points is graded a second time *alone*: in a tree of its own
where every other task of the stage is the reference (`grader.trees.child_tree.build_tree(...,
isolate_task=Y)`). Only the checks that failed are run there, and each check that passes
alone counts as passed:

    a check of Y counts  ⇔  it passes in the whole tree  or  it passes with Y alone

so the points of Y depend on Y's own code: a check fails only when Y's code fails it both
with the student's other tasks and with the reference's.

A tree is a child process (about 0.6 s to build and start), so the tasks to look at again
are taken in the stage's order (`grader.grading.second_looks`): once one of them fails alone
too — its own code is wrong, a *root* — the failing checks of all the tasks still waiting
are run in one *repaired* tree, the whole tree with the roots from the reference
(``build_tree(..., reference_tasks=…)``). A check that passes there counts; only the checks
that fail there too are looked at alone. A wrong `strides_from_shape` then costs three
children (the whole tree, 2.1 alone, the repaired tree) instead of five, and 2.2–2.4's
feedback names the task whose reference made them pass. The repaired tree differs from the
whole tree only by reference code in place of code shown to be wrong, and anything it leaves
failing is still graded alone, so no task gets fewer points than grading it alone gives.

A backward and its forward share state: what the forward saves in ``ctx`` the backward reads
back, in a layout of the student's choosing. So the alone tree keeps the student's forward
beside their backward (`grader.core.shared_state`), and a wrong forward (2.3's
``Permute.forward``) would still fail 2.4's backward checks there. When the partner's task
loses points too, the checks are therefore also run with the partner's reference
(``build_tree(..., with_partners=False)``, first, as the right half passes there), and pass
alone when they pass in either tree (`second_looks.passed_in_either`): a backward that works
after the reference's forward is right. It works the other way too: the forward's task
checks what its forward saves by running the backward after it
(``forwards_save_for_backward`` in 1.2 and 2.3), and that check passes alone when it passes
after the reference's backward. So a forward that saves nothing costs the forward's task
only, and a wrong backward the backward's only.

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
stopped at a stub of its own (the same stub is reached whatever surrounds it); and a
notebook part that runs exactly the code of its release (not started: its answers are the
release's stubs, `grader.notebooks.grading.notebook_not_started`).

What the second look gives the student, and what it does not:

* **Only verdicts leave it.** The alone tree holds the reference code of the stage's other
  tasks, which the student's code could read and put into an exception message, its
  output or the numbers it returns. So from that run the grader keeps each check's status
  and nothing else: every message, traceback and value a student reads comes from the
  whole tree, where only their own code runs (with the reference of earlier stages, which
  their release holds). What is left is one bit per check (passed or not) of a task that
  already lost points, per submission — a narrow channel, stated here so that nobody takes
  the second look for a vault. Nothing a child writes in one tree reaches the next: the
  jail gives each its own scratch, tmp and home (`grader.sandbox.session`; the ``bwrap`` and ``uid``
  tiers — the ``process`` tier is no boundary), and the alone trees are built only after
  the whole tree's child and the notebooks are done.
* **The root cause, where it was shown.** A check that fails in the whole tree and passes
  alone fails because of code outside the task: the feedback says so and names the other
  tasks of the stage that fail their own checks (and those checks: "task 2.1
  (strides_from_shape) fails its own checks"). A check that fails alone too is the task's own mistake,
  and the feedback says that instead of guessing about the other tasks. A check the whole
  tree could not judge (a speed verdict withheld on a busy machine, a grader error) did not
  fail there: passing alone judges the task's own code, so it counts and no other task is
  blamed for it; a withheld verdict is then settled (the staff is not asked to grade it
  again), a grader error is still reported.

Without ``one_charge`` (``grader run --whole-tree``) the whole tree's rows are the grade.
``--isolate`` grades every task alone (a diagnosis; its messages are shown, so it is for
trusted code only).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import AbstractSet, Mapping, Optional, Sequence

from grader.checks.runner import VerdictWithheld, task_files, task_score
from grader.trees.fence_guard import BrokenFence
from grader.core.fences import is_stub, student_bodies
from grader.trees.intake import find_package, read_student_file
from grader.core.manifest import Task
from grader.core.results import CheckResult, Problem, TaskResult

__all__ = [
    "ALONE",
    "charge_once",
    "needs_second_look",
    "not_started",
]

#: How the feedback names the second look.
ALONE = "with the reference in place of the stage's other tasks"


def needs_second_look(
    task: Task, whole: TaskResult, problems: Sequence[Problem], submission: Optional[Path] = None
) -> bool:
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


def charge_once(
    task: Task,
    whole: TaskResult,
    alone: TaskResult,
    others: Sequence[TaskResult] = (),
    repaired: AbstractSet[str] = frozenset(),
    roots: Sequence[str] = (),
) -> TaskResult:
    """The graded row of `task`: `whole` (its row in the whole tree) with each check that
    passes in `alone` (the checks that failed, graded again) counted as passed.

    Args:
        whole: the task's row in the student's whole tree (its messages are shown).
        alone: its failing checks graded again (`second_looks`); only their statuses are read.
        others: the final rows of the stage's other tasks (empty when only this task was
            graded): the ones that lose points even so are named as the cause.
        repaired, roots: the checks of `alone` that passed in the repaired tree, where only
            the tasks `roots` were the reference (the others passed alone).
    """
    seconds = whole.seconds + alone.seconds
    rescued = {c.name for c in alone.checks if c.status == "passed"}
    if not rescued:
        if not _culprits(others):  # nothing else fails: nothing to tell apart
            return replace(whole, seconds=seconds)
        note = (
            f"graded again {ALONE}, this task fails the same checks: the mistake is in this task's own code"
        )
        return replace(whole, seconds=seconds, feedback=_join(whole.feedback, f"Note: {note}"))
    # a check the whole tree could not judge (a verdict withheld on a busy machine, a grader
    # error) did not fail there: passing alone judges it, and no other task is blamed for it
    unjudged = {c.name for c in whole.checks if c.grader_error}
    fixed_by = f"with the reference in place of {_tasks_text(roots)}"

    def rescued_message(c: CheckResult) -> str:
        where = fixed_by if c.name in repaired else ALONE
        if c.name in unjudged:
            return (
                f"passes {where}; with your own code for every task it could not be judged (not your fault)"
            )
        return f"passes {where}; with your own code: {c.message}"

    def rescued_check(c: CheckResult) -> CheckResult:
        # a withheld verdict is settled by the alone run; a grader error stays for the staff
        error = "" if c.message == VerdictWithheld.message else c.grader_error
        return replace(c, status="passed", grader_error=error, message=rescued_message(c))

    checks = [rescued_check(c) if c.name in rescued else c for c in whole.checks]
    score = task_score(task, checks)
    failing = [c for c in checks if c.status != "passed"]
    blamed = [c.name for c in whole.checks if c.name in rescued - unjudged]
    judged = [c.name for c in whole.checks if c.name in rescued & unjudged]
    heads = []
    if blamed:
        many = len(blamed) > 1
        cause = _culprits(others) or "the cause is in your code of another task"
        heads.append(
            f"{', '.join(blamed)} fail{'' if many else 's'} with your code for the other tasks and pass{'' if many else 'es'} "
            f"with the reference in their place, so {'they count' if many else 'it counts'}: {cause}"
        )
        fix = _culprits(others, names=False) or "the cause is in your code of another task"
        short = f"{'passes' if not failing else 'passes more checks'} with the reference for the other tasks: {fix}"
    judged_where = fixed_by if judged and all(n in repaired for n in judged) else ALONE
    if not blamed:
        short = f"{'passes' if not failing else 'passes more checks'} {judged_where}"
    if judged:
        many = len(judged) > 1
        heads.append(
            f"{', '.join(judged)} could not be judged with your code for every task (not your fault) and "
            f"pass{'' if many else 'es'} {judged_where}, so {'they count' if many else 'it counts'}"
        )
    head = "; ".join(heads)
    feedback = _join(
        f"{score:g} of {whole.max_points:g} points: {head}.",
        "With your own code for every task:",
        whole.feedback,
    )
    return replace(
        whole,
        score=score,
        status=failing[0].status if failing else "passed",
        message=failing[0].message if failing else short,
        checks=checks,
        seconds=seconds,
        feedback=feedback,
        messages=[short] + [f"{c.name}: {c.message}" for c in failing],
    )


def charge_notebook_once(
    whole: TaskResult, alone: TaskResult, cell_points: Mapping[str, float], others: Sequence[TaskResult] = ()
) -> TaskResult:
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
    checks = [
        c
        if c.name not in rescued
        else replace(
            c,
            status="passed",
            message=f"passes with the reference for the tasks; with your own code: {c.message}",
        )
        for c in whole.checks
    ]
    total = sum(cell_points.get(c.name, 0.0) for c in checks)
    earned = sum(cell_points.get(c.name, 0.0) for c in checks if c.status == "passed")
    score = max(whole.score, round(whole.max_points * earned / total, 4) if total > 0 else 0.0)
    cause = _culprits(others) or "the cause is in your code of a task"
    many = len(rescued) > 1
    head = (
        f"{', '.join(rescued)} fail{'' if many else 's'} with your code for the tasks and pass{'' if many else 'es'} "
        f"with the reference in its place, so {'they count' if many else 'it counts'}: {cause}"
    )
    still = [c for c in checks if c.status != "passed"]
    return replace(
        whole,
        score=score,
        status=whole.status if still else "passed",
        checks=checks,
        seconds=seconds,
        message=f"{earned:g} of {total:g} notebook points ({len(rescued)} cell{'s' if many else ''} "
        f"with the reference for the tasks)",
        feedback=_join(
            f"{score:g} of {whole.max_points:g} points: {head}.",
            "With your own code for every task:",
            whole.feedback,
        ),
    )


def _tasks_text(ids: Sequence[str]) -> str:
    """ "task 2.1", "tasks 2.1 and 2.3" """
    ids = list(ids)
    if len(ids) <= 1:
        return f"task {''.join(ids)}"
    return f"tasks {', '.join(ids[:-1])} and {ids[-1]}"


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)
