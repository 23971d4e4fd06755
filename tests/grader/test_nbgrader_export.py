"""`grader nbgrader-export`: a batch's grades land in nbgrader's gradebook.db, read back with
nbgrader's own API (`grader/batch/nbgrader_export.py`, over `nbgrader_scores.py` and
`nbgrader_db.py`).

The batch output is made with the kit's own functions (`finished_outcome` /
`crashed_outcome` of a worker, `record_or_crash` of the parent: the reports, then the
gradebook row), without Dask or a child.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import warnings
from pathlib import Path
from typing import Optional

import pytest

from grader.batch.record import record_or_crash
from grader.batch.worker import crashed_outcome, finished_outcome
from grader.commands.cli import main as cli_main
from grader.batch.gradebook import Gradebook as KitGradebook
from grader.core.manifest import load_manifest, repo_root
from grader.batch.nbgrader_db import LIBRARY_NOTEBOOK, ExportError, library_cell
from grader.batch.nbgrader_export import export_batch
from grader.notebooks.grading import NOTEBOOK_CELL, grade_notebook
from grader.notebooks.parts import CellGrade, NotebookRun, notebook_points
from grader.core.results import CheckResult, GradeResult, TaskResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

nbgrader_api = pytest.importorskip("nbgrader.api")
Gradebook, MissingEntry = nbgrader_api.Gradebook, nbgrader_api.MissingEntry

MANIFEST = load_manifest("a1")
PART = MANIFEST.notebooks[0]  # backprop.ipynb: its autograded test cells
NOTEBOOK = PART.name.rsplit(".", 1)[0]
COLUMN = f"nb:{PART.name}"
CELLS = notebook_points(repo_root() / "solutions" / PART.path)
FULL = {t.id: float(t.points) for t in MANIFEST.tasks}


_alembic_head = functools.cache(nbgrader_api.get_alembic_version)


@pytest.fixture(autouse=True)
def _one_alembic_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """nbgrader runs `alembic heads` in a subprocess for every new gradebook.db: once is enough here."""
    monkeypatch.setattr(nbgrader_api, "get_alembic_version", _alembic_head)


def _add_submission(gb: object, assignment: str, student: str) -> None:
    """nbgrader's add_submission, without the warning SQLAlchemy 2 gives about how it builds one."""
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in session", category=SAWarning)
        gb.add_submission(assignment, student)  # type: ignore[attr-defined]


class _Screen:
    def finished(self, row: dict, failed: bool) -> None:
        pass


def _result(student: str, tasks: dict[str, float], passed: Optional[set[str]]) -> GradeResult:
    """A grade as `grader.grading.grade` returns it; `passed`: the notebook cells that
    passed (None: the notebook was not run, e.g. missing from the submission)."""
    rows = [
        TaskResult(t.id, t.title, t.points, tasks.get(t.id, t.points), "passed", "") for t in MANIFEST.tasks
    ]
    if passed is None:
        nb = TaskResult(
            COLUMN,
            PART.title,
            PART.points,
            0.0,
            "failed",
            f"{PART.name} is not in the submission",
            kind="notebook",
        )
    else:
        earned = sum(CELLS[c] for c in passed)
        checks = [
            CheckResult(
                c,
                NOTEBOOK_CELL,
                "passed" if c in passed else "failed",
                "passed" if c in passed else "AssertionError",
            )
            for c in CELLS
        ]
        nb = TaskResult(
            COLUMN,
            PART.title,
            PART.points,
            round(PART.points * earned / sum(CELLS.values()), 4),
            "passed" if earned == sum(CELLS.values()) else "failed",
            "",
            checks=checks,
            kind="notebook",
        )
    return GradeResult(stage="a1", title=MANIFEST.title, submission=student, tasks=rows + [nb], seconds=1.0)


def _record(
    out: Path,
    student: str,
    tasks: Optional[dict[str, float]] = None,
    passed: Optional[set[str]] = None,
    sha: str = "s1",
    crashed: str = "",
) -> None:
    """One finished submission recorded as `grader batch` records it."""
    job = {"student": student, "label": student, "sha256": sha}
    outcome = (
        crashed_outcome(job, crashed)
        if crashed
        else finished_outcome(job, _result(student, tasks or {}, passed))
    )
    book = KitGradebook(out / "gradebook.csv", [t.id for t in MANIFEST.tasks] + [COLUMN])
    record_or_crash(outcome, job, book, out, _Screen())


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    out = tmp_path / "grades"
    _record(out, "alice", {"1.1": 2.5}, passed={"part1_tests", "part2_grad_tests"})
    _record(out, "bob", passed=set(CELLS))
    _record(out, "carol", passed=None)  # no notebook submitted: every cell 0
    return out


