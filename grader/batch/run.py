"""`grader batch`: grade a whole class, in parallel on Dask, into a resumable gradebook.

    grader batch SUBMISSIONS -a a1 -o OUT [--workers N | --scheduler tcp://HOST:8786]

Data flow, for each student:

1. **find** (parent): `grader.batch.submissions.find_submissions` lists the submissions of
   SUBMISSIONS (folders, zips, a Gradescope export, GitHub Classroom clones) with a student
   id each;
2. **plan** (parent): `pack` hashes each one; a student whose latest gradebook row has the
   same hash and grader version (and whose reports are there) is skipped
   (`grader.batch.gradebook`); a submission refused while packing (a link out of the tree, too
   large) gets its ``malformed`` row here, without a worker. With ``--regrade TASK`` (a
   check of TASK was fixed: the grader version changed), a student whose submission is
   the one graded before gets TASK graded again and keeps the rest of their grade (their
   ``grade.json`` travels with the job); a new or changed submission is graded in full;
3. **grade** (a Dask worker): the zip's *bytes* travel to a worker (never a path: the
   worker may be another machine), which runs `grader.batch.worker.grade_job`: it unpacks
   them into a temporary folder of its own with the intake of ``grader run`` (a bad zip
   or a zip bomb is ``malformed``), grades with `grader.grading.grade` under the same
   `Limits` and sandbox as ``grader run``, renders results.json, junit.xml and
   feedback.md, and sends back those texts, the GradeResult (as a dict) and the points;
4. **record** (parent, as each submission finishes, in any order): the three reports are
   written atomically into ``OUT/<student>/`` (`grader.grading.report.write_atomic`), *then* the
   row is appended to ``OUT/gradebook.csv`` (flushed and fsynced). A batch killed at any
   moment loses at most the submissions in flight; the same command run again resumes.

The engine is Dask distributed (`grader.batch.engine.Engine`): by default a `LocalCluster`
in this process, one single-threaded worker process per core (each grading starts its own
sandboxed child processes, so one grading per core keeps the cores busy without
oversubscribing them), reachable only with this batch's TLS certificate; ``--scheduler``
sends the work to a running cluster over TLS (or, said out loud, ``--insecure-scheduler``),
whose workers must have the same kit installed (checked at the start, and again by every job:
a worker of another version refuses it, and the parent records no grade from one). At most
two submissions per worker are in flight at a time, so the parent never holds the whole
class in memory. Student code must not reach the grader's loopback services: a tier without
a private network (``process``, or ``uid`` where namespaces are forbidden) is refused unless
``--allow-shared-network``.

Every per-student failure is a row, never the end of the batch: a submission that is
malformed, crashes its sandbox, times out (a check's budget, or the whole submission's wall
clock, ``--submission-timeout``: `default_submission_timeout`), kills its worker, or whose
reports cannot be written gets a row with a status and a reason (`grader.batch.gradebook`); the
batch goes on. Only losing every worker for ``--worker-grace`` seconds ends it (exit 2,
every finished row written). The screen
(`grader.batch.screen`) shows a progress bar (done / failed / left, ETA) and, at the end,
the summary: a score histogram per task, the slowest submissions, the failures by reason.
The command line, its arguments into `BatchOptions`, is `grader.batch.command`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from .submissions import Submission, find_submissions, pack, safe_student_id
from .screen import BatchScreen
from .engine import SHARED_NETWORK_FLAG, Engine, scheduler_security, shared_network_reason
from .record import outcome_of, record_or_crash
from .worker import finished_outcome, unreadable_result
from .gradebook import FAILED_STATUSES, Gradebook, current_rows, grader_version, summarize
from grader.sandbox.session import Limits

__all__ = [
    "BatchOptions",
    "Engine",
    "WorkersLost",
    "default_submission_timeout",
    "run_batch",
]

#: The report files of each student, under OUT/<student>/ (grade.json: the whole result, for --regrade).
REPORT_FILES = ("results.json", "junit.xml", "feedback.md", "grade.json")
#: Submissions in flight per worker thread.
IN_FLIGHT_PER_WORKER = 2
#: Seconds the parent waits for a result before it asks whether any worker is left.
POLL_S = 2.0
#: Seconds without a single worker after which the batch ends (a local worker that dies is
#: restarted by its nanny within seconds; a remote cluster may take longer).
WORKER_GRACE_S = 30.0


class WorkersLost(RuntimeError):
    """Every Dask worker is gone and none came back within the grace period."""


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
    tls_ca_file: Optional[str] = None  # --scheduler: the cluster's CA, the client's certificate and key
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    insecure_scheduler: bool = False  # --scheduler without authentication (a network only the grader reaches)
    allow_shared_network: bool = False  # grade in a tier whose student code shares the grader's network
    submission_timeout: Optional[float] = (
        None  # wall clock per submission (None: `default_submission_timeout`; 0: none)
    )
    worker_grace: float = WORKER_GRACE_S


def run_batch(
    submissions: Path | str, options: BatchOptions, console: Any = None, engine: Optional[Engine] = None
) -> int:
    """Grade every submission of `submissions` (see the module docstring); return the exit
    status: 0 done, 2 when a row is ``crashed`` or ``grader-error`` (or nothing could
    start), 130 when interrupted. `engine`: a started Engine to use (left open)."""
    from grader.core.manifest import load_manifest

    screen = BatchScreen(console, quiet=options.quiet)
    try:
        manifest = load_manifest(options.stage)
        security = _engine_security(options, screen)
        if options.submission_timeout is None:
            options = replace(
                options,
                submission_timeout=default_submission_timeout(
                    options.stage, options.limits, options.notebooks
                ),
            )
        found = find_submissions(submissions, options.strip_prefix)
        max_points = {t.id: t.points for t in manifest.tasks}
        if options.notebooks:
            max_points.update({f"nb:{n.name}": n.points for n in manifest.notebooks})
        book = Gradebook(Path(options.out) / "gradebook.csv", list(max_points))
        if options.regrade is not None and options.regrade not in {t.id for t in manifest.tasks}:
            raise ValueError(
                f"--regrade {options.regrade}: stage {options.stage} has the tasks "
                f"{', '.join(t.id for t in manifest.tasks)}"
            )
    except (
        ValueError,
        KeyError,
        OSError,
        RuntimeError,
    ) as exc:  # unknown stage, no jail, bad folder, another stage's gradebook
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
            outcome = finished_outcome(
                job,
                unreadable_result(options.stage, sub.label, packed.refusal, notebooks=options.notebooks),
                "malformed",
                packed.refusal,
            )
            record_or_crash(outcome, job, book, options.out, screen)
            refused += 1
        else:
            todo.append(sub)
            partial += _previous_grade(sub, packed.sha256, book, options) is not None
    skipped = len(found.submissions) - len(todo) - refused
    screen.note(
        f"{len(todo)} to grade"
        + (
            f" ({partial} task {options.regrade} only, {len(todo) - partial} in full: "
            f"new or changed submissions)"
            if options.regrade
            else ""
        )
        + f", {skipped} up to date (graded before: same submission, same grader)"
    )
    if todo:
        own_engine = engine is None
        engine = engine or Engine(options.scheduler, options.workers, security)
        try:
            if own_engine:
                screen.note(
                    f"starting Dask: {engine.start(options.limits.sandbox, options.allow_shared_network)}"
                )
            _grade_all(todo, options, engine, book, screen)
        except KeyboardInterrupt:
            screen.error(
                "interrupted: every finished submission is in the gradebook; run the same command again to resume"
            )
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
        screen.regraded(
            options.regrade,
            [
                (row, before.get(row["student"]))
                for row in book.appended
                if row["change"].startswith(f"regrade {options.regrade}")
            ],
        )
    return 2 if any(r["status"] in ("crashed", "grader-error") for r in rows) else 0


def _engine_security(options: BatchOptions, screen: Any) -> Any:
    """The Security to reach ``--scheduler`` with (`scheduler_security`); for the local
    cluster, the refusal of a tier whose student code would share the grader's network.

    Raises:
        ValueError: ``--scheduler`` without a security configuration or the explicit opt-out.
        RuntimeError: the tier has no private network and no ``--allow-shared-network``
            (or cannot run here: `grader.sandbox.tiers.SandboxUnavailable`).
    """
    if options.scheduler:
        security = scheduler_security(
            options.scheduler,
            options.tls_ca_file,
            options.tls_cert,
            options.tls_key,
            options.insecure_scheduler,
        )
        if security is None:
            screen.note(
                f"warning: --insecure-scheduler: {options.scheduler} takes unauthenticated connections; "
                "whoever can reach it can run code as the grader"
            )
        return security
    why = shared_network_reason(options.limits.sandbox)  # the local workers have this machine's jail
    if why and not options.allow_shared_network:
        raise RuntimeError(
            f"{why}; refusing to grade: grade where the jail has a private network (bubblewrap, or "
            f"root with util-linux unshare and setpriv), or pass {SHARED_NETWORK_FLAG} to grade anyway "
            "(the Dask cluster takes only TLS connections with this batch's certificate; any other "
            "service on this machine's loopback stays within the reach of student code)"
        )
    if why:
        screen.note(f"warning: {why}; grading anyway ({SHARED_NETWORK_FLAG})")
    return None


def default_submission_timeout(stage: str, limits: Limits, notebooks: bool) -> float:
    """The default wall clock of one submission: enough for a submission in which every task
    hangs once (a task stops at its first time-out, so: the longest check budget of each
    task), plus one child start and each notebook's budget twice (a notebook part that lost
    points is run again over the reference's tasks: `grader.grading.one_charge`). A submission slow on
    many checks is stopped there, not after the sum of every budget (22 minutes in A3)."""
    from grader.checks import get_check
    from grader.core.manifest import load_manifest

    manifest = load_manifest(stage)
    longest = [
        max(
            (limits.check_timeout * getattr(get_check(stage, c), "timeout_scale", 1.0) for c in t.checks),
            default=0.0,
        )
        for t in manifest.tasks
    ]
    return (
        limits.start_timeout
        + sum(longest)
        + (2 * limits.notebook_timeout * len(manifest.notebooks) if notebooks else 0.0)
    )


def _job(
    sub: Submission,
    sha256: str,
    data: bytes,
    options: BatchOptions,
    previous: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    archive = safe_student_id(
        sub.path.name if sub.path.name.lower().endswith(".zip") else f"{sub.path.name}.zip"
    )
    job = {
        "student": sub.student,
        "label": sub.label,
        "sha256": sha256,
        "data": data,
        "archive": archive,
        "stage": options.stage,
        "limits": dataclasses.asdict(options.limits),
        "notebooks": options.notebooks,
        "grader_version": grader_version(),
        "submission_timeout": options.submission_timeout,
    }
    if previous is not None:
        job.update(task=options.regrade, previous=previous)
    return job


def _previous_grade(
    sub: Submission, sha256: str, book: Gradebook, options: BatchOptions
) -> Optional[dict[str, Any]]:
    """With ``--regrade``: the student's grade.json, when their latest row graded this very
    submission (so only the regraded task can have changed); else None (graded in full)."""
    import json

    row = book.latest.get(sub.student)
    path = Path(options.out) / sub.student / "grade.json"
    if (
        not options.regrade
        or row is None
        or row["sha256"] != sha256
        or row["status"] in FAILED_STATUSES
        or not path.exists()
    ):
        return None
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable: grade in full
        return None
    return previous if previous.get("stage") == options.stage else None


def _grade_all(
    todo: list[Submission], options: BatchOptions, engine: Engine, book: Gradebook, screen: Any
) -> None:
    """Keep every worker busy (a few submissions in flight each), recording each
    submission as it finishes.

    Raises:
        WorkersLost: no worker for `options.worker_grace` seconds (the rest is cancelled).
    """
    window = max(1, engine.threads() * IN_FLIGHT_PER_WORKER)
    pending = list(reversed(todo))
    in_flight: dict[Any, dict[str, Any]] = {}  # future → its job, without the bytes
    version = grader_version()
    last_seen = time.monotonic()  # when a worker was last known to be there

    def submit_next() -> None:
        sub = pending.pop()
        packed = pack(sub)  # packed again: the parent holds the bytes of the submissions in flight only
        job = _job(
            sub,
            packed.sha256,
            packed.data or b"",
            options,
            _previous_grade(sub, packed.sha256, book, options),
        )
        in_flight[engine.submit(job)] = {k: v for k, v in job.items() if k != "data"}

    with screen.progress(len(todo)):
        for _ in range(min(window, len(pending))):
            submit_next()
        while in_flight:
            done = engine.wait_any(list(in_flight), POLL_S)
            if not done:
                if engine.alive_threads():
                    last_seen = time.monotonic()
                elif time.monotonic() - last_seen > options.worker_grace:
                    engine.cancel(list(in_flight))
                    raise WorkersLost(
                        f"every Dask worker is gone (none for {options.worker_grace:g} s): {len(in_flight) + len(pending)} "
                        "submissions not graded; every finished one is in the gradebook. Start workers (or check the "
                        "cluster) and run the same command again to resume"
                    )
                continue
            last_seen = time.monotonic()
            for future in done:
                job = in_flight.pop(future)
                outcome = outcome_of(future, job, version)
                future.release()
                record_or_crash(outcome, job, book, options.out, screen)
                if pending:
                    submit_next()
