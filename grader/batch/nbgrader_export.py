"""`grader nbgrader-export`: a batch's grades into nbgrader's gradebook, one gradebook per course.

    grader nbgrader-export OUT -a a1 [--db gradebook.db] [--nbgrader-assignment a1] [--course ID]

OUT is the output folder of ``grader batch -a a1 -o OUT``: the latest row of each student
in ``OUT/gradebook.csv`` is their grade; ``OUT/STUDENT/grade.json`` gives the notebook
cells. The scores go into nbgrader's database through nbgrader's own API
(`nbgrader.api.Gradebook`), mapped so:

* the stage is one nbgrader **assignment**, named by its id (``a1``: the folder of
  ``solutions/a1``, nbgrader's ``source/a1``; ``--nbgrader-assignment`` names another);
* each notebook part of the stage is the **notebook** of its file's stem (``backprop``) and
  its autograded test cells are its **grade cells** (grade id, points): the cells
  ``nbgrader generate_assignment`` records and ``nbgrader autograde`` fills. When the
  database lacks the notebook, nbgrader's own ``SaveCells`` records it from the kit's
  source, as ``generate_assignment`` would; when it has it, its grade cells must be the
  source's (same ids, same points), or nothing is written. Each cell scores its points
  when the kit's grading passed it, 0 otherwise (nbgrader's all-or-nothing rule);
* the library tasks (code in ``minitorch/``) are a synthetic notebook ``library`` with one
  code grade cell per task, ``task_1_1`` for task 1.1 (nbgrader's grade ids allow letters,
  digits, ``_`` and ``-`` only), worth the task's points and scoring its column of the row;
* each student is a **student** with a **submission** of the assignment; every score is a
  grade's ``auto_score``. A ``manual_score`` given in formgrader is kept (it outranks the
  auto score in nbgrader) and marks the grade for review, as ``nbgrader autograde`` does.

Run again, it updates the scores that changed, nothing else; other assignments, students and
submissions are never touched. Rows without a grade (``crashed``, ``grader-error``) and
students whose files disagree are skipped and named (exit status 1); an input that cannot be
read or a conflicting notebook is an `ExportError` before any grade is written (exit 2).

nbgrader's order: run ``nbgrader generate_assignment`` before the first export (once an
assignment has submissions it refuses to change its notebooks, and ``library`` is not in
``source/``), and export again after any ``nbgrader autograde`` of the assignment, which
scores 0 every notebook a student did not submit, ``library`` included.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import shutil
import sqlite3
import sys
import warnings
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CalledProcessError
from typing import Any, Optional

from .submissions import safe_student_id
from .gradebook import LEADING_COLUMNS, TRAILING_COLUMNS, fmt_points
from grader.core.manifest import Manifest, load_manifest, repo_root, stage_arg
from grader.core.safe_text import csv_value, visible

__all__ = ["LIBRARY_NOTEBOOK", "Export", "ExportError", "add_parser", "export_batch", "library_cell"]

#: The synthetic notebook of the library tasks.
LIBRARY_NOTEBOOK = "library"
#: Statuses whose row is a grade (`grader.batch.gradebook`); the others have none to export.
GRADED_STATUSES = ("graded", "timeout", "malformed")
#: nbgrader's student ids and assignment names are ``String(128)``.
MAX_NAME = 128
#: The largest grade.json read (one student's whole result).
MAX_GRADE_JSON = 32 * 1024 * 1024


class ExportError(ValueError):
    """An input cannot be exported, or the database conflicts: no grade was written."""


class _Skip(Exception):
    """One student cannot be exported: the reason."""


@dataclass
class Export:
    """What `export_batch` did: the students written and those skipped (id → why)."""

    db: str
    assignment: str
    notebooks: dict[str, int] = field(default_factory=dict)  # notebook → its grade cells
    exported: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    ignored_lines: int = 0  # gradebook.csv lines with the wrong number of cells
    created: bool = False  # the database file was made here


def library_cell(task_id: str) -> str:
    """The grade id of a task's cell in the ``library`` notebook: "1.1" → "task_1_1"."""
    return "task_" + re.sub(r"[^A-Za-z0-9_-]", "_", task_id)


