"""The gradebook of a batch: ``OUT/gradebook.csv``, one row per grading, appended as it ends.

    book = Gradebook(out / "gradebook.csv", task_columns=["1.1", "1.2", "nb:backprop.ipynb"])
    book.is_current("alice", sha256, grader_version())   # graded before, nothing changed?
    book.append(row)                                      # one line, flushed and fsynced

Columns, in order: ``student, status, reason``, the points of each task (and notebook
part) of the stage, ``total, max, seconds, sha256, grader_version, graded_at, source, change``.

* ``status``: ``graded`` (every task was graded, whatever the score), ``timeout`` (graded,
  but a task ran past its time limit: `reason` names it; a loaded machine can cause it),
  ``malformed`` (the submission could not be read: a bad zip, a zip bomb, a link out of
  the tree, no ``minitorch/``; its tasks score 0), ``grader-error`` (a check failed: the
  staff's problem, not the student's) and ``crashed`` (grading itself did not finish: the
  worker died or the sandbox could not start; no points are given).
* ``sha256`` is the hash of the submission (`grader.batch.submissions`), ``grader_version``
  the kit's version and a digest of the grader's and the reference's source
  (`grader_version`): changing a check or the reference changes it.
* ``change`` says why the row was written and what it changed against the student's
  previous row (`describe_change`): ``first grading``, ``new submission``, ``new grader``,
  ``regrade 1.2`` (``grader batch --regrade``) or ``graded again``, then every column whose
  value moved: ``regrade 1.2: 1.2 5 → 10; total 55 → 60``. The rows of one student, in
  order, are the history of their grade.

**Nothing is lost.** A row is one line written with one ``write``, then flushed and
``fsync``-ed, after the student's report files are in place; so a batch killed at any
moment leaves complete rows, each with its reports. A line cut short by the kill (no final
newline) is removed when the gradebook is opened again, and its submission regraded.

**Resuming.** The latest row of a student is their current grade. Running the same batch
again skips a student whose latest row has the same submission hash and grader version
(`is_current`), unless it ``crashed`` or is a ``grader-error`` (a check that failed on the
staff's side, or a speed verdict withheld because the machine was too busy to judge: worth
another try); anything else is graded again. A row is appended only
when it differs from the student's latest row in more than ``seconds`` and ``graded_at``:
the file is the history of each student's grade (a changed submission, a new grader), and
a batch interrupted and run again ends with the rows that one uninterrupted run writes.

**Cells are text, never formulas.** Student ids, sources and reasons come from the
students (folder and file names, link targets, exception messages). Each cell is one line
of plain text of at most `MAX_CELL` characters (`grader.core.safe_text.visible`: a control
character shows as its escape, a lone surrogate too) and a cell that a spreadsheet would read as a formula (``=`` ``+``
``-`` ``@`` first) is written with a ``'`` in front (`grader.core.safe_text.csv_cell`); reading
the file removes it again (`csv_value`), so a row read back equals the row appended.

`summarize` reads the current rows for the summary screen of `grader batch`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from grader.core.safe_text import csv_cell, csv_value, visible

__all__ = [
    "BATCH_STATUSES",
    "BINS",
    "FAILED_STATUSES",
    "Gradebook",
    "GradebookError",
    "Summary",
    "current_rows",
    "describe_change",
    "fmt_points",
    "grader_version",
    "summarize",
]

#: The statuses of a gradebook row (see the module docstring).
BATCH_STATUSES = ("graded", "timeout", "malformed", "grader-error", "crashed")
#: Those for which the submission has no real grade: the "failed" count of the progress bar.
FAILED_STATUSES = ("malformed", "grader-error", "crashed")

LEADING_COLUMNS = ["student", "status", "reason"]
TRAILING_COLUMNS = ["total", "max", "seconds", "sha256", "grader_version", "graded_at", "source", "change"]
#: Columns that differ between two gradings of the same submission by the same grader
#: (``change`` describes the row against the one before it: not part of the grade).
VOLATILE_COLUMNS = ("seconds", "graded_at", "change")


class GradebookError(ValueError):
    """The gradebook at OUT belongs to another stage (its columns differ)."""


def fmt_points(points: float) -> str:
    """Points as the gradebook writes them: at most 4 decimals, no trailing zeros."""
    return f"{round(points, 4):g}"


@lru_cache(maxsize=1)
def grader_version() -> str:
    """The kit's version and a digest of everything that decides a grade: the grader's
    source and data, the manifests, the reference ``minitorch/`` (``0.1.0+3f2a…``)."""
    from importlib.metadata import PackageNotFoundError, version

    from grader.core.manifest import repo_root

    try:
        kit = version("minitorch-kit")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout that is not installed
        kit = "0"
    root = repo_root()
    digest = hashlib.sha256()
    for folder, patterns in (
        ("grader", ("*.py", "*.toml", "*.json")),
        ("assignments", ("*.toml",)),
        ("minitorch", ("*.py",)),
    ):
        files = sorted(
            {
                p
                for pattern in patterns
                for p in (root / folder).rglob(pattern)
                if "__pycache__" not in p.parts
            }
        )
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return f"{kit}+{digest.hexdigest()[:12]}"


class Gradebook:
    """``OUT/gradebook.csv``: read when opened, then appended to row by row."""

    def __init__(self, path: Path | str, task_columns: Iterable[str]) -> None:
        """Open (or create) the gradebook whose task columns are `task_columns`.

        Raises:
            GradebookError: the file has other columns (another stage, another options).
        """
        self.path = Path(path)
        self.task_columns = list(task_columns)
        self.header = LEADING_COLUMNS + self.task_columns + TRAILING_COLUMNS
        self.rows: list[dict[str, str]] = []
        self.latest: dict[str, dict[str, str]] = {}
        self.appended: list[dict[str, str]] = []  # the rows this Gradebook object appended
        self.repaired = False  # a line cut short by a kill was removed when opening
        if self.path.exists() and self.path.stat().st_size > 0:
            self._read()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write_line(self.header, mode="wb")
            _fsync_folder(self.path.parent)

    def _read(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):  # the last row was cut short: drop it (it is regraded)
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(keep)
                f.flush()
                os.fsync(f.fileno())
            data = data[:keep]
            self.repaired = True
        reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
        header = next(reader, None)
        if header is None:  # only a cut-short header: start again
            self._write_line(self.header, mode="wb")
            return
        if header != self.header:
            raise GradebookError(
                f"{self.path} has the columns {', '.join(header)}; this batch writes "
                f"{', '.join(self.header)}: grade another stage into another folder (-o)"
            )
        header = [csv_value(v) for v in header]
        for values in reader:
            values = [csv_value(v) for v in values]
            if len(values) == len(self.header):
                row = dict(zip(self.header, values))
                self.rows.append(row)
                self.latest[row["student"]] = row

    def is_current(self, student: str, sha256: str, version: str) -> bool:
        """Whether the student's latest row grades this submission with this grader (and
        neither crashed nor ended in a grader error, such as a withheld speed verdict): such
        a student is skipped."""
        row = self.latest.get(_cell_text(student))
        return (
            row is not None
            and row["sha256"] == sha256
            and row["grader_version"] == version
            and row["status"] not in ("crashed", "grader-error")
        )

    def append(self, row: dict[str, str]) -> bool:
        """Append `row` (a value for every column but ``change``, which may hold the reason
        of a regrade) unless it equals the student's latest row but for the volatile
        columns; True when it was appended. ``change`` is filled in (`describe_change`).
        Its values are kept as the file holds them: one line of text each (`_cell_text`)."""
        missing = [c for c in self.header if c not in row and c != "change"]
        if missing:
            raise ValueError(f"gradebook row without {', '.join(missing)}")
        row = {column: _cell_text(value) for column, value in row.items()}
        before = self.latest.get(row["student"])
        if before is not None and _stable(before) == _stable(row):
            return False
        row = {**row, "change": describe_change(before, row, self.task_columns, row.get("change", ""))}
        self._write_line([row[c] for c in self.header], mode="ab")
        self.rows.append(row)
        self.latest[row["student"]] = row
        self.appended.append(row)
        return True

    def _write_line(self, values: list[str], mode: str) -> None:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerow([csv_cell(v) for v in values])
        with open(self.path, mode) as f:
            f.write(text.getvalue().encode("utf-8"))  # one write: a kill leaves a whole line or a cut one
            f.flush()
            os.fsync(f.fileno())


def describe_change(
    before: Optional[dict[str, str]], row: dict[str, str], task_columns: Iterable[str], why: str = ""
) -> str:
    """The ``change`` of `row` against the student's previous row `before`: why it was
    written (`why` when given, e.g. ``regrade 1.2``), then each grade column that moved.

    >>> describe_change({"1.1": "5", "total": "5", "status": "graded", "sha256": "a", "grader_version": "v1"},
    ...                 {"1.1": "10", "total": "10", "status": "graded", "sha256": "a", "grader_version": "v2"}, ["1.1"])
    'new grader: 1.1 5 → 10; total 5 → 10'
    """
    if before is None:
        return why or "first grading"
    if not why:
        why = (
            "new submission"
            if before["sha256"] != row["sha256"]
            else "new grader"
            if before["grader_version"] != row["grader_version"]
            else "graded again"
        )
    moved = [
        f"{column} {before.get(column) or '—'} → {row.get(column) or '—'}"
        for column in ["status", *task_columns, "total"]
        if before.get(column, "") != row.get(column, "")
    ]
    return f"{why}: {'; '.join(moved)}" if moved else why


#: The most characters of a cell (a reason, a source): the student's reports hold the rest.
#: Python's csv module reads no field over 131072 characters.
MAX_CELL = 1000


def _cell_text(value: object) -> str:
    """A value as a cell holds it: one line, every control character (and lone surrogate)
    shown as its escape, at most `MAX_CELL` characters. What `csv_value` reads back from
    the cell is exactly this."""
    text = visible(value, one_line=True)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _stable(row: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if k not in VOLATILE_COLUMNS}


def _fsync_folder(folder: Path) -> None:
    """Make a new file's name durable (its folder's entry), where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - a system without folder file descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- summary

