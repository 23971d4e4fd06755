"""Invariant 5 (`grader.release.standalone`): a task's public tests stand alone.

Each test writes a release of A0 (the smallest stage), changes its shipped tests the way a
careless test author would, and checks that the verdict of task 0.1 names the fault: a
test that needs a later task, a test that skips without PyTorch, tests that pass on stubs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.core.manifest import load_manifest
from grader.release.starter import release
from grader.release.standalone import StandAlone, check_task, files_through

pytestmark = pytest.mark.grader

NEEDS_TASK_0_3 = """

@pytest.mark.task0_1
def test_needs_a_later_task():
    from minitorch.module import Module

    assert list(Module().parameters()) == []  # Module.parameters is task 0.3
"""

SKIPS_WITHOUT_TORCH = """

@pytest.mark.task0_1
def test_compares_with_torch():
    torch = pytest.importorskip("torch")
    assert torch.tensor(1.0).item() == 1.0
"""

# Public tests of 0.1 that a stub passes: they test nothing of the task.
PASSES_ON_STUBS = """import pytest


@pytest.mark.task0_1
def test_nothing_of_the_task():
    assert isinstance(1.0 + 1.0, float)
"""


def _verdict(tmp_path: Path, edit: str | None = None, replace: str | None = None) -> StandAlone:
    rel = tmp_path / "release"
    release("a0", rel)
    tests = rel / "tests" / "public" / "test_operators.py"
    if edit is not None:
        tests.write_text(tests.read_text(encoding="utf-8") + edit, encoding="utf-8")
    if replace is not None:
        tests.write_text(replace, encoding="utf-8")
    return check_task("a0", load_manifest("a0").task("0.1"), rel, timeout=300)


def test_the_released_public_tests_of_0_1_stand_alone(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path)
    assert verdict.ok, verdict.problems
    assert verdict.with_reference.tests > 10 and verdict.with_reference.skipped == 0
    assert verdict.with_stubs.outcome == "failed" and verdict.with_stubs.failures >= 1


def test_a_public_test_that_needs_a_later_task_is_named(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, edit=NEEDS_TASK_0_3)
    assert not verdict.ok
    assert verdict.with_reference.outcome == "failed" and verdict.with_reference.failures == 1
    assert "test_needs_a_later_task" in verdict.problems[0] and "Task 0.3" in verdict.problems[0]


def test_a_public_test_that_skips_without_torch_is_named(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, edit=SKIPS_WITHOUT_TORCH)
    assert not verdict.ok
    assert verdict.with_reference.outcome == "passed" and verdict.with_reference.skipped == 1
    assert "test_compares_with_torch" in verdict.problems[0] and "skip" in verdict.problems[0]


def test_public_tests_that_pass_on_stubs_are_named(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, replace=PASSES_ON_STUBS)
    assert not verdict.ok
    assert verdict.with_stubs.outcome == "passed"
    assert any("do not fail" in p for p in verdict.problems)


def test_files_through_keeps_the_tasks_up_to_the_one_named_and_stubs_the_rest() -> None:
    files = files_through("a0", "0.2")
    operators, module = files["minitorch/operators.py"], files["minitorch/module.py"]
    assert "NotImplementedError" not in operators  # 0.1 and 0.2: the reference
    assert 'raise NotImplementedError("Task 0.3' in module  # 0.3: the release's stub