def _grade(gb: object, notebook: str, cell: str, student: str) -> object:
    return gb.find_grade(cell, notebook, "a1", student)  # type: ignore[attr-defined]


def _dump(db: Path) -> list:
    with sqlite3.connect(db) as con:
        tables = [
            r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        ]
        return [(t, sorted(map(repr, con.execute(f"SELECT * FROM {t}")))) for t in tables]


def test_the_grades_land_on_the_notebooks_grade_cells_and_a_library_notebook(
    batch: Path, tmp_path: Path
) -> None:
    db = tmp_path / "gradebook.db"
    done = export_batch(batch, "a1", str(db))
    assert done.exported == ["alice", "bob", "carol"] and done.skipped == {} and done.created
    with Gradebook(f"sqlite:///{db}") as gb:
        assignment = gb.find_assignment("a1")
        assert sorted(n.name for n in assignment.notebooks) == sorted([LIBRARY_NOTEBOOK, NOTEBOOK])
        # the notebook's grade cells are the source's, as nbgrader generate_assignment records them (SaveCells)
        nb = gb.find_notebook(NOTEBOOK, "a1")
        assert {c.name: c.max_score for c in nb.grade_cells} == CELLS
        assert {c.name for c in nb.solution_cells} == {"part1_answers", "part2_answers"} and nb.source_cells
        library = gb.find_notebook(LIBRARY_NOTEBOOK, "a1")
        assert {c.name: c.max_score for c in library.grade_cells} == {
            library_cell(t): p for t, p in FULL.items()
        }
        assert {c.cell_type for c in library.grade_cells} == {"code"} and library_cell("1.1") == "task_1_1"
        assert assignment.max_score == sum(FULL.values()) + sum(CELLS.values())

        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_1", "alice").auto_score == 2.5
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_2", "alice").auto_score == FULL["1.2"]
        assert [_grade(gb, NOTEBOOK, c, "alice").auto_score for c in CELLS] == [6.0, 0.0, 6.0]
        assert [_grade(gb, NOTEBOOK, c, "bob").auto_score for c in CELLS] == list(CELLS.values())
        assert [_grade(gb, NOTEBOOK, c, "carol").auto_score for c in CELLS] == [0.0, 0.0, 0.0]
        assert not _grade(gb, NOTEBOOK, "part1_tests", "alice").needs_manual_grade
        rows = KitGradebook(batch / "gradebook.csv", [t.id for t in MANIFEST.tasks] + [COLUMN]).latest
        for student in (
            "alice",
            "bob",
            "carol",
        ):  # nbgrader's total is the kit's (the notebook's points are its cells')
            assert gb.find_submission("a1", student).score == pytest.approx(float(rows[student]["total"]))


def test_exporting_twice_changes_nothing_and_a_new_grade_updates_only_its_scores(
    batch: Path, tmp_path: Path
) -> None:
    db = tmp_path / "gradebook.db"
    export_batch(batch, "a1", str(db))
    first = _dump(db)
    again = export_batch(batch, "a1", str(db))
    assert not again.created and _dump(db) == first
    _record(
        batch, "alice", {"1.1": 5.0, "1.3": 0.0}, passed=set(CELLS), sha="s2"
    )  # a new submission: a new row
    export_batch(batch, "a1", str(db))
    with Gradebook(f"sqlite:///{db}") as gb:
        assert len(gb.students) == 3 and len(gb.find_assignment("a1").submissions) == 3
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_1", "alice").auto_score == 5.0
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_3", "alice").auto_score == 0.0
        assert _grade(gb, NOTEBOOK, "part2_local_tests", "alice").auto_score == 3.0
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_1", "bob").auto_score == FULL["1.1"]


