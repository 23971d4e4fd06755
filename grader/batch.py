"""`grader batch`: grade a whole class, in parallel on Dask, into a resumable gradebook.

    grader batch SUBMISSIONS -a a1 -o OUT [--workers N | --scheduler tcp://HOST:8786]

Data flow, for each student:

1. **find** (parent): `grader.batch_intake.find_submissions` lists the submissions of
   SUBMISSIONS (folders, zips, a Gradescope export, GitHub Classroom clones) with a student
   id each;
2. **plan** (parent): `pack` hashes each one; a student whose latest gradebook row has the
   same hash and grader version (and whose reports are there) is skipped
   (`grader.gradebook`); a submission refused while packing (a link out of the tree, too
   large) gets its ``malformed`` row here, without a worker. With ``--regrade TASK`` (a
   check of TASK was fixed: the grader version changed), a student whose submission is
   the one graded before gets TASK graded again and keeps the rest of their grade (their
   ``grade.json`` travels with the job); a new or changed submission is graded in full;
3. **grade** (a Dask worker): the zip's *bytes* travel to a worker (never a path: the
   worker may be another machine), which runs `grader.batch_worker.grade_job`: it unpacks
   them into a temporary folder of its own with the intake of ``grader run`` (a bad zip
   or a zip bomb is ``malformed``), grades with `grader.grading.grade` under the same
   `Limits` and sandbox as ``grader run``, renders results.json, junit.xml and
   feedback.md, and sends back those texts, the GradeResult (as a dict) and the points;
4. **record** (parent, as each submission finishes, in any order): the three reports are
   written atomically into ``OUT/<student>/`` (`grader.report.write_atomic`), *then* the
   row is appended to ``OUT/gradebook.csv`` (flushed and fsynced). A batch killed at any
   moment loses at most the submissions in flight; the same command run again resumes.

The engine is Dask distributed (`Engine`): by default a `LocalCluster` in this process,
one single-threaded worker process per core (each grading starts its own sandboxed child
processes, so one grading per core keeps the cores busy without oversubscribing them);
``--scheduler`` sends the work to a running cluster, whose workers must have the same kit
installed (checked at the start: `grader_version` must match). At most two submissions per
worker are in flight at a time, so the parent never holds the whole class in memory.

A submission that is malformed, crashes its sandbox, times out or even kills its worker
gets a row with a status and a reason (`grader.gradebook`); the batch goes on. The screen
(`grader.batch_screen`) shows a progress bar (done / failed / left, ETA) and, at the end,
the summary: a score histogram per task, the slowest submissions, the failures by reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from .batch_intake import Submission, find_submissions, pack, safe_student_id
from .batch_screen import BatchScreen
from .batch_worker import crashed_outcome, finished_outcome, grade_job, unreadable_result
from .gradebook import FAILED_STATUSES, Gradebook, current_rows, fmt_points, grader_version, summarize
from .sandbox import Limits

__all__ = ["BatchOptions", "Engine", "add_parser", "main", "run_batch"]

#: The report files of each student, under OUT/<student>/ (grade.json: the whole result, for --regrade).
REPORT_FILES = ("results.json", "junit.xml", "feedback.md", "grade.json")
#: Submissions in flight per worker thread.
IN_FLIGHT_PER_WORKER = 2


# --------------------------------------------------------------------------- the engine


class Engine:
    """Dask distributed: a LocalCluster of `workers` single-threaded processes (default:
    one per core), or the running cluster at `scheduler`."""

    def __init__(self, scheduler: Optional[str] = None, workers: Optional[int] = None) -> None:
        self.scheduler, self.workers = scheduler, workers
        self.client: Any = None
        self.cluster: Any = None

    def start(self) -> str:
        """Start (or connect); check every worker's grader version; describe the engine.

        Raises:
            RuntimeError: a worker runs another version of the grader.
        """
        import logging

        from distributed import Client, LocalCluster

        if self.scheduler:
            self.client = Client(self.scheduler, timeout=60)
        else:
            self.cluster = LocalCluster(n_workers=self.workers or os.cpu_count() or 1, threads_per_worker=1,
                                        processes=True, dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        mine = grader_version()
        try:
            theirs = self.client.run(grader_version)
        except Exception as exc:  # noqa: BLE001 - e.g. a worker without the kit installed
            self.close()
            raise RuntimeError(f"the workers cannot run the grader ({type(exc).__name__}: {exc}); install the kit on them") from None
        wrong = {addr: v for addr, v in theirs.items() if v != mine}
        if wrong:
            self.close()
            listed = ", ".join(f"{a} has {v}" for a, v in sorted(wrong.items()))
            raise RuntimeError(f"the workers must run this grader ({mine}): {listed}; install the same kit on them")
        where = self.scheduler or "a local cluster"
        return f"{where}: {len(theirs)} workers, {self.threads()} threads"

    def threads(self) -> int:
        return sum(self.client.nthreads().values())

    def submit(self, job: dict[str, Any], worker: Optional[str] = None) -> Any:
        """A future of `grade_job(job)` (on `worker` when given)."""
        key = f"grade-{job['student']}-{uuid.uuid4().hex[:8]}"
        return self.client.submit(grade_job, job, key=key, pure=False, workers=[worker] if worker else None)

    def close(self) -> None:
        for part in (self.client, self.cluster):
            if part is not None:
                try:
                    part.close()
                except Exception:  # noqa: BLE001 - closing after an interrupt: best effort
                    pass
        self.client = self.cluster = None


# --------------------------------------------------------------------------- the parent


@dataclass
class BatchOptions:
    """How `run_batch` grades: the stage, OUT, the engine and the limits of ``grader run``."""

    stage: str
    out: Path
    scheduler: Optional[str] = None
    workers: Optional[int] = None
    limits: Limits = Limits()
    notebooks: bool = True
    strip_prefix: Optional[str] = None
    quiet: bool = False
    regrade: Optional[str] = None  # a task id: regrade that task only, for everyone not up to date


def run_batch(submissions: Path | str, options: BatchOptions, console: Any = None, engine: Optional[Engine] = None) -> int:
    """Grade every submission of `submissions` (see the module docstring); return the exit
    status: 0 done, 2 when a row is ``crashed`` or ``grader-error`` (or nothing could
    start), 130 when interrupted. `engine`: a started Engine to use (left open)."""
    from .jail import choose_tier
    from .manifest import load_manifest

    screen = BatchScreen(console, quiet=options.quiet)
    try:
        manifest = load_manifest(options.stage)
        if not options.scheduler:  # the local workers have this machine's jail: fail now, not once per student
            choose_tier(options.limits.sandbox)
        found = find_submissions(submissions, options.strip_prefix)
        max_points = {t.id: t.points for t in manifest.tasks}
        if options.notebooks:
            max_points.update({f"nb:{n.name}": n.points for n in manifest.notebooks})
        book = Gradebook(Path(options.out) / "gradebook.csv", list(max_points))
        if options.regrade is not None and options.regrade not in {t.id for t in manifest.tasks}:
            raise ValueError(f"--regrade {options.regrade}: stage {options.stage} has the tasks "
                             f"{', '.join(t.id for t in manifest.tasks)}")
    except (ValueError, KeyError, OSError, RuntimeError) as exc:  # unknown stage, no jail, bad folder, another stage's gradebook
        screen.error(f"grader batch: {exc}")
        return 2
    version = grader_version()
    screen.found(found, book)
    todo: list[Submission] = []
    refused = partial = 0
    before = {student: dict(row) for student, row in book.latest.items()}  # for the regrade's summary
    for sub in found.submissions:
        packed = pack(sub)
        reports = [Path(options.out) / sub.student / name for name in REPORT_FILES]
        if book.is_current(sub.student, packed.sha256, version) and all(p.exists() for p in reports):
            continue
        if packed.refusal:
            job = _job(sub, packed.sha256, b"", options)
            outcome = finished_outcome(job, unreadable_result(options.stage, sub.label, packed.refusal), "malformed", packed.refusal)
            _record(outcome, book, options.out, screen, seconds=0.0)
            refused += 1
        else:
            todo.append(sub)
            partial += _previous_grade(sub, packed.sha256, book, options) is not None
    skipped = len(found.submissions) - len(todo) - refused
    screen.note(f"{len(todo)} to grade" + (f" ({partial} task {options.regrade} only, {len(todo) - partial} in full: "
                                          f"new or changed submissions)" if options.regrade else "")
                + f", {skipped} up to date (graded before: same submission, same grader)")
    if todo:
        own_engine = engine is None
        engine = engine or Engine(options.scheduler, options.workers)
        try:
            if own_engine:
                screen.note(f"starting Dask: {engine.start()}")
            _grade_all(todo, options, engine, book, screen)
        except KeyboardInterrupt:
            screen.error("interrupted: every finished submission is in the gradebook; run the same command again to resume")
            return 130
        except (RuntimeError, OSError) as exc:
            screen.error(f"grader batch: {exc}")
            return 2
        finally:
            if own_engine:
                engine.close()
    rows = current_rows(book, [s.student for s in found.submissions])
    max_points["total"] = sum(max_points.values())
    screen.summary(summarize(rows, max_points), book.path, skipped)
    if options.regrade:
        screen.regraded(options.regrade, [(row, before.get(row["student"])) for row in book.appended
                                          if row["change"].startswith(f"regrade {options.regrade}")])
    return 2 if any(r["status"] in ("crashed", "grader-error") for r in rows) else 0


def _job(sub: Submission, sha256: str, data: bytes, options: BatchOptions,
         previous: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    archive = safe_student_id(sub.path.name if sub.path.name.lower().endswith(".zip") else f"{sub.path.name}.zip")
    job = {"student": sub.student, "label": sub.label, "sha256": sha256, "data": data, "archive": archive,
           "stage": options.stage, "limits": dataclasses.asdict(options.limits), "notebooks": options.notebooks}
    if previous is not None:
        job.update(task=options.regrade, previous=previous)
    return job


def _previous_grade(sub: Submission, sha256: str, book: Gradebook, options: BatchOptions) -> Optional[dict[str, Any]]:
    """With ``--regrade``: the student's grade.json, when their latest row graded this very
    submission (so only the regraded task can have changed); else None (graded in full)."""
    import json

    row = book.latest.get(sub.student)
    path = Path(options.out) / sub.student / "grade.json"
    if not options.regrade or row is None or row["sha256"] != sha256 or row["status"] in FAILED_STATUSES or not path.exists():
        return None
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable: grade in full
        return None
    return previous if previous.get("stage") == options.stage else None


def _grade_all(todo: list[Submission], options: BatchOptions, engine: Engine, book: Gradebook, screen: Any) -> None:
    """Keep every worker busy (a few submissions in flight each), recording each
    submission as it finishes."""
    from distributed import as_completed

    window = max(1, engine.threads() * IN_FLIGHT_PER_WORKER)
    pending = list(reversed(todo))
    in_flight: dict[Any, dict[str, Any]] = {}  # future → its job, without the bytes

    def submit_next() -> Any:
        sub = pending.pop()
        packed = pack(sub)  # packed again: the parent holds the bytes of the submissions in flight only
        job = _job(sub, packed.sha256, packed.data or b"", options, _previous_grade(sub, packed.sha256, book, options))
        future = engine.submit(job)
        in_flight[future] = {k: v for k, v in job.items() if k != "data"}
        return future

    with screen.progress(len(todo)):
        running = as_completed([submit_next() for _ in range(min(window, len(pending)))])
        for future in running:
            job = in_flight.pop(future)
            try:
                outcome = future.result()
            except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or the task failed
                outcome = crashed_outcome(job, f"{type(exc).__name__}: {exc}")
            future.release()
            _record(outcome, book, options.out, screen, seconds=outcome.get("seconds", 0.0))
            if pending:
                running.add(submit_next())


def _record(outcome: dict[str, Any], book: Gradebook, out: Path, screen: Any, seconds: float) -> None:
    """Write the student's reports (atomically), then append the row: in this order, so
    that a row always has its reports."""
    from .report import write_atomic

    folder = Path(out) / outcome["student"]
    for name, text in outcome["files"].items():
        write_atomic(folder / name, text)
    reason = " ".join(str(outcome["reason"]).split())[:300]
    row = {"student": outcome["student"], "status": outcome["status"], "reason": reason,
           "total": "" if outcome["total"] is None else fmt_points(outcome["total"]),
           "max": "" if outcome["max"] is None else fmt_points(outcome["max"]),
           "seconds": f"{seconds:.1f}", "sha256": outcome["sha256"], "grader_version": outcome["grader_version"],
           "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "source": outcome["label"],
           "change": f"regrade {outcome['task']}" if outcome.get("task") else ""}
    for column in book.task_columns:
        points = outcome["points"].get(column)
        row[column] = "" if points is None else fmt_points(points)
    book.append(row)
    screen.finished(row, failed=row["status"] in FAILED_STATUSES)


# --------------------------------------------------------------------------- command line

BATCH_HELP = """\
Grade every submission in SUBMISSIONS for one stage, exactly as `grader run` grades one,
in parallel on Dask. SUBMISSIONS holds one folder or zip per student (the name is the
student id), a Gradescope "export submissions" folder (ids from submission_metadata.yml)
or GitHub Classroom clones named ASSIGNMENT-USER (the id is USER).

