"""Release: the student starter repository of a stage, cut out of the one reference source.

    release("a1", Path("out/a1"))          # `grader release a1 -o out/a1`

writes a starter repository for stage A1:

    README.md                  the handout, the task table, setup and rules
    pyproject.toml             the student package: the library's dependencies, a `dev` extra
                               (pytest, hypothesis), a `notebooks` extra (Jupyter) for a
                               stage with notebooks; never the grader's or PyTorch; pytest
                               config with every task marker registered
    .github/workflows/tests.yml  CI: install, run the public tests of stages ≤ A1
    .github/workflows/classroom.yml  GitHub Classroom: each A1 task's public tests, for its points
    .gitignore
    minitorch/                 fences of A1 and later: `raise NotImplementedError("Task …")`
                               between the kept markers; earlier stages: the reference
                               (rendered by `grader.trees.child_tree`; ``reference_only`` files of A1
                               and later are left out)
    minitorch/_release.py      STAGE = "a1", DEFAULT_BACKEND = "simple" ("fast" from A4)
    tests/public/              the public tests of the tasks of stages ≤ A1 (+ helpers)
    notebooks/backprop.ipynb   the stage's notebooks, released by nbgrader

(README.md, pyproject.toml, tests.yml and .gitignore are written by `grader.release.scaffold`,
classroom.yml by `grader.release.classroom`.) The release is deterministic (sorted walks, no timestamps, fixed notebook metadata), holds
no reference code of the released stage or later and nothing of `grader/`: this module
never copies a hidden check, a solution notebook or a withheld file.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .classroom import classroom_workflow
from .scaffold import _GITIGNORE, _pyproject, _readme, _workflow
from grader.core.fences import Fence, render
from grader.core.manifest import all_manifests, stage_number
from grader.core.results import Problem
from grader.trees.child_tree import (
    fence_stage,
    fence_titles,
    kit_root,
    reference_only_files,
    release_module_source,
    render_package,
    write_file,
)

__all__ = ["ReleaseError", "ReleaseResult", "release"]


class ReleaseError(RuntimeError):
    """The release cannot be written (unknown stage, missing file, a test that imports the grader…)."""


@dataclass(frozen=True)
class ReleaseResult:
    """What `release` wrote.

    Attributes:
        stage: the released stage.
        out_dir: the starter repository.
        files: every file written, as sorted POSIX paths relative to out_dir.
        stubbed: task ids of the fences replaced by stubs (the stage and later).
        filled: task ids of the fences that keep the reference (earlier stages).
        public_tests: the test files shipped (paths relative to out_dir).
        notebooks: the notebooks shipped (paths relative to out_dir).
    """

    stage: str
    out_dir: Path
    files: tuple[str, ...]
    stubbed: tuple[str, ...]
    filled: tuple[str, ...]
    public_tests: tuple[str, ...]
    notebooks: tuple[str, ...]


# ---------------------------------------------------------------------------- release


def _test_helpers(public_dir: Path, files: Iterable[str]) -> list[str]:
    """Helper modules of tests/public/ (e.g. strategies.py) imported by `files`, transitively."""
    local = {p.stem for p in public_dir.glob("*.py") if not p.name.startswith("test_")}
    root = public_dir.parents[1]
    wanted: set[str] = set()
    todo = list(files)
    while todo:
        rel = todo.pop()
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), rel)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level in (0, 1) and node.module:
                names = [node.module.split(".")[0]]
            for n in names:
                helper = f"tests/public/{n}.py"
                if n in local and helper not in wanted:
                    wanted.add(helper)
                    todo.append(helper)
    return sorted(wanted)


def _imports_grader(text: str, name: str) -> bool:
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "grader" for a in node.names):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "grader"
        ):
            return True
    return False


def release(
    stage: str, out_dir: Path, *, repo_root: Path | str | None = None, force: bool = False
) -> ReleaseResult:
    """Write the student starter repository of `stage` to `out_dir`.

    `out_dir` must not exist or be empty; with `force=True` an earlier release there
    (a folder holding minitorch/_release.py) is replaced.

    Raises:
        ReleaseError: unknown stage, a non-empty out_dir, a missing public test or notebook,
            a public test that imports the grader.
        FenceError / ManifestError: a malformed fence or manifest.
    """
    root = kit_root(repo_root)
    out_dir = Path(out_dir)
    manifests = all_manifests(root)
    if stage not in manifests:
        raise ReleaseError(f"no assignment for stage {stage!r} (stages: {', '.join(manifests) or 'none'})")
    manifest = manifests[stage]
    n = stage_number(stage)

    # Public tests of every task of stages ≤ n (checked before anything is written).
    tasks = [t for s, m in manifests.items() if stage_number(s) <= n for t in m.tasks]
    listed = sorted({p for t in tasks for p in t.public_tests})
    for rel in listed:
        if not rel.startswith("tests/public/"):
            raise ReleaseError(
                f"public test {rel} (listed in a manifest) is not in tests/public/: only that folder ships"
            )
        if not (root / rel).is_file():
            raise ReleaseError(f"public test {rel} (listed in a manifest) does not exist")
    shipped = set(listed) | set(_test_helpers(root / "tests" / "public", listed))
    if (root / "tests" / "conftest.py").is_file():
        shipped.add("tests/conftest.py")
    tests: dict[str, str] = {}
    for rel in sorted(shipped):
        tests[rel] = (root / rel).read_text(encoding="utf-8")
        if _imports_grader(tests[rel], rel):
            raise ReleaseError(f"{rel} imports the grader: it cannot ship to students")

    if out_dir.exists() and any(out_dir.iterdir()):
        if force and (out_dir / "minitorch" / "_release.py").is_file():
            shutil.rmtree(out_dir)
        else:
            raise ReleaseError(
                f"{out_dir} is not empty: choose an empty folder, or --force to replace an earlier release there"
                if not force
                else f"{out_dir} is not empty and does not hold an earlier release (--force replaces only a release)"
            )
    out_dir.mkdir(parents=True, exist_ok=True)

    titles = fence_titles(manifests)
    stubbed: set[str] = set()
    filled: set[str] = set()

    def choose(rel: Path, fences: list[Fence], text: str) -> tuple[str, list[Problem]]:
        ids = {f.task for f in fences}
        keep = {t for t in ids if fence_stage(t) < n}
        stub = ids - keep
        filled.update(keep)
        stubbed.update(stub)
        return render(text, keep=keep, stub=stub, titles=titles, filename=f"minitorch/{rel.as_posix()}")

    render_package(root / "minitorch", out_dir / "minitorch", choose, reference_only_files(stage, manifests))
    write_file(out_dir / "minitorch" / "_release.py", release_module_source(stage))

    for rel, text in tests.items():
        write_file(out_dir / rel, text)

    # Notebooks of this stage, released by nbgrader.
    notebooks: list[str] = []
    if manifest.notebooks:
        from grader.notebooks.parts import release_notebook

        for part in manifest.notebooks:
            rel = f"notebooks/{part.name}"
            release_notebook(root / "solutions" / part.path, out_dir / rel)
            notebooks.append(rel)

    write_file(out_dir / "pyproject.toml", _pyproject(stage, manifest, root))
    write_file(out_dir / "README.md", _readme(stage, manifest, tasks, notebooks))
    write_file(out_dir / ".github" / "workflows" / "tests.yml", _workflow(stage, tasks))
    write_file(out_dir / ".github" / "workflows" / "classroom.yml", classroom_workflow(manifest))
    write_file(out_dir / ".gitignore", _GITIGNORE)

    files = sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file())
    return ReleaseResult(
        stage=stage,
        out_dir=out_dir,
        files=tuple(files),
        stubbed=tuple(sorted(stubbed, key=_task_key)),
        filled=tuple(sorted(filled, key=_task_key)),
        public_tests=tuple(tests),  # sorted keys
        notebooks=tuple(notebooks),
    )


def _task_key(task_id: str) -> tuple[int, int]:
    a, b = task_id.split(".")
    return int(a), int(b)
