"""The GitHub Classroom workflow that `grader release` writes (`grader.release.classroom`).

Every stage's workflow is read back with a YAML parser and checked against the format of
Classroom's two actions: one command-grader step per task with the manifest's points, and
a reporter that reads every step's result. For A0 the graded commands are run, as the
command grader runs them (a shell in the repository root, only PATH and HOME of the
environment): in a fresh release they fail (stubs), with the reference in the fences they pass.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.release.classroom import GRADER_ACTION, REPORTER_ACTION, classroom_workflow
from grader.release.examples import write_files
from grader.core.manifest import all_manifests, stage_number
from grader.release.starter import release
from grader.release.standalone import files_through
from grader.trees.child_tree import build_child_tree

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = all_manifests(ROOT)

#: A step id GitHub accepts: a letter or _, then letters, digits, - and _.
STEP_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _workflow(stage: str) -> dict:
    return yaml.safe_load(classroom_workflow(MANIFESTS[stage]))


def _steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def _grader_steps(workflow: dict) -> list[dict]:
    return [s for s in _steps(workflow) if s.get("uses") == GRADER_ACTION]


@pytest.mark.parametrize("stage", list(MANIFESTS))
def test_the_workflow_is_classrooms_autograding_workflow(stage: str) -> None:
    workflow = _workflow(stage)
    # Classroom takes scores only from a workflow of this name with this one job.
    assert workflow["name"] == "Autograding Tests"
    assert list(workflow["jobs"]) == ["run-autograding-tests"]
    assert workflow["on"] == ["push", "workflow_dispatch", "repository_dispatch"]
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    job = workflow["jobs"]["run-autograding-tests"]
    assert job["runs-on"] == "ubuntu-latest"
    uses = [s.get("uses", "") for s in job["steps"]]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    assert job["steps"][1]["with"]["python-version"] == "3.11"
    install = job["steps"][2]
    assert install["run"] == 'python -m pip install -e ".[dev]"'  # what the starter README says
    first_graded = uses.index(GRADER_ACTION)
    assert first_graded == 3 and uses[-1] == REPORTER_ACTION


@pytest.mark.parametrize("stage", list(MANIFESTS))
def test_one_graded_step_per_task_for_its_points(stage: str) -> None:
    manifest = MANIFESTS[stage]
    steps = _grader_steps(_workflow(stage))
    assert len(steps) == len(manifest.tasks)
    for task, step in zip(manifest.tasks, steps):
        assert STEP_ID.match(step["id"]), step["id"]
        assert step["id"] == task.marker
        grade = step["with"]
        assert grade["test-name"] == f"{task.id} {task.title}"
        assert grade["command"] == f"python -m pytest -q -x -m {task.marker}"
        assert "setup-command" not in grade  # installed once, in the step before
        assert type(grade["max-score"]) is int and grade["max-score"] == task.points
        assert (
            type(grade["timeout"]) is int and 1 <= grade["timeout"] <= 360
        )  # minutes; the action's maximum is 6 h
        if stage_number(stage) >= 3:
            assert grade["timeout"] >= 15, f"{task.id}: Numba compiles the kernels of its tests"
    assert len({s["id"] for s in steps}) == len(steps)
    assert sum(s["with"]["max-score"] for s in steps) == sum(t.points for t in manifest.tasks)


@pytest.mark.parametrize("stage", list(MANIFESTS))
def test_the_reporter_reads_every_graded_step(stage: str) -> None:
    workflow = _workflow(stage)
    reporter = _steps(workflow)[-1]
    ids = [s["id"] for s in _grader_steps(workflow)]
    # The reporter splits `runners` on commas and reads `<RUNNER IN CAPITALS>_RESULTS` for each.
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{i.upper()}_RESULTS": "${{steps.%s.outputs.result}}" % i for i in ids}


def test_points_that_are_not_whole_are_refused() -> None:
    manifest = MANIFESTS["a0"]
    half = dataclasses.replace(manifest.tasks[0], points=12.5)
    changed = dataclasses.replace(manifest, tasks=(half, *manifest.tasks[1:]))
    with pytest.raises(ValueError, match=r"task 0\.1 has 12\.5 points"):
        classroom_workflow(changed)
    whole = dataclasses.replace(manifest.tasks[0], points=40.0)  # TOML `points = 40.0`
    text = classroom_workflow(dataclasses.replace(manifest, tasks=(whole, *manifest.tasks[1:])))
    assert _grader_steps(yaml.safe_load(text))[0]["with"]["max-score"] == 40


def test_titles_that_need_quoting_survive() -> None:
    manifest = MANIFESTS["a0"]
    odd = dataclasses.replace(manifest.tasks[0], title='Operators: "map" # and more')
    text = classroom_workflow(dataclasses.replace(manifest, tasks=(odd, *manifest.tasks[1:])))
    assert _grader_steps(yaml.safe_load(text))[0]["with"]["test-name"] == '0.1 Operators: "map" # and more'


def _run_like_the_command_grader(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command grader runs `command` in a shell with only PATH, HOME and FORCE_COLOR set."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(cwd)), "FORCE_COLOR": "true"}
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # six pytest runs: about 20 s on two cores
def test_release_writes_the_workflow_and_its_commands_grade_a0(tmp_path: Path) -> None:
    manifest = MANIFESTS["a0"]
    fresh = release("a0", tmp_path / "stubs", repo_root=ROOT)
    assert ".github/workflows/classroom.yml" in fresh.files
    stubs = fresh.out_dir
    written = stubs / ".github" / "workflows" / "classroom.yml"
    assert written.read_text(encoding="utf-8") == classroom_workflow(manifest)

    solved = release("a0", tmp_path / "solved", repo_root=ROOT).out_dir
    reference = files_through("a0", manifest.tasks[-1].id)  # every fence of A0 holds the reference
    build_child_tree("a0", write_files(tmp_path / "submission", reference), solved)

    for step in _grader_steps(yaml.safe_load(written.read_text(encoding="utf-8"))):
        command = step["with"]["command"]
        failed = _run_like_the_command_grader(command, stubs)
        assert failed.returncode == 1, (
            f"{command} on stubs: exit {failed.returncode}\n{failed.stdout[-2000:]}"
        )
        assert "NotImplementedError" in failed.stdout
        passed = _run_like_the_command_grader(command, solved)
        assert passed.returncode == 0, (
            f"{command} on the reference: exit {passed.returncode}\n{passed.stdout[-2000:]}"
        )
        assert re.search(r"\d+ passed", passed.stdout) and "skipped" not in passed.stdout
