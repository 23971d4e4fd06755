"""Trees: copies of the reference ``minitorch/`` with each fence's body chosen by stage.

Both products cut out of the one reference source are made here:

* the package of a student release (`grader.release.starter`): fences of the released stage and
  later become stubs, earlier stages keep the reference;
* the child tree the sandbox imports when grading (`build_child_tree`): the reference's
  code outside fences, the student's fence bodies for the graded stage (matched by task,
  function and order), the reference for earlier stages and stubs for later ones.

Files a manifest lists as ``reference_only`` are left out of both for that stage and every
earlier one (they hold a stage's reference technique outside fences).

    build_child_tree("a1", submission, Path("tree"))                      -> list[Problem]
    build_child_tree("a1", submission, Path("tree"), isolate_task="1.3")  # others: reference

Isolating a task X gives the stage's other tasks the reference, except where a fence of
another task shares state with a fence of X (`shared_state`: a Function's forward fills
the ``ctx`` its backward reads): that fence comes from the student too, unless the student
left it a stub. Whole Function classes travel together rather than whole tasks because
the state is per class: pairing 1.2 with 1.3 would also bring in the student's Scalar
operators, which share nothing with chain_rule, and lose the isolation the option is for.
Every stage was scanned for fences that store state (``ctx.save_for_backward``, attribute
assignments, ``global``): only the Functions of A1 (1.2/1.3) and A2 (2.3/2.4) do so across
tasks (`tests/grader/test_grader_isolate.py` repeats the scan, so a new case fails it).

Only the fences are the student's: `grader.trees.outside_code` reports a file whose code
outside the markers differs from the release (a helper function, an import), which the tree drops.
A body that does not compile or leaves its function (`grader.trees.fence_guard`) is replaced by
the stub and reported as a `BrokenFence`, so that it costs its own task only; `build_tree`
also says where each student body lies in the tree, and takes bodies to stub
(`stub_fences`) when one breaks the import in a way only running it shows
(`grader.grading.import_guard`).

This layer writes files only: it never imports or runs the code it writes, and reads the
submission only through `grader.trees.intake`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Callable, Mapping, Optional

from .fence_guard import PlacedFence, guard_render
from grader.core.fences import Fence, find_fences, is_stub, render, student_bodies
from .intake import SKIP_DIRS, find_package, open_submission, read_student_file
from .outside_code import outside_code_problem
from grader.core.manifest import (
    Manifest,
    all_manifests,
    repo_root as _default_root,
    stage_number,
    stage_of_task,
)
from grader.core.results import Problem
from grader.core.shared_state import shared_state

__all__ = [
    "ChildTree",
    "build_child_tree",
    "build_tree",
    "default_backend",
    "fence_titles",
    "reference_only_files",
    "release_module_source",
    "render_package",
    "shared_state",
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
    """ "1.3" → 1."""
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
    withheld files (``minitorch/…``); paths relative to the package.

    A subpackage whose modules are all withheld is left out whole: its ``__init__.py``
    alone would show a student a package of the reference's machinery with nothing in it
    (``minitorch/accel/`` before A4)."""
    files, emptied = [], set()
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(package)
            if _skipped(rel) or rel.name == "_release.py":
                continue
            if f"minitorch/{rel.as_posix()}" in withheld:
                emptied.add(rel.parent)
                continue
            files.append(rel)
    for folder in emptied:
        if folder != Path(".") and [f for f in files if folder in f.parents] == [folder / "__init__.py"]:
            files.remove(folder / "__init__.py")
    return sorted(files, key=lambda p: p.as_posix())


def write_file(path: Path, data: bytes | str) -> None:
    """Write bytes or UTF-8 text, creating the parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


def render_package(
    package: Path, out_package: Path, choose: Chooser, withheld: frozenset[str] = frozenset()
) -> list[Problem]:
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


@dataclass
class ChildTree:
    """What `build_tree` wrote: the problems for the student, and where each of the
    student's fence bodies lies in the tree."""

    problems: list[Problem] = field(default_factory=list)
    placed: list[PlacedFence] = field(default_factory=list)


def build_child_tree(
    stage: str,
    submission_dir: Path,
    out_dir: Path,
    *,
    isolate_task: Optional[str] = None,
    repo_root: Path | str | None = None,
) -> list[Problem]:
    """`build_tree(...).problems`: write the child tree, return the problems."""
    return build_tree(stage, submission_dir, out_dir, isolate_task=isolate_task, repo_root=repo_root).problems


