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
read or a conflicting notebook is an `ExportError` before any grade is written (exit 2). The
batch is read by `grader.batch.nbgrader_scores`, the database written by
`grader.batch.nbgrader_db`; this module joins the two and is the command.

nbgrader's order: run ``nbgrader generate_assignment`` before the first export (once an
assignment has submissions it refuses to change its notebooks, and ``library`` is not in
``source/``), and export again after any ``nbgrader autograde`` of the assignment, which
scores 0 every notebook a student did not submit, ``library`` included.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CalledProcessError
from typing import Any, Optional

from .nbgrader_db import (
    LIBRARY_NOTEBOOK,
    MAX_NAME,
    ExportError,
    database_url,
    library_cell,
    prepare_assignment,
    write_student,
)
from .nbgrader_scores import Skip, read_gradebook, student_scores
from grader.core.manifest import load_manifest, repo_root, stage_arg
from grader.core.safe_text import visible

__all__ = ["Export", "add_parser", "export_batch"]


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
    rows, with_notebooks, ignored = read_gradebook(Path(out), manifest)
    report = Export(
        db=db, assignment=name, notebooks={k: len(v) for k, v in cells.items()}, ignored_lines=ignored
    )
    plan: dict[str, dict[str, dict[str, float]]] = {}
    for student, row in sorted(rows.items()):
        try:
            plan[student] = student_scores(Path(out), student, row, manifest, cells, with_notebooks)
        except Skip as why:
            report.skipped[student] = str(why)
    url, report.created = database_url(db)
    from nbgrader.api import Gradebook, InvalidEntry, MissingEntry
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with Gradebook(url, course_id=course) as gb:
            prepare_assignment(gb, name, course, manifest, cells, url)
            for student, scores in plan.items():
                write_student(gb, name, student, scores)
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
