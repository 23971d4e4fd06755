"""How the parent of `grader batch` records one finished submission: its reports, then its row.

    outcome = outcome_of(future, job, grader_version())   # the worker's, or a ``crashed`` one
    record_or_crash(outcome, job, book, out, screen)      # OUT/STUDENT/*, then the gradebook row

Every failure of one student is that student's row, never the end of the batch: a worker
that died or raised, a worker of another grader version (no grade of another grader is
recorded, whenever that worker joined), reports that cannot be written. Only a gradebook
that cannot take a row ends the batch (the error is raised).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .worker import crashed_outcome
from .gradebook import FAILED_STATUSES, Gradebook, fmt_points

__all__ = ["outcome_of", "record_or_crash"]


def outcome_of(future: Any, job: dict[str, Any], version: str) -> dict[str, Any]:
    """The worker's outcome, or a ``crashed`` one: the worker died or the task failed, or
    the worker runs another grader (a kit installed after the start-of-batch check; a kit
    from before the per-job check grades anyway): no grade of another grader is recorded."""
    try:
        outcome = future.result()
    except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or the task failed
        return crashed_outcome(job, f"{type(exc).__name__}: {exc}")
    theirs = outcome.get("grader_version") if isinstance(outcome, dict) else None
    if theirs != version:
        where = outcome.get("worker", "?") if isinstance(outcome, dict) else "?"
        return crashed_outcome(job, f"worker {where} runs grader {theirs}, not {version}")
    return outcome


def record_or_crash(
    outcome: dict[str, Any], job: dict[str, Any], book: Gradebook, out: Path, screen: Any
) -> None:
    """`_record` the outcome; if that fails (a report that cannot be written, a bad
    outcome), the student gets a ``crashed`` row that says why, and the batch goes on. Only
    a gradebook that cannot take that row either ends the batch."""
    try:
        row = _record(outcome, book, out, seconds=outcome.get("seconds", 0.0))
    except Exception as exc:  # noqa: BLE001 - one student's failure is that student's row
        crashed = crashed_outcome(job, f"its reports could not be recorded: {type(exc).__name__}: {exc}")
        row = _record(
            crashed, book, out, seconds=outcome.get("seconds", 0.0) if isinstance(outcome, dict) else 0.0
        )
    screen.finished(row, failed=row["status"] in FAILED_STATUSES)


def _record(outcome: dict[str, Any], book: Gradebook, out: Path, seconds: float) -> dict[str, str]:
    """Write the student's reports (atomically), then append the row: in this order, so
    that a row always has its reports. Returns the row."""
    from grader.grading.report import write_atomic

    folder = Path(out) / outcome["student"]
    for name, text in outcome["files"].items():
        write_atomic(folder / name, text)
    reason = " ".join(str(outcome["reason"]).split())[:300]
    row = {
        "student": outcome["student"],
        "status": outcome["status"],
        "reason": reason,
        "total": "" if outcome["total"] is None else fmt_points(outcome["total"]),
        "max": "" if outcome["max"] is None else fmt_points(outcome["max"]),
        "seconds": f"{seconds:.1f}",
        "sha256": outcome["sha256"],
        "grader_version": outcome["grader_version"],
        "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": outcome["label"],
        "change": f"regrade {outcome['task']}" if outcome.get("task") else "",
    }
    for column in book.task_columns:
        points = outcome["points"].get(column)
        row[column] = "" if points is None else fmt_points(points)
    book.append(row)
    return row
