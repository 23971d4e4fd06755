"""The hidden checks of A4 (convolution, pooling, softmax, dropout, the text CNN) against
submissions with one classic mistake each.

Each bad submission is the reference with one fence body replaced (`write_submission`).
Graded with ``isolate=True`` (the other tasks get the reference's bodies), the bad task
loses points, the checks that fail are the ones that should, and every other task keeps
all of its own. (The reference scoring full marks and a release zero:
tests/grader/test_grader_stages.py; one mistake costing one task in the student's whole tree:
tests/grader/test_grader_one_charge_stages.py.)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.release.examples import write_submission
from grader.core.fences import package_fences
from grader.grading.grade import grade
from grader.core.manifest import repo_root
from grader.core.results import GradeResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=60, start_timeout=60)


def _reference_body(task: str, function: str) -> str:
    fences = [
        f
        for fs in package_fences(repo_root() / "minitorch").values()
        for f in fs
        if f.task == task and f.function == function
    ]
    assert len(fences) == 1, (task, function)
    return textwrap.dedent("".join(fences[0].body))


def _changed(task: str, function: str, old: str, new: str) -> dict[tuple[str, str], str]:
    """The reference body of `function` with `old` replaced by `new` (which must occur once)."""
    body = _reference_body(task, function)
    assert body.count(old) == 1, f"{function}: {old!r} is not in the reference body once"
    return {(task, function): body.replace(old, new)}


SOFTMAX_WITHOUT_MAX = """\
e = input.exp()  # no shift by the max: e^x overflows for large logits
return e / e.sum(d, keepdim=True)
"""
DROPOUT_WITHOUT_RESCALING = """\
if p == 1.0:
    return input * 0.0
u = rand(input.shape, dtype=input.dtype, backend=input.backend)
keep = u > p
return input * keep  # no 1 / (1 − p): the expected activation shrinks in training
"""
TEXTCNN_WITHOUT_RELU = """\
x = embedded.permute(0, 2, 1)
features = [max_over_time(conv(x)) for conv in self.convs]  # no ReLU
h = cat(features, dim=1)
return self.fc(self.dropout(h))
"""

#: name → (the edits, made when the test runs; the task that loses points; its checks that fail)
BAD = {
    "im2col1d ignores the dilation": (
        lambda: _changed("4.1", "im2col1d", "pos = start + k * dilation", "pos = start + k"),
        "4.1",
        {"conv1d", "im2col1d", "conv1d_gradcheck"},
    ),  # the backward (col2im1d) no longer its adjoint
    "avg pooling divides by the window inside the input only": (
        lambda: _changed(
            "4.3",
            "avg_pool2d_forward",
            "divisor = kh * kw if count_include_pad else count",
            "divisor = count",
        ),
        "4.3",
        {"avg_pool2d", "pool_gradcheck"},
    ),
    "softmax without subtracting the max": (
        lambda: {("4.4", "softmax"): SOFTMAX_WITHOUT_MAX},
        "4.4",
        {"softmax"},
    ),
    "dropout without the 1 / (1 - p) rescaling": (
        lambda: {("4.4", "dropout"): DROPOUT_WITHOUT_RESCALING},
        "4.4",
        {"dropout"},
    ),
    "the text CNN without the ReLU": (
        lambda: {("4.5", "TextCNN.forward_embedded"): TEXTCNN_WITHOUT_RELU},
        "4.5",
        {"textcnn", "textcnn_train", "textcnn_shapes"},
    ),
}


def _grade(tmp_path: Path, edits: dict) -> GradeResult:
    sub = write_submission(tmp_path / "submission", "a4", edits)
    result = grade(sub, "a4", limits=LIMITS, notebooks=False, isolate=True, one_charge=False)
    assert not result.grader_errors, result.grader_errors
    return result


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_costs_its_task_and_only_that_task(tmp_path: Path, name: str) -> None:
    make_edits, task, checks = BAD[name]
    result = _grade(tmp_path, make_edits())
    failing = {
        row.id: {c.name for c in row.checks if c.status != "passed"}
        for row in result.tasks
        if row.score < row.max_points
    }
    assert set(failing) == {task}, {r.id: r.feedback for r in result.tasks if r.score < r.max_points}
    assert failing[task] == checks, failing
    row = next(r for r in result.tasks if r.id == task)
    assert row.status == "failed" and row.score < row.max_points, (row.score, row.status)
    for check in row.checks:
        if check.name in checks:  # the message names the call and what was expected
            assert "(" in check.message and ("expected" in check.message or "must" in check.message), (
                check.message
            )