def test_other_assignments_students_and_manual_scores_are_kept(batch: Path, tmp_path: Path) -> None:
    db = tmp_path / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:  # a course that already uses nbgrader
        gb.add_assignment("ps0")
        gb.add_notebook("intro", "ps0")
        gb.add_grade_cell("q1", "intro", "ps0", max_score=4, cell_type="code")
        gb.add_student("dave", first_name="Dave")
        gb.add_student("alice", first_name="Alice")
        _add_submission(gb, "ps0", "dave")
        grade = gb.find_grade("q1", "intro", "ps0", "dave")
        grade.auto_score, grade.manual_score = 1.0, 3.0
        gb.db.commit()
    export_batch(batch, "a1", str(db))
    with Gradebook(f"sqlite:///{db}") as gb:
        grade = _grade(gb, LIBRARY_NOTEBOOK, "task_1_1", "alice")
        grade.manual_score = 4.0  # a grader's override in formgrader
        gb.db.commit()
    export_batch(batch, "a1", str(db))
    with Gradebook(f"sqlite:///{db}") as gb:
        assert sorted(a.name for a in gb.assignments) == ["a1", "ps0"]
        assert sorted(s.id for s in gb.students) == ["alice", "bob", "carol", "dave"]
        assert gb.find_student("alice").first_name == "Alice"
        kept = gb.find_grade("q1", "intro", "ps0", "dave")
        assert (kept.auto_score, kept.manual_score, kept.score) == (1.0, 3.0, 3.0)
        with pytest.raises(MissingEntry):
            gb.find_submission("a1", "dave")  # not in this batch: no a1 submission made up for him
        grade = _grade(gb, LIBRARY_NOTEBOOK, "task_1_1", "alice")
        assert (grade.auto_score, grade.manual_score, grade.score, grade.needs_manual_grade) == (
            2.5,
            4.0,
            4.0,
            True,
        )


def test_the_notebook_generated_by_nbgrader_is_filled_and_a_different_one_refused(
    batch: Path, tmp_path: Path
) -> None:
    db = tmp_path / "gradebook.db"
    with Gradebook(
        f"sqlite:///{db}"
    ) as gb:  # nbgrader generate_assignment of the same notebook, submissions by autograde
        gb.add_assignment("a1")
        gb.add_notebook(NOTEBOOK, "a1")
        for cell, points in CELLS.items():
            gb.add_grade_cell(cell, NOTEBOOK, "a1", max_score=points, cell_type="code")
        gb.add_student("bob")
        _add_submission(gb, "a1", "bob")  # made before the library notebook existed
    export_batch(batch, "a1", str(db))
    with Gradebook(f"sqlite:///{db}") as gb:
        assert not gb.find_notebook(NOTEBOOK, "a1").solution_cells  # nbgrader's notebook, left as it was
        assert _grade(gb, NOTEBOOK, "part1_tests", "bob").auto_score == 6.0
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_4", "bob").auto_score == FULL["1.4"]
        gb.add_assignment("other")
        gb.add_notebook(NOTEBOOK, "other")
        gb.add_grade_cell("part1_tests", NOTEBOOK, "other", max_score=5, cell_type="code")
    before = _dump(db)
    with pytest.raises(
        ExportError, match=r"other/backprop has other grade cells .*part1_tests \(5 points there\)"
    ):
        export_batch(batch, "a1", str(db), assignment="other")
    assert _dump(db) == before