#: Score bins of the histograms: a score's share of the task's points, in percent.
BINS = ("0", "1–49", "50–79", "80–99", "100")


def _bin(share: float) -> int:
    """The histogram bin of a score that is `share` (0..1) of the task's points."""
    if share <= 0.0:
        return 0
    if share >= 1.0:
        return 4
    return 1 if share < 0.5 else 2 if share < 0.8 else 3


@dataclass
class Summary:
    """What the end of a batch shows, from the students' current rows.

    Attributes:
        histograms: column (task id or "total") → count of students per `BINS` bin.
        means: column → mean points over the graded students.
        slowest: the rows of the slowest submissions, slowest first.
        failures: (status, reason) → the students, for every row not ``graded``.
        counts: status → number of students.
        maxima: column → its points (the `max_points` given).
    """

    histograms: dict[str, list[int]] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    slowest: list[dict[str, str]] = field(default_factory=list)
    failures: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    maxima: dict[str, float] = field(default_factory=dict)


def summarize(rows: Iterable[dict[str, str]], max_points: dict[str, float], slowest: int = 5) -> Summary:
    """The summary of `rows` (one per student); `max_points` maps each task column and
    "total" to its maximum. Rows without points (``crashed``) count only as failures."""
    rows = list(rows)
    summary = Summary(maxima=dict(max_points))
    for row in rows:
        summary.counts[row["status"]] = summary.counts.get(row["status"], 0) + 1
        if row["status"] != "graded":
            summary.failures.setdefault((row["status"], row["reason"]), []).append(row["student"])
    scored = [r for r in rows if r["total"] != ""]
    for column, top in max_points.items():
        counts = [0] * len(BINS)
        values = [float(r[column]) for r in scored if r.get(column, "") != ""]
        for value in values:
            counts[_bin(value / top if top else 1.0)] += 1
        summary.histograms[column] = counts
        summary.means[column] = sum(values) / len(values) if values else 0.0
    timed = [r for r in rows if r["seconds"] != ""]
    summary.slowest = sorted(timed, key=lambda r: -float(r["seconds"]))[:slowest]
    return summary


def current_rows(book: Gradebook, students: Optional[Iterable[str]] = None) -> list[dict[str, str]]:
    """The latest row of each student (of `students`, when given), by student id."""
    wanted = set(students) if students is not None else None
    return [row for sid, row in sorted(book.latest.items()) if wanted is None or sid in wanted]
