"""Mutation analysis: do the hidden checks notice when a fence is wrong? (`grader check --mutants`)

    report = analyse("a1", sample=5, jobs=2)        # -> StageReport
    print_report([report], Console())

For a stage S the reference is graded once; then for every mutant of a task X
(`grader.mutation.mutants`: generated ones; `grader.mutation.catalogue`: real mistakes) a submission
holding the stage's reference files, one of them mutated, is graded for the whole stage:

* **killed** — X scores less than full marks (a timeout of X's checks counts); otherwise
  the mutant **survived**.
* **(a) violation** — a survivor that fails X's public tests (``pytest -m taskX_Y`` in a
  release of S whose ``minitorch/`` is the mutant's child tree): the hidden checks are
  weaker than the public tests. Before that, the unmutated tree must pass them (else the
  public tests are reported broken, not the mutant). A survivor that passes them is
  listed, marked equivalent when `mutants.toml` proves it is.
* **(b) violation** — any other task Y scores differently from the reference: one bug
  costs points twice.
* a surviving catalogue mistake is a failure too; the mutation score of a task is
  killed / (mutants − equivalent survivors), the target ≥ 95 %.

With ``jobs > 1`` mutants are graded in worker *processes*: the reference runs in the
grading process, and probes that seed minitorch's generator (``manual_seed``) would race
in threads. The verdicts are `grader.mutation.verdicts`; the report (`grader.mutation.report`)
is a table (and, for a run of a whole stage, sampled or not, a section of
``assignments/MUTATION.md`` that names its scope); the exit status of `main` is
1 on any violation, surviving mistake or problem (the reference not scoring full marks,
public tests failing on it, a grader error).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from grader.core.console import make_console
from grader.release.examples import submission_files, write_files
from grader.grading.grade import grade
from grader.core.manifest import load_manifest, repo_root
from .catalogue import Catalogue, load_catalogue
from .mutants import Mutant, generate
from .report import print_report, update_markdown
from .verdicts import StageReport, Verdict
from grader.release.starter import release
from grader.core.results import GradeResult
from grader.sandbox.session import Limits
from grader.release.standalone import clean_env
from grader.trees.child_tree import build_child_tree

__all__ = ["MUTANT_LIMITS", "analyse", "main"]

#: Short limits: mutants loop forever more often than students do (a timeout is a kill).
MUTANT_LIMITS = Limits(check_timeout=10.0, start_timeout=60.0)
#: Seconds for one task's public tests on one mutant.
PUBLIC_TIMEOUT = 300.0
#: The file the repository keeps the results in (one section per stage).
MARKDOWN = "assignments/MUTATION.md"


# ---------------------------------------------------------------------------- grading


def select(stage: str, tasks: Sequence[str], catalogue: Catalogue, sample: Optional[int]) -> list[Mutant]:
    """The generated mutants of `tasks` (`sample` per task, by a fixed seed) + the
    catalogue's mistakes of those tasks (always)."""
    generated = generate(stage, tasks)
    if sample is not None:
        chosen: list[Mutant] = []
        for task in tasks:
            mine = sorted((m for m in generated if m.task == task), key=lambda m: m.id)
            chosen += random.Random(f"{stage}:{task}").sample(mine, min(sample, len(mine)))
        generated = chosen
    return generated + [m for m in catalogue.mistakes if m.task in tasks]


def _grade_files(stage: str, files: Mapping[str, str], limits: Limits) -> GradeResult:
    with tempfile.TemporaryDirectory(prefix="grader-mutant-") as tmp:
        return grade(write_files(Path(tmp), files), stage, notebooks=False, limits=limits)


def grade_mutant(
    stage: str, files: Mapping[str, str], mutant: Mutant, limits: Limits, reference: Mapping[str, float]
) -> Verdict:
    """Grade the stage's `files` with `mutant` in place of its file (the (b) verdict is
    decided against the `reference` scores)."""
    started = time.monotonic()
    result = _grade_files(stage, {**files, mutant.file: mutant.text}, limits)
    rows = {t.id: t for t in result.tasks}
    mine = rows[mutant.task]
    others = tuple(
        f"task {t.id} scored {t.score:g}/{t.max_points:g} (reference {reference[t.id]:g}): {t.message}"
        for t in result.tasks
        if t.id != mutant.task and t.score != reference.get(t.id)
    )
    return Verdict(
        mutant,
        mine.score,
        mine.max_points,
        f"{mine.status}: {mine.message}",
        others,
        tuple(result.grader_errors),
        seconds=time.monotonic() - started,
    )


