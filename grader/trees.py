"""Trees: copies of the reference ``minitorch/`` with each fence's body chosen by stage.

Both products cut out of the one reference source are made here:

* the package of a student release (`grader.release`): fences of the released stage and
  later become stubs, earlier stages keep the reference;
* the child tree the sandbox imports when grading (`build_child_tree`): the reference's
  code outside fences, the student's fence bodies for the graded stage (matched by task,
  function and order), the reference for earlier stages and stubs for later ones.

Files a manifest lists as ``reference_only`` are left out of both for that stage and every
earlier one (they hold a stage's reference technique outside fences).

    build_child_tree("a1", submission, Path("tree"))                      -> list[Problem]
    build_child_tree("a1", submission, Path("tree"), isolate_task="1.3")  # others: reference

This layer writes files only: it never imports or runs the code it writes, and reads the
submission only through `grader.intake`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional

from .fences import Fence, find_fences, render, student_bodies
from .intake import SKIP_DIRS, find_package, open_submission, read_student_file
from .manifest import Manifest, all_manifests, repo_root as _default_root, stage_number, stage_of_task
from .results import Problem

__all__ = [
    "build_child_tree",
    "default_backend",
    "fence_titles",
    "reference_only_files",
    "release_module_source",
    "render_package",
]

_SKIP_SUFFIXES = {".pyc", ".pyo", ".nbi", ".nbc"}
_SKIP_NAMES = {".DS_Store"}

#: ``choose(rel, fences, text) -> (text, problems)``: renders one file with fences.
Chooser = Callable[[Path, list[Fence], str], tuple[str, list[Problem]]]


def kit_root(repo_root: Path | str | None) -> Path:
    """The kit to read from: `repo_root`, or the grader's own checkout."""
    return Path(repo_root).resolve() if repo_root is not None else _default_root()


def default_backend(stage: str) -> str:
    """The backend a release of `stage` uses by default: "simple" up to A3 (students
    write the fast backends in A3), "fast" from A4 on."""
    return "simple" if stage_number(stage) <= 3 else "fast"


def release_module_source(stage: str) -> str:
    """The text of `minitorch/_release.py` for a release (or child tree) of `stage`."""
    return (
        '"""Written by `grader release`: which stage this copy of minitorch is."""\n\n'
        f'STAGE = "{stage}"\n'
        f'DEFAULT_BACKEND = "{default_backend(stage)}"\n'
    )


def fence_titles(manifests: Mapping[str, Manifest]) -> dict[str, str]:
    """Fence id → title of the task that covers it (for the stubs' messages)."""
    titles: dict[str, str] = {}
    for m in manifests.values():
        for t in m.tasks:
            for f in t.fences:
                titles[f] = t.title
    return titles


def fence_stage(fence_id: str) -> int:
    """"1.3" → 1."""
    return stage_number(stage_of_task(fence_id))


def reference_only_files(stage: str, manifests: Mapping[str, Manifest]) -> frozenset[str]:
    """Files (``minitorch/…``) withheld from a release or child tree of `stage`: those
    listed as ``reference_only`` by this stage or a later one."""
    n = stage_number(stage)
    return frozenset(rel for s, m in manifests.items() if stage_number(s) >= n for rel in m.reference_only)


def _skipped(rel: Path) -> bool:
    return (
        any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts)
        or rel.suffix in _SKIP_SUFFIXES
        or rel.name in _SKIP_NAMES
    )


def _package_files(package: Path, withheld: frozenset[str]) -> list[Path]:
    """Files of the reference package, sorted, without caches, `_release.py` and the
    withheld files (``minitorch/…``); paths relative to the package."""
    files = []
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(package)
            if _skipped(rel) or rel.name == "_release.py" or f"minitorch/{rel.as_posix()}" in withheld:
                continue
            files.append(rel)
    return sorted(files, key=lambda p: p.as_posix())


