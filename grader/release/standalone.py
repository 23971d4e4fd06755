"""The public tests of a task stand alone: `grader check --public`, and invariant 5 of `grader check`.

A student who has finished task X.Y, and nothing after it, runs ``pytest -m taskX_Y`` in
the release and must see it pass: a test of 2.1 that calls ``permute`` (task 2.3) would
tell a student with a correct 2.1 that it is broken. For every task X.Y of a stage:

* **with reference code through X.Y** (the stage's fences up to and including X.Y hold the
  reference, those after it the release's stubs), ``pytest -m taskX_Y`` in the release
  passes, with at least one test and **no skipped test**;
* **with the release's stubs only** it fails: a public test that passes on a stub tests
  nothing of the task.

Both runs hide PyTorch (``import torch`` raises ImportError, as on a student's machine that
never installed it): PyTorch is the oracle of the project's own suite, not of the public
tests, and a test that skips without it would skip silently in every student's tree.
Counts come from pytest's JUnit XML, not from parsing its output.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional

from .examples import submission_files, write_files
from grader.core.fences import find_fences, render
from grader.core.manifest import Task, all_manifests, load_manifest
from grader.trees.child_tree import build_child_tree, fence_titles

#: Seconds for one task's public tests (A3's first run compiles its kernels).
PUBLIC_TIMEOUT = 900.0

#: Run by ``python -c``: pytest with PyTorch hidden (``sys.modules["torch"] = None`` makes
#: every ``import torch`` raise ImportError, and ``pytest.importorskip("torch")`` skip).
_PYTEST_WITHOUT_TORCH = (
    "import sys; sys.modules['torch'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"
)


@dataclass(frozen=True)
class PublicRun:
    """One ``pytest -m marker`` run: the counts of its JUnit XML and a line to show."""

    outcome: str  # "passed", "failed", "no tests", "timeout", "error"
    tests: int = 0
    failures: int = 0
    skipped: int = 0
    detail: str = ""
    seconds: float = 0.0

    def summary(self) -> str:
        counts = f"{self.tests} tests, {self.failures} failed, {self.skipped} skipped"
        return f"{self.outcome} ({counts})" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class StandAlone:
    """The verdict for one task: `ok` when the reference run passed with no skip and the
    stubs run failed."""

    task: str
    with_reference: PublicRun
    with_stubs: PublicRun

    @property
    def problems(self) -> list[str]:
        out = []
        ref = self.with_reference
        if ref.outcome != "passed":
            out.append(f"with reference code through {self.task} and stubs after it: {ref.summary()}")
        elif ref.skipped:
            out.append(
                f"with reference code through {self.task}, {ref.skipped} public tests skip "
                f"(PyTorch hidden): {ref.detail}"
            )
        if self.with_stubs.outcome != "failed":
            out.append(f"with the release's stubs the public tests do not fail: {self.with_stubs.summary()}")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems


def clean_env() -> dict[str, str]:
    """The environment without anything that would import the kit instead of the tree."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MINITORCH_KIT_ROOT", "PYTHONSTARTUP")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _counts(junit: Path) -> tuple[int, int, int, str]:
    """(tests, failures + errors, skipped, the first failing or skipped test) of a JUnit file."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failures = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    first = ""
    for case in root.iter("testcase"):
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                message = (node.get("message") or "").strip().splitlines()
                first = f"{case.get('name')}: {kind}: {message[0][:160] if message else ''}"
                break
        if first:
            break
    return tests, failures, skipped, first


def run_public(
    work: Path, marker: str, timeout: float = PUBLIC_TIMEOUT, *, stop_at_first_failure: bool = False
) -> PublicRun:
    """``pytest -m marker tests/`` in `work` (a release holding the tree under test), PyTorch
    hidden; `stop_at_first_failure` (``-x``) when one failure is all the verdict needs."""
    started = time.monotonic()
    junit = work / ".public-junit.xml"
    cmd = [
        sys.executable,
        "-c",
        _PYTEST_WITHOUT_TORCH,
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        marker,
        f"--junitxml={junit}",
        *(["-x"] if stop_at_first_failure else []),
        "tests/",
    ]
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
        return PublicRun(
            "timeout", detail=f"pytest -m {marker} ran past {timeout:g} s", seconds=time.monotonic() - started
        )
    seconds = time.monotonic() - started
    if proc.returncode == 5:
        return PublicRun("no tests", detail=f"no test is marked {marker}", seconds=seconds)
    if not junit.is_file():
        tail = " | ".join(out.strip().splitlines()[-3:])
        return PublicRun("error", detail=f"pytest exited {proc.returncode}: {tail[:240]}", seconds=seconds)
    tests, failures, skipped, first = _counts(junit)
    outcome = "passed" if proc.returncode == 0 else ("failed" if proc.returncode == 1 else "error")
    return PublicRun(outcome, tests, failures, skipped, first, seconds)


def files_through(stage: str, task: str) -> dict[str, str]:
    """The stage's files with the reference in the fences of tasks up to and including
    `task` (and of earlier stages) and the release's stubs in the stage's later fences."""
    manifests = all_manifests()
    order = [t.id for t in manifests[stage].tasks]
    done = set(order[: order.index(task) + 1])
    titles = fence_titles(manifests)
    out = {}
    for rel, text in submission_files(stage).items():
        ids = {f.task for f in find_fences(text, rel)}
        stub = {i for i in ids if i in order and i not in done}
        out[rel], _ = render(text, keep=ids - stub, stub=stub, titles=titles, filename=rel)
    return out


def _in_release(
    stage: str, release_dir: Path, files: Optional[Mapping[str, str]], marker: str, timeout: float
) -> PublicRun:
    """`run_public` in a copy of the release; with `files`, its minitorch/ is the child tree
    built from them (as `grader run` builds it), else the release's own stubs (where the
    first failure settles the verdict)."""
    with tempfile.TemporaryDirectory(prefix="grader-public-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(release_dir, work)
        if files is not None:
            build_child_tree(stage, write_files(Path(tmp) / "submission", files), work)
        return run_public(work, marker, timeout, stop_at_first_failure=files is None)


def check_task(stage: str, task: Task, release_dir: Path, timeout: float = PUBLIC_TIMEOUT) -> StandAlone:
    """The stand-alone verdict of one task, in a fresh copy of the release at `release_dir`."""
    with_reference = _in_release(stage, release_dir, files_through(stage, task.id), task.marker, timeout)
    with_stubs = _in_release(stage, release_dir, None, task.marker, timeout)
    return StandAlone(task.id, with_reference, with_stubs)


def check_stage(
    stage: str,
    release_dir: Path,
    *,
    task: Optional[str] = None,
    timeout: float = PUBLIC_TIMEOUT,
    progress: Optional[Callable[[str], None]] = None,
) -> list[StandAlone]:
    """`check_task` for every task of `stage` (or one), announcing each before it runs."""
    out = []
    for t in load_manifest(stage).tasks:
        if task not in (None, t.id):
            continue
        if progress:
            progress(
                f"{stage}: the public tests of {t.id} (pytest -m {t.marker}), with reference through {t.id}, then with stubs …"
            )
        out.append(check_task(stage, t, release_dir, timeout))
    if task is not None and not out:
        raise ValueError(f"stage {stage} has no task {task!r}")
    return out