def export_batch(
    out: Path | str,
    stage: str,
    db: str = "gradebook.db",
    *,
    assignment: Optional[str] = None,
    course: str = "default_course",
) -> Export:
    """Write the grades of the batch in `out` (stage `stage`) into the nbgrader database `db`
    (a file, or a database URL). See the module docstring.

    Raises:
        ExportError: an input is missing or corrupt, or the database conflicts: no grade was
            written (a database failing midway keeps the students before: run it again).
    """
    from grader.notebooks.parts import notebook_points

    manifest = load_manifest(stage)
    name = stage if assignment is None else assignment
    if not name or len(name) > MAX_NAME:
        raise ExportError(f"an nbgrader assignment name has 1 to {MAX_NAME} characters, not {len(name)}")
    cells = {LIBRARY_NOTEBOOK: {library_cell(t.id): float(t.points) for t in manifest.tasks}}
    for part in manifest.notebooks:  # (a stage's notebook called library.ipynb would be the kit's fault)
        cells[part.name.rsplit(".", 1)[0]] = notebook_points(repo_root() / "solutions" / part.path)
    rows, with_notebooks, ignored = _read_gradebook(Path(out), manifest)
    report = Export(
        db=db, assignment=name, notebooks={k: len(v) for k, v in cells.items()}, ignored_lines=ignored
    )
    plan: dict[str, dict[str, dict[str, float]]] = {}
    for student, row in sorted(rows.items()):
        try:
            plan[student] = _scores(Path(out), student, row, manifest, cells, with_notebooks)
        except _Skip as why:
            report.skipped[student] = str(why)
    url, report.created = _database(db)
    from nbgrader.api import Gradebook, InvalidEntry, MissingEntry
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with Gradebook(url, course_id=course) as gb:
            _prepare(gb, name, course, manifest, cells, url)
            for student, scores in plan.items():
                _write_student(gb, name, student, scores)
                report.exported.append(student)
    except (SQLAlchemyError, InvalidEntry, MissingEntry) as exc:
        raise ExportError(
            f"{db}: the nbgrader database refused the export after {len(report.exported)} students "
            f"(run it again): {type(exc).__name__}: {exc}"
        ) from exc
    except (OSError, CalledProcessError) as exc:  # nbgrader runs `alembic heads` to set up a new database
        if report.created:
            Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)  # half made: not a gradebook
        raise ExportError(
            f"{db}: nbgrader failed: {exc}"
            + (" (a new database runs nbgrader's `alembic`: is it on PATH?)" if report.created else "")
        ) from exc
    return report


# --------------------------------------------------------------------------- reading the batch


def _read_gradebook(out: Path, manifest: Manifest) -> tuple[dict[str, dict[str, str]], bool, int]:
    """The latest row of each student in OUT/gradebook.csv (read only), whether it has the
    notebook columns (not after ``--no-notebooks``), and the lines of a wrong length."""
    if not out.is_dir():
        raise ExportError(f"{out} is not a folder: give the output folder of grader batch (its -o OUT)")
    path = out / "gradebook.csv"
    try:
        data = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ExportError(f"{path} does not exist: is {out} the output folder of grader batch?") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"{path} cannot be read: {exc}") from exc
    if not data.endswith("\n"):  # a row cut short by a kill: grader batch drops it too, and regrades
        data = data[: data.rfind("\n") + 1]
    tasks = [t.id for t in manifest.tasks]
    parts = [f"nb:{p.name}" for p in manifest.notebooks]
    try:
        lines = list(csv.reader(io.StringIO(data, newline="")))
    except csv.Error as exc:
        raise ExportError(f"{path} is not a gradebook: {exc}") from exc
    header = [csv_value(v) for v in lines[0]] if lines else []
    with_notebooks = header == LEADING_COLUMNS + tasks + parts + TRAILING_COLUMNS
    if (
        not with_notebooks and header != LEADING_COLUMNS + tasks + TRAILING_COLUMNS
    ):  # --no-notebooks: no nb: columns
        raise ExportError(
            f"{path} has the columns {visible(', '.join(header), one_line=True)[:300] or '(none)'}; a gradebook "
            f"of {manifest.id} has {', '.join(LEADING_COLUMNS + tasks + parts + TRAILING_COLUMNS)}"
        )
    latest = {
        csv_value(v[0]): dict(zip(header, map(csv_value, v))) for v in lines[1:] if len(v) == len(header)
    }
    return latest, with_notebooks, sum(len(v) != len(header) for v in lines[1:])


