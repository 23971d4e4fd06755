"""Notebook grading: autograde a stage's notebook part in a fresh sandboxed child.

    row = grade_notebook(part, submission_dir, tree, scratch, limits)   # -> TaskResult

The child alone gets copies of the source notebook and of the student's (nbgrader must
insert the hidden test cells next to the student's cells and run them in a kernel:
`grader.notebooks.autograde_notebook`, run inside the child). This is the one verdict
computed inside a child, so the parent trusts only per-cell points, clamped to the maxima
it reads from the source itself: a notebook can at worst claim its own points, never a
code task's. Every failure (no nbgrader, no notebook, a dead or slow child, a malformed
reply) becomes the row's status and message.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from . import protocol
from .answers import parse_error
from .intake import find_notebook
from .manifest import NotebookPart, repo_root
from .results import TaskResult
from .sandbox import ChildStartFailed, Limits, Session

__all__ = ["grade_notebook"]


def grade_notebook(nb: NotebookPart, submission: Path, tree: Path, scratch: Path, limits: Limits) -> TaskResult:
    """Autograde one notebook in a fresh child (nbgrader executes the student's cells)."""
    started = time.monotonic()
    source = repo_root() / "solutions" / nb.path
    row = TaskResult(id=f"nb:{nb.name}", title=nb.title or nb.name, max_points=nb.points, score=0.0, status="failed", message="", kind="notebook")
    try:
        from .notebooks import notebook_points
    except ImportError as exc:  # the rest of the run must still complete and report
        row.status, row.message = "error", f"cannot autograde notebooks here ({exc}): install nbgrader"
        row.seconds = time.monotonic() - started
        return row
    student = find_notebook(submission, nb.name)
    if student is None:
        row.message = f"{nb.name} is not in the submission"
        row.seconds = time.monotonic() - started
        return row
    work = scratch / f"notebook-{nb.name}"
    (work / "source" / Path(nb.path).parent).mkdir(parents=True)
    (work / "student").mkdir()
    shutil.copyfile(source, work / "source" / nb.path)
    shutil.copyfile(student, work / "student" / nb.name)
    maxima = notebook_points(source)  # computed here, from the trusted source
    session = Session(tree, scratch, limits, name="notebook")
    try:
        child = session.ensure()
        reply = child.request(
            {"cmd": "notebook", "student": str(work / "student" / nb.name), "source": str(work / "source" / nb.path), "workdir": str(work / "run")},
            time.monotonic() + limits.notebook_timeout,
        )
        result = reply.get("notebook") if type(reply) is dict else None
        if type(result) is not dict:
            raise protocol.ProtocolError("malformed notebook reply")
        if "error" in result:
            err = parse_error(result["error"])
            row.status, row.message = "error", f"autograding failed: {err.type}: {err.message[:200]}"
        else:
            _score(row, nb, result.get("ok"), maxima)
    except ChildStartFailed as exc:
        row.status, row.message, row.feedback = exc.status, exc.message, exc.details
    except protocol.ChannelTimeout:
        row.status, row.message = "timeout", f"autograding took longer than {limits.notebook_timeout:.0f} s"
    except protocol.ProtocolError as exc:
        row.status, row.message = "error", f"the notebook grading process failed ({exc})"
    finally:
        session.close()
    row.seconds = time.monotonic() - started
    return row


def _score(row: TaskResult, nb: NotebookPart, cells: object, maxima: dict[str, float]) -> None:
    """Fill `row` from the child's per-cell grades, trusting only points up to `maxima`."""
    if type(cells) is not list:
        raise protocol.ProtocolError("malformed notebook grades")
    got: dict[str, float] = {}
    msgs = []
    for cell in cells:
        if type(cell) is not list or len(cell) != 5 or type(cell[0]) is not str or type(cell[1]) not in (int, float):
            raise protocol.ProtocolError("malformed notebook grade")
        got[cell[0]] = float(cell[1])
        msgs.append(f"{cell[0]}: {str(cell[4])[:300]}")
    total = sum(maxima.values())
    earned = sum(min(max(got.get(gid, 0.0), 0.0), mx) for gid, mx in maxima.items())
    row.score = round(nb.points * earned / total, 4) if total > 0 else 0.0
    row.status = "passed" if total > 0 and earned >= total else "failed"
    row.message = f"{earned:g} of {total:g} notebook points"
    row.feedback = "\n".join(msgs)
