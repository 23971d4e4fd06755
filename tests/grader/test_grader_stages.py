"""Every stage graded the same way: the manifest names exactly the registered checks, the
reference scores full marks and a fresh release scores zero on every task, A3 and A4
included (each planted mistake costing only its own task is tests/grader/test_grader_one_charge_stages.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from grader.checks import stage_checks
from grader.core.fences import package_fences
from grader.grading.grade import grade
from grader.core.manifest import all_manifests, load_manifest, repo_root
from grader.release.starter import release
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=120, start_timeout=120)
STAGES = sorted(all_manifests(repo_root()))


def test_the_stages_are_a0_to_a6() -> None:
    assert STAGES == ["a0", "a1", "a2", "a3", "a4", "a5", "a6"]


@pytest.mark.parametrize("stage", STAGES)
def test_the_manifest_names_every_registered_check_once_and_the_points_add_up(stage: str) -> None:
    manifest = load_manifest(stage)
    named = [c for t in manifest.tasks for c in t.checks]
    assert sorted(named) == sorted(stage_checks(stage))  # no check unused, none missing, none twice
    assert manifest.total_points == 100


@pytest.mark.parametrize("stage", STAGES)
def test_each_check_lives_in_the_module_of_the_task_that_lists_it(stage: str) -> None:
    """One convention: the checks of task X.Y are registered with ``@check("X.Y", …)`` in
    grader/checks/aX/task_X_Y.py, and the manifest lists them under X.Y."""
    registered = stage_checks(stage)
    for task in load_manifest(stage).tasks:
        module = f"grader.checks.{stage}.task_{task.id.replace('.', '_')}"
        for name in task.checks:
            check = registered[name]
            assert (check.task, check.fn.__module__) == (task.id, module), f"{stage} check {name}"


@pytest.mark.parametrize("stage", STAGES)
def test_every_task_has_every_piece(stage: str) -> None:
    """The pieces of a task that docs/ADDING.md lists, beyond what the manifest loader checks
    (fences that exist, checks that are registered): a handout section naming the files of
    its fences, public tests carrying its marker, the marker registered in pyproject.toml, a
    row in the task table of assignments/README.md, and the stage's mutation catalogue."""
    root = repo_root()
    files_of: dict[str, set[str]] = {}
    for rel, fences in package_fences(root / "minitorch").items():
        for fence in fences:
            files_of.setdefault(fence.task, set()).add(rel)
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    markers = {m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}
    table = (root / "assignments" / "README.md").read_text(encoding="utf-8")
    folder = next((root / "assignments").glob(f"{stage}-*"))
    handout = (folder / "README.md").read_text(encoding="utf-8")
    assert (folder / "mutants.toml").is_file(), (
        f"{folder.name}: no mutants.toml (the mutation catalogue, may be empty)"
    )
    for task in load_manifest(stage).tasks:
        header = re.search(rf"^## Task {re.escape(task.id)} · (.*)$", handout, re.M)
        assert header, f"{folder.name}/README.md: no section '## Task {task.id} · …'"
        for rel in sorted(files_of[task.id]):
            assert f"`{rel}`" in header.group(1), (
                f"the handout's section of task {task.id} does not name {rel}"
            )
        assert task.public_tests, f"task {task.id} has no public tests"
        for test_file in task.public_tests:
            text = (root / test_file).read_text(encoding="utf-8")
            assert f"mark.{task.marker}" in text, f"{test_file} has no test marked {task.marker}"
        assert task.marker in markers, f"pytest marker {task.marker} is not registered in pyproject.toml"
        assert re.search(rf"^\| {re.escape(task.id)} \| {stage.upper()} \|", table, re.M), (
            f"assignments/README.md's task table has no row for {task.id}"
        )


@pytest.mark.parametrize("stage", STAGES)
def test_the_reference_scores_full_marks_and_a_release_zero(stage: str, tmp_path: Path) -> None:
    ref = grade(repo_root(), stage, limits=LIMITS, notebooks=False)
    assert not ref.grader_errors, ref.grader_errors
    assert all(row.score == row.max_points for row in ref.tasks), [
        (r.id, r.message, r.feedback) for r in ref.tasks
    ]
    release(stage, tmp_path / "release")
    rel = grade(tmp_path / "release", stage, limits=LIMITS, notebooks=False)
    assert not rel.grader_errors, rel.grader_errors
    for row in rel.tasks:
        assert (row.score, row.status) == (0, "error"), (row.id, row.feedback)
        assert row.message.startswith(("not implemented yet", "depends on task")), (row.id, row.message)


@pytest.mark.parametrize("stage", ["a2", "a5"])
def test_a_manifest_naming_an_unregistered_check_is_a_grader_bug_that_says_where_checks_register(
    stage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the message names the task's module and the decorator the check needs
    from dataclasses import replace

    from grader.grading import grade as grading
    from grader.checks.base import GraderBug

    manifest = load_manifest(stage)
    first = manifest.tasks[0]
    module = f"grader/checks/{stage}/task_{first.id.replace('.', '_')}.py"
    broken = replace(
        manifest, tasks=(replace(first, checks=(*first.checks, "no_such_check")), *manifest.tasks[1:])
    )
    monkeypatch.setattr(grading, "load_manifest", lambda s: broken)
    with pytest.raises(
        GraderBug,
        match=rf"task {first.id} names check 'no_such_check', which no module registers "
        rf"@check\('{first.id}', 'no_such_check'\) in {module}",
    ):
        grade(tmp_path, stage, notebooks=False)
    # a check the manifest lists under another task than the one it is registered for
    second = manifest.tasks[1]
    moved = second.checks[0]
    broken = replace(
        manifest,
        tasks=(
            replace(first, checks=(*first.checks, moved)),
            replace(second, checks=second.checks[1:]),
            *manifest.tasks[2:],
        ),
    )
    with pytest.raises(
        GraderBug,
        match=rf"task {first.id} names check '{moved}', which is registered for task "
        rf"{second.id}, not @check\('{first.id}', '{moved}'\) in {module}",
    ):
        grade(tmp_path, stage, notebooks=False)