def _points(text: str, top: float, what: str) -> float:
    if (
        text == ""
    ):  # a part not graded (a submission stopped by its wall clock): 0, as nbgrader scores a missing notebook
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise _Skip(f"{what} is {visible(text, one_line=True)[:40]!r} in gradebook.csv, not points") from None
    if not math.isfinite(value) or not -1e-9 <= value <= top + 1e-9:
        raise _Skip(f"{what} is {text} in gradebook.csv, outside 0..{top:g}")
    return value


def _scores(
    out: Path,
    student: str,
    row: dict[str, str],
    manifest: Manifest,
    cells: dict[str, dict[str, float]],
    with_notebooks: bool,
) -> dict[str, dict[str, float]]:
    """Notebook → grade cell → score of one student, or `_Skip` with the reason."""
    if safe_student_id(student) != student or len(student) > MAX_NAME:
        raise _Skip(f"not a student id of grader batch (letters, digits and ._@+-, at most {MAX_NAME})")
    if row["status"] not in GRADED_STATUSES:
        raise _Skip(
            f"no grade in gradebook.csv ({row['status']}: {row['reason'][:200]}): grade it again with grader batch"
        )
    scores = {
        LIBRARY_NOTEBOOK: {
            library_cell(t.id): _points(row[t.id], t.points, f"task {t.id}") for t in manifest.tasks
        }
    }
    if not with_notebooks:
        return scores
    grade: Any = None
    for part in manifest.notebooks:
        stem, column = part.name.rsplit(".", 1)[0], f"nb:{part.name}"
        value = _points(row[column], part.points, column)
        if grade is None:
            grade = _grade_json(out / student / "grade.json")
        scores[stem] = _cell_scores(grade, column, row[column], value, part.points, cells[stem])
    return scores


def _grade_json(path: Path) -> Any:
    """The student's grade.json, {} when there is none."""
    try:
        if path.stat().st_size > MAX_GRADE_JSON:
            raise _Skip(f"{path.parent.name}/grade.json is over {MAX_GRADE_JSON >> 20} MiB")
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise _Skip(f"{path.parent.name}/grade.json cannot be read: {type(exc).__name__}") from None


def _cell_scores(
    grade: Any, column: str, text: str, value: float, points: float, cells: dict[str, float]
) -> dict[str, float]:
    """The grade cells' scores of notebook part `column`, whose row says `value` points:
    from the part's cell checks in grade.json (which must give the row's points), or, where
    grade.json has none (a notebook never run), all 0 or all full when the row says so."""
    from grader.notebooks.grading import NOTEBOOK_CELL

    tasks = grade.get("tasks") if isinstance(grade, dict) else None
    part = (
        next((t for t in tasks if isinstance(t, dict) and t.get("id") == column), None)
        if isinstance(tasks, list)
        else None
    )
    checks = part.get("checks") if isinstance(part, dict) else None
    verdicts = (
        {
            c["name"]: c.get("status")
            for c in checks
            if isinstance(c, dict) and c.get("kind") == NOTEBOOK_CELL and isinstance(c.get("name"), str)
        }
        if isinstance(checks, list)
        else {}
    )
    if verdicts:
        if set(verdicts) != set(cells):
            raise _Skip(
                f"grade.json grades the cells {visible(', '.join(sorted(verdicts)), one_line=True)[:200]} of {column}, "
                f"not the source's {', '.join(cells)}"
            )
        scores = {cell: top if verdicts[cell] == "passed" else 0.0 for cell, top in cells.items()}
        total = sum(cells.values())
        earned = round(points * sum(scores.values()) / total, 4) if total > 0 else 0.0
        score = part.get("score")
        if (
            not isinstance(score, (int, float))
            or fmt_points(score) != text
            or fmt_points(earned) != fmt_points(value)
        ):
            raise _Skip(
                f"grade.json does not agree with gradebook.csv on {column} (a report of another grading)"
            )
        return scores
    if value <= 0:
        return {cell: 0.0 for cell in cells}
    if abs(value - points) <= 1e-4:
        return dict(cells)
    raise _Skip(
        f"grade.json has no cell grades of {column} (an older grader): grade it again with grader batch"
    )


# --------------------------------------------------------------------------- writing the database