def build_tree(
    stage: str,
    submission_dir: Path,
    out_dir: Path,
    *,
    isolate_task: Optional[str] = None,
    repo_root: Path | str | None = None,
    stub_fences: AbstractSet[tuple[str, str, str, int]] = frozenset(),
    with_partners: bool = True,
    all_reference: bool = False,
    reference_tasks: AbstractSet[str] = frozenset(),
) -> ChildTree:
    """Write out_dir/minitorch, the package the grading child imports for `stage`.

    Args:
        stage: the graded stage, e.g. "a1".
        submission_dir: the student's repository (a directory or a zip).
        out_dir: where to write; out_dir/minitorch is replaced.
        isolate_task: grade one task alone: its fences come from the student, the other
            fences of the stage from the reference, except those sharing state with one
            of its fences (`shared_state`), which come from the student where written.
        repo_root: the kit (default: the grader's own checkout).
        stub_fences: student bodies to leave out, as `PlacedFence.ref` names them (file,
            fence id, function, order); the caller reports why.
        with_partners: with isolate_task, false takes the fences sharing state with the task's
            from the reference too: the student's backward run after the reference's
            forward (`grader.grading.one_charge` tries this when the student's own forward fails).
        all_reference: every fence of the stage from the reference, none from the student
            (the tree a notebook part is graded in again: `grader.grading.one_charge`).
        reference_tasks: every fence of these tasks of the stage from the reference (fences
            sharing state with the student's included), the other tasks the student's: the
            whole tree with the tasks shown to be wrong replaced (`grader.grading.one_charge`).

    Returns:
        The problems for the student (missing files, damaged or missing fences, code
        outside the fences that differs from the release, fences that do not compile or
        escape: `BrokenFence`), in file order, and the student's bodies in the tree.

    Raises:
        SubmissionError: the submission cannot be opened safely (bad or unsafe zip).
        ValueError: isolate_task or one of reference_tasks is not a task of the stage, or
            more than one of isolate_task, all_reference and reference_tasks is given.
    """
    root = kit_root(repo_root)
    n = stage_number(stage)
    manifests = all_manifests(root)
    if stage not in manifests:
        raise ValueError(f"no assignment for stage {stage!r}")
    manifest = manifests[stage]
    student_fences: Optional[set[str]] = set() if all_reference else None
    if isolate_task is not None:
        try:
            student_fences = set(manifest.task(isolate_task).fences)
        except KeyError:
            raise ValueError(f"isolate_task={isolate_task!r} is not a task of stage {stage}") from None
    if reference_tasks:
        if isolate_task is not None or all_reference:
            raise ValueError("reference_tasks cannot be combined with isolate_task or all_reference")
        unknown = set(reference_tasks) - {t.id for t in manifest.tasks}
        if unknown:
            raise ValueError(f"reference_tasks: {', '.join(sorted(unknown))} not tasks of stage {stage}")
        student_fences = {f for t in manifest.tasks if t.id not in reference_tasks for f in t.fences}
        with_partners = False

    out_dir = Path(out_dir)
    out_package = out_dir / "minitorch"
    if out_package.exists():
        shutil.rmtree(out_package)
    out_dir.mkdir(parents=True, exist_ok=True)
    titles = fence_titles(manifests)
    task_of = {f: t.id for t in manifest.tasks for f in t.fences}
    built = ChildTree()

    with tempfile.TemporaryDirectory(prefix="minitorch-submission-") as tmp:
        sub_root = open_submission(Path(submission_dir), Path(tmp))
        package = find_package(sub_root)
        if package is None:
            built.problems.append(
                Problem(
                    "no minitorch/ package found in the submission — every task is graded as not implemented"
                )
            )

        def choose(rel: Path, fences: list[Fence], text: str) -> tuple[str, list[Problem]]:
            ids = {f.task for f in fences}
            keep = {t for t in ids if fence_stage(t) < n}
            stub = {t for t in ids if fence_stage(t) > n}
            staged = ids - keep - stub
            mine = set(staged)
            partners: set[tuple[str, str]] = set()
            if student_fences is not None:
                keep |= mine - student_fences
                mine &= student_fences
                for group in shared_state(text, fences) if with_partners and mine else ():
                    if any(f.task in mine for f in group):
                        partners |= {(f.task, f.function) for f in group if f.task in staged - mine}
            name = f"minitorch/{rel.as_posix()}"
            if not mine:
                return render(text, keep=keep, stub=stub, titles=titles, filename=name)
            student_text, problem = (None, None) if package is None else read_student_file(package, rel)
            if student_text is None:
                out, _ = render(text, keep=keep, stub=stub | mine, titles=titles, filename=name)
                return out, [problem] if problem else []
            parsed = student_bodies(student_text, name)
            own = {
                k
                for k, body in parsed.bodies.items()
                if k[0] in mine or ((k[0], k[1]) in partners and not is_stub(body))
            }
            guarded = guard_render(
                text,
                name,
                lambda left: render(
                    text,
                    keep=keep,
                    stub=stub,
                    from_student=mine,
                    student=parsed,
                    partners=partners,
                    titles=titles,
                    filename=name,
                    leave_out=left,
                ),
                parsed,
                own,
                task_of,
                {(t, f, i) for file, t, f, i in stub_fences if file == name},
            )
            out, found = guarded.text, guarded.problems
            built.placed.extend(guarded.placed)
            relevant = [p for p in parsed.problems if not p.tasks or set(p.tasks) & mine]
            file_tasks = tuple(sorted({task_of.get(t, t) for t in staged}))
            outside = outside_code_problem(text, student_text, parsed, name, file_tasks)
            return out, relevant + found + ([outside] if outside else [])

        built.problems.extend(
            render_package(root / "minitorch", out_package, choose, reference_only_files(stage, manifests))
        )
    write_file(out_package / "_release.py", release_module_source(stage))
    return built
