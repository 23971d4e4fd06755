"""Notebook parts of the assignments, released and autograded by nbgrader.

`solutions/` is nbgrader's *source* directory: `solutions/<stage>/<name>.ipynb` holds the
instructor's notebook, with solution regions (`### BEGIN SOLUTION` / `### END SOLUTION`)
in solution cells and hidden tests (`### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS`) in
locked, autograded test cells that carry points.

* `release_notebook(src, dst)` writes the student version with nbgrader's
  generate-assignment preprocessors (LockCells, ClearSolutions, ClearOutput,
  ComputeChecksums, ClearHiddenTests, ClearMarkScheme, CheckCellMetadata), then fixes
  everything that could vary between runs (outputs, execution counts, notebook metadata),
  so the same source always gives the same bytes.
* `autograde_notebook(student_nb, source_nb, workdir)` runs nbgrader's autograde pipeline
  on a submitted notebook: it records the source's cells in a private gradebook
  (SaveCells, after ClearSolutions, as `generate_assignment` does), restores every test
  cell from it — hidden tests, points and any cell the student deleted — (DeduplicateIds,
  OverwriteKernelspec, OverwriteCells), executes the notebook in a Jupyter kernel
  (Execute), and reads the scores back (SaveAutoGrades). The grader calls it inside the
  sandboxed child, never in the trusted parent; the module imports nothing from the rest
  of the grader, so `python -m grader.notebooks STUDENT SOURCE WORKDIR` works alone.

What a submission cannot do: change a test cell's code, points or nbgrader metadata,
delete it, add test cells of its own, hide its traceback (a failed execute reply counts
even without an error output), or crash the kernel into a pass (a cell not reached scores
0). The limit, as with any notebook grader: the kernel runs the student's code, so a
notebook that rewrites IPython itself (say, replaces `run_cell`) could skip the tests that
follow. Hence the rule for notebook parts: their answers are numbers the student can work
out (here, the lecture's worked examples), so a hostile kernel gains nothing that writing
the answers would not; anything else is graded by the hidden checks outside the kernel.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import nbformat
from nbformat.notebooknode import NotebookNode

__all__ = ["CellGrade", "autograde_notebook", "notebook_points", "release_notebook"]

#: Notebook metadata of every released notebook (nothing machine- or run-specific).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STUDENT = "student"


class CellGrade(NamedTuple):
    """The grade of one autograded cell."""

    cell_id: str
    points: float
    max_points: float
    passed: bool
    message: str


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
    points: dict[str, float] = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            points[meta["grade_id"]] = float(meta.get("points", 0))
    return points


# ---------------------------------------------------------------------------- release


def _normalize(nb: NotebookNode) -> NotebookNode:
    """Remove everything that could differ between two releases of the same source."""
    nb.metadata = NotebookNode({
        "kernelspec": NotebookNode(dict(KERNELSPEC)),
        "language_info": NotebookNode({"name": "python"}),
    })
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
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    src, dst = Path(src), Path(dst)
    assignment, notebook = _ids(src)
    resources = {"nbgrader": {"assignment": assignment, "notebook": notebook},
                 "metadata": {"path": str(src.parent)}}
    nb = _run(
        [LockCells(), ClearSolutions(), ClearOutput(), CheckCellMetadata(), ComputeChecksums(),
         ClearHiddenTests(), ClearMarkScheme(), ComputeChecksums(), CheckCellMetadata()],
        _read(src),
        resources,
    )
    nb = _normalize(nb)
    nbformat.validate(nb)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "w", encoding="utf-8", newline="\n") as f:
        f.write(nbformat.writes(nb, version=4))
        f.write("\n")


# ---------------------------------------------------------------------------- autograde


def _kernel_name(workdir: Path) -> str:
    """A kernel that runs this interpreter: the `python3` spec if Jupyter knows one, else
    a spec written under `workdir` (no network, no user-wide install)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
        return "python3"
    except NoSuchKernel:
        pass
    kernels = workdir / "jupyter" / "kernels" / "minitorch-grader"
    kernels.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "minitorch grader",
        "language": "python",
    }
    (kernels / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(workdir / "jupyter"), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    )
    return "minitorch-grader"