Each finished submission writes OUT/STUDENT/results.json, junit.xml, feedback.md and
grade.json, then appends its row to OUT/gradebook.csv. Run the same command again after an
interruption: submissions already graded (same hash, same grader version) are skipped,
changed ones are regraded, and the gradebook keeps every earlier row as history (its
`change` column says what each row changed).

After fixing a check of one task, `--regrade TASK` grades that task again for every
student whose row comes from another grader version, keeping the rest of their grade.
"""


def add_parser(subparsers: Any) -> None:
    """Register ``grader batch`` (its arguments and handler) on `subparsers`."""
    p = subparsers.add_parser("batch", help="grade a whole class into a resumable gradebook", description=BATCH_HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", help="folder of submissions: one folder or zip per student")
    p.add_argument("-a", "--assignment", required=True, help="stage id: a0, a1, …")
    p.add_argument("-o", "--out", required=True, help="output folder: OUT/gradebook.csv and OUT/STUDENT/ reports")
    engine = p.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=int, metavar="N", help="local cluster: N worker processes (default: one per core)")
    engine.add_argument("--scheduler", metavar="ADDRESS", help="use the running Dask cluster at ADDRESS (tcp://HOST:8786)")
    p.add_argument("--strip-prefix", metavar="PREFIX",
                   help="GitHub Classroom: the repositories' ASSIGNMENT- prefix (default: the one all clones share)")
    p.add_argument("--timeout", type=float, metavar="S", help="wall-clock seconds per check (default 60)")
    p.add_argument("--memory", type=int, metavar="MIB", help="address-space limit of each child in MiB (default 4096)")
    p.add_argument("--nproc", type=int, metavar="N", help="processes + threads each jail may hold (default 2048)")
    p.add_argument("--no-notebooks", action="store_true", help="skip the stage's notebooks")
    p.add_argument("--regrade", metavar="TASK",
                   help="after fixing a check of TASK: regrade only TASK for every student not up to date "
                        "(same submission); new or changed submissions are graded in full")
    p.add_argument("--sandbox", choices=("auto", "require", "bwrap", "uid", "process"), default="auto",
                   help="isolation of student code, as for grader run")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per submission, only the bar and the summary")
    p.set_defaults(func=_batch)


def _batch(args: argparse.Namespace) -> int:
    try:
        import distributed  # noqa: F401 - the engine
    except ImportError:
        print('grader batch: Dask is not installed; install it with: pip install "dask[distributed]"', file=sys.stderr)
        return 2
    limits = Limits(sandbox=args.sandbox)
    for field_name, value in (("check_timeout", args.timeout), ("mem_mb", args.memory), ("nproc", args.nproc)):
        if value is not None:
            limits = replace(limits, **{field_name: value})
    options = BatchOptions(stage=args.assignment, out=Path(args.out), scheduler=args.scheduler, workers=args.workers,
                           limits=limits, notebooks=not args.no_notebooks, strip_prefix=args.strip_prefix, quiet=args.quiet,
                           regrade=args.regrade)
    return run_batch(Path(args.submissions), options)


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m grader.batch …``: the same command as ``grader batch …``."""
    parser = argparse.ArgumentParser(prog="grader")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["batch", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
