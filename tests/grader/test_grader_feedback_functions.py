"""Feedback on every function of a task, not only the first failure; "depends on" when a
task fails because of an earlier one; numbers shown in their own type.

The end-to-end case is a student's first hour on A2: `strides_from_shape` left as the
release's stub and an off-by-one in `index_to_position` (both task 2.1). Task 2.1 must
report both, each with its own message, and `permute` (which only reaches the stub) must
not blame itself; tasks 2.2–2.4 must say that they depend on 2.1.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from grader.sandbox.answers import Answer, ErrorInfo, NpScalar, TensorVal
from grader.checks import get_check
from grader.checks.base import CheckContext, CheckFailed, Services, StudentError
from grader.checks.compare import diff
from grader.checks.feedback import not_implemented_message
from grader.checks.runner import _task_status, explain_failures, task_messages
from grader.checks.probe import Probe
from grader.core.console import make_console
from grader.release.examples import write_submission
from grader.sandbox.child.executor import Executor
from grader.core.fences import find_fences, stub_line
from grader.grading.grade import grade
from grader.core.manifest import load_manifest, repo_root
from grader.grading.report import print_report
from grader.core.results import CheckResult, GradeResult, TaskResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)
TD = "minitorch/tensor_data.py"
STUB_TASK_DEPENDS = "depends on task 2.1: finish `tensor_data.strides_from_shape` first"
OFF_BY_ONE = (
    "position = 0\nfor k in range(len(index)):\n    position += index[k] * strides[k]\nreturn position + 1\n"
)


def _release_stub(path: str, task: str, function: str) -> str:
    """The line a release leaves in `function` (what a student who has not started submits)."""
    (fence,) = [
        f
        for f in find_fences((repo_root() / path).read_text(encoding="utf-8"), path)
        if f.task == task and f.function == function
    ]
    title = next(t.title for t in load_manifest(f"a{task.split('.')[0]}").tasks if t.id == task)
    return stub_line(fence, title).strip()


@pytest.fixture(scope="module")
def first_hour(tmp_path_factory: pytest.TempPathFactory) -> GradeResult:
    """A2 graded with strides_from_shape a stub and index_to_position off by one."""
    edits = {
        ("2.1", "strides_from_shape"): _release_stub(TD, "2.1", "strides_from_shape"),
        ("2.1", "index_to_position"): OFF_BY_ONE,
    }
    sub = write_submission(tmp_path_factory.mktemp("first-hour") / "submission", "a2", edits)
    result = grade(sub, "a2", limits=FAST, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    return result


def _row(result: GradeResult, task: str) -> TaskResult:
    return next(r for r in result.tasks if r.id == task)


def _check(row: TaskResult, name: str) -> CheckResult:
    return next(c for c in row.checks if c.name == name)


def test_every_failing_function_of_a_task_has_its_own_message(first_hour: GradeResult) -> None:
    row = _row(first_hour, "2.1")
    stub = _check(row, "strides_from_shape")
    assert (
        stub.status == "error"
        and stub.message == "not implemented yet: tensor_data.strides_from_shape (task 2.1)"
    )
    wrong = _check(row, "index_to_position")
    assert wrong.status == "failed", wrong.message
    # its own smallest failing input, and expected vs got as ints: Σ index·strides, and one more
    m = re.fullmatch(
        r"index_to_position\(\(([\d, ]+)\), strides=\(([\d, ]+)\)\): value: expected (\S+), got (\S+)",
        wrong.message,
    )
    assert m, wrong.message
    index, strides = (tuple(int(x) for x in g.split(",") if x.strip()) for g in m.group(1, 2))
    position = sum(i * s for i, s in zip(index, strides))
    assert (m.group(3), m.group(4)) == (str(position), str(position + 1))
    assert _check(row, "to_index").status == "passed"
    # the table names every failing function, one line each, and so does the feedback
    assert [line.split(":")[0] for line in row.messages] == [
        "strides_from_shape",
        "index_to_position",
        "permute",
    ]
    for c in row.checks:
        if c.status != "passed":
            assert f"✗ {c.name} ({c.kind}): {c.status} — {c.message}" in row.feedback
    assert "index_to_position" in row.message and "permute" in row.message  # the one-line message names them


def test_a_check_that_only_reaches_a_stub_of_its_own_task_says_so(first_hour: GradeResult) -> None:
    permute = _check(_row(first_hour, "2.1"), "permute")
    assert permute.status == "error"
    assert permute.message == (
        "fails because it reaches `tensor_data.strides_from_shape` (also task 2.1), "
        "which is not implemented yet: finish that first"
    )
    # the traceback is shown once, with the check that reports the stub
    feedback = _row(first_hour, "2.1").feedback
    assert feedback.count("Traceback (your code):") == 1
    assert "(stopped at the stub of tensor_data.strides_from_shape, as above)" in feedback


@pytest.mark.parametrize("task", ["2.2", "2.3", "2.4"])
def test_a_later_task_says_it_depends_on_the_unfinished_one(first_hour: GradeResult, task: str) -> None:
    """Graded alone (grader.grading.one_charge) it loses nothing to 2.1; its checks that fail with
    the student's own 2.1 say so, in the whole tree's words."""
    row = _row(first_hour, task)
    assert row.score == row.max_points, row.feedback
    rescued = [c for c in row.checks if "; with your own code: " in c.message]
    assert rescued, row.feedback
    for c in rescued:
        assert c.message.split("; with your own code: ", 1)[1].startswith(STUB_TASK_DEPENDS), c.message
    assert (
        row.message
        == "passes with the reference for the other tasks: task 2.1 fails its own checks: fix it first"
    )
    assert (
        "task 2.1 (strides_from_shape, index_to_position, permute) fails its own checks: fix it first."
        in row.feedback
    )
    assert f"— {STUB_TASK_DEPENDS}" in row.feedback


def test_the_report_in_a_pipe_shows_every_line_unbroken(first_hour: GradeResult) -> None:
    out = io.StringIO()
    print_report(first_hour, make_console(file=out))
    text = out.getvalue()
    for line in _row(first_hour, "2.1").messages + [_row(first_hour, "2.3").message]:
        assert line in text, line


# ---- the rules, on results made by hand


def _stub_at(name: str, function: str, task: str) -> CheckResult:
    return CheckResult(
        name,
        "equivalence",
        "error",
        f"not implemented yet: {function} (task {task})",
        details=f"while running: {name}(...)\nTraceback (your code):\n  …",
        raised_in=function,
        raised_in_task=task,
        unfinished=True,
    )


def _task(stage: str, task_id: str):
    return next(t for t in load_manifest(stage).tasks if t.id == task_id)


def test_the_check_named_after_a_stub_reports_it_even_when_it_comes_later() -> None:
    results = [
        _stub_at("permute", "tensor_data.strides_from_shape", "2.1"),
        _stub_at("strides_from_shape", "tensor_data.strides_from_shape", "2.1"),
    ]
    explain_failures(_task("a2", "2.1"), results)
    assert results[0].message.startswith("fails because it reaches `tensor_data.strides_from_shape`")
    assert results[1].message == "not implemented yet: tensor_data.strides_from_shape (task 2.1)"


def test_without_a_check_named_after_it_the_first_check_reaching_a_stub_reports_it() -> None:
    results = [
        _stub_at("map_kernel", "tensor_ops.tensor_map._map", "2.3"),
        _stub_at("tensor_forward", "tensor_ops.tensor_map._map", "2.3"),
    ]
    explain_failures(_task("a2", "2.3"), results)
    assert results[0].message.startswith("not implemented yet")
    assert results[1].message.startswith(
        "fails because it reaches `tensor_ops.tensor_map._map` (also task 2.3)"
    )


def _raised(name: str, function: str, task: str) -> CheckResult:
    return CheckResult(
        name,
        "equivalence",
        "error",
        "IndexError in neg_map(a): expected [-0.25], got IndexError('index 1 is out of bounds')",
        raised_in=function,
        raised_in_task=task,
    )


def _row_of(task_id: str, status: str) -> TaskResult:
    return TaskResult(task_id, "", 20, 0 if status != "passed" else 20, status, "")


def test_an_exception_in_a_broken_earlier_task_says_depends_on() -> None:
    results = [_raised("map_kernel", "tensor_data.index_to_position", "2.1")]
    explain_failures(
        _task("a2", "2.3"), results, earlier=[_row_of("2.1", "failed"), _row_of("2.2", "passed")]
    )
    assert results[0].message.startswith(
        "depends on task 2.1, which fails: fix `tensor_data.index_to_position` first — IndexError in neg_map(a)"
    )


def test_an_exception_in_a_passing_earlier_task_only_says_where() -> None:
    """The student's own code of 2.3 may call a correct index_to_position with a bad index."""
    results = [_raised("map_kernel", "tensor_data.index_to_position", "2.1")]
    explain_failures(_task("a2", "2.3"), results, earlier=[_row_of("2.1", "passed")])
    assert results[0].message.startswith("IndexError in neg_map(a)")
    assert results[0].message.endswith(
        "(raised in `tensor_data.index_to_position` of task 2.1, which this check uses)"
    )


