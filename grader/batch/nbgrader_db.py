"""nbgrader's gradebook database, as `grader nbgrader-export` writes it: through nbgrader's own
API (`nbgrader.api.Gradebook`), never its tables directly.

    url, created = database_url("gradebook.db")        # checked: a gradebook of this nbgrader, or new
    with Gradebook(url, course_id=course) as gb:
        prepare_assignment(gb, "a1", course, manifest, cells, url)   # notebooks, grade cells
        write_student(gb, "a1", "alice", scores)                     # notebook → cell → auto_score

The kit's things have these names in nbgrader: the library tasks are the notebook
`LIBRARY_NOTEBOOK` with one grade cell per task (`library_cell`), and a student id or an
assignment name has at most `MAX_NAME` characters. `prepare_assignment` checks the notebooks
the database already has against the kit's source (same grade cells, same points) before it
makes the missing ones (a source notebook with nbgrader's own ``SaveCells``, as ``nbgrader
generate_assignment`` does); `write_student` sets auto scores only, so a manual score given in
formgrader stands and marks its grade for review. A conflict is an `ExportError`. How a batch
maps onto assignments, notebooks and cells: `grader.batch.nbgrader_export`.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import sys
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

from grader.core.manifest import Manifest, repo_root

__all__ = [
    "LIBRARY_NOTEBOOK",
    "MAX_NAME",
    "ExportError",
    "database_url",
    "library_cell",
    "prepare_assignment",
    "write_student",
]

#: The synthetic notebook of the library tasks.
LIBRARY_NOTEBOOK = "library"
#: nbgrader's student ids and assignment names are ``String(128)``.
MAX_NAME = 128


class ExportError(ValueError):
    """An input cannot be exported, or the database conflicts: no grade was written."""


def library_cell(task_id: str) -> str:
    """The grade id of a task's cell in the ``library`` notebook: "1.1" → "task_1_1"."""
    return "task_" + re.sub(r"[^A-Za-z0-9_-]", "_", task_id)


def database_url(db: str) -> tuple[str, bool]:
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


def prepare_assignment(
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


def write_student(gb: Any, assignment: str, student: str, scores: dict[str, dict[str, float]]) -> None:
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
