"""A batch's grades as nbgrader scores: for each student, notebook → grade cell → points.

    rows, with_notebooks, ignored = read_gradebook(out, manifest)   # the latest row of each student
    scores = student_scores(out, student, rows[student], manifest, cells, with_notebooks)

`read_gradebook` reads ``OUT/gradebook.csv`` (never writes it; a last line cut short by a kill
is dropped, as ``grader batch`` drops it). `student_scores` makes one student's row the scores
of the ``library`` notebook (each task's cell scores the task's column) and of each notebook
part, whose cells score their points when grade.json says the kit's grading passed them, 0
otherwise (nbgrader's all-or-nothing rule), and must add up to the row's points. A student
who cannot be exported is a `Skip` with the reason; an input that cannot be read is an
`ExportError`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from .submissions import safe_student_id
from .gradebook import LEADING_COLUMNS, TRAILING_COLUMNS, fmt_points
from .nbgrader_db import LIBRARY_NOTEBOOK, MAX_NAME, ExportError, library_cell
from grader.core.manifest import Manifest
from grader.core.safe_text import csv_value, visible

__all__ = ["GRADED_STATUSES", "Skip", "read_gradebook", "student_scores"]

#: Statuses whose row is a grade (`grader.batch.gradebook`); the others have none to export.
GRADED_STATUSES = ("graded", "timeout", "malformed")
#: The largest grade.json read (one student's whole result).
MAX_GRADE_JSON = 32 * 1024 * 1024


class Skip(Exception):
    """One student cannot be exported: the reason."""


def read_gradebook(out: Path, manifest: Manifest) -> tuple[dict[str, dict[str, str]], bool, int]:
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
        raise Skip(f"{what} is {visible(text, one_line=True)[:40]!r} in gradebook.csv, not points") from None
    if not math.isfinite(value) or not -1e-9 <= value <= top + 1e-9:
        raise Skip(f"{what} is {text} in gradebook.csv, outside 0..{top:g}")
    return value


def student_scores(
    out: Path,
    student: str,
    row: dict[str, str],
    manifest: Manifest,
    cells: dict[str, dict[str, float]],
    with_notebooks: bool,
) -> dict[str, dict[str, float]]:
    """Notebook → grade cell → score of one student, or `Skip` with the reason."""
    if safe_student_id(student) != student or len(student) > MAX_NAME:
        raise Skip(f"not a student id of grader batch (letters, digits and ._@+-, at most {MAX_NAME})")
    if row["status"] not in GRADED_STATUSES:
        raise Skip(
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
            raise Skip(f"{path.parent.name}/grade.json is over {MAX_GRADE_JSON >> 20} MiB")
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise Skip(f"{path.parent.name}/grade.json cannot be read: {type(exc).__name__}") from None


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
            raise Skip(
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
            raise Skip(
                f"grade.json does not agree with gradebook.csv on {column} (a report of another grading)"
            )
        return scores
    if value <= 0:
        return {cell: 0.0 for cell in cells}
    if abs(value - points) <= 1e-4:
        return dict(cells)
    raise Skip(
        f"grade.json has no cell grades of {column} (an older grader): grade it again with grader batch"
    )