def test_a_wrong_value_with_an_earlier_task_failing_is_not_blamed_on_it_by_a_guess() -> None:
    """A wrong value has no traceback: whether 2.1 caused it is shown by grading 2.3 alone
    (grader.grading.one_charge), not guessed here — 1.3 does not use 1.1, yet a guess named it."""
    wrong = [
        CheckResult(
            "map_kernel", "equivalence", "failed", "neg_map(a): value at index (1,): expected -0.5, got 0.25"
        )
    ]
    explain_failures(_task("a2", "2.3"), wrong, earlier=[_row_of("2.1", "failed"), _row_of("2.2", "passed")])
    assert wrong[0].message == "neg_map(a): value at index (1,): expected -0.5, got 0.25"  # unchanged


def test_the_table_lines_group_checks_with_one_message() -> None:
    same = "depends on task 2.1: finish `x` first (it is not implemented yet)"
    results = [
        CheckResult("a", "", "error", same),
        CheckResult("b", "", "passed", "passed"),
        CheckResult("c", "", "error", same),
        CheckResult("d", "", "failed", "d(1): value: expected 1, got 2"),
    ]
    assert task_messages(results) == [f"a, c: {same}", "d: d(1): value: expected 1, got 2"]
    assert task_messages(results[:3]) == [same]
    assert task_messages(results[1:2]) == []
    assert _task_status(results) == ("error", f"{same} (also failing: d)")
    assert _task_status(results[1:2]) == ("passed", "all checks passed")


