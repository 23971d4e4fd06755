"""Five typical mistakes, graded end to end: each failure tells the student what was expected.

Each submission is the reference with one fence body replaced (`write_submission`), graded
for one task. The assertions read the messages and details a student sees, not check names
or their order (the checks of a task may be split or reordered): some check of the task
must fail, and its one-line message and its feedback must name the call and the input, say
what the reference gave and what the student's code gave (or raised), and, for a stub left
in another task, name that function and its task.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox.answers import ErrorInfo
from grader.checks.feedback import not_implemented_message
from grader.checks.probe import Probe
from grader.release.examples import write_submission
from grader.core.fences import find_fences, stub_line
from grader.grading.grade import grade
from grader.core.manifest import load_manifest, repo_root
from grader.core.results import CheckResult, TaskResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)


def _grade_task(tmp_path: Path, stage: str, task: str, edits: dict, one_charge: bool = True) -> TaskResult:
    sub = write_submission(tmp_path / "submission", stage, edits)
    result = grade(sub, stage, task=task, limits=FAST, notebooks=False, one_charge=one_charge)
    assert not result.grader_errors, result.grader_errors
    (row,) = [r for r in result.tasks if r.id == task]
    assert row.score < row.max_points, row.feedback
    return row


def _failures(row: TaskResult) -> list[CheckResult]:
    bad = [c for c in row.checks if c.status != "passed"]
    assert bad, row.feedback
    return bad


def _one(row: TaskResult, pattern: str) -> tuple[CheckResult, re.Match]:
    """The first failing check whose message matches `pattern`."""
    for c in _failures(row):
        m = re.search(pattern, c.message)
        if m:
            return c, m
    raise AssertionError(f"no failing check's message matches {pattern!r}:\n{row.feedback}")


def _release_stub(path: str, task: str, function: str) -> str:
    """The stub a release leaves in `function` (what a student who skipped it submits)."""
    (fence,) = [
        f
        for f in find_fences((repo_root() / path).read_text(encoding="utf-8"), path)
        if f.task == task and f.function == function
    ]
    title = next(t.title for t in load_manifest(f"a{task.split('.')[0]}").tasks if t.id == task)
    return stub_line(fence, title).strip()


def test_an_exception_on_an_edge_case_says_what_was_expected(tmp_path: Path) -> None:
    """(1) inv(0.0) raising ZeroDivisionError: the reference gives ±inf."""
    row = _grade_task(tmp_path, "a0", "0.1", {("0.1", "inv"): "return 1.0 / x"})
    c, m = _one(
        row, r"ZeroDivisionError in operators\.inv\((-?)0\.0\): expected (-?)inf, got ZeroDivisionError"
    )
    assert m.group(1) == m.group(2)  # inv(-0.0) = -inf
    assert c.status == "error"
    assert f"expected: {m.group(2)}inf" in c.details  # the feedback repeats it, with the traceback
    assert "Traceback (your code)" in c.details and "return 1.0 / x" in c.details


def test_a_wrong_function_is_shown_on_an_ordinary_input(tmp_path: Path) -> None:
    """(2) log as math.log10: reported on a positive input, expected ln(x), got log10(x) — not
    hidden behind the ValueError of log(0.0) (needs ordinary inputs probed apart from, or
    before, the edge cases)."""
    row = _grade_task(tmp_path, "a0", "0.1", {("0.1", "log"): "return math.log10(x)"})
    number = r"(-?\d[\d.e+-]*)"
    c, m = _one(row, rf"operators\.log\({number}\)\W.*expected {number}, got {number}")
    x, expected, got = (float(g) for g in m.groups())
    assert x > 0 and x != 1.0
    assert expected == pytest.approx(math.log(x), rel=1e-9) and got == pytest.approx(math.log10(x), rel=1e-9)
    assert c.status == "failed" and "expected:" in c.details and "got:" in c.details


def test_a_stub_in_another_task_is_named_with_its_task(tmp_path: Path) -> None:
    """(3) negList of task 0.2 is checked against the student's own operators.neg (task
    0.1), which is still a stub: the message of the student's whole tree (graded alone, the
    check passes and keeps these words: tests/grader/test_grader_one_charge.py)."""
    stub = _release_stub("minitorch/operators.py", "0.1", "neg")
    row = _grade_task(tmp_path, "a0", "0.2", {("0.1", "neg"): stub}, one_charge=False)
    c, _ = _one(row, r"depends on task 0\.1: finish `operators\.neg` first")
    assert c.name == "list_functions"
    assert c.message == "depends on task 0.1: finish `operators.neg` first (it is not implemented yet)"
    assert "while running:" in c.details and "neg" in c.details.split("while running:")[1].splitlines()[0]


def test_a_stub_in_the_task_itself_names_the_function(tmp_path: Path) -> None:
    """A stub of the graded task: the function and the task, without blaming another task."""
    stub = _release_stub("minitorch/operators.py", "0.1", "inv")
    row = _grade_task(tmp_path, "a0", "0.1", {("0.1", "inv"): stub})
    c, _ = _one(row, r"operators\.inv \(task 0\.1\)")
    assert c.message == "not implemented yet: operators.inv (task 0.1)"


def test_a_wrong_shape_shows_both_shapes(tmp_path: Path) -> None:
    """(4) Sum.forward dropping the reduced dimension (Tensor.sum drops it, unless keepdim)."""
    body = "ctx.save_for_backward(a.shape)\nreturn a.backend.add_reduce(a, dim).contiguous().view(*[s for i, s in enumerate(a.shape) if i != dim] or [1])"
    row = _grade_task(tmp_path, "a2", "2.3", {("2.3", "Sum.forward"): body})
    c, _ = _one(row, r"\bsum\(.*shape")
    expected = re.search(r"expected: tensor of shape (\([\d, ]*\))", c.details)
    got = re.search(r"got: +tensor of shape (\([\d, ]*\))", c.details)
    assert expected and got and expected.group(1) != got.group(1), c.details
    assert expected.group(1) in c.message and got.group(1) in c.message  # both shapes in the one line


def test_a_wrong_backward_shows_central_differences_for_the_input(tmp_path: Path) -> None:
    """(5) Mul.backward returning g·b for both inputs: the gradient of the second is wrong."""
    body = "a, b = ctx.saved_values\nmul = grad_output.backend.mul_zip\nreturn mul(grad_output, b), mul(grad_output, b)"
    row = _grade_task(tmp_path, "a2", "2.4", {("2.4", "Mul.backward"): body})
    c, m = _one(row, r"disagrees with central differences of your forward for (\w+):")
    assert c.kind == "gradient"
    name = m.group(1)
    inputs = [line.split(" = ")[0] for line in c.details.splitlines() if re.match(r"^\w+ = ", line)]
    assert inputs.index(name) == 1, (name, inputs)  # the second operand of a * b
    assert (
        "central differences of your forward:" in c.details and f"your backward ({name}.grad):" in c.details
    )


@pytest.mark.parametrize(
    ("message", "frames", "graded", "shown"),
    [
        # a compiled kernel leaves no frame in the tree: the stub's own message tells
        (
            "Task 3.1: Parallel map (tensor_map._map) — write your code between the markers",
            (),
            "3.2",
            "depends on task 3.1: finish `fast_ops.tensor_map._map` first (it is not implemented yet)",
        ),
        # several classes define forward: the stub's message names which one
        (
            "Task 1.2: Scalar forward (Mul.forward) — write your code between the markers",
            ("minitorch/scalar_functions.py", "forward"),
            "1.2",
            "not implemented yet: scalar_functions.Mul.forward (task 1.2)",
        ),
        # the student's own NotImplementedError in their own function: their message is kept
        (
            "later",
            ("minitorch/autodiff.py", "central_difference"),
            "1.1",
            "not implemented yet: autodiff.central_difference (task 1.1) — later",
        ),
    ],
)
def test_not_implemented_names_function_and_task(
    message: str, frames: tuple, graded: str, shown: str
) -> None:
    tb = ({"file": frames[0], "line": 1, "function": frames[1], "code": ""},) if frames else ()
    error = ErrorInfo("NotImplementedError", message, ("NotImplementedError", "RuntimeError"), tb)
    task = next(t for t in load_manifest(f"a{graded[0]}").tasks if t.id == graded)
    assert not_implemented_message(error, task) == shown


def test_outputs_are_named_by_what_computed_them() -> None:
    """Feedback on a probe with several outputs names them ("a.grad"), never "output 1"."""
    a, b = np.ones((2, 3)), np.ones(3)
    p = Probe("a * b, backward", {"a": a, "b": b})
    ta, tb = p.tensor(a, requires_grad=True), p.tensor(b, requires_grad=True)
    p.returns(p.op("mul", ta, tb), p.attr(ta, "grad"), p.attr(tb, "grad"))
    assert p.output_names == ["(a * b)", "a.grad", "b.grad"]
    q = Probe("twice")
    x = q.const(1.0)
    q.returns(x, x)  # the same expression twice: told apart by position, still named
    assert q.output_names == ["1.0 (returned value 1 of 2)", "1.0 (returned value 2 of 2)"]