def test_rows_without_a_grade_and_bad_student_ids_are_skipped_and_named(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(batch, "erin", crashed="KilledWorker: the worker died")
    _record(batch, "frank", passed={"part1_tests"})
    (batch / "frank" / "grade.json").unlink()  # a partial notebook score, and no cells to put it on
    _record(batch, "x" * 129, passed=set(CELLS))  # longer than nbgrader's student ids
    with open(batch / "gradebook.csv", "a", encoding="utf-8") as f:  # a hand-edited line: a path, as data
        f.write(
            "../../etc,"
            + ",".join(["graded", ""] + ["1"] * 5 + ["5", "100", "1.0", "s", "v", "t", "x", "y"])
            + "\n"
        )
    db = tmp_path / "gradebook.db"
    assert cli_main(["nbgrader-export", str(batch), "-a", "A1", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "skipped erin: no grade in gradebook.csv (crashed: KilledWorker" in err
    assert f"skipped frank: grade.json has no cell grades of {COLUMN}" in err
    assert "skipped ../../etc: not a student id" in err and "skipped xxx" in err
    with Gradebook(f"sqlite:///{db}") as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "bob", "carol"]


def test_a_batch_without_notebooks_exports_the_library_only(tmp_path: Path) -> None:
    out = tmp_path / "grades"
    job = {"student": "alice", "label": "alice", "sha256": "s"}
    result = _result("alice", {"1.2": 1.0}, passed=None)
    result.tasks = result.tasks[:-1]  # grader batch --no-notebooks
    book = KitGradebook(out / "gradebook.csv", [t.id for t in MANIFEST.tasks])
    record_or_crash(finished_outcome(job, result), job, book, out, _Screen())
    db = tmp_path / "gradebook.db"
    export_batch(out, "a1", str(db))
    with Gradebook(f"sqlite:///{db}") as gb:
        assert _grade(gb, LIBRARY_NOTEBOOK, "task_1_2", "alice").auto_score == 1.0
        assert _grade(gb, NOTEBOOK, "part1_tests", "alice").auto_score is None  # not graded: left empty


def test_missing_or_corrupt_inputs_are_refused_before_anything_is_written(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "gradebook.db"
    with pytest.raises(ExportError, match="is not a folder"):
        export_batch(tmp_path / "nowhere", "a1", str(db))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExportError, match="gradebook.csv does not exist"):
        export_batch(tmp_path / "empty", "a1", str(db))
    with pytest.raises(ExportError, match="a gradebook of a0 has"):
        export_batch(batch, "a0", str(db))  # the batch graded a1
    assert not db.exists()
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ExportError, match="not an nbgrader gradebook"):
        export_batch(batch, "a1", str(db))
    db.unlink()
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE notes (x TEXT)")
    with pytest.raises(ExportError, match="SQLite database but not an nbgrader gradebook"):
        export_batch(batch, "a1", str(db))
    assert [t for t, _ in _dump(db)] == ["notes"]
    db.unlink()
    Gradebook(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as con:
        con.execute("ALTER TABLE grade DROP COLUMN extra_credit")  # a gradebook of an older nbgrader
    before = _dump(db)
    with pytest.raises(ExportError, match=r"older nbgrader \(no grade.extra_credit\).*nbgrader db upgrade"):
        export_batch(batch, "a1", str(db))
    assert _dump(db) == before
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "gradebook.csv").write_bytes(b"\xff\xfe student")
    assert cli_main(["nbgrader-export", str(broken), "-a", "a1", "--db", str(tmp_path / "new.db")]) == 2
    assert "gradebook.csv cannot be read" in capsys.readouterr().err
    assert cli_main(["nbgrader-export", str(batch), "-a", "a9", "--db", str(tmp_path / "new.db")]) == 2
    assert not (tmp_path / "new.db").exists()


def test_a_new_database_that_nbgrader_cannot_set_up_is_not_left_half_made(
    batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_alembic() -> str:
        raise FileNotFoundError(2, "No such file or directory", "alembic")

    monkeypatch.setattr(nbgrader_api, "get_alembic_version", no_alembic)
    with pytest.raises(ExportError, match="alembic.*on PATH"):
        export_batch(batch, "a1", str(tmp_path / "gradebook.db"))
    assert not (tmp_path / "gradebook.db").exists()


def test_a_notebook_row_keeps_the_verdict_of_each_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grader.notebooks.parts

    grades = [
        CellGrade("part1_tests", 6.0, 6.0, True, "passed"),
        CellGrade("part2_local_tests", 0.0, 3.0, False, "AssertionError"),
        CellGrade("part2_grad_tests", 6.0, 6.0, True, "passed"),
    ]
    monkeypatch.setattr(grader.notebooks.parts, "run_notebook", lambda *a, **k: NotebookRun(grades, "failed"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / PART.name).write_text("{}")
    row = grade_notebook(PART, tmp_path / "sub", tmp_path / "tree", tmp_path, Limits(sandbox="process"))
    assert row.score == 12.0
    assert [(c.name, c.kind, c.status) for c in row.checks] == [
        ("part1_tests", NOTEBOOK_CELL, "passed"),
        ("part2_local_tests", NOTEBOOK_CELL, "failed"),
        ("part2_grad_tests", NOTEBOOK_CELL, "passed"),
    ]
    assert json.loads(json.dumps([c.__dict__ for c in row.checks]))[1]["message"] == "AssertionError"