def write_file(path: Path, data: bytes | str) -> None:
    """Write bytes or UTF-8 text, creating the parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


def render_package(package: Path, out_package: Path, choose: Chooser, withheld: frozenset[str] = frozenset()) -> list[Problem]:
    """Copy the reference package to out_package (leaving out `withheld`), rendering every
    .py file with fences through `choose(rel, fences, text) -> (text, problems)`."""
    problems: list[Problem] = []
    for rel in _package_files(package, withheld):
        src = package / rel
        dst = out_package / rel
        if rel.suffix == ".py":
            text = src.read_text(encoding="utf-8")
            fences = find_fences(text, f"minitorch/{rel.as_posix()}")
            if fences:
                text, found = choose(rel, fences, text)
                problems.extend(found)
            write_file(dst, text)
        else:
            write_file(dst, src.read_bytes())
    return problems


def build_child_tree(
    stage: str,
    submission_dir: Path,
    out_dir: Path,
    *,
    isolate_task: Optional[str] = None,
    repo_root: Path | str | None = None,
) -> list[Problem]:
    """Write out_dir/minitorch, the package the grading child imports for `stage`.

    Args:
        stage: the graded stage, e.g. "a1".
        submission_dir: the student's repository (a directory or a zip).
        out_dir: where to write; out_dir/minitorch is replaced.
        isolate_task: grade one task alone: its fences come from the student, the other
            fences of the stage from the reference.
        repo_root: the kit (default: the grader's own checkout).

    Returns:
        Problems for the student (missing files, damaged or missing fences), in file order.

    Raises:
        SubmissionError: the submission cannot be opened safely (bad or unsafe zip).
        ValueError: isolate_task is not a task of the stage.
    """
    root = kit_root(repo_root)
    n = stage_number(stage)
    manifests = all_manifests(root)
    if stage not in manifests:
        raise ValueError(f"no assignment for stage {stage!r}")
    manifest = manifests[stage]
    student_fences: Optional[set[str]] = None
    if isolate_task is not None:
        try:
            student_fences = set(manifest.task(isolate_task).fences)
        except KeyError:
            raise ValueError(f"isolate_task={isolate_task!r} is not a task of stage {stage}") from None

    out_dir = Path(out_dir)
    out_package = out_dir / "minitorch"
    if out_package.exists():
        shutil.rmtree(out_package)
    out_dir.mkdir(parents=True, exist_ok=True)
    titles = fence_titles(manifests)
    problems: list[Problem] = []

    with tempfile.TemporaryDirectory(prefix="minitorch-submission-") as tmp:
        sub_root = open_submission(Path(submission_dir), Path(tmp))
        package = find_package(sub_root)
        if package is None:
            problems.append(Problem("no minitorch/ package found in the submission — every task is graded as not implemented"))

        def choose(rel: Path, fences: list[Fence], text: str) -> tuple[str, list[Problem]]:
            ids = {f.task for f in fences}
            keep = {t for t in ids if fence_stage(t) < n}
            stub = {t for t in ids if fence_stage(t) > n}
            mine = ids - keep - stub
            if student_fences is not None:
                keep |= mine - student_fences
                mine &= student_fences
            name = f"minitorch/{rel.as_posix()}"
            if not mine:
                return render(text, keep=keep, stub=stub, titles=titles, filename=name)
            student_text, problem = (None, None) if package is None else read_student_file(package, rel)
            if student_text is None:
                out, _ = render(text, keep=keep, stub=stub | mine, titles=titles, filename=name)
                return out, [problem] if problem else []
            parsed = student_bodies(student_text, name)
            out, found = render(text, keep=keep, stub=stub, from_student=mine, student=parsed,
                                titles=titles, filename=name)
            relevant = [p for p in parsed.problems if not p.tasks or set(p.tasks) & mine]
            return out, relevant + found

        problems.extend(render_package(root / "minitorch", out_package, choose, reference_only_files(stage, manifests)))
    write_file(out_package / "_release.py", release_module_source(stage))
    return problems
