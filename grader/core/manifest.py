"""Assignment manifests: `assignments/aN-<slug>/manifest.toml`, loaded and validated.

    id = "a1"
    title = "Scalar autodiff"
    gradescope = { visibility = "visible", details = "after_due_date" }   # optional: grader.core.gradescope_settings

    [[tasks]]
    id = "1.1"
    title = "Central difference"
    points = 10
    fences = ["1.1"]                      # fence ids (in minitorch/) this task covers
    checks = ["central_difference"]       # hidden checks, grader/checks/a1/task_1_1.py, run in order
    weights = { central_difference = 2.0 }   # optional: a check's share (others weigh 1)
    hint = "f'(x) ≈ (f(x+ε) − f(x−ε)) / 2ε"
    public_tests = ["tests/public/test_autodiff.py"]   # test files that ship (run with -m task1_1)
    performance = { max_ratio = 3.0 }     # optional (A3): thresholds of performance checks

    [[notebooks]]                         # optional: nbgrader notebook parts
    path = "a1/backprop.ipynb"            # under solutions/ (the nbgrader source directory)
    points = 15
    title = "Backpropagation by hand"

A task scores points × Σ weights of its passed checks / Σ weights of its checks. A
top-level ``reference_only = ["minitorch/accel/tuned_ops.py"]`` (optional; files of
``minitorch/`` without fences) names files holding the stage's reference technique outside
fences: left out of releases and child trees of this stage and earlier ones.
`load_manifest("a1")` returns a `Manifest`; every mistake (unknown key, wrong type,
duplicate id, a fence id that no `# BEGIN SOLUTION` in minitorch/ carries, a notebook or
reference-only file that does not exist) is a `ManifestError` naming the file. The tables are
read, with their types, by `grader.core.manifest_tables`.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from .fences import package_fences
from .gradescope_settings import GradescopeSettings, parse_gradescope
from .manifest_tables import ManifestError, TableReader, check_reference_only, read_weights

__all__ = [
    "Manifest",
    "ManifestError",
    "NotebookPart",
    "Performance",
    "Task",
    "all_manifests",
    "all_stages",
    "find_task",
    "load_manifest",
    "repo_root",
    "stage_dir",
    "stage_number",
    "stage_of_task",
    "task_of_fence",
]

_STAGE = re.compile(r"^a(\d+)$")
_TASK = re.compile(r"^(\d+)\.(\d+)$")
_FOLDER = re.compile(r"^(a\d+)-[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Performance:
    """Thresholds of a task's performance checks: student time / reference time ≤ max_ratio."""

    max_ratio: float


@dataclass(frozen=True)
class Task:
    """One graded task of a stage; `weights` lists (check, weight) where it is not 1."""

    id: str
    title: str
    points: float
    fences: tuple[str, ...]
    checks: tuple[str, ...]
    hint: str = ""
    public_tests: tuple[str, ...] = ()
    performance: Performance | None = None
    weights: tuple[tuple[str, float], ...] = ()

    def weight(self, check: str) -> float:
        """The weight of one of the task's checks in its score (1 unless `weights` says)."""
        return dict(self.weights).get(check, 1.0)

    @property
    def stage(self) -> str:
        """ "1.1" → "a1"."""
        return stage_of_task(self.id)

    @property
    def marker(self) -> str:
        """The pytest marker of the task's public tests: "1.1" → "task1_1"."""
        return "task" + self.id.replace(".", "_")


@dataclass(frozen=True)
class NotebookPart:
    """An nbgrader notebook of a stage: `path` is relative to solutions/."""

    path: str
    points: float
    title: str = ""

    @property
    def name(self) -> str:
        """The notebook's file name, e.g. "backprop.ipynb"."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Manifest:
    """A stage's manifest. `directory` is the assignment folder (handout, manifest)."""

    id: str
    title: str
    directory: Path
    tasks: tuple[Task, ...]
    notebooks: tuple[NotebookPart, ...] = ()
    #: files (``minitorch/…``) withheld from releases and child trees up to this stage.
    reference_only: tuple[str, ...] = ()
    gradescope: GradescopeSettings = GradescopeSettings()  #: what results.json shows, and when

    @property
    def slug(self) -> str:
        """The folder name, e.g. "a1-scalar-autodiff"."""
        return self.directory.name

    @property
    def handout(self) -> Path:
        return self.directory / "README.md"

    @property
    def total_points(self) -> float:
        return sum(t.points for t in self.tasks) + sum(n.points for n in self.notebooks)

    @property
    def number(self) -> int:
        return stage_number(self.id)

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(f"stage {self.id} has no task {task_id!r}")


