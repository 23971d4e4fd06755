"""Notebook grading: a stage's notebook part, scored by the grader from the student's values.

    row = grade_notebook(part, submission_dir, tree, scratch, limits)   # -> TaskResult

The design, in three places, so that no code of the student's decides a score or sees a
hidden test (issue 14: a blank notebook had forged 15/15 by patching, in the child, the
import machinery that the verdict was computed with):

* the child (`grader.sandbox.child.main`, in the jail of `grader.sandbox.session`) runs the student's cells in
  an IPython shell and answers, before each autograded test cell, with *values*: those of
  the names the cell reads, and the results of the cell's calls of notebook functions on
  inputs the grader chose (``_plain``: numbers, strings, containers, exact NumPy arrays;
  anything else only by its type's name). It is sent the student's cells, the source's
  locked cells, those names and those calls: never an assertion, an expected value, a
  tolerance, a message or points.
* `grader.notebooks.plans` decides, from the trusted source alone, what each test cell
  reads and which of its statements must run in the kernel (calls of notebook functions
  and the statements building their inputs).
* `grader.notebooks.judge` runs every test cell here, in the parent, in a namespace of
  decoded values; `grader.notebooks.parts.run_notebook` drives the steps and keeps nbgrader's
  rule: a test cell scores its points when it runs to its end.

Points come from the source's metadata only; the row's score is the notebook part's
points in proportion. The row's checks are its cells, one `CheckResult` each (name: the
cell's grade id, kind `NOTEBOOK_CELL`, passed or failed: nbgrader's all-or-nothing), so that
`grader nbgrader-export` puts each cell's points on nbgrader's grade cell of that id.
Every failure (no nbformat, no notebook, a child that cannot start, dies, runs too long or
lies) becomes the row's status and message; a source notebook this design cannot grade is
an error of the kit, said as such.
"""

from __future__ import annotations

import time
from pathlib import Path

from grader.trees.intake import find_notebook
from grader.core.manifest import NotebookPart, repo_root
from grader.core.results import CheckResult, TaskResult
from grader.sandbox.child_process import ChildStartFailed
from grader.sandbox.session import Limits, Session

__all__ = ["NOTEBOOK_CELL", "cell_points", "grade_notebook", "notebook_not_started"]

#: The kind of the checks of a notebook row: one per autograded cell of the source.
NOTEBOOK_CELL = "notebook-cell"


def grade_notebook(
    nb: NotebookPart, submission: Path, tree: Path, scratch: Path, limits: Limits
) -> TaskResult:
    """Grade one notebook part: the student's cells in a child over `tree`, the tests here."""
    started = time.monotonic()
    row = TaskResult(
        id=f"nb:{nb.name}",
        title=nb.title or nb.name,
        max_points=nb.points,
        score=0.0,
        status="failed",
        message="",
        kind="notebook",
    )
    try:
        from .plans import NotebookDesignError
        from .parts import run_notebook
    except ImportError as exc:  # the rest of the run must still complete and report
        row.status, row.message = "error", f"cannot grade notebooks here ({exc}): install nbgrader"
        row.seconds = time.monotonic() - started
        return row
    student = find_notebook(submission, nb.name)
    if student is None:
        row.message = f"{nb.name} is not in the submission"
        row.seconds = time.monotonic() - started
        return row
    session = Session(tree, scratch, limits, name="notebook")
    try:
        run = run_notebook(
            student,
            repo_root() / "solutions" / nb.path,
            session,
            timeout=limits.notebook_timeout,
            deadline=started + limits.notebook_timeout,
        )
        total = sum(g.max_points for g in run.grades)
        earned = sum(min(max(g.points, 0.0), g.max_points) for g in run.grades)
        row.score = round(nb.points * earned / total, 4) if total > 0 else 0.0
        row.status = run.status
        row.message = f"{earned:g} of {total:g} notebook points"
        row.feedback = "\n".join(f"{g.cell_id}: {g.message}" for g in run.grades)
        row.checks = [
            CheckResult(g.cell_id, NOTEBOOK_CELL, "passed" if g.passed else "failed", g.message)
            for g in run.grades
        ]
    except ChildStartFailed as exc:
        row.status, row.message, row.feedback = exc.status, exc.message, exc.details
    except NotebookDesignError as exc:
        row.status, row.message = (
            "error",
            f"the grader cannot grade solutions/{nb.path} (a fault of the kit): {exc}",
        )
    finally:
        session.close()
    row.seconds = time.monotonic() - started
    return row


def notebook_not_started(nb: NotebookPart, submission: Path) -> bool:
    """Whether the submission's notebook for part `nb` runs the code its release runs (its
    answer cells untouched, none added before a test): a part not started. `grader.grading.one_charge`
    does not grade it again over the reference's tasks: its answers are the release's stubs,
    so that run could only pass cells that test the library rather than an answer (no
    notebook of the course has one; a fresh release scoring 0 is `grader check`'s invariant).
    False when the notebook is missing or nbgrader is not installed (graded as usual)."""
    student = find_notebook(submission, nb.name)
    if student is None:
        return False
    try:
        from .parts import as_released
    except ImportError:
        return False
    return as_released(student, repo_root() / "solutions" / nb.path)


def cell_points(nb: NotebookPart) -> dict[str, float]:
    """The points of each autograded test cell of the part's source notebook, by grade id."""
    import nbformat

    from .plans import plan_tests

    source = nbformat.read(str(repo_root() / "solutions" / nb.path), as_version=4)
    return {plan.grade_id: plan.points for plan in plan_tests(source)}
