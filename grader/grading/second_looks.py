"""The second looks of one mistake, one charge: in which trees a task's failing checks run
again, and in what order, with as few children as it takes.

    looks = second_looks(stage, [(task, whole_row), ...], failing, alone, repaired)
    row = charge_once(task, whole_row, looks[task.id].row, ...)   # grader.grading.one_charge

`second_looks` takes the tasks in the stage's order, each alone (`second_look`); once one
of them fails alone too (a *root*), the checks of the tasks still waiting run first in one
*repaired* tree, the whole tree with the roots from the reference. `second_look` runs a
task whose forward or backward partner loses points too with the partner's reference
first, and `passed_in_either` keeps a check that passes in either of the two trees.

Nothing here builds a tree or starts a child: the caller passes `alone` and `repaired`,
which grade in trees of their own (`grader.grading.reference_trees`). Why the trees are
these, and what leaves them (only verdicts), is in `grader.grading.one_charge`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import AbstractSet, Callable, NamedTuple, Sequence

from grader.core.manifest import Task
from grader.core.results import TaskResult
from grader.core.shared_state import state_partners

__all__ = ["Look", "passed_in_either", "second_look", "second_looks"]


class Look(NamedTuple):
    """A task's second look: its failing checks graded again (`row`, statuses only), the
    names of those that passed in a repaired tree, and the tasks that tree replaced."""

    row: TaskResult
    repaired: frozenset[str] = frozenset()
    roots: tuple[str, ...] = ()


def second_looks(
    stage: str,
    pending: Sequence[tuple[Task, TaskResult]],
    failing: AbstractSet[str],
    alone: Callable[..., TaskResult],
    repaired: Callable[[frozenset[str], list[tuple[Task, set[str]]]], dict[str, TaskResult]],
) -> dict[str, Look]:
    """The second look at each task of `pending` (task, row in the whole tree; in the stage's
    order), with as few children as it takes.

    Tasks are looked at in order, each alone (`second_look`; `alone(task, only=…,
    with_partners=…)` grades the checks `only` of a task in its alone tree). A task that
    still loses points alone is a *root*: its own code is wrong. Once a root is known and
    two tasks or more wait, their failing checks are first run together in one *repaired*
    tree — the whole tree with the roots replaced by the reference (`repaired(roots, [(task,
    checks)])`, one child) — where every check that fails only because of a root passes:
    one wrong `strides_from_shape` costs the whole tree, 2.1 alone and one repaired tree,
    not a tree per task. A check that passes there counts as passed alone does (the tree
    differs from the whole tree only by reference code in place of code shown wrong); the
    checks still failing are looked at alone, as before, so no task gets fewer points than
    alone would give it. `failing`: the tasks that lose points in the whole tree.
    """
    looks: dict[str, Look] = {}
    roots: list[str] = []
    tried: tuple[str, ...] = ()
    partly: dict[str, tuple[TaskResult, tuple[str, ...]]] = {}  # task → its repaired row, that tree's roots
    queue = list(pending)
    while queue:
        task, row = queue.pop(0)
        if task.id not in partly:
            looks[task.id] = Look(second_look(stage, task, row, failing, partial(alone, task)))
        else:  # only the checks the repaired tree left failing
            earlier, its_roots = partly[task.id]
            won = {c.name for c in earlier.checks if c.status == "passed"}
            rest = replace(
                row, checks=[replace(c, status="passed") if c.name in won else c for c in row.checks]
            )
            looks[task.id] = Look(
                passed_in_either(earlier, second_look(stage, task, rest, failing, partial(alone, task))),
                frozenset(won),
                its_roots,
            )
        if any(c.status != "passed" for c in looks[task.id].row.checks):
            roots.append(task.id)
        if roots and len(queue) >= 2 and tuple(roots) != tried:
            tried = tuple(roots)
            rows = repaired(
                frozenset(roots), [(t, {c.name for c in r.checks if c.status != "passed"}) for t, r in queue]
            )
            still = []
            for t, r in queue:
                got = rows[t.id]
                if all(c.status == "passed" for c in got.checks):
                    looks[t.id] = Look(got, frozenset(c.name for c in got.checks), tried)
                else:
                    partly[t.id] = (got, tried)
                    still.append((t, r))
            queue = still
    return looks


def second_look(
    stage: str, t: Task, row: TaskResult, failing: AbstractSet[str], alone: Callable[..., TaskResult]
) -> TaskResult:
    """The failing checks of `row` run again with task `t` alone (`alone(only=…,
    with_partners=…)` grades them in `t`'s alone tree); `failing`: the tasks of the stage
    that lose points in the whole tree.

    A backward shares state with its forward, so the alone tree keeps the student's half
    of the pair that belongs to another task (`state_partners`). When that task loses
    points itself, the checks are first run with the reference's half (a backward after the
    reference's forward, a forward's saving check with the reference's backward), those
    that still fail with the student's half, and a check passes alone when it passes in
    either tree (the right half of a pair passes in the first)."""
    only = {c.name for c in row.checks if c.status != "passed"}
    if not state_partners(stage, t.id) & failing:
        return alone(only=only)
    first = alone(only=only, with_partners=False)
    still = {c.name for c in first.checks if c.status != "passed"}
    return passed_in_either(first, alone(only=still)) if still else first


def passed_in_either(first: TaskResult, second: TaskResult) -> TaskResult:
    """`first` with each check that fails there and passes in `second` taken from `second`
    (two alone trees of one task; only the statuses are read, by `one_charge.charge_once`)."""
    won = {c.name: c for c in second.checks if c.status == "passed"}
    return replace(
        first,
        checks=[won.get(c.name, c) if c.status != "passed" else c for c in first.checks],
        seconds=first.seconds + second.seconds,
    )