def _message(cell: NotebookNode | None, passed: bool) -> str:
    if cell is None:
        return "the cell did not run"
    if passed:
        return "passed"
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            text = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}".strip()
            return _ANSI.sub("", text).rstrip(": ") or "failed"
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            return "failed: the cell wrote to stderr: " + _ANSI.sub("", out.get("text", ""))[:200]
    return "failed"


def _create_gradebook(db_url: str) -> None:
    """Create the private gradebook's tables, so that nbgrader's `Gradebook` finds an
    existing database and skips stamping a migration version (a slow `alembic`
    subprocess that a throwaway database does not need)."""
    from nbgrader.api import Base
    from sqlalchemy import create_engine

    engine = create_engine(db_url, future=True)
    try:
        Base.metadata.create_all(bind=engine)
    finally:
        engine.dispose()


def _trust_source_metadata(submitted: NotebookNode, stored: NotebookNode) -> None:
    """Give every submitted cell that names a cell of the source that cell's nbgrader
    metadata (grade / solution / locked flags, points), and strip the metadata of cells
    that name no source cell, so no edit of the metadata changes what is graded."""
    known = {
        c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader
        for c in stored.cells
        if "nbgrader" in c.get("metadata", {}) and "grade_id" in c.metadata.nbgrader
    }
    for cell in submitted.cells:
        meta = cell.get("metadata", {})
        nbg = meta.get("nbgrader")
        if nbg is None:
            continue
        gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
        if gid in known:
            meta["nbgrader"] = copy.deepcopy(known[gid])
        else:
            del meta["nbgrader"]


def _zeros(source: NotebookNode, message: str) -> list[CellGrade]:
    grades = []
    for cell in source.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            grades.append(CellGrade(meta["grade_id"], 0.0, float(meta.get("points", 0)), False, message))
    return grades


def autograde_notebook(
    student_nb: Path,
    source_nb: Path,
    workdir: Path,
    *,
    timeout: int = 30,
) -> list[CellGrade]:
    """Autograde a submitted notebook against its source, with nbgrader.

    Args:
        student_nb: the submitted notebook (may be missing or broken: every cell scores 0).
        source_nb: the instructor's source notebook (solutions/<stage>/<name>.ipynb).
        workdir: a scratch directory (gradebook, the executed notebook; the kernel runs in
            workdir/run).
        timeout: seconds allowed per cell.

    Returns:
        One `CellGrade(cell_id, points, max_points, passed, message)` per autograded cell
        of the source, in notebook order.
    """
    with warnings.catch_warnings():
        # nbgrader's gradebook (SQLAlchemy) warns about its own session handling.
        warnings.simplefilter("ignore")
        return _autograde(Path(student_nb), Path(source_nb), Path(workdir), timeout)


