"""Notebook parts of the assignments: released with nbgrader, graded without trusting the kernel.

`solutions/` is nbgrader's *source* directory: `solutions/<stage>/<name>.ipynb` holds the
instructor's notebook, with solution regions (`### BEGIN SOLUTION` / `### END SOLUTION`)
in solution cells and hidden tests (`### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS`) in
locked, autograded test cells that carry points.

* `release_notebook(src, dst)` writes the student version with nbgrader's
  generate-assignment preprocessors (LockCells, ClearSolutions, ClearOutput,
  ComputeChecksums, ClearHiddenTests, ClearMarkScheme, CheckCellMetadata), then fixes
  everything that could vary between runs (outputs, execution counts, notebook metadata),
  so the same source always gives the same bytes.
* `run_notebook(student_nb, source_nb, session)` grades a submitted notebook. The
  student's code runs only in the session's child (the jail of `grader.sandbox.session`), in an
  IPython shell: `kernel_steps` orders the cells to run — the student's answer cells and
  added cells from the submission, every locked cell from the source (edited or deleted
  ones restored in place) — and, for each autograded test cell in turn, the child runs
  the cells before it, then answers that cell's request from `grader.notebooks.plans`
  (the values of the names it reads, the results of its calls of notebook functions).
  The test cell itself — visible and hidden tests, expected values, messages, points —
  never leaves this process: `grader.notebooks.judge` runs it here, on plain data. So no
  code of the student's can change a verdict, read a hidden test, or claim points: at
  worst it chooses the values its own notebook computes, which is what answering does.
* `autograde_notebook(student_nb, source_nb, workdir)` is `run_notebook` for instructors
  and tests: a child over the kit's own minitorch, in the ``process`` tier.

Points are nbgrader's: a test cell scores all of its points when it runs to its end,
none otherwise. A cell after the kernel died or ran out of time scores 0, with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional

import nbformat
from nbformat.notebooknode import NotebookNode

from grader.sandbox.child import protocol
from grader.core.manifest import repo_root
from .judge import judge
from .plans import is_test_cell, plan_tests
from grader.sandbox.child_process import exit_text
from grader.sandbox.session import Limits, Session

__all__ = [
    "CellGrade",
    "NotebookRun",
    "as_released",
    "autograde_notebook",
    "kernel_steps",
    "notebook_points",
    "release_notebook",
    "run_notebook",
]

#: Notebook metadata of every released notebook (nothing machine- or run-specific).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class CellGrade(NamedTuple):
    """The grade of one autograded cell."""

    cell_id: str
    points: float
    max_points: float
    passed: bool
    message: str


@dataclass
class NotebookRun:
    """A graded notebook: its cells' grades, and "passed", "failed" or "timeout"."""

    grades: list[CellGrade]
    status: str


def _read(path: Path) -> NotebookNode:
    return nbformat.read(str(path), as_version=4)


def _ids(path: Path) -> tuple[str, str]:
    """(assignment id, notebook id): solutions/a1/backprop.ipynb → ("a1", "backprop")."""
    path = Path(path)
    return path.parent.name or "assignment", path.stem


def _run(preprocessors: list[Any], nb: NotebookNode, resources: dict) -> NotebookNode:
    for pp in preprocessors:
        nb, resources = pp.preprocess(nb, resources)
    return nb


def notebook_points(source_nb: Path) -> dict[str, float]:
    """Autograded cells of a source notebook: grade id → points, in cell order."""
    nb = _read(Path(source_nb))
    return {
        _meta(cell)["grade_id"]: float(_meta(cell).get("points", 0))
        for cell in nb.cells
        if is_test_cell(cell)
    }


# ---------------------------------------------------------------------------- release


def _normalize(nb: NotebookNode) -> NotebookNode:
    """Remove everything that could differ between two releases of the same source."""
    nb.metadata = NotebookNode(
        {
            "kernelspec": NotebookNode(dict(KERNELSPEC)),
            "language_info": NotebookNode({"name": "python"}),
        }
    )
    nb.nbformat, nb.nbformat_minor = 4, 5
    for i, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        cell["id"] = cell.get("id") or grade_id or f"cell-{i:03d}"
        for key in ("collapsed", "scrolled", "execution", "jupyter", "tags"):
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def release_notebook(src: Path, dst: Path) -> None:
    """Write the student version of the source notebook `src` to `dst` (deterministic).

    Solution regions become `# YOUR CODE HERE / raise NotImplementedError()`, hidden
    tests disappear, outputs are cleared, test and instruction cells are locked.
    """
    nb = released(Path(src))
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "w", encoding="utf-8", newline="\n") as f:
        f.write(nbformat.writes(nb, version=4))
        f.write("\n")