def test_a_stub_of_another_task_is_a_dependency() -> None:
    tb = ({"file": "minitorch/operators.py", "line": 1, "function": "neg", "code": ""},)
    error = ErrorInfo(
        "NotImplementedError",
        "Task 0.1: Operators (neg) — write your code between the markers",
        ("NotImplementedError",),
        tb,
    )
    assert (
        not_implemented_message(error, _task("a0", "0.2"))
        == "depends on task 0.1: finish `operators.neg` first (it is not implemented yet)"
    )
    assert (
        not_implemented_message(error, _task("a0", "0.1")) == "not implemented yet: operators.neg (task 0.1)"
    )


# ---- numbers in their own type


@pytest.mark.parametrize(
    ("expected", "got", "strict", "shown"),
    [
        (NpScalar(2, "int64"), NpScalar(0, "int64"), True, "value: expected 2, got 0"),
        (2, 0, True, "value: expected 2, got 0"),
        (2, 0, False, "value: expected 2, got 0"),
        (2, 2.5, False, "value: expected 2, got 2.5"),
        (2.0, 3, False, "value: expected 2.0, got 3"),
        (True, False, True, "expected True, got False"),
        (1.0, 1.5, True, "value: expected 1.0, got 1.5"),
        (2**60 + 1, 2**60, True, f"value: expected {2**60 + 1}, got {2**60}"),  # exactly, not as floats
        (
            TensorVal(np.array([True, False])),
            TensorVal(np.array([True, True])),
            True,
            "value at index (1,): expected False, got True (1 of 2 values differ)",
        ),
        (
            TensorVal(np.array([1, 2], dtype=np.int64)),
            TensorVal(np.array([1, 3], dtype=np.int64)),
            True,
            "value at index (1,): expected 2, got 3 (1 of 2 values differ)",
        ),
    ],
)
def test_numbers_are_shown_in_their_own_type(expected: object, got: object, strict: bool, shown: str) -> None:
    assert diff(expected, got, strict_bool=strict) == shown