# ---------------------------------------------------------------------------- helpers


def repo_root() -> Path:
    """The kit's root (holds minitorch/, assignments/, solutions/): $MINITORCH_KIT_ROOT
    or the parent of the grader package."""
    env = os.environ.get("MINITORCH_KIT_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


def _root(root: Path | str | None) -> Path:
    return Path(root).resolve() if root is not None else repo_root()


def stage_number(stage: str) -> int:
    """ "a3" → 3 (ValueError for anything else)."""
    m = _STAGE.match(stage)
    if m is None:
        raise ValueError(f"not a stage id: {stage!r} (expected a0, a1, …)")
    return int(m.group(1))


def stage_arg(text: str) -> str:
    """A stage id as typed on the command line ("A1", " a1") → "a1" (the reports print "A1")."""
    return text.strip().lower()


def stage_of_task(task_id: str) -> str:
    """ "1.1" → "a1"."""
    m = _TASK.match(task_id)
    if m is None:
        raise ValueError(f"not a task id: {task_id!r} (expected X.Y, e.g. 1.1)")
    return f"a{int(m.group(1))}"


def _stage_dirs(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    base = root / "assignments"
    if not base.is_dir():
        return found
    for d in sorted(base.iterdir()):
        m = _FOLDER.match(d.name)
        if m and (d / "manifest.toml").is_file():
            if m.group(1) in found:
                raise ManifestError(
                    f"two assignment folders for stage {m.group(1)}: {found[m.group(1)].name}, {d.name}"
                )
            found[m.group(1)] = d
    return found


def all_stages(repo_root: Path | str | None = None) -> list[str]:
    """Stage ids with a manifest, in order: ["a0", "a1", …]."""
    return sorted(_stage_dirs(_root(repo_root)), key=stage_number)


def stage_dir(stage: str, repo_root: Path | str | None = None) -> Path:
    """The assignment folder of a stage (ManifestError if there is none)."""
    stage_number(stage)
    dirs = _stage_dirs(_root(repo_root))
    if stage not in dirs:
        known = ", ".join(sorted(dirs, key=stage_number)) or "none"
        raise ManifestError(f"no assignment for stage {stage} (stages: {known})")
    return dirs[stage]


@lru_cache(maxsize=8)
def _fence_ids(package: Path, stamp: tuple[tuple[str, float], ...]) -> frozenset[str]:
    return frozenset(f.task for fences in package_fences(package).values() for f in fences)


def fence_ids(repo_root: Path | str | None = None) -> frozenset[str]:
    """Task ids of all fences in the reference `minitorch/`."""
    package = _root(repo_root) / "minitorch"
    stamp = tuple(
        (str(p), p.stat().st_mtime) for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts
    )
    return _fence_ids(package, stamp)


# ---------------------------------------------------------------------------- validation


_TOP_KEYS = {"id", "title", "tasks", "notebooks", "reference_only", "gradescope"}
_TASK_KEYS = {"id", "title", "points", "fences", "checks", "hint", "public_tests", "performance", "weights"}
_PERF_KEYS = {"max_ratio"}
_NOTEBOOK_KEYS = {"path", "points", "title"}


def _parse(path: Path, stage: str, root: Path) -> Manifest:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: invalid TOML: {e}") from None
    top = TableReader(path, "the manifest", data, _TOP_KEYS)
    mid = top.string("id")
    if mid != stage:
        top.fail(f"id = {mid!r} but the folder is for stage {stage}")
    title = top.string("title")

    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        top.fail("needs at least one [[tasks]] table")
    existing = fence_ids(root)
    tasks: list[Task] = []
    seen_fences: dict[str, str] = {}
    for i, raw in enumerate(raw_tasks):
        r = TableReader(path, f"tasks[{i}]", raw, _TASK_KEYS)
        tid = r.string("id")
        if not _TASK.match(tid):
            r.fail(f"task id {tid!r} is not of the form X.Y")
        where = f"task {tid}"
        r.where = where
        if stage_of_task(tid) != stage:
            r.fail(f"{where} belongs to stage {stage_of_task(tid)}, not {stage}")
        if any(t.id == tid for t in tasks):
            r.fail(f"duplicate task id {tid}")
        fences = r.strings("fences", required=True)
        for f in fences:
            if not _TASK.match(f) or stage_of_task(f) != stage:
                r.fail(f"{where}: fence id {f!r} is not a fence id of stage {stage}")
            if f not in existing:
                r.fail(f"{where}: no '# BEGIN SOLUTION {f}' fence exists in minitorch/")
            if f in seen_fences:
                r.fail(f"{where}: fence {f} is already covered by task {seen_fences[f]}")
            seen_fences[f] = tid
        tests = r.strings("public_tests", required=False)
        for t in tests:
            if not re.fullmatch(r"tests/public/[A-Za-z0-9_/]+\.py", t) or ".." in t:
                r.fail(
                    f"{where}: public test {t!r} must be a .py file under tests/public/ (only that folder ships)"
                )
        perf = None
        if "performance" in raw:
            pr = TableReader(path, f"{where}.performance", raw["performance"], _PERF_KEYS)
            perf = Performance(max_ratio=pr.points("max_ratio"))
        checks = r.strings("checks", required=True)
        tasks.append(
            Task(
                id=tid,
                title=r.string("title"),
                points=r.points("points"),
                fences=fences,
                checks=checks,
                hint=r.string("hint", default=""),
                public_tests=tests,
                performance=perf,
                weights=read_weights(r, raw.get("weights", {}), checks),
            )
        )

    notebooks: list[NotebookPart] = []
    raw_nbs = data.get("notebooks", [])
    if not isinstance(raw_nbs, list):
        top.fail("notebooks must be an array of tables ([[notebooks]])")
    for i, raw in enumerate(raw_nbs):
        r = TableReader(path, f"notebooks[{i}]", raw, _NOTEBOOK_KEYS)
        nb_path = r.string("path")
        if not re.fullmatch(r"[A-Za-z0-9_-]+/[A-Za-z0-9_-]+\.ipynb", nb_path):
            r.fail(f"notebook path {nb_path!r} must look like '{stage}/name.ipynb'")
        if not (root / "solutions" / nb_path).is_file():
            r.fail(f"notebook solutions/{nb_path} does not exist")
        if any(n.path == nb_path or n.name == nb_path.rsplit("/", 1)[-1] for n in notebooks):
            r.fail(f"duplicate notebook {nb_path}")
        notebooks.append(NotebookPart(path=nb_path, points=r.points("points"), title=r.string("title", "")))

    reference_only = top.strings("reference_only", required=False)
    for rel in reference_only:
        check_reference_only(top, rel, root)

    return Manifest(
        id=mid,
        title=title,
        directory=path.parent,
        tasks=tuple(tasks),
        notebooks=tuple(notebooks),
        reference_only=reference_only,
        gradescope=parse_gradescope(data.get("gradescope", {}), top.fail),
    )


def load_manifest(stage: str, repo_root: Path | str | None = None) -> Manifest:
    """Load and validate `assignments/<stage>-*/manifest.toml`."""
    root = _root(repo_root)
    return _parse(stage_dir(stage, root) / "manifest.toml", stage, root)


def all_manifests(repo_root: Path | str | None = None) -> dict[str, Manifest]:
    """Every stage's manifest, in stage order."""
    root = _root(repo_root)
    return {s: load_manifest(s, root) for s in all_stages(root)}


def find_task(task_id: str, repo_root: Path | str | None = None) -> Task:
    """The task with this id (ManifestError if its stage or the task does not exist)."""
    manifest = load_manifest(stage_of_task(task_id), repo_root)
    try:
        return manifest.task(task_id)
    except KeyError:
        raise ManifestError(f"{manifest.directory / 'manifest.toml'}: no task {task_id}") from None


def task_of_fence(fence_id: str, repo_root: Path | str | None = None) -> Task:
    """The task whose `fences` list holds this fence id."""
    manifest = load_manifest(stage_of_task(fence_id), repo_root)
    for t in manifest.tasks:
        if fence_id in t.fences:
            return t
    raise ManifestError(f"{manifest.directory / 'manifest.toml'}: fence {fence_id} belongs to no task")
