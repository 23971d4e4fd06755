"""The grading invariants, proved by `grader check` for every stage (or one).

For a stage S with tasks T₁ … Tₙ:

1. **reference** — the kit itself, graded as a submission, scores full marks (notebooks
   included: the solution notebooks are found under ``solutions/``).
2. **release** — a fresh ``grader release S`` scores zero on every task and notebook of S.
3. **one task broken** — for each task X, the reference with only X's fences replaced by
   the release's stubs (written by `build_child_tree(S, release, isolate_task=X)`) loses
   exactly X's points when graded with ``--isolate``: X is graded and must score 0; every
   other task Y must score what the reference scored. Y's isolated tree takes the
   student's fences of Y *and* of the fences sharing state with them (a Function's other
   half, `grader.core.shared_state`), where X's stubs could come in. A stubbed partner
   fence takes the reference, so Y's tree should be the reference tree of (1) byte for
   byte, which proves Y's score (grading is deterministic) without paying for a child;
   a tree that differs is graded, and Y must still score its reference points.
4. **earlier stages** — the release of S, graded for each earlier stage, scores full marks
   on that stage's tasks (its earlier code is the reference).
5. **public tests stand alone** — for each task X, ``pytest -m taskX_Y`` in the release
   passes with no skip when the fences through X hold the reference and those after it
   the stubs, PyTorch hidden; and fails with the release's stubs (`grader.release.standalone`).
   ``grader check --public`` proves this one alone.

Every step says what it starts (and `grade` each task it graded), so that no step is
silent for longer than one task takes.

Exit status 0 when every invariant holds, 1 otherwise.
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.core.console import make_console
from grader.grading.grade import grade
from grader.core.manifest import all_stages, load_manifest, repo_root, stage_number
from grader.release.starter import release
from grader.core.results import GradeResult
from grader.core.results import TaskResult
from grader.sandbox.session import Limits
from grader.release.standalone import check_stage as check_public
from grader.trees.child_tree import build_child_tree


@dataclass
class Invariant:
    stage: str
    name: str
    ok: bool
    detail: str
    seconds: float


def _rows(result: GradeResult) -> str:
    bad = [f"{t.id} {t.status} {t.score:g}/{t.max_points:g}: {t.message[:80]}" for t in result.tasks]
    return "; ".join(bad)


def _same_tree(a: Path, b: Path) -> Optional[str]:
    """None when the two directories hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    stack = [cmp]
    while stack:
        c = stack.pop()
        if c.left_only or c.right_only:
            return f"{c.left}: files differ in presence: {c.left_only or c.right_only}"
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        if mismatch or errors:
            return f"{c.left}: different content: {mismatch or errors}"
        stack.extend(c.subdirs.values())
    return None


def _other_task_keeps_its_points(
    stage: str, task: str, broken: Path, ref_tree: Path, ref: GradeResult, limits: Limits, tmp_path: Path
) -> list[str]:
    """Invariant 3 for one other task Y (`task`) of a tree where another task is broken:
    [] when Y, isolated, scores what the reference scored; else what went wrong."""
    tree = tmp_path / f"iso-{task}"
    build_child_tree(stage, broken, tree, isolate_task=task)
    differs = _same_tree(tree / "minitorch", ref_tree / "minitorch")
    shutil.rmtree(tree)
    if differs is None:
        return []
    expected = next(t.score for t in ref.tasks if t.id == task)
    res = grade(broken, stage, task=task, isolate=True, limits=limits, notebooks=False)
    got = res.tasks[0]
    if res.grader_errors or got.score != expected:
        return [
            f"task {task}, isolated in a tree that differs from the reference ({differs}), scored "
            f"{got.score:g} instead of {expected:g} ({got.message[:100]}) {res.grader_errors}"
        ]
    return []


def _public_invariants(
    stage: str,
    rel_dir: Path,
    task: Optional[str],
    say: Callable[[str], None],
    record: Callable[[str, bool, str, float], None],
) -> None:
    """Invariant 5 for every task of `stage` (or one), in the release at `rel_dir`."""
    for t in load_manifest(stage).tasks:
        if task in (None, t.id):
            t0 = time.monotonic()
            say(
                f"{stage}: pytest -m {t.marker} with reference through {t.id} (PyTorch hidden), then with stubs only …"
            )
            verdict = check_public(stage, rel_dir, task=t.id)[0]
            record(
                f"the public tests of {t.id} stand alone ({verdict.with_reference.tests} tests, none skipped; "
                f"stubs fail them)",
                verdict.ok,
                "; ".join(verdict.problems),
                t0,
            )