def _autograde(student_nb: Path, source_nb: Path, workdir: Path, timeout: int) -> list[CellGrade]:
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        DeduplicateIds,
        Execute,
        LimitOutput,
        LockCells,
        OverwriteCells,
        OverwriteKernelspec,
        SaveAutoGrades,
        SaveCells,
    )

    workdir.mkdir(parents=True, exist_ok=True)
    rundir = workdir / "run"
    rundir.mkdir(exist_ok=True)
    source = _read(source_nb)
    assignment, notebook = _ids(source_nb)
    db = workdir / "gradebook.db"
    if db.exists():
        db.unlink()
    db_url = f"sqlite:///{db}"
    _create_gradebook(db_url)
    resources = {
        "nbgrader": {"assignment": assignment, "notebook": notebook, "student": _STUDENT, "db_url": db_url},
        "metadata": {"path": str(rundir)},
    }

    # The source, as `nbgrader generate_assignment` stores it: solutions cleared, hidden
    # tests kept.
    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(assignment)
    stored = _run([LockCells(), ClearSolutions(), ClearOutput(), CheckCellMetadata(), ComputeChecksums(), SaveCells()],
                  copy.deepcopy(source), copy.deepcopy(resources))
    with Gradebook(db_url) as gb:
        gb.update_or_create_student(_STUDENT)
        gb.update_or_create_submission(assignment, _STUDENT)

    if not student_nb.is_file():
        return _zeros(source, f"notebook {student_nb.name} is missing from the submission")
    try:
        submitted = _read(student_nb)
    except Exception as e:  # noqa: BLE001 - any unreadable file scores 0, with the reason
        return _zeros(source, f"could not read {student_nb.name}: {type(e).__name__}: {e}")

    _trust_source_metadata(submitted, stored)
    try:
        sanitized = _run(
            [ClearOutput(), DeduplicateIds(), OverwriteKernelspec(),
             OverwriteCells(add_missing_cells=True), CheckCellMetadata()],
            submitted, copy.deepcopy(resources),
        )
    except Exception as e:  # noqa: BLE001
        return _zeros(source, f"the notebook's nbgrader metadata is damaged ({type(e).__name__}: {e}); "
                              "download a fresh copy and paste your answers in")

    kernel = _kernel_name(workdir)
    for cell in sanitized.cells:  # a test cell that never runs must not keep a pass
        if cell.cell_type == "code":
            cell.outputs = [{"output_type": "error", "ename": "NotRun", "evalue": "the cell did not run",
                             "traceback": []}]
    executed_ids: set[str] = set()

    class _Execute(Execute):
        def on_cell_executed(self, **kwargs: Any) -> None:  # type: ignore[override]
            super().on_cell_executed(**kwargs)
            cell = kwargs["cell"]
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid and kwargs["execute_reply"]["content"].get("status") == "ok":
                executed_ids.add(gid)

    failure = ""
    executed = nbformat.from_dict(copy.deepcopy(sanitized))  # executed in place
    try:
        executed = _run(
            [_Execute(timeout=timeout, kernel_name=kernel, interrupt_on_timeout=True,
                      extra_arguments=["--IPKernelApp.log_level=ERROR"]), LimitOutput()],
            executed, copy.deepcopy(resources),
        )
    except Exception as e:  # noqa: BLE001 - a dead kernel: the cells that did not run get 0
        failure = f"the notebook stopped: {type(e).__name__}: {_ANSI.sub('', str(e))[:300]}"
    # Cells whose reply was not "ok" keep (or get) an error output, so nbgrader scores 0.
    for cell in executed.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and gid and gid not in executed_ids:
            if not any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                cell.outputs.append(nbformat.from_dict(
                    {"output_type": "error", "ename": "Failed", "evalue": failure or "the cell failed",
                     "traceback": []}))
    _run([SaveAutoGrades()], executed, copy.deepcopy(resources))
    (workdir / f"{notebook}.autograded.ipynb").write_text(nbformat.writes(executed), encoding="utf-8")

    cells = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c for c in executed.cells}
    with Gradebook(db_url) as gb:
        scores = {g.name: (g.auto_score, g.max_score)
                  for g in gb.find_submission_notebook(notebook, assignment, _STUDENT).grades}
    grades = []
    for gid, max_points in notebook_points(source_nb).items():
        score, max_score = scores.get(gid, (0.0, max_points))
        score = float(score or 0.0)
        passed = score >= float(max_score) > 0
        cell = cells.get(gid)
        msg = failure if (failure and not passed) else _message(cell, passed)
        grades.append(CellGrade(gid, score, float(max_score), passed, msg))
    return grades


def main(argv: list[str] | None = None) -> int:
    """`python -m grader.notebooks STUDENT.ipynb SOURCE.ipynb WORKDIR`: print grades as JSON."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(main.__doc__, file=sys.stderr)
        return 2
    grades = autograde_notebook(Path(args[0]), Path(args[1]), Path(args[2]))
    print(json.dumps([g._asdict() for g in grades], ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