def run_public_tests(
    stage: str, release_dir: Path, files: Mapping[str, str], marker: str, timeout: float, verify: bool = False
) -> tuple[str, str, float]:
    """Run ``pytest -m marker`` in a copy of the release whose ``minitorch/`` is the child
    tree built from `files`. Returns (outcome, detail, seconds): outcome is "passed",
    "failed", "timeout", "no tests" or "error". `verify`: first check that the tree's
    minitorch is the one imported."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="grader-public-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(release_dir, work)
        build_child_tree(stage, write_files(Path(tmp) / "submission", files), work)
        if verify:
            where = subprocess.run(
                [sys.executable, "-c", "import minitorch; print(minitorch.__file__)"],
                cwd=work,
                env=clean_env(),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            ).stdout.strip()
            if not Path(where).resolve().is_relative_to(work.resolve()):
                return (
                    "error",
                    f"the public tests would import minitorch from {where or '?'}, not from the tree under test",
                    0.0,
                )
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", marker, "tests/"]
        proc = subprocess.Popen(
            cmd,
            cwd=work,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "timeout", f"pytest -m {marker} ran past {timeout:g} s", time.monotonic() - started
    lines = out.strip().splitlines()
    first = next((ln for ln in lines if ln.startswith(("FAILED", "ERROR"))), lines[-1] if lines else "")
    outcome = {0: "passed", 1: "failed", 5: "no tests"}.get(proc.returncode, "error")
    return outcome, "" if outcome == "passed" else first[:240], time.monotonic() - started


def _run_all(
    jobs: int,
    fn: Callable[..., Any],
    calls: list[tuple],
    progress: Optional[Callable[[int, Any], None]] = None,
) -> list[Any]:
    """fn(*args) for each args, in order: in this process, or in `jobs` worker processes."""
    out: list[Any] = [None] * len(calls)
    if jobs <= 1:
        for i, args in enumerate(calls):
            out[i] = fn(*args)
            if progress:
                progress(i, out[i])
        return out
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            if progress:
                progress(futures[fut], out[futures[fut]])
    return out


def analyse(
    stage: str,
    *,
    task: Optional[str] = None,
    sample: Optional[int] = None,
    jobs: int = 1,
    limits: Limits = MUTANT_LIMITS,
    public_timeout: float = PUBLIC_TIMEOUT,
    progress: Optional[Callable[[str], None]] = None,
) -> StageReport:
    """Grade every mutant of `stage` (or of one `task`; `sample` per task) and decide the verdicts."""
    started = time.monotonic()
    manifest = load_manifest(stage)
    tasks = [t.id for t in manifest.tasks if task in (None, t.id)]
    if not tasks:
        raise ValueError(f"stage {stage} has no task {task!r}")
    catalogue = load_catalogue(stage)
    mutants = select(stage, tasks, catalogue, sample)
    scope = (
        "all mutants"
        if sample is None
        else f"a sample of {sample} generated mutants per task + the catalogue"
    )
    report = StageReport(stage, scope + ("" if task is None else f", task {task} only"), [])
    files = submission_files(stage)
    ref = _grade_files(stage, files, limits)
    reference = {t.id: t.score for t in ref.tasks}
    if ref.grader_errors or any(t.score != t.max_points for t in ref.tasks):
        report.problems.append(
            f"the reference does not score full marks: {[(t.id, t.score, t.message) for t in ref.tasks]} {ref.grader_errors}"
        )

    def show(i: int, v: Verdict) -> None:
        if progress:
            progress(
                f"[{i + 1}/{len(mutants)}] {v.mutant.id}: {'killed' if v.killed else 'SURVIVED'} ({v.seconds:.1f} s)"
            )

    report.verdicts = _run_all(
        jobs, grade_mutant, [(stage, files, m, limits, reference) for m in mutants], show
    )
    survivors = [v for v in report.verdicts if not v.killed]
    if survivors:
        with tempfile.TemporaryDirectory(prefix="grader-mutation-") as tmp:
            rel = Path(tmp) / "release"
            release(stage, rel)
            usable = set()
            for t in sorted({v.mutant.task for v in survivors}):
                marker = manifest.task(t).marker
                outcome, detail, _ = run_public_tests(stage, rel, files, marker, public_timeout, verify=True)
                if outcome == "passed":
                    usable.add(t)
                else:
                    report.problems.append(
                        f"the public tests of task {t} ({marker}) do not pass on the reference: {outcome}: {detail}"
                    )
            todo = [v for v in survivors if v.mutant.task in usable]
            calls = [
                (
                    stage,
                    rel,
                    {**files, v.mutant.file: v.mutant.text},
                    manifest.task(v.mutant.task).marker,
                    public_timeout,
                )
                for v in todo
            ]
            for v, (outcome, detail, seconds) in zip(todo, _run_all(jobs, run_public_tests, calls)):
                v.public, v.public_failed = f"{outcome}: {detail}" if detail else outcome, outcome != "passed"
                v.seconds += seconds
    generated = {v.mutant.id for v in report.verdicts}
    for v in report.verdicts:
        v.equivalent = catalogue.equivalents.get(v.mutant.id, "")
        if v.equivalent and v.killed:
            report.notes.append(
                f"{v.mutant.id} is marked equivalent in mutants.toml but was killed ({v.message})"
            )
    if sample is None and task is None:
        report.notes += [
            f"mutants.toml marks {i} equivalent, but no such mutant exists (the fence changed?)"
            for i in sorted(set(catalogue.equivalents) - generated)
        ]
    report.seconds = time.monotonic() - started
    return report


# ---------------------------------------------------------------------------- command


def main(
    stages: Sequence[str],
    *,
    task: Optional[str] = None,
    sample: Optional[int] = None,
    jobs: int = 1,
    timeout: Optional[float] = None,
) -> int:
    """`grader check --mutants`: analyse each stage, print the report; 0 when all is well."""
    console, progress = make_console(emoji=False), make_console(stderr=True, emoji=False)  # ids hold ":id:"
    limits = (
        MUTANT_LIMITS
        if timeout is None
        else Limits(check_timeout=timeout, start_timeout=MUTANT_LIMITS.start_timeout)
    )
    reports = []
    for stage in stages:
        report = analyse(
            stage,
            task=task,
            sample=sample,
            jobs=jobs,
            limits=limits,
            progress=lambda line: progress.print(f"[dim]  {line}[/dim]", highlight=False),
        )
        reports.append(report)
        if task is None:  # a sampled run says so in its section
            update_markdown(repo_root() / MARKDOWN, report)
            console.print(f"wrote the {stage} section of {MARKDOWN}")
    print_report(reports, console)
    return 0 if all(r.ok for r in reports) else 1