def _database(db: str) -> tuple[str, bool]:
    """nbgrader's URL of `db` (a file or a URL), and whether the file is new. An existing
    file must be an nbgrader gradebook whose tables have every column this nbgrader uses
    (read here: nbgrader's own check of its schema version runs alembic in a subprocess)."""
    if "://" in db:
        return db, False
    path = Path(db).expanduser().resolve()
    if path.is_dir() or not path.parent.is_dir():
        raise ExportError(f"{db}: not a database file in an existing folder")
    if not path.exists() or path.stat().st_size == 0:
        if (
            shutil.which("alembic") is None
        ):  # nbgrader sets a new one up with its `alembic`, beside this Python
            os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return f"sqlite:///{path}", True
    from nbgrader.api import Base

    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"alembic_version", "assignment", "student", "grade"} <= tables:
                raise ExportError(f"{db} is an SQLite database but not an nbgrader gradebook")
            lacking = [
                f"{t.name}.{c.name}"
                for t in Base.metadata.sorted_tables
                if t.name in tables
                for have in [{r[1] for r in con.execute(f'PRAGMA table_info("{t.name}")')}]
                for c in t.columns
                if c.name not in have
            ]
    except sqlite3.Error as exc:
        raise ExportError(f"{db} is not an nbgrader gradebook: {exc}") from exc
    if lacking:
        raise ExportError(
            f"{db} was made by an older nbgrader (no {', '.join(lacking[:5])}): "
            f"bring it up to date with nbgrader db upgrade"
        )
    return f"sqlite:///{path}", False


def _prepare(
    gb: Any, name: str, course: str, manifest: Manifest, cells: dict[str, dict[str, float]], url: str
) -> None:
    """The assignment, its notebooks and grade cells: checked first, then made where missing."""
    from nbgrader.api import MissingEntry

    try:
        found = gb.find_assignment(name)
    except MissingEntry:
        found = None
    if found is not None and found.course_id != course:
        raise ExportError(
            f"the nbgrader assignment {name} belongs to the course {found.course_id}, not {course} (--course)"
        )
    missing = []
    for notebook, wanted in cells.items():
        try:
            have = (
                {c.name: c.max_score for c in gb.find_notebook(notebook, name).grade_cells} if found else None
            )
        except MissingEntry:
            have = None
        if have is None:
            missing.append(notebook)
        elif notebook != LIBRARY_NOTEBOOK and any(have.get(c) != top for c, top in wanted.items()):
            differ = [
                f"{c} ({have[c]:g} points there)" if c in have else f"{c} (absent)"
                for c, top in wanted.items()
                if have.get(c) != top
            ]
            raise ExportError(
                f"the nbgrader notebook {name}/{notebook} has other grade cells than the kit's source "
                f"({'; '.join(differ)}): it was generated from another version of the notebook"
            )
    if found is None:
        gb.add_assignment(name, course_id=course)
    gb.db.commit()  # no transaction of ours open while SaveCells writes
    parts = {p.name.rsplit(".", 1)[0]: p for p in manifest.notebooks}
    for notebook in missing:
        if notebook == LIBRARY_NOTEBOOK:
            gb.add_notebook(notebook, name)
        else:
            _save_cells(repo_root() / "solutions" / parts[notebook].path, notebook, name, url)
    for cell, top in cells[
        LIBRARY_NOTEBOOK
    ].items():  # the kit's own notebook: its points follow the manifest
        gb.update_or_create_grade_cell(cell, LIBRARY_NOTEBOOK, name, max_score=top, cell_type="code")
    gb.db.expire_all()


def _save_cells(source: Path, notebook: str, assignment: str, url: str) -> None:
    """Record `source`'s cells as ``nbgrader generate_assignment`` does: its preprocessors up
    to SaveCells, which writes the notebook, grade, solution and source cells."""
    import nbformat
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
        SaveCells,
    )

    nb = nbformat.read(str(source), as_version=4)
    resources = {
        "nbgrader": {"assignment": assignment, "notebook": notebook, "db_url": url},
        "metadata": {"path": str(source.parent)},
    }
    for step in (
        LockCells(),
        ClearSolutions(),
        ClearOutput(),
        CheckCellMetadata(),
        ComputeChecksums(),
        SaveCells(),
    ):
        nb, resources = step.preprocess(nb, resources)