def check_stage(
    stage: str,
    limits: Limits,
    console: Optional[Console] = None,
    *,
    public_only: bool = False,
    task: Optional[str] = None,
) -> list[Invariant]:
    """Run the five invariants for one stage (`public_only`: invariant 5 alone, for one `task` or all)."""
    out: list[Invariant] = []
    manifest = load_manifest(stage)
    if task is not None and task not in {t.id for t in manifest.tasks}:
        raise ValueError(f"stage {stage} has no task {task!r}")
    task_points = sum(t.points for t in manifest.tasks)
    root = repo_root()

    def say(line: str) -> None:
        if console:
            console.print(Text(line, style="dim"))

    def graded(row: TaskResult) -> None:
        say(f"  graded {row.id}: {row.status} ({row.seconds:.1f} s)")

    def record(name: str, ok: bool, detail: str, started: float) -> None:
        inv = Invariant(stage, name, ok, detail, time.monotonic() - started)
        out.append(inv)
        if console:
            mark = Text("ok  ", style="green") if ok else Text("FAIL", style="bold red")
            console.print(
                Text.assemble(mark, f" {stage} {name} ({inv.seconds:.1f} s)", ("" if ok else f": {detail}"))
            )

    with tempfile.TemporaryDirectory(prefix="grader-check-") as tmp:
        tmp_path = Path(tmp)
        rel_dir = tmp_path / "release"
        release(stage, rel_dir)
        if public_only:
            _public_invariants(stage, rel_dir, task, say, record)
            return out

        t0 = time.monotonic()
        say(f"{stage}: grading the reference …")
        ref = grade(root, stage, limits=limits, progress=graded)
        full = not ref.grader_errors and all(t.score == t.max_points for t in ref.tasks)
        record(
            "reference scores full marks",
            full,
            f"{ref.score:g}/{ref.max_score:g}: {_rows(ref)} {ref.grader_errors}",
            t0,
        )

        t0 = time.monotonic()
        say(f"{stage}: grading a fresh release …")
        rel = grade(rel_dir, stage, limits=limits, progress=graded)
        zero = not rel.grader_errors and all(t.score == 0 for t in rel.tasks)
        record(
            "fresh release scores zero",
            zero,
            f"{rel.score:g}/{rel.max_score:g}: {_rows(rel)} {rel.grader_errors}",
            t0,
        )

        ref_tree = tmp_path / "ref-tree"
        build_child_tree(stage, root, ref_tree)
        for task in manifest.tasks:
            t0 = time.monotonic()
            say(f"{stage}: breaking task {task.id} …")
            broken = tmp_path / f"broken-{task.id}"
            build_child_tree(stage, rel_dir, broken, isolate_task=task.id)
            res = grade(broken, stage, task=task.id, isolate=True, limits=limits, notebooks=False)
            problems = []
            if res.grader_errors or res.tasks[0].score != 0:
                problems.append(
                    f"task {task.id} scored {res.tasks[0].score:g} ({res.tasks[0].message[:100]}) {res.grader_errors}"
                )
            for other in manifest.tasks:
                if other.id != task.id:
                    problems.extend(
                        _other_task_keeps_its_points(stage, other.id, broken, ref_tree, ref, limits, tmp_path)
                    )
            record(
                f"breaking task {task.id} costs exactly its {task.points:g} points (of {task_points:g})",
                not problems,
                "; ".join(problems),
                t0,
            )

        for earlier in all_stages():
            if stage_number(earlier) >= stage_number(stage):
                continue
            t0 = time.monotonic()
            say(f"{stage}: grading the release's {earlier} code …")
            res = grade(rel_dir, earlier, limits=limits, notebooks=False, progress=graded)
            ok = not res.grader_errors and all(t.score == t.max_points for t in res.tasks)
            record(
                f"the release's {earlier} code scores full marks on {earlier}",
                ok,
                f"{res.score:g}/{res.max_score:g}: {_rows(res)}",
                t0,
            )

        _public_invariants(stage, rel_dir, None, say, record)
    return out


def main(
    stages: Optional[list[str]] = None,
    timeout: Optional[float] = None,
    *,
    public_only: bool = False,
    task: Optional[str] = None,
) -> int:
    console = make_console()
    limits = Limits(check_timeout=timeout) if timeout else Limits()
    stages = stages or all_stages()
    results: list[Invariant] = []
    for stage in stages:
        results.extend(check_stage(stage, limits, console, public_only=public_only, task=task))
    table = Table(title="grader check")
    for col in ("stage", "invariant", "result", "seconds"):
        table.add_column(col)
    for inv in results:
        table.add_row(
            inv.stage,
            inv.name,
            Text("ok", style="green") if inv.ok else Text("FAIL", style="bold red"),
            f"{inv.seconds:.1f}",
        )
    console.print(table)
    return 0 if all(i.ok for i in results) else 1
