"""Example submissions, generated from the reference and a table of named edits.

    grader example                         # the names, with what each shows
    grader example a1-two-wrong -o DIR     # write that submission into DIR
    grader run DIR -a a1

Nothing is committed: an example is the stage's files with the reference's fence bodies
(`submission_files`), some bodies replaced by the edits of `EXAMPLES`, plus — where it is
solved — the released notebook with the solution cells filled in. So the examples never
drift from the kit, and writing one twice gives the same bytes.

A submission holds only the files with the stage's fences (the grader takes nothing else
from a student). `submission_files` and `write_submission` are also what the grader's
tests use to make broken submissions: reference fence bodies with one body replaced.
This module writes files only where it is told to, and never into the kit.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from .fences import find_fences, package_fences
from .manifest import load_manifest, repo_root

__all__ = [
    "EXAMPLES",
    "Example",
    "ExampleError",
    "example_files",
    "solved_notebook",
    "submission_files",
    "write_example",
    "write_files",
    "write_submission",
]

#: (task, enclosing function) → replacement body (unindented; indented to the fence).
Edits = Mapping[tuple[str, str], str]


def stage_files(stage: str) -> list[str]:
    """Paths (``minitorch/…``) of the reference files holding the stage's fences."""
    ids = {f for t in load_manifest(stage).tasks for f in t.fences}
    fences = package_fences(repo_root() / "minitorch")
    return sorted(rel for rel, fs in fences.items() if any(f.task in ids for f in fs))


def splice(text: str, task: str, function: str, body: str, filename: str = "<string>") -> str:
    """`text` with the body of the fence of `task` inside `function` replaced by `body`."""
    fences = [f for f in find_fences(text, filename) if f.task == task and f.function == function]
    if not fences:
        raise KeyError(f"{filename}: no fence of task {task} in {function}")
    lines = text.splitlines(keepends=True)
    for fence in sorted(fences, key=lambda f: -f.begin):  # bottom-up keeps line numbers valid
        new = [fence.indent + line + "\n" if line.strip() else "\n" for line in body.strip("\n").splitlines()]
        lines[fence.begin : fence.end - 1] = new
    return "".join(lines)


def submission_files(stage: str, edits: Optional[Edits] = None) -> dict[str, str]:
    """The stage's files with reference bodies, `edits` applied: path → text."""
    root = repo_root()
    out = {}
    remaining = dict(edits or {})
    for rel in stage_files(stage):
        text = (root / rel).read_text(encoding="utf-8")
        for (task, function), body in list(remaining.items()):
            if any(f.task == task and f.function == function for f in find_fences(text, rel)):
                text = splice(text, task, function, body, rel)
                del remaining[(task, function)]
        out[rel] = text
    if remaining:
        raise KeyError(f"no fence for {sorted(remaining)} in the files of stage {stage}")
    return out


def write_submission(out_dir: Path, stage: str, edits: Optional[Edits] = None, extra: Optional[Mapping[str, str]] = None) -> Path:
    """Write a submission directory: the stage's files (with `edits`) and `extra` files."""
    files = submission_files(stage, edits)
    files.update(extra or {})
    return write_files(Path(out_dir), files)


def write_files(out_dir: Path, files: Mapping[str, str]) -> Path:
    """Write `files` (path relative to out_dir → text) under `out_dir`; returns out_dir."""
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return out_dir


def solved_notebook(stage: str, name: str) -> str:
    """The released (student) notebook with the solution cells filled in from the source.

    Built from the release, so no hidden test of the source is copied.
    """
    import nbformat

    from .notebooks import release_notebook  # nbgrader: loaded only for solved notebooks

    part = next(n for n in load_manifest(stage).notebooks if n.name == name)
    source = repo_root() / "solutions" / part.path
    with tempfile.TemporaryDirectory() as tmp:
        released = Path(tmp) / name
        release_notebook(source, released)
        nb = nbformat.read(str(released), as_version=4)
    src = nbformat.read(str(source), as_version=4)
    solutions = {}
    for cell in src.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and not meta.get("grade"):
            solutions[meta["grade_id"]] = cell.source
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") in solutions:
            cell.source = _strip_markers(solutions[meta["grade_id"]])
    return nbformat.writes(nb, version=4) + "\n"


def _strip_markers(source: str) -> str:
    keep = [line for line in source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
    return "\n".join(keep)


# ---------------------------------------------------------------------------- the examples

ONE_SIDED = """\
up = list(vals)
up[arg] = up[arg] + epsilon
return (f(*up) - f(*vals)) / epsilon  # one-sided: error O(ε), not O(ε²)
"""
LOG_BACKWARD_WRONG = """\
(a,) = ctx.saved_values
return operators.mul(a, d_output)  # should be d / a
"""
SCALAR_SYNTAX_ERROR = """\
return Add.apply(self, b
"""


class ExampleError(ValueError):
    """An unknown example name, or an output directory that holds something else."""


@dataclass(frozen=True)
class Example:
    """A named example submission: the stage's reference bodies with `edits` applied.

    Attributes:
        stage: the stage it is graded for.
        about: one line for `grader example` (what grading it shows).
        edits: (task, enclosing function) → replacement body.
        notebooks: include the stage's notebooks, solved.
    """

    stage: str
    about: str
    edits: Mapping[tuple[str, str], str] = field(default_factory=dict)
    notebooks: bool = True


#: The examples by name (`grader example NAME -o DIR`).
EXAMPLES: dict[str, Example] = {
    "a1-complete": Example("a1", "the reference bodies and the notebook solved: full marks"),
    "a1-two-wrong": Example(
        "a1",
        "two tasks wrong: a one-sided difference (1.1) and Log.backward multiplying by a (1.3)",
        {("1.1", "central_difference"): ONE_SIDED, ("1.3", "Log.backward"): LOG_BACKWARD_WRONG},
    ),
    "a1-no-import": Example(
        "a1",
        "a syntax error in minitorch/scalar.py: nothing imports, every task is an error with the line to fix",
        {("1.2", "Scalar.__add__"): SCALAR_SYNTAX_ERROR},
        notebooks=False,
    ),
}


def example_files(name: str) -> dict[str, str]:
    """The files (path → text) of the example `name`."""
    if name not in EXAMPLES:
        raise ExampleError(f"no example {name!r} (examples: {', '.join(EXAMPLES)})")
    ex = EXAMPLES[name]
    files = submission_files(ex.stage, ex.edits)
    if ex.notebooks:
        for part in load_manifest(ex.stage).notebooks:
            files[f"notebooks/{part.name}"] = solved_notebook(ex.stage, part.name)
    return files


def write_example(name: str, out_dir: Path) -> list[str]:
    """Write the example `name` into `out_dir`; return the paths written (sorted).

    `out_dir` may exist when it holds nothing but files this example writes (an earlier
    copy, replaced); anything else there is an `ExampleError`, and nothing is written.
    """
    files = example_files(name)
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ExampleError(f"{out_dir} is not a directory")
        present = {p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        other = sorted(present - set(files))
        if other:
            raise ExampleError(f"{out_dir} holds files that are not part of example {name} ({', '.join(other[:3])}…): choose an empty or new directory")
    write_files(out_dir, files)
    return sorted(files)
