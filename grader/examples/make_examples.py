"""Write the bundled example submissions (run from the kit's root; output is committed):

    python -m grader.examples.make_examples

* ``a1-complete/``  — the stage's files with the reference bodies, and the notebook solved:
  full marks.
* ``a1-two-wrong/`` — the same with two tasks wrong: a one-sided difference in
  `central_difference` (1.1) and `Log.backward` multiplying by a instead of dividing (1.3).
* ``a1-no-import/`` — a syntax error in `minitorch/scalar.py`: nothing imports, every
  task is an error with the line to fix.

A submission holds only the files with the stage's fences (the grader takes nothing else
from a student) plus, where it is solved, the notebook. Everything is derived from the
kit (reference fences, the released notebook), so the examples never drift from it;
writing them twice gives the same bytes.

`submission_files` and `write_submission` are also what the grader's tests use to make
broken submissions: reference fence bodies with one body replaced.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Mapping, Optional

from ..fences import find_fences
from ..manifest import load_manifest, repo_root

HERE = Path(__file__).resolve().parent

#: (task, enclosing function) → replacement body (unindented; indented to the fence).
Edits = Mapping[tuple[str, str], str]


def stage_files(stage: str) -> list[str]:
    """Paths (``minitorch/…``) of the reference files holding the stage's fences."""
    from ..fences import package_fences

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
    out_dir = Path(out_dir)
    files = submission_files(stage, edits)
    files.update(extra or {})
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return out_dir


def solved_notebook(stage: str, name: str) -> str:
    """The released (student) notebook with the solution cells filled in from the source.

    Built from the release, so no hidden test of the source is copied.
    """
    import tempfile

    import nbformat

    from ..notebooks import release_notebook

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


# ---- the bundled examples

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


def examples() -> dict[str, dict[str, str]]:
    """Example name → files (path → text)."""
    notebook = {f"notebooks/{n.name}": solved_notebook("a1", n.name) for n in load_manifest("a1").notebooks}
    complete = {**submission_files("a1"), **notebook}
    two_wrong = {
        **submission_files("a1", {("1.1", "central_difference"): ONE_SIDED, ("1.3", "Log.backward"): LOG_BACKWARD_WRONG}),
        **notebook,
    }
    no_import = submission_files("a1", {("1.2", "Scalar.__add__"): SCALAR_SYNTAX_ERROR})
    return {"a1-complete": complete, "a1-two-wrong": two_wrong, "a1-no-import": no_import}


def main(out: Path = HERE) -> int:
    for name, files in examples().items():
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        for rel, text in sorted(files.items()):
            path = target / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
