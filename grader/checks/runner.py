"""The check runner: run one hidden check against a student's session, grade one task.

    result = run_check("central_difference", "a1", reference, Services(limits, task, session))
    row = grade_task(task, "a1", reference, session, limits, problems, reference_child)

`run_check` turns every way a check can end into a `CheckResult`: passed, failed (a wrong
answer: `CheckFailed`), error (the student's code raised, the child died, exited or sent
garbage), timeout (no answer within the check's budget; the child is killed), or an
internal grader error (a bug in a check or the reference: reported, never the student's
fault), or no verdict (`VerdictWithheld`: a machine too busy to judge, a grader error).
`grade_task` runs a task's checks in order, shares the task's points among them by
their weights in the manifest (1 unless stated: partial credit), skips the rest after a
timeout, and writes the task's feedback with the submission's problems that concern it:
every failing check with its own message, and where a failure comes from another function
(a stub of the same task that another check reports, a function of another task) the
message says so (`explain_failures`). The table gets one line per failing message
(`task_messages`).

Verdicts are decided here and in the checks, in the parent, from the raw answers the
sandbox returns; nothing here writes files or reports.
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import AbstractSet, Optional, Sequence

from grader.sandbox.child import protocol
from grader.sandbox.child.executor import Executor
from grader.core.fences import package_fences
from grader.core.manifest import Task, repo_root
from grader.core.results import CheckResult, Problem, TaskResult
from grader.sandbox.child_process import ChildStartFailed, exit_text
from grader.sandbox.session import Limits, ReferenceChild, Session
from . import get_check
from .base import CheckContext, CheckFailed, GraderBug, Services, StudentError
from .feedback import belongs_to, depends_on_broken, raised_in, raised_in_other, reaches_stub

__all__ = [
    "VerdictWithheld",
    "explain_failures",
    "grade_task",
    "run_check",
    "task_files",
    "task_messages",
    "task_score",
]


class VerdictWithheld(Exception):
    """A check that cannot judge here and now: neither a pass nor a failure (a performance
    check on a machine too busy to time fairly, `grader.checks.a3.speed`).

    Its result is an ``error`` that scores nothing and carries a `grader_error`, never a
    silent score: `grader run` exits 2, `grader batch` records the row as ``grader-error``,
    Gradescope says that grading failed (not the student's fault). The staff grades the task
    again on a quiet machine (`reason` says how).

    Args:
        reason: for the staff: what was measured, and how to regrade.
        details: the measurements, for the feedback.
    """

    message = (
        "not judged: the grading machine was too busy to time your code fairly; "
        "the course staff will grade this check again (not your fault)"
    )

    def __init__(self, reason: str, details: str = ""):
        super().__init__(reason)
        self.reason, self.details = reason, details


def run_check(name: str, stage: str, reference: Executor, services: Services) -> CheckResult:
    """Run check `name` of `stage` against `services.student`; every ending becomes a result.

    Raises:
        GraderBug: the stage defines no check of that name.
    """
    chk = get_check(stage, name)
    if chk is None:
        raise GraderBug(
            f"the manifest of {stage} names check {name!r}, which no module of grader/checks/{stage}/ "
            f"registers (@check(task, {name!r}))"
        )
    session = services.student
    if session is None:
        raise GraderBug(f"check {stage}/{name} was run without a student session")
    limits = services.limits
    budget = [limits.check_timeout * chk.timeout_scale]
    started = time.monotonic()

    def run_child(programs: list[dict]) -> list:
        t0 = time.monotonic()
        try:
            return session.batch(programs, t0 + max(budget[0], 0.0))
        finally:
            budget[0] -= time.monotonic() - t0

    ctx = CheckContext(chk, run_child, reference, services)
    result = CheckResult(name=name, kind=chk.kind, status="passed", message="passed")
    try:
        try:
            session.ensure()
        except ChildStartFailed as exc:
            result.status, result.message, result.details = exc.status, exc.message, exc.details
            return result
        note = chk.fn(ctx)
        if isinstance(note, str) and note:
            result.message = note
        elif ctx.notes:
            result.message = f"note: {ctx.notes[0]}"
    except CheckFailed as exc:
        result.status, result.message, result.details = "failed", exc.message, exc.details
    except StudentError as exc:
        result.status, result.message = "error", exc.message_for(services.task)
        result.details = "\n".join(
            x for x in (exc.details, "Traceback (your code):\n" + exc.error.format()) if x
        )
        origin = raised_in(exc.error)
        if origin is not None:
            result.raised_in, result.raised_in_task = origin.function, origin.task or ""
        result.unfinished = exc.not_implemented
    except VerdictWithheld as exc:  # no points either way, and the staff is told (see the class)
        result.status, result.message, result.details = "error", exc.message, exc.details
        result.grader_error = f"{stage}/{name}: verdict withheld: {exc.reason}"
    except protocol.ChannelTimeout:
        session.discard()
        scaled = limits.check_timeout * chk.timeout_scale
        result.status, result.message = "timeout", f"no answer within {scaled:.0f} s (an infinite loop?)"
    except protocol.ChannelClosed:
        code = session.discard()
        result.status = "error"
        result.message = f"the grading process ended during this check ({exit_text(code)}): sys.exit(), os._exit() or a crash in your code?"
        result.details = session.outputs[-1] if session.outputs else ""
    except protocol.ProtocolError as exc:
        session.discard()
        result.status, result.message = "error", f"the grading process sent a malformed answer ({exc})"
    except ChildStartFailed as exc:  # a restart inside the check failed
        result.status, result.message, result.details = exc.status, exc.message, exc.details
    except Exception as exc:  # noqa: BLE001 - a bug in the check or the reference: grading failed
        session.discard()
        result.status, result.message = (
            "error",
            "internal grader error (not your fault; tell the course staff)",
        )
        result.grader_error = f"{stage}/{name}: {type(exc).__name__}: {exc}"
        result.details = ""
    finally:
        result.seconds = time.monotonic() - started
    return result


def grade_task(
    task: Task,
    stage: str,
    reference: Executor,
    session: Session,
    limits: Limits,
    problems: Sequence[Problem] = (),
    reference_child: Optional[ReferenceChild] = None,
    earlier: Sequence[TaskResult] = (),
    only: Optional[AbstractSet[str]] = None,
) -> TaskResult:
    """Run a task's checks in `session` (those named in `only`, when given); partial
    credit per check (`task_score`); stop after a timeout.

    `problems` are the submission's problems; those that concern the task are shown in
    its feedback. `earlier` are the rows of the stage's tasks graded before this one in
    the same tree (not with ``--isolate``): a failure that may come from one of them that
    fails says so (`explain_failures`).
    """
    started = time.monotonic()
    results: list[CheckResult] = []
    timed_out = False
    for name in task.checks:
        if only is not None and name not in only:
            continue
        if timed_out:
            results.append(
                CheckResult(name, "", "timeout", "skipped: an earlier check of this task timed out")
            )
            continue
        services = Services(limits=limits, task=task, student=session, reference_child=reference_child)
        res = run_check(name, stage, reference, services)
        results.append(res)
        timed_out = res.status == "timeout"
    score = task_score(task, results)
    explain_failures(task, results, earlier)
    status, message = _task_status(results)
    files = task_files(task) if problems else frozenset()
    mine = [p for p in problems if p.concerns(task.id, files)]
    return TaskResult(
        id=task.id,
        title=task.title,
        max_points=task.points,
        score=score,
        status=status,
        message=message,
        feedback=_feedback(task, results, mine),
        checks=results,
        seconds=time.monotonic() - started,
        messages=task_messages(results),
    )


def task_score(task: Task, results: Sequence[CheckResult]) -> float:
    """points × Σ weights of the passed checks / Σ weights of all checks (4 decimals)."""
    total = sum(task.weight(r.name) for r in results)
    passed = sum(task.weight(r.name) for r in results if r.status == "passed")
    return round(task.points * passed / total, 4) if total else 0.0


def task_files(task: Task) -> frozenset[str]:
    """The files (``minitorch/…``) of the reference holding the task's fences."""
    return frozenset(rel for rel, ids in _fence_ids(repo_root() / "minitorch") if ids & set(task.fences))


@lru_cache(maxsize=None)
def _fence_ids(package: Path) -> tuple[tuple[str, frozenset[str]], ...]:
    """(file, the fence ids in it) for each file of the reference `package` with fences; read
    once per process (the kit does not change while it grades)."""
    return tuple((rel, frozenset(f.task for f in fs)) for rel, fs in package_fences(package).items())


def explain_failures(task: Task, results: Sequence[CheckResult], earlier: Sequence[TaskResult] = ()) -> None:
    """Say, in the checks' messages, which failures come from another function.

    * A check stopped at a stub of its own task that another check reports (the check named
      after the function, else the first to reach it) says that it only reaches it
      (`reaches_stub`), instead of blaming the function it is named after.
    * A check whose code raised inside a function of another task says so: "depends on
      task 2.1, which fails: fix `…` first" when that task is among the `earlier` rows that
      failed, else where it was raised. (A stub of another task already says "depends on".)

    A wrong value carries no traceback, so nothing here guesses where it came from: grading
    the task alone shows it (`grader.grading.one_charge`).
    """
    stopped = [
        r
        for r in results
        if r.status != "passed" and r.unfinished and r.raised_in_task and belongs_to(r.raised_in_task, task)
    ]
    stopped_ids = {id(r) for r in stopped}
    # the check that reports each stub: the one named after its function, else the first
    reporter: dict[str, str] = {
        r.raised_in: r.name for r in stopped if r.name == r.raised_in.rsplit(".", 1)[-1]
    }
    for r in stopped:
        reporter.setdefault(r.raised_in, r.name)
        if reporter[r.raised_in] != r.name:
            r.message = reaches_stub(r.raised_in_task, r.raised_in)
    failing_ids = {t.id for t in earlier if t.kind == "task" and t.status != "passed" and t.id != task.id}
    for r in results:
        if r.status == "passed" or id(r) in stopped_ids:
            continue
        elsewhere = r.raised_in_task and not belongs_to(r.raised_in_task, task)
        if r.status == "error" and elsewhere and not r.unfinished:
            if r.raised_in_task in failing_ids:
                r.message = depends_on_broken(r.raised_in_task, r.raised_in, r.message)
            else:
                r.message = raised_in_other(r.raised_in_task, r.raised_in, r.message)


def task_messages(results: Sequence[CheckResult]) -> list[str]:
    """What fails, one line per message: "name: message" ("a, b: message" when checks share
    one); a single line without names when every failing check says the same."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.status != "passed":
            groups.setdefault(r.message, []).append(r.name)
    if len(groups) <= 1:
        return list(groups)
    return [f"{', '.join(names)}: {message}" for message, names in groups.items()]


def _task_status(checks: list[CheckResult]) -> tuple[str, str]:
    """The status and message of the first failing check; the message names the other
    failing checks whose message differs."""
    failing = [c for c in checks if c.status != "passed"]
    if not failing:
        return "passed", "all checks passed"
    first = failing[0]
    others = [c.name for c in failing[1:] if c.message != first.message]
    return first.status, first.message + (f" (also failing: {', '.join(others)})" if others else "")


def _worth(task: Task, results: list[CheckResult]) -> dict[str, str]:
    """ ", 2.5 of 40 points" per check when the weights differ ("" for equal weights)."""
    weights = {r.name: task.weight(r.name) for r in results}
    total = sum(weights.values())
    if len(set(weights.values())) <= 1 or not total:
        return {name: "" for name in weights}
    return {
        name: f", {round(task.points * w / total, 2):g} of {task.points:g} points"
        for name, w in weights.items()
    }


def _feedback(task: Task, results: list[CheckResult], problems: list[Problem]) -> str:
    """One line per check (✓/✗, kind, points, status, message), the details of each
    failure below it; a check that stopped at the same stub as one above shows only its
    call ("while running: …"), not the same traceback again."""
    lines = []
    shown: set[str] = set()
    stubs_shown: set[str] = set()
    worth = _worth(task, results)
    for r in results:
        mark = "✓" if r.status == "passed" else "✗"
        head = f"{mark} {r.name} ({r.kind or 'check'}{worth[r.name]}): {r.status}"
        lines.append(head + ("" if r.message == "passed" else f" — {r.message}"))
        if r.status == "passed" or not r.details:
            continue
        if r.details in shown:
            lines.append("    (details as above)")
        elif r.unfinished and r.raised_in in stubs_shown:
            lines.append("    " + r.details.splitlines()[0])
            lines.append(f"    (stopped at the stub of {r.raised_in}, as above)")
        else:
            lines.extend("    " + line for line in r.details.splitlines())
        shown.add(r.details)
        if r.unfinished and r.raised_in:
            stubs_shown.add(r.raised_in)
    if problems:
        lines.append("Problems with the submitted files:")
        lines.extend(f"  {p.message}" for p in problems)
    if any(r.status != "passed" for r in results) and task.hint:
        lines.append(f"Hint: {task.hint}")
    return "\n".join(lines)
