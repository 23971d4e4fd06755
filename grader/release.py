"""Student releases and the grader's child trees, both cut out of the one reference source.

    release("a1", Path("out/a1"))          # `grader release a1 -o out/a1`

writes a starter repository for stage A1:

    README.md                  the handout, the task table, setup and rules
    pyproject.toml             the student package (same dependencies, no grader), pytest
                               config with every task marker registered
    .github/workflows/tests.yml  CI: install, run the public tests of stages ≤ A1
    .gitignore
    minitorch/                 fences of A1 and later: `raise NotImplementedError("Task …")`
                               between the kept markers; earlier stages: the reference
    minitorch/_release.py      STAGE = "a1", DEFAULT_BACKEND = "simple" ("fast" from A4)
    tests/                     the public tests of the tasks of stages ≤ A1 (+ helpers)
    notebooks/backprop.ipynb   the stage's notebooks, released by nbgrader

The release is deterministic (sorted walks, no timestamps, fixed notebook metadata), holds
no reference code of the released stage or later and nothing of `grader/`.

    build_child_tree("a1", submission, Path("tree"))

writes the package the sandboxed child imports when grading stage A1: the reference's
code outside fences, the student's fence bodies for A1 (matched by task, function and
order), the reference for earlier stages and stubs for later ones. With
`isolate_task="1.3"` every other A1 task gets the reference too, so one task is graded
without depending on the student's other tasks. Submissions may be a directory or a zip
(extracted safely); anything missing or damaged becomes a stub and a problem message.

Interfaces (agreed with `grader/cli.py`):

    release(stage: str, out_dir: Path, *, repo_root=None, force=False) -> ReleaseResult
    build_child_tree(stage: str, submission_dir: Path, out_dir: Path, *,
                     isolate_task: str | None = None, repo_root=None) -> list[str]
    open_submission(submission: Path, workdir: Path) -> Path   # dir, or zip extracted
    find_package(root: Path) -> Path | None
    find_notebook(root: Path, name: str) -> Path | None
    release_module_source(stage: str) -> str                    # minitorch/_release.py
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from .fences import Fence, find_fences, render, student_bodies
from .manifest import Manifest, Task, all_manifests, repo_root as _default_root, stage_number, stage_of_task

__all__ = [
    "ReleaseError",
    "ReleaseResult",
    "SubmissionError",
    "build_child_tree",
    "default_backend",
    "find_notebook",
    "find_package",
    "open_submission",
    "release",
    "release_module_source",
]

#: Limits on what a submission may hold.
MAX_SUBMISSION_BYTES = 64 * 1024 * 1024
MAX_SUBMISSION_FILES = 5000
MAX_SOURCE_BYTES = 2 * 1024 * 1024

_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", ".mypy_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo", ".nbi", ".nbc"}
_SKIP_NAMES = {".DS_Store"}


class ReleaseError(RuntimeError):
    """The release cannot be written (unknown stage, missing file, a test that imports the grader…)."""


class SubmissionError(ValueError):
    """A submission that cannot be read safely (unsafe zip, too large)."""


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


# ---------------------------------------------------------------------------- helpers


def _root(repo_root: Path | str | None) -> Path:
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


def _skipped(rel: Path) -> bool:
    return (
        any(part in _SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts)
        or rel.suffix in _SKIP_SUFFIXES
        or rel.name in _SKIP_NAMES
    )


def _package_files(package: Path) -> list[Path]:
    """Files of the reference package, sorted, without caches; paths relative to it."""
    files = []
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(package)
            if not _skipped(rel) and rel.name != "_release.py":
                files.append(rel)
    return sorted(files, key=lambda p: p.as_posix())


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


def _titles(manifests: dict[str, Manifest]) -> dict[str, str]:
    """Fence id → title of the task that covers it."""
    titles: dict[str, str] = {}
    for m in manifests.values():
        for t in m.tasks:
            for f in t.fences:
                titles[f] = t.title
    return titles


def _fence_stage(fence_id: str) -> int:
    return stage_number(stage_of_task(fence_id))


def _render_package(
    package: Path,
    out_package: Path,
    choose: Callable[[Path, list[Fence], str], tuple[str, list[str]]],
) -> list[str]:
    """Copy the reference package to out_package, rendering every .py file with fences
    through `choose(rel, fences, text) -> (text, problems)`."""
    problems: list[str] = []
    for rel in _package_files(package):
        src = package / rel
        dst = out_package / rel
        if rel.suffix == ".py":
            text = src.read_text(encoding="utf-8")
            name = f"minitorch/{rel.as_posix()}"
            fences = find_fences(text, name)
            if fences:
                text, found = choose(rel, fences, text)
                problems.extend(found)
            _write(dst, text)
        else:
            _write(dst, src.read_bytes())
    return problems


# ---------------------------------------------------------------------------- release


def _test_helpers(tests_dir: Path, files: Iterable[str]) -> list[str]:
    """Helper modules of tests/ (e.g. strategies.py) imported by `files`, transitively."""
    local = {p.stem for p in tests_dir.glob("*.py") if not p.name.startswith("test_")}
    wanted: set[str] = set()
    todo = list(files)
    while todo:
        rel = todo.pop()
        tree = ast.parse((tests_dir.parent / rel).read_text(encoding="utf-8"), rel)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module.split(".")[0]]
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                names = [node.module.split(".")[0]]
            for n in names:
                if n in local and f"tests/{n}.py" not in wanted:
                    wanted.add(f"tests/{n}.py")
                    todo.append(f"tests/{n}.py")
    return sorted(wanted)


def _imports_grader(text: str, name: str) -> bool:
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "grader" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "grader":
            return True
    return False


def _toml_list(values: Iterable[str], indent: str = "    ") -> str:
    items = "".join(f"{indent}{json.dumps(v, ensure_ascii=False)},\n" for v in values)
    return "[\n" + items + "]"


def _pyproject(stage: str, manifest: Manifest, root: Path) -> str:
    """The student's pyproject.toml: the kit's dependencies and pytest configuration."""
    kit = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = kit.get("project", {})
    optional = project.get("optional-dependencies", {})
    dev = [d for d in optional.get("dev", []) if not d.lower().startswith("nbgrader")]
    pytest_cfg = kit.get("tool", {}).get("pytest", {}).get("ini_options", {})
    markers = pytest_cfg.get("markers", [])
    lines = [
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f'name = "minitorch-{stage}"',
        f'version = {json.dumps(project.get("version", "0.1.0"))}',
        f"description = {json.dumps(f'minitorch, assignment {stage.upper()}: {manifest.title}', ensure_ascii=False)}",
        'readme = "README.md"',
        f'requires-python = {json.dumps(project.get("requires-python", ">=3.10"))}',
        f"dependencies = {_toml_list(project.get('dependencies', []))}",
        "",
        "[project.optional-dependencies]",
        f"dev = {_toml_list(dev)}",
    ]
    for key in sorted(optional):
        if key != "dev":
            lines.append(f"{key} = {_toml_list(optional[key])}")
    lines += [
        "",
        "[tool.setuptools.packages.find]",
        'include = ["minitorch*"]',
        "",
        "[tool.setuptools.package-data]",
        '"minitorch" = ["datasets/data/**/*"]',
        "",
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        f'addopts = {json.dumps(pytest_cfg.get("addopts", "--strict-markers -ra"))}',
        f"markers = {_toml_list(markers)}",
    ]
    if pytest_cfg.get("filterwarnings"):
        lines.append(f"filterwarnings = {_toml_list(pytest_cfg['filterwarnings'])}")
    return "\n".join(lines) + "\n"


def _marker_expr(tasks: Iterable[Task]) -> str:
    return " or ".join(t.marker for t in tasks)


def _workflow(stage: str, tasks: list[Task]) -> str:
    env = ""
    if stage_number(stage) >= 3:
        env = "    env:\n      NUMBA_ENABLE_CUDASIM: \"1\"  # CUDA kernels run on the simulator\n"
    return (
        "name: tests\n"
        "on: [push, pull_request]\n"
        "jobs:\n"
        "  public-tests:\n"
        "    runs-on: ubuntu-latest\n"
        f"{env}"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - uses: actions/setup-python@v5\n"
        "        with:\n"
        '          python-version: "3.11"\n'
        "      - name: Install\n"
        '        run: python -m pip install -e ".[dev]"\n'
        "      - name: Public tests\n"
        f"        run: python -m pytest -m {json.dumps(_marker_expr(tasks))}\n"
    )


_GITIGNORE = """__pycache__/
*.py[co]
*.nbi
*.nbc
*.egg-info/
.pytest_cache/
.hypothesis/
.ipynb_checkpoints/
.venv/
"""


def _readme(stage: str, manifest: Manifest, tasks: list[Task], notebooks: list[str]) -> str:
    handout = manifest.handout.read_text(encoding="utf-8").rstrip() + "\n"
    rows = [f"| {t.id} | {t.title} | {t.points:g} | `pytest -m {t.marker}` |" for t in manifest.tasks]
    for part, path in zip(manifest.notebooks, notebooks):
        rows.append(f"| notebook | {part.title or part.name} (`{path}`) | {part.points:g} | — |")
    earlier = [t for t in tasks if t.stage != stage]
    parts = [
        handout,
        "---",
        "",
        f"## Tasks and points ({manifest.total_points:g} in all)",
        "",
        "| task | title | points | its public tests |",
        "|---|---|---|---|",
        *rows,
        "",
        "## Getting started",
        "",
        "```bash",
        "python -m venv .venv && source .venv/bin/activate",
        'python -m pip install -e ".[dev]"',
        f"python -m pytest -m {manifest.tasks[0].marker}          # the public tests of one task",
        f'python -m pytest -m "{_marker_expr(manifest.tasks)}"   # all of this assignment',
        "```",
        "",
        *(
            [f"Open the notebook{'s' if len(notebooks) > 1 else ''} "
             + ", ".join(f"`{n}`" for n in notebooks)
             + " in Jupyter (`python -m pip install jupyterlab`, then `jupyter lab`), fill in the "
             "cells marked `# YOUR CODE HERE`, and run it top to bottom before you submit.", ""]
            if notebooks else []
        ),
        "The CI workflow (`.github/workflows/tests.yml`) runs the public tests of this "
        "assignment" + (" and of the earlier ones" if earlier else "") + " on every push.",
        "",
        "## Rules",
        "",
        "* Write your code **only between the markers** `# BEGIN SOLUTION X.Y` and "
        "`# END SOLUTION X.Y`, and keep the markers. The grader takes those regions from "
        "your files and nothing else: edits outside them (and new files) are ignored, so "
        "define any helper you need inside the fence.",
        "* A function holds `raise NotImplementedError(\"Task X.Y: …\")` until you replace it.",
        "* Earlier assignments come filled in with the reference solution; later ones are stubs.",
        "* The public tests are a sample. The grader also runs hidden checks: your outputs and "
        "gradients against the reference on generated inputs, central differences against "
        "your backward, properties such as broadcasting rules"
        + (", and the speed of your kernels" if any(t.performance for t in manifest.tasks) else "")
        + ".",
        "",
    ]
    return "\n".join(parts)


def release(stage: str, out_dir: Path, *, repo_root: Path | str | None = None, force: bool = False) -> ReleaseResult:
    """Write the student starter repository of `stage` to `out_dir`.

    `out_dir` must not exist or be empty; with `force=True` an earlier release there
    (a folder holding minitorch/_release.py) is replaced.

    Raises:
        ReleaseError: unknown stage, a non-empty out_dir, a missing public test or notebook,
            a public test that imports the grader.
        FenceError / ManifestError: a malformed fence or manifest.
    """
    root = _root(repo_root)
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
        if not (root / rel).is_file():
            raise ReleaseError(f"public test {rel} (listed in a manifest) does not exist")
    shipped = set(listed) | set(_test_helpers(root / "tests", listed))
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
                f"{out_dir} is not empty" + ("" if not force else " and does not hold an earlier release")
            )
    out_dir.mkdir(parents=True, exist_ok=True)

    titles = _titles(manifests)
    stubbed: set[str] = set()
    filled: set[str] = set()

    def choose(rel: Path, fences: list[Fence], text: str) -> tuple[str, list[str]]:
        ids = {f.task for f in fences}
        keep = {t for t in ids if _fence_stage(t) < n}
        stub = ids - keep
        filled.update(keep)
        stubbed.update(stub)
        return render(text, keep=keep, stub=stub, titles=titles, filename=f"minitorch/{rel.as_posix()}")

    _render_package(root / "minitorch", out_dir / "minitorch", choose)
    _write(out_dir / "minitorch" / "_release.py", release_module_source(stage))

    for rel, text in tests.items():
        _write(out_dir / rel, text)

    # Notebooks of this stage, released by nbgrader.
    notebooks: list[str] = []
    if manifest.notebooks:
        from .notebooks import release_notebook

        for part in manifest.notebooks:
            rel = f"notebooks/{part.name}"
            release_notebook(root / "solutions" / part.path, out_dir / rel)
            notebooks.append(rel)

    _write(out_dir / "pyproject.toml", _pyproject(stage, manifest, root))
    _write(out_dir / "README.md", _readme(stage, manifest, tasks, notebooks))
    _write(out_dir / ".github" / "workflows" / "tests.yml", _workflow(stage, tasks))
    _write(out_dir / ".gitignore", _GITIGNORE)

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


# ---------------------------------------------------------------------------- submissions


def _safe_name(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        return False
    return all(part not in ("..",) for part in re.split(r"[\\/]+", name))


def _extract_zip(archive: Path, dest: Path) -> None:
    """Extract a zip, refusing absolute paths, `..`, links and more than the size limits."""
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"{archive.name} is not a readable zip file: {e}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_SUBMISSION_FILES:
            raise SubmissionError(f"{archive.name} holds {len(infos)} entries (at most {MAX_SUBMISSION_FILES})")
        total = 0
        root = dest.resolve()
        for info in infos:
            name = info.filename
            if not _safe_name(name):
                raise SubmissionError(f"{archive.name}: unsafe path {name!r} in the zip")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise SubmissionError(f"{archive.name}: {name!r} is a symbolic link (not allowed)")
            target = (dest / name).resolve()
            if target != root and root not in target.parents:
                raise SubmissionError(f"{archive.name}: {name!r} points outside the submission")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                while True:
                    chunk = src.read(1 << 16)
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > MAX_SUBMISSION_BYTES:
                        raise SubmissionError(
                            f"{archive.name} unpacks to more than {MAX_SUBMISSION_BYTES // (1024 * 1024)} MiB"
                        )
                    out.write(chunk)


def open_submission(submission: Path, workdir: Path) -> Path:
    """The directory of a submission: itself, or a zip extracted (safely) into `workdir`."""
    submission = Path(submission)
    if submission.is_dir():
        return submission
    if submission.is_file() and zipfile.is_zipfile(submission):
        dest = Path(workdir) / "submission"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        _extract_zip(submission, dest)
        return dest
    raise SubmissionError(f"{submission} is neither a directory nor a zip file")


def _walk_dirs(root: Path, max_depth: int) -> list[Path]:
    """Directories under root (not following links), breadth first, sorted."""
    found, level = [], [root]
    for _ in range(max_depth):
        nxt = []
        for d in level:
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                if e.is_dir(follow_symlinks=False) and e.name not in _SKIP_DIRS and not e.name.startswith("."):
                    nxt.append(Path(e.path))
        found.extend(nxt)
        level = nxt
    return found


def find_package(root: Path) -> Path | None:
    """Where the student's `minitorch/` is: root/minitorch, else the shallowest folder
    named minitorch (a zip of a GitHub repo nests one level), else root itself when the
    .py files were uploaded flat; None if nothing looks like the package."""
    root = Path(root)
    direct = root / "minitorch"
    if direct.is_dir() and not direct.is_symlink():
        return direct
    for d in _walk_dirs(root, 3):
        if d.name == "minitorch" and any(d.glob("*.py")):
            return d
    if any(p.is_file() and not p.is_symlink() for p in root.glob("*.py")):
        return root
    return None


def find_notebook(root: Path, name: str) -> Path | None:
    """The submitted notebook `name` (e.g. "backprop.ipynb"): root/notebooks/name, else
    the shallowest file of that name; None if absent. Links are not followed."""
    root = Path(root)
    for d in [root / "notebooks", root, *_walk_dirs(root, 3)]:
        p = d / name
        if p.is_file() and not p.is_symlink():
            return p
    return None


def _read_student(package: Path, rel: Path) -> tuple[str | None, str | None]:
    """(text, problem) of a student's file; text is None when it cannot be used."""
    shown = f"minitorch/{rel.as_posix()}"
    path = package / rel
    cur = package
    for part in rel.parts:
        cur = cur / part
        if cur.is_symlink():
            return None, f"{shown} is a symbolic link — not accepted; its tasks are graded as not implemented"
    if not path.exists():
        return None, f"{shown} missing — its tasks are graded as not implemented"
    if not path.is_file():
        return None, f"{shown} is not a regular file — its tasks are graded as not implemented"
    if path.stat().st_size > MAX_SOURCE_BYTES:
        return None, f"{shown} is larger than {MAX_SOURCE_BYTES // 1024} KiB — not accepted"
    try:
        return path.read_text(encoding="utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"{shown} is not UTF-8 text ({e.reason} at byte {e.start}) — its tasks are graded as not implemented"


def build_child_tree(
    stage: str,
    submission_dir: Path,
    out_dir: Path,
    *,
    isolate_task: str | None = None,
    repo_root: Path | str | None = None,
) -> list[str]:
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
    root = _root(repo_root)
    n = stage_number(stage)
    manifests = all_manifests(root)
    if stage not in manifests:
        raise ValueError(f"no assignment for stage {stage!r}")
    manifest = manifests[stage]
    student_fences: set[str] | None = None
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
    titles = _titles(manifests)
    problems: list[str] = []

    with tempfile.TemporaryDirectory(prefix="minitorch-submission-") as tmp:
        sub_root = open_submission(Path(submission_dir), Path(tmp))
        package = find_package(sub_root)
        if package is None:
            problems.append("no minitorch/ package found in the submission — every task is graded as not implemented")

        def choose(rel: Path, fences: list[Fence], text: str) -> tuple[str, list[str]]:
            ids = {f.task for f in fences}
            keep = {t for t in ids if _fence_stage(t) < n}
            stub = {t for t in ids if _fence_stage(t) > n}
            mine = ids - keep - stub
            if student_fences is not None:
                keep |= mine - student_fences
                mine &= student_fences
            name = f"minitorch/{rel.as_posix()}"
            if not mine:
                return render(text, keep=keep, stub=stub, titles=titles, filename=name)
            student_text, problem = (None, None) if package is None else _read_student(package, rel)
            if student_text is None:
                found = [problem] if problem else []
                out, _ = render(text, keep=keep, stub=stub | mine, titles=titles, filename=name)
                return out, found
            parsed = student_bodies(student_text, name)
            out, found = render(text, keep=keep, stub=stub, from_student=mine, student=parsed,
                                titles=titles, filename=name)
            relevant = [p for p in parsed.problems if _mentions_tasks(p, mine)]
            return out, relevant + found

        problems.extend(_render_package(root / "minitorch", out_package, choose))
    _write(out_package / "_release.py", release_module_source(stage))
    return problems


def _mentions_tasks(problem: str, tasks: set[str]) -> bool:
    """Whether a fence problem of a student file concerns one of `tasks`."""
    ids = set(re.findall(r"SOLUTION (\d+\.\d+)", problem)) | set(re.findall(r"task (\d+\.\d+)", problem))
    return not ids or bool(ids & tasks)