@pytest.mark.parametrize(
    ("expected", "got", "strict"),
    [(2, 2, True), (2, 2.0, False), (NpScalar(3, "int64"), NpScalar(3, "int64"), True), (True, 1, False)],
)
def test_equal_numbers_match(expected: object, got: object, strict: bool) -> None:
    assert diff(expected, got, strict_bool=strict) is None


# ---- the failure shown: the furthest off, among the smallest


def test_an_array_shows_its_element_furthest_off_not_its_first() -> None:
    """Element 0 is off by 1e-5 (over the tolerance, invisible at a glance); element 2 by a third."""
    expected, got = TensorVal(np.array([1.0, 2.0, 3.0])), TensorVal(np.array([1.00001, 2.0, 2.0]))
    assert diff(expected, got) == "value at index (2,): expected 3.0, got 2.0 (2 of 3 values differ)"


def test_a_nan_where_a_number_is_expected_is_furthest_off() -> None:
    expected, got = (
        TensorVal(np.array([[1.0, 2.0], [3.0, 4.0]])),
        TensorVal(np.array([[1.5, 2.0], [3.0, np.nan]])),
    )
    assert diff(expected, got).startswith("value at index (1, 1): expected 4.0, got nan")


class _Answers(CheckContext):
    """A context whose reference and student "children" answer from lists, in order."""

    def __init__(self, expected: list[Answer], got: list[Answer]) -> None:
        super().__init__(
            get_check("a0", "arithmetic"), lambda programs: [], Executor(None), Services(limits=Limits())
        )
        self.expected, self.got = expected, got

    def reference(self, probes):  # noqa: ANN001, ANN201
        return self.expected[: len(probes)]

    def child(self, probes):  # noqa: ANN001, ANN201
        return self.got[: len(probes)]


def _probes(n: int) -> list[Probe]:
    probes = []
    for k in range(n):
        p = Probe(f"probe {k}", {"x": float(k)})
        p.returns(p.call("minitorch.operators.neg", float(k)))
        probes.append(p)
    return probes


def _tensor(*values: float) -> Answer:
    return Answer(values=[TensorVal(np.array(values))])


@pytest.mark.parametrize(
    ("got", "shown"),
    [
        # probe 0 nearly right, probe 1 plainly wrong: probe 1 is shown
        (
            [_tensor(1.0000001, 2.0), _tensor(5.0, 2.0), _tensor(1.0, 2.0), _tensor(1.0, 2.0)],
            "probe 1: value at index (0,): expected 1.0, got 5.0",
        ),
        # equally far off: the first (smallest) is shown
        ([_tensor(1.0, 3.0), _tensor(1.0, 3.0), _tensor(1.0, 2.0), _tensor(1.0, 2.0)], "probe 0:"),
        # only the first three failing probes are weighed: probe 3 is further off, but larger
        ([_tensor(1.1, 2.0), _tensor(1.1, 2.0), _tensor(1.2, 2.0), _tensor(9.0, 2.0)], "probe 2:"),
        # a wrong shape is as visible as it gets
        (
            [
                _tensor(1.1, 2.0),
                Answer(values=[TensorVal(np.array([1.0]))]),
                _tensor(1.0, 2.0),
                _tensor(1.0, 2.0),
            ],
            "probe 1: shape (1,), expected (2,)",
        ),
    ],
)
def test_the_failure_shown_is_the_furthest_off_of_the_first_three(got: list[Answer], shown: str) -> None:
    ctx = _Answers([_tensor(1.0, 2.0)] * 4, got)
    with pytest.raises(CheckFailed) as failed:
        ctx.equivalent(_probes(4))
    assert failed.value.message.startswith(shown), failed.value.message


def test_student_code_that_raises_is_shown_when_it_comes_first() -> None:
    error = Answer(error=ErrorInfo("ZeroDivisionError", "division by zero", []))
    ctx = _Answers([_tensor(1.0, 2.0)] * 3, [error, _tensor(9.0, 2.0), _tensor(1.0, 2.0)])
    with pytest.raises(StudentError):
        ctx.equivalent(_probes(3))
    ctx = _Answers([_tensor(1.0, 2.0)] * 3, [_tensor(1.1, 2.0), error, _tensor(1.0, 2.0)])
    with pytest.raises(CheckFailed) as failed:  # a wrong value before it: the values are shown
        ctx.equivalent(_probes(3))
    assert failed.value.message.startswith("probe 0:"), failed.value.message