def released(src: Path) -> NotebookNode:
    """The student version of the source notebook `src` (what `release_notebook` writes)."""
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    assignment, notebook = _ids(src)
    resources = {
        "nbgrader": {"assignment": assignment, "notebook": notebook},
        "metadata": {"path": str(src.parent)},
    }
    nb = _run(
        [
            LockCells(),
            ClearSolutions(),
            ClearOutput(),
            CheckCellMetadata(),
            ComputeChecksums(),
            ClearHiddenTests(),
            ClearMarkScheme(),
            ComputeChecksums(),
            CheckCellMetadata(),
        ],
        _read(src),
        resources,
    )
    nb = _normalize(nb)
    nbformat.validate(nb)
    return nb


# ---------------------------------------------------------------------------- grading


def _meta(cell: Any) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
    return meta if isinstance(meta, dict) else {}


def _text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(str(s) for s in source)
    return source if isinstance(source, str) else ""


def kernel_steps(submitted: NotebookNode, source: NotebookNode) -> list[tuple[str, list[list[str]]]]:
    """What the kernel runs: for each test cell of the source (by grade id, in the order the
    submission puts them), the code cells to run before it, as ``[label, code]``.

    A cell of the submission is known by its nbgrader ``grade_id``: an answer cell gives
    its code; a locked cell or a test cell is the source's, whatever the submission did to
    it; one the submission lacks is restored before the next known cell that follows it in
    the source. Any other code cell (added, or a second copy of an id) runs as it is. The
    test cells are not run: they are the grader's (`grader.notebooks.judge`).
    """
    known = [(cell, _meta(cell)) for cell in source.cells if _meta(cell).get("grade_id")]
    index = {meta["grade_id"]: i for i, (_, meta) in enumerate(known)}
    steps: list[tuple[str, list[list[str]]]] = []
    pending: list[list[str]] = []
    done: set[int] = set()

    def emit(i: int, submitted_cell: Any = None) -> None:
        cell, meta = known[i]
        done.add(i)
        if cell.cell_type != "code":
            return
        if is_test_cell(cell):
            steps.append((meta["grade_id"], pending[:]))
            pending.clear()
        elif not meta.get("solution"):  # a locked cell: the source's code
            pending.append([meta["grade_id"], cell.source])
        elif submitted_cell is not None and submitted_cell.get("cell_type") == "code":
            pending.append([meta["grade_id"], _text(submitted_cell.get("source"))])

    for n, cell in enumerate(submitted.cells, 1):
        gid = _meta(cell).get("grade_id")
        i = index.get(gid) if isinstance(gid, str) else None
        if i is not None and i not in done:
            for j in range(i):
                if j not in done:
                    emit(j)
            emit(i, cell)
        elif cell.get("cell_type") == "code":
            pending.append([f"cell {n}", _text(cell.get("source"))])
    for j in range(len(known)):
        if j not in done:
            emit(j)
    return steps


def as_released(student_nb: Path, source_nb: Path) -> bool:
    """Whether the submitted notebook runs exactly the code its release runs (`kernel_steps`
    of both the same: outputs, markdown and cells after the last test do not count): the
    part is not started (`grader.notebooks.grading.notebook_not_started`). False when the
    submission cannot be read: that is for `run_notebook` to report."""
    try:
        return kernel_steps(_read(Path(student_nb)), _read(Path(source_nb))) == _released_steps(
            Path(source_nb)
        )
    except Exception:  # noqa: BLE001 - an unreadable notebook is graded (and scores 0) as usual
        return False


@functools.lru_cache(maxsize=16)
def _released_steps(source_nb: Path) -> list[tuple[str, list[list[str]]]]:
    return kernel_steps(released(source_nb), _read(source_nb))


class _Stopped(protocol.ProtocolError):
    """The kernel's reply said it stopped, or was not a notebook reply."""