def _write_student(gb: Any, assignment: str, student: str, scores: dict[str, dict[str, float]]) -> None:
    """The student's grades: their submission made where missing (as nbgrader makes it,
    every notebook and cell of the assignment), each grade's auto_score set."""
    from nbgrader.api import Comment, Grade, MissingEntry, SubmittedNotebook
    from sqlalchemy.exc import SAWarning

    gb.update_or_create_student(student)
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        with warnings.catch_warnings():  # SQLAlchemy 2 on nbgrader's way of building a submission: harmless
            warnings.filterwarnings("ignore", message=".*not in session", category=SAWarning)
            submission = gb.add_submission(assignment, student)
    with gb.db.no_autoflush:
        for notebook, cells in scores.items():
            mine = next((n for n in submission.notebooks if n.notebook.name == notebook), None)
            if mine is None:  # a notebook added to the assignment after the submission was made
                source = gb.find_notebook(notebook, assignment)
                mine = SubmittedNotebook(notebook=source, assignment=submission)
                gb.db.add_all(
                    [mine]
                    + [
                        Comment(cell_id=c.id, notebook=mine)
                        for c in source.solution_cells + source.task_cells
                    ]
                    + [Grade(cell_id=c.id, notebook=mine) for c in source.grade_cells + source.task_cells]
                )
            grades = {g.cell_id: g for g in mine.grades}
            for cell in mine.notebook.grade_cells:
                if cell.name not in cells:
                    continue
                grade = grades.get(cell.id)
                if grade is None:  # a cell added to the notebook after the submission was made
                    grade = Grade(cell_id=cell.id, notebook=mine)
                    gb.db.add(grade)
                grade.auto_score = cells[cell.name]
                grade.needs_manual_grade = (
                    grade.manual_score is not None
                )  # a grader's score stands, for review
    gb.db.commit()


# --------------------------------------------------------------------------- the command


HELP = """\
Write the grades of a `grader batch` (OUT/gradebook.csv, OUT/STUDENT/grade.json) into
nbgrader's gradebook.db: the stage is assignment aN, each notebook's grade cells are filled
as nbgrader autograde fills them, and a notebook `library` has one grade cell per task
(task_1_1, …). Run again, it updates what changed and keeps the rest (manual scores too).
Run nbgrader generate_assignment first; export again after nbgrader autograde (which zeroes
`library`). Exit status: 0 all exported; 1 students skipped (named); 2 a bad input."""


def add_parser(subparsers: Any) -> None:
    """``grader nbgrader-export``."""
    p = subparsers.add_parser(
        "nbgrader-export",
        help="write a batch's grades into nbgrader's gradebook.db",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "out",
        help="the output folder of grader batch (its -o OUT): OUT/gradebook.csv, OUT/STUDENT/grade.json",
    )
    p.add_argument(
        "-a", "--assignment", required=True, type=stage_arg, help="stage id of the batch: a0, a1, …"
    )
    p.add_argument(
        "--db",
        default="gradebook.db",
        help="nbgrader's database: a file (default: gradebook.db here, the course directory's) or a URL",
    )
    p.add_argument(
        "--nbgrader-assignment", metavar="NAME", help="the nbgrader assignment (default: the stage id)"
    )
    p.add_argument(
        "--course", default="default_course", help="nbgrader's course id (default: default_course)"
    )
    p.set_defaults(func=_command)


def _command(args: argparse.Namespace) -> int:
    try:
        done = export_batch(
            args.out, args.assignment, args.db, assignment=args.nbgrader_assignment, course=args.course
        )
    except (ExportError, ValueError, KeyError) as exc:  # ValueError: an unknown stage (ManifestError) too
        print(f"grader nbgrader-export: {visible(exc, one_line=True)}", file=sys.stderr)
        return 2
    for student, why in done.skipped.items():
        print(
            f"skipped {visible(student, one_line=True)[:200]}: {visible(why, one_line=True)}", file=sys.stderr
        )
    if done.ignored_lines:
        print(
            f"ignored {done.ignored_lines} line(s) of gradebook.csv with the wrong number of cells",
            file=sys.stderr,
        )
    cells = ", ".join(f"{nb} ({n} cells)" for nb, n in done.notebooks.items())
    print(
        f"{'created' if done.created else 'updated'} {done.db}: assignment {done.assignment}, notebooks {cells}; "
        f"{len(done.exported)} students exported, {len(done.skipped)} skipped"
    )
    return 1 if done.skipped else 0
