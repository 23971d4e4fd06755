"""The check runner: run one hidden check against a student's session, grade one task.

    result = run_check("central_difference", "a1", reference, Services(limits, task, session))
    row = grade_task(task, "a1", reference, session, limits, problems, reference_child)

`run_check` turns every way a check can end into a `CheckResult`: passed, failed (a wrong
answer: `CheckFailed`), error (the student's code raised, the child died, exited or sent
garbage), timeout (no answer within the check's budget; the child is killed), or an
internal grader error (a bug in a check or the reference: reported, never the student's
fault). `grade_task` runs a task's checks in order, shares the task's points among them by
their weights in the manifest (1 unless stated: partial credit), skips the rest after a
timeout, and writes the task's feedback with the submission's problems that concern it.

Verdicts are decided here and in the checks, in the parent, from the raw answers the
sandbox returns; nothing here writes files or reports.
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

from .. import protocol
from ..executor import Executor
from ..fences import package_fences
from ..manifest import Task, repo_root
from ..results import CheckResult, Problem, TaskResult
from ..sandbox import ChildStartFailed, Limits, ReferenceChild, Session, exit_text
from . import get_check
from .base import CheckContext, CheckFailed, GraderBug, Services, StudentError

__all__ = ["grade_task", "run_check", "task_files", "task_score"]


def run_check(name: str, stage: str, reference: Executor, services: Services) -> CheckResult:
    """Run check `name` of `stage` against `services.student`; every ending becomes a result.

    Raises:
        GraderBug: the stage defines no check of that name.
    """
    chk = get_check(stage, name)
    if chk is None:
        raise GraderBug(f"the manifest of {stage} names check {name!r}, which grader/checks/{stage}.py does not define")
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
    except CheckFailed as exc:
        result.status, result.message, result.details = "failed", exc.message, exc.details
    except StudentError as exc:
        result.status, result.message = "error", exc.message_for(services.task)
        result.details = "\n".join(x for x in (exc.details, "Traceback (your code):\n" + exc.error.format()) if x)
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
        result.status, result.message = "error", "internal grader error (not your fault; tell the course staff)"
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
) -> TaskResult:
    """Run a task's checks in `session`; partial credit per check (`task_score`); stop
    after a timeout.

    `problems` are the submission's problems; those that concern the task are shown in
    its feedback.
    """
    started = time.monotonic()
    results: list[CheckResult] = []
    timed_out = False
    for name in task.checks:
        if timed_out:
            results.append(CheckResult(name, "", "timeout", "skipped: an earlier check of this task timed out"))
            continue
        services = Services(limits=limits, task=task, student=session, reference_child=reference_child)
        res = run_check(name, stage, reference, services)
        results.append(res)
        timed_out = res.status == "timeout"
    score = task_score(task, results)
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
    )


def task_score(task: Task, results: Sequence[CheckResult]) -> float:
    """points × Σ weights of the passed checks / Σ weights of all checks (4 decimals)."""
    total = sum(task.weight(r.name) for r in results)
    passed = sum(task.weight(r.name) for r in results if r.status == "passed")
    return round(task.points * passed / total, 4) if total else 0.0


def task_files(task: Task) -> frozenset[str]:
    """The files (``minitorch/…``) of the reference holding the task's fences."""
    fences = package_fences(repo_root() / "minitorch")
    return frozenset(rel for rel, fs in fences.items() if any(f.task in task.fences for f in fs))


def _task_status(checks: list[CheckResult]) -> tuple[str, str]:
    for c in checks:
        if c.status != "passed":
            return c.status, c.message
    return "passed", "all checks passed"


def _worth(task: Task, results: list[CheckResult]) -> dict[str, str]:
    """", 2.5 of 40 points" per check when the weights differ ("" for equal weights)."""
    weights = {r.name: task.weight(r.name) for r in results}
    total = sum(weights.values())
    if len(set(weights.values())) <= 1 or not total:
        return {name: "" for name in weights}
    return {name: f", {round(task.points * w / total, 2):g} of {task.points:g} points" for name, w in weights.items()}


def _feedback(task: Task, results: list[CheckResult], problems: list[Problem]) -> str:
    lines = []
    shown: set[str] = set()
    worth = _worth(task, results)
    for r in results:
        mark = "✓" if r.status == "passed" else "✗"
        head = f"{mark} {r.name} ({r.kind or 'check'}{worth[r.name]}): {r.status}"
        lines.append(head + ("" if r.status == "passed" else f" — {r.message}"))
        if r.status != "passed" and r.details:
            if r.details in shown:
                lines.append("    (details as above)")
                continue
            shown.add(r.details)
            lines.extend("    " + line for line in r.details.splitlines())
    if problems:
        lines.append("Problems with the submitted files:")
        lines.extend(f"  {p.message}" for p in problems)
    if any(r.status != "passed" for r in results) and task.hint:
        lines.append(f"Hint: {task.hint}")
    return "\n".join(lines)