def run_notebook(
    student_nb: Path,
    source_nb: Path,
    session: Session,
    *,
    timeout: float = 30.0,
    deadline: Optional[float] = None,
) -> NotebookRun:
    """Grade a submitted notebook against its source (see the module docstring).

    Args:
        student_nb: the submitted notebook (missing or unreadable: every cell scores 0).
        source_nb: the instructor's source notebook.
        session: the child that runs the student's cells (started here when needed; the
            caller closes it). A child that cannot start raises `ChildStartFailed`.
        timeout: seconds per cell the kernel runs (cells before a test, and its calls).
        deadline: a `time.monotonic()` instant for the whole notebook.

    Raises:
        NotebookDesignError: the source's test cells cannot be graded this way.
    """
    source = _read(source_nb)
    plans = plan_tests(source)
    name = Path(student_nb).name

    def zero(plan: Any, why: str) -> CellGrade:
        return CellGrade(plan.grade_id, 0.0, plan.points, False, why)

    if not Path(student_nb).is_file():
        return NotebookRun(
            [zero(p, f"notebook {name} is missing from the submission") for p in plans], "failed"
        )
    try:
        steps = kernel_steps(_read(student_nb), source)
    except Exception as e:  # noqa: BLE001 - any unreadable file scores 0, with the reason
        return NotebookRun(
            [zero(p, f"could not read {name}: {type(e).__name__}: {e}") for p in plans], "failed"
        )
    by_id = {p.grade_id: p for p in plans}
    child = session.ensure()
    namespace: dict[str, Any] = {"__name__": "__main__"}
    grades: dict[str, CellGrade] = {}
    stopped, status = "", "failed"
    for gid, cells in steps:
        plan = by_id[gid]
        if not stopped:
            limit = timeout * (len(cells) + len(plan.kernel) + 1)
            step_deadline = min(time.monotonic() + limit, deadline or float("inf"))
            try:
                reply = child.request({"cmd": "notebook", "cells": cells, **plan.request()}, step_deadline)
                reply = reply.get("notebook") if type(reply) is dict else None
                if type(reply) is not dict or "error" in reply:
                    why = reply.get("error") if type(reply) is dict else None
                    raise _Stopped(f"stopped: {str(why)[:300]}" if why else "sent a malformed reply")
            except protocol.ChannelTimeout:
                session.discard()
                status, stopped = "timeout", "not run: the notebook ran past its time limit before this test"
            except protocol.ChannelClosed:
                with contextlib.suppress(Exception):  # its own exit status, not the kill's
                    child.proc.wait(timeout=2)  # type: ignore[union-attr]
                stopped = (
                    f"not run: the notebook's process ended ({exit_text(session.discard())}) before this test"
                )
            except (
                protocol.ProtocolError
            ) as exc:  # a frame the grader refuses: this notebook's fault, and only its
                session.discard()
                said = str(exc) if isinstance(exc, _Stopped) else f"sent a malformed reply ({exc})"
                stopped = f"not run: the notebook's process {said}"
        if stopped:
            grades[gid] = zero(plan, stopped)
            continue
        errors = reply.get("errors")
        errors = [e for e in errors if type(e) is str] if type(errors) is list else []
        passed, message = judge(plan, reply, namespace, errors)
        grades[gid] = CellGrade(gid, plan.points if passed else 0.0, plan.points, passed, message)
    ordered = [grades[p.grade_id] for p in plans]
    if status != "timeout" and ordered and all(g.passed for g in ordered):
        status = "passed"
    return NotebookRun(ordered, status)


def autograde_notebook(
    student_nb: Path,
    source_nb: Path,
    workdir: Path,
    *,
    timeout: float = 30.0,
    limits: Optional[Limits] = None,
) -> list[CellGrade]:
    """`run_notebook` in a child over the kit's own minitorch (``process`` tier), for
    instructors and tests; `workdir` is its scratch directory. No jail: not for hostile
    notebooks (`grader.notebooks.grading.grade_notebook` grades submissions)."""
    session = Session(repo_root(), Path(workdir), limits or Limits(), name="notebook", tier="process")
    try:
        return run_notebook(Path(student_nb), Path(source_nb), session, timeout=timeout).grades
    finally:
        session.close()


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m grader.notebooks.parts STUDENT.ipynb SOURCE.ipynb WORKDIR`: print grades as JSON."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(main.__doc__, file=sys.stderr)
        return 2
    grades = autograde_notebook(Path(args[0]), Path(args[1]), Path(args[2]))
    print(json.dumps([g._asdict() for g in grades], ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
