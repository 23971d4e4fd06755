"""Gradescope's results.json (`grader.grading.report.gradescope`) as a stage's ``[gradescope]`` table
says (`grader.core.gradescope_settings`): what a student sees at once, what after the due date.

The hidden checks' feedback names their inputs and expected values: shown at once, one
submission would give away every hidden check. By default (and in every stage's manifest)
the score and which checks fail are visible, the feedback comes after the due date.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from results_json import is_details, task_tests

from grader.commands.autograder_bundle import PYTHON_VAR, ROOT_VAR, RUN_AUTOGRADER
from grader.commands.gradescope import failure_results
from grader.core.gradescope_settings import KEYS, VISIBILITIES, GradescopeSettings
from grader.core.manifest import all_manifests, load_manifest
from grader.grading.report import _whole_seconds, gradescope, stage_settings
from grader.core.results import CheckResult, GradeResult, TaskResult

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.grader

#: What only the details may show: a hidden check's input and the reference's answer.
SECRET = "central_difference(operators.id, 2.0): expected 1.0000000000, got 0.0"


def _result(seconds: float = 2.4) -> GradeResult:
    failing = CheckResult(
        "central_difference", "equivalence", "failed", SECRET, details=f"    {SECRET}\n    inputs: x = 2.0"
    )
    stub = CheckResult(
        "edge_cases",
        "edge",
        "error",
        "not implemented yet: autodiff.central_difference (task 1.1)",
        raised_in="autodiff.central_difference",
        unfinished=True,
    )
    rows = [
        TaskResult(
            "1.1",
            "Central difference",
            10,
            0.0,
            "failed",
            SECRET,
            feedback=f"✗ central_difference: failed — {SECRET}",
            checks=[failing, stub],
        ),
        TaskResult(
            "1.2",
            "Scalar forward",
            20,
            20.0,
            "passed",
            "passed",
            feedback="✓ add: passed",
            checks=[CheckResult("add", "equivalence", "passed", "passed")],
        ),
        TaskResult("1.3", "Chain rule", 20, 0.0, "error", "minitorch/scalar.py does not import: SyntaxError"),
        TaskResult(
            "nb:backprop.ipynb",
            "Backpropagation",
            15,
            5.0,
            "failed",
            "5 of 15 notebook points",
            feedback=f"q1: {SECRET}",
            kind="notebook",
        ),
    ]
    return GradeResult("a1", "Scalar autodiff", "sub", rows, seconds, isolation="bwrap")


def test_by_default_the_score_is_visible_and_the_hidden_checks_details_come_after_the_due_date() -> None:
    data = gradescope(_result(), GradescopeSettings())
    assert (data["visibility"], data["stdout_visibility"]) == ("visible", "hidden")
    scores = [t for t in data["tests"] if not is_details(t)]
    assert [t["number"] for t in scores] == ["1.1", "1.2", "1.3", "backprop.ipynb"]
    assert all(t["visibility"] == "visible" for t in scores)
    assert [t["score"] for t in scores] == [0.0, 20.0, 0.0, 5.0] and data["score"] == 25.0
    assert "25 / 65" in data["output"] and "after the due date" in data["output"]
    shown_now = json.dumps([data["output"], *scores])
    assert "expected 1.0" not in shown_now  # no hidden check's expected value before the due date
    first = scores[0]["output"]
    assert "0 of 2 checks pass" in first and "✗ central_difference: failed" in first
    assert "✗ edge_cases: error (not implemented yet: autodiff.central_difference)" in first
    assert "“Task 1.1: Central difference — details”, shown after the due date" in first
    assert "minitorch/scalar.py does not import" in scores[2]["output"]  # no check ran: nothing to withhold
    details = [t for t in data["tests"] if is_details(t)]
    assert [(t["number"], t["visibility"], t["score"], t["max_score"]) for t in details] == [
        ("1.1", "after_due_date", 0.0, 0.0),
        ("backprop.ipynb", "after_due_date", 0.0, 0.0),
    ]  # never a point
    assert all(SECRET in t["output"] for t in details)
    assert [SECRET in t["output"] for t in task_tests(data)] == [
        True,
        False,
        False,
        True,
    ]  # all of it, in time


def test_the_manifest_setting_changes_the_json(tmp_path: Path) -> None:
    folder = tmp_path / "assignments" / "a1-demo"
    folder.mkdir(parents=True)
    (tmp_path / "minitorch").mkdir()
    (tmp_path / "minitorch" / "m.py").write_text(
        "def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n    # END SOLUTION 1.1\n"
    )
    manifest = """\
        id = "a1"
        title = "Demo"
        [gradescope]
        visibility = "after_published"
        details = "hidden"
        [[tasks]]
        id = "1.1"
        title = "One"
        points = 100
        fences = ["1.1"]
        checks = ["one"]
        """
    (folder / "manifest.toml").write_text(textwrap.dedent(manifest))
    settings = load_manifest("a1", tmp_path).gradescope
    assert settings == GradescopeSettings("after_published", "hidden", "hidden")
    data = gradescope(_result(), settings)
    assert data["visibility"] == "after_published"
    assert {t["visibility"] for t in data["tests"] if not is_details(t)} == {"after_published"}
    assert {t["visibility"] for t in data["tests"] if is_details(t)} == {"hidden"}
    assert "shown to the course staff only" in data["tests"][0]["output"]

    same = gradescope(
        _result(), GradescopeSettings(details="visible")
    )  # as a public test suite: one test per task
    assert not [t for t in same["tests"] if is_details(t)] and SECRET in same["tests"][0]["output"]
    assert {t["visibility"] for t in same["tests"]} == {"visible"}


def test_every_stage_declares_its_gradescope_settings() -> None:
    for stage, manifest in all_manifests().items():
        raw = tomllib.loads((manifest.directory / "manifest.toml").read_text(encoding="utf-8"))
        assert sorted(raw.get("gradescope", {})) == sorted(KEYS), f"{stage}: set every key of [gradescope]"
        assert manifest.gradescope == stage_settings(stage)
        assert manifest.gradescope.details != "visible", (
            f"{stage}: the hidden checks' expected values shown at once"
        )
    assert (
        stage_settings("a99") == GradescopeSettings()
    )  # no manifest: the defaults, which protect the checks
    assert set(KEYS) == {"visibility", "details", "stdout_visibility"} and "after_due_date" in VISIBILITIES


@pytest.mark.parametrize(
    "seconds, whole",
    [(0.0, 0), (0.2, 1), (1.0, 1), (2.01, 3), (136.0, 136), (math.nan, 0), (math.inf, 0), (-1.0, 0)],
)
def test_execution_time_is_whole_seconds_rounded_up(seconds: float, whole: int) -> None:
    assert _whole_seconds(seconds) == whole and isinstance(_whole_seconds(seconds), int)
    assert gradescope(_result(seconds), GradescopeSettings())["execution_time"] == whole


def test_every_text_is_declared_plain_text() -> None:
    for settings in (GradescopeSettings(), GradescopeSettings(details="visible")):
        data = gradescope(_result(), settings)
        assert data["output_format"] == data["test_output_format"] == data["test_name_format"] == "text"
        assert all(t["output_format"] == "text" for t in data["tests"])
    assert failure_results("x")["output_format"] == "text"


def test_the_shell_fallback_of_run_autograder_is_valid_json(tmp_path: Path) -> None:
    """When Python cannot even start, run_autograder's printf writes results.json itself."""
    (tmp_path / "source").mkdir()
    script = tmp_path / "run_autograder"
    script.write_text(RUN_AUTOGRADER.format(stage="a0", root_var=ROOT_VAR, python_var=PYTHON_VAR))
    env = {**os.environ, ROOT_VAR: str(tmp_path), PYTHON_VAR: str(tmp_path / "no-python")}
    assert subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=60).returncode == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["score"] == 0 and "exit status 127" in data["output"] and data["output_format"] == "text"
    assert data["stdout_visibility"] == "hidden" and data["tests"] == []
