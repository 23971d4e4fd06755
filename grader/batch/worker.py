"""The job of one submission on a Dask worker: unpack its bytes, grade, render the reports.

    outcome = grade_job(job)      # job: the zip's bytes and how to grade; outcome: a dict

`grader.batch.run` sends each submission to a worker as a *job*: a dict of plain values (the
zip's bytes, the stage, the `Limits` of ``grader run`` as a dict, the student id), so that
it pickles the same way to any machine. On the worker, `grade_job`

1. writes the bytes into a temporary folder of its own and opens the zip with
   `grader.trees.intake.open_submission`, as ``grader run`` opens an uploaded zip: unsafe paths,
   links and zip bombs are refused there (status ``malformed``, every task 0:
   `unreadable_result`, what ``grader run`` reports for such a zip);
2. runs `grader.grading.grade` on the unpacked folder, with the job's limits and sandbox:
   exactly the grading of ``grader run`` (a submission without ``minitorch/`` is graded,
   every task 0, and marked ``malformed``). A *regrade* job (``grader batch --regrade
   1.2``) names a `task` and carries the student's `previous` result (their grade.json):
   only that task is graded, and its row replaces the old one in the previous result
   (`merge_task`); the other tasks keep what they had;
3. renders the reports as text: results.json (Gradescope's schema) and junit.xml
   (`grader.grading.report`), feedback.md (`feedback_markdown`), and grade.json, the whole
   `GradeResult` (what a later regrade starts from);
4. returns the *outcome*: those texts, the `GradeResult` as a dict, the points of each
   task, the status and reason of the gradebook row (`grader.batch.gradebook`), the worker's
   grader version and the seconds it took. The temporary folder is deleted.

From ``grader batch`` the job also carries the parent's grader version (a worker of another
version refuses it) and a wall clock: `grade_job` then runs steps 1-4 in a child process
(`grader.batch.wall_clock`) and, past the clock, kills it with every jail it started (a
``timeout`` outcome, every task 0).

It writes nothing the parent reads: the parent writes the reports and the row
(`grader.batch.run`). A failure of grading itself (the sandbox cannot start, a bug) is an
outcome with status ``crashed``, never an exception.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .gradebook import fmt_points, grader_version
from grader.core.results import CheckResult, GradeResult, Problem, TaskResult
from grader.sandbox.session import Limits

__all__ = [
    "crashed_outcome",
    "feedback_markdown",
    "finished_outcome",
    "grade_from_dict",
    "grade_here",
    "grade_job",
    "merge_task",
    "overtime_result",
    "unreadable_result",
]


def grade_job(job: dict[str, Any]) -> dict[str, Any]:
    """Grade one packed submission; runs on a Dask worker (or anywhere: it only needs
    the kit). `job` holds the zip's bytes (`data`), `stage`, `limits` (a `Limits` as a
    dict), `notebooks`, `student`, `label`, `archive` (a file name for the zip) and `sha256`;
    a regrade job also `task` (a task id) and `previous` (a `GradeResult` as a dict).
    `grader batch` adds `grader_version` (the parent's: a worker of another version refuses
    the job, so no student is graded by another grader, whenever the worker joined) and
    `submission_timeout` (seconds: the grading runs in a child process under that wall
    clock, `grader.batch.wall_clock`, and a submission past it gets a ``timeout`` outcome).

    Never raises: a failure of grading itself is a ``crashed`` outcome with the reason.
    """
    started = time.monotonic()
    wanted, mine = job.get("grader_version"), grader_version()
    if wanted is not None and wanted != mine:
        outcome = crashed_outcome(job, f"worker {_worker_address()} runs grader {mine}, not {wanted}")
    elif job.get("submission_timeout"):
        outcome = _grade_on_the_clock(job, float(job["submission_timeout"]))
    else:
        outcome = grade_here(job)
    outcome["seconds"] = time.monotonic() - started
    return outcome


def _grade_on_the_clock(job: dict[str, Any], seconds: float) -> dict[str, Any]:
    """`grade_here(job)` in a child process that is killed, with every jail it started,
    after `seconds`: then a ``timeout`` outcome whose reports say so."""
    from .wall_clock import run_with_wall_clock

    scratch = Path(tempfile.mkdtemp(prefix="grader-batch-"))
    try:
        ran = run_with_wall_clock("grader.batch.worker:grade_here", job, seconds, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if ran.expired:
        reason = f"grading ran past the submission's time limit of {seconds:g} s (--submission-timeout)"
        return finished_outcome(job, overtime_result(job["stage"], job["label"], reason), "timeout", reason)
    if ran.value is None:
        return crashed_outcome(job, ran.failure)
    return {**ran.value, "worker": _worker_address()}  # graded in a child of this worker


def overtime_result(stage: str, label: str, reason: str) -> GradeResult:
    """The result of a submission stopped by its wall clock: every task ``timeout``, 0 points."""
    from grader.core.manifest import load_manifest

    manifest = load_manifest(stage)
    tasks = [
        TaskResult(t.id, t.title, t.points, 0.0, "timeout", f"not graded: {reason}") for t in manifest.tasks
    ]
    return GradeResult(stage=stage, title=manifest.title, submission=label, tasks=tasks, seconds=0.0)


def grade_here(job: dict[str, Any]) -> dict[str, Any]:
    """Grade `job` in this process (see `grade_job`); never raises."""
    from grader.grading.grade import grade
    from grader.trees.intake import SubmissionError, find_package, open_submission

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="grader-batch-"))
    try:
        archive = scratch / job["archive"]
        archive.write_bytes(job["data"])
        try:
            sub_dir = open_submission(archive, scratch / "unpacked")
        except SubmissionError as exc:
            reason = str(exc).replace(str(archive), job["archive"])  # no temporary path: the same every run
            outcome = finished_outcome(
                job,
                unreadable_result(job["stage"], job["label"], reason, notebooks=job["notebooks"]),
                "malformed",
                reason,
            )
        else:
            reason = (
                "" if find_package(sub_dir) else "no minitorch/ package (nor .py files) in the submission"
            )
            task = job.get("task")
            result = grade(
                sub_dir,
                job["stage"],
                task=task,
                limits=Limits(**job["limits"]),
                notebooks=job["notebooks"] and task is None,
            )
            result.submission = job["label"]
            if task is not None:
                result = merge_task(grade_from_dict(job["previous"]), result, task)
            outcome = finished_outcome(job, result, "malformed" if reason else "", reason)
            outcome["task"] = task  # the row says "regrade <task>"
    except Exception as exc:  # noqa: BLE001 - the sandbox could not start, a grader bug: a row says so
        outcome = crashed_outcome(job, f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    outcome["seconds"] = time.monotonic() - started
    return outcome


def unreadable_result(stage: str, label: str, reason: str, notebooks: bool = True) -> GradeResult:
    """The result of a submission that cannot be read: what `grader.grading.grade` returns
    for a zip that intake refuses (`refused_result`: every task and, unless `notebooks` is
    false, every notebook part an error scoring 0; the stage's full points as the maximum)."""
    from grader.grading.grade import refused_result

    return refused_result(stage, label, f"cannot read the submission: {reason}", notebooks=notebooks)


def finished_outcome(
    job: dict[str, Any], result: GradeResult, status: str = "", reason: str = ""
) -> dict[str, Any]:
    """What a finished grading sends back: the reports' texts, the result as a dict, and
    the status (``malformed`` when given, else ``grader-error``, ``timeout`` or ``graded``)."""
    import json

    from grader.grading.report import gradescope, junit
    from grader.core.safe_text import json_safe

    if not status:
        timed_out = [t.id for t in result.tasks if t.status == "timeout"]
        if result.grader_errors:
            status, reason = "grader-error", result.grader_errors[0]
        elif timed_out:
            status, reason = "timeout", f"ran past the time limit: {', '.join(timed_out)}"
        else:
            status = "graded"
    grade = json_safe(dataclasses.asdict(result))  # no lone surrogate: every text encodes as UTF-8
    files = {
        "results.json": json.dumps(gradescope(result), indent=2, ensure_ascii=False) + "\n",
        "junit.xml": junit(result).decode("utf-8"),
        "feedback.md": feedback_markdown(result),
        "grade.json": json.dumps(grade, indent=1, ensure_ascii=False) + "\n",
    }
    return {
        "student": job["student"],
        "label": job["label"],
        "sha256": job["sha256"],
        "status": status,
        "reason": json_safe(reason),
        "points": {t.id: t.score for t in result.tasks},
        "total": result.score,
        "max": result.max_score,
        "files": files,
        "grade": grade,
        "grader_version": grader_version(),
        "worker": _worker_address(),
    }


def grade_from_dict(data: dict[str, Any]) -> GradeResult:
    """The `GradeResult` that ``dataclasses.asdict`` (grade.json) made `data` from."""
    tasks = [TaskResult(**{**t, "checks": [CheckResult(**c) for c in t["checks"]]}) for t in data["tasks"]]
    problems = [Problem(**{**p, "tasks": tuple(p["tasks"])}) for p in data["problems"]]
    return GradeResult(**{**data, "tasks": tasks, "problems": problems})


def merge_task(previous: GradeResult, regraded: GradeResult, task_id: str) -> GradeResult:
    """`previous` with the row of task `task_id` taken from `regraded` (a grading of that
    task only): the grade after ``grader batch --regrade task_id``.

    The problems with the files are those of both gradings (the same submission: mostly the
    same); the grader errors are those of the merged rows' checks, plus any of the regrade
    that belongs to no check (then grading itself failed)."""
    new_row = next(t for t in regraded.tasks if t.id == task_id)
    tasks = [new_row if t.id == task_id else t for t in previous.tasks]
    if not any(
        t.id == task_id for t in previous.tasks
    ):  # a task the earlier grade lacked (a manifest changed)
        tasks.append(new_row)
    check_errors = [c.grader_error for t in tasks for c in t.checks if c.grader_error]
    regrade_check_errors = {c.grader_error for c in new_row.checks if c.grader_error}
    general = [e for e in regraded.grader_errors if e not in regrade_check_errors]
    problems = list(previous.problems) + [p for p in regraded.problems if p not in previous.problems]
    old_row = next((t for t in previous.tasks if t.id == task_id), None)
    seconds = previous.seconds - (old_row.seconds if old_row else 0.0) + new_row.seconds
    return dataclasses.replace(
        previous,
        tasks=tasks,
        problems=problems,
        grader_errors=check_errors + general,
        seconds=max(seconds, 0.0),
        isolation=regraded.isolation,
    )


def crashed_outcome(job: dict[str, Any], reason: str) -> dict[str, Any]:
    """A grading that did not finish: no points, no reports, a reason."""
    return {
        "student": job["student"],
        "label": job["label"],
        "sha256": job["sha256"],
        "status": "crashed",
        "reason": reason,
        "points": {},
        "total": None,
        "max": None,
        "files": {},
        "grade": None,
        "grader_version": grader_version(),
        "worker": _worker_address(),
        "seconds": 0.0,
    }


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # not on a Dask worker
        return "local"


def feedback_markdown(result: GradeResult) -> str:
    """feedback.md: the score, one line per task and the feedback of those that did not
    pass — the report ``grader run`` prints, as Markdown for the student.

    The student's text is data (`grader.core.safe_text`): table cells and list items are escaped
    (no HTML, link or ``|`` acts), feedback sits in a code block whose fence no line of it
    can close, and no control character or lone surrogate reaches the file."""
    from grader.core.safe_text import code_fence, markdown_cell, markdown_text, visible

    lines = [
        f"# {markdown_text(result.stage.upper())} · {markdown_text(result.title)}",
        "",
        f"**Score: {fmt_points(result.score)} / {fmt_points(result.max_score)}** ({markdown_text(result.submission)})",
        "",
        "| task | title | points | status | message |",
        "|---|---|---|---|---|",
    ]
    for row in result.tasks:
        name = row.id if row.kind == "task" else "notebook"
        lines.append(
            f"| {markdown_cell(name)} | {markdown_cell(row.title)} | {fmt_points(row.score)} / "
            f"{fmt_points(row.max_points)} | {markdown_cell(row.status)} | {markdown_cell(row.message)} |"
        )
    for row in result.tasks:
        if row.status != "passed" and row.feedback:
            body = visible(row.feedback.rstrip())
            fence = code_fence(body)
            lines += [
                "",
                f"## {markdown_text(row.id)}: {markdown_text(row.title)} ({markdown_text(row.status)})",
                "",
                f"{fence}text",
                body,
                fence,
            ]
    if result.problems:
        lines += ["", "## Problems with the submission", ""] + [
            f"- {markdown_text(p.message)}" for p in result.problems
        ]
    if result.grader_errors:
        lines += ["", "Grading failed for some checks (not your fault; the staff has been told)."]
    return "\n".join(lines) + "\n"
