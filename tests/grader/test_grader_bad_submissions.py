"""The grader against hostile and broken submissions.

Each submission is the reference with one fence body replaced (written with
`grader.release.examples.write_submission`). Whatever the body does — hang, exit,
crash, print fake results, overwrite the report, return impostor objects — the grading
run completes, the bad task gets a clear message and no points, and every other task is
still graded (and scores its full points).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from results_json import by_number, task_tests

from grader.release.examples import write_submission
from grader.grading.grade import grade
from grader.core.results import GradeResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=8, start_timeout=60)
A1_POINTS = {"1.1": 10, "1.2": 20, "1.3": 30, "1.4": 25}


def _grade(
    tmp_path: Path,
    stage: str,
    edits: dict,
    *,
    task: str | None = None,
    limits: Limits = FAST,
    extra: dict | None = None,
) -> GradeResult:
    sub = write_submission(tmp_path / "submission", stage, edits, extra)
    result = grade(sub, stage, task=task, limits=limits, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    return result


def _row(result: GradeResult, task: str):
    return next(r for r in result.tasks if r.id == task)


def _assert_only(result: GradeResult, bad: str, status: str) -> None:
    """The bad task has `status` and no points; every other task has full points."""
    for row in result.tasks:
        if row.id == bad:
            assert row.status == status, (row.status, row.message, row.feedback)
            assert row.score == 0, row.feedback
        else:
            assert row.status == "passed", (row.id, row.message, row.feedback)
            assert row.score == row.max_points


# --------------------------------------------------------------------------- broken code


def test_syntax_error_costs_only_its_task_with_the_line(tmp_path: Path) -> None:
    # the body is stubbed so that the other tasks are graded (tests/grader/test_grader_fence_escape.py)
    result = _grade(tmp_path, "a1", {("1.2", "Scalar.__add__"): "return Add.apply(self, b"})
    _assert_only(result, "1.2", "error")
    row = _row(result, "1.2")
    assert "SyntaxError" in row.message
    assert "minitorch/scalar.py" in row.feedback and "Add.apply(self, b" in row.feedback


def test_missing_file_costs_only_its_tasks(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "submission", "a1")
    (sub / "minitorch" / "autodiff.py").unlink()  # holds tasks 1.1 and 1.4
    result = grade(sub, "a1", limits=FAST, notebooks=False)
    assert any(p.file == "minitorch/autodiff.py" and "missing" in p.message for p in result.problems)
    assert _row(result, "1.1").score == 0 and "not implemented" in _row(result, "1.1").message
    assert "autodiff.py" in _row(result, "1.1").feedback  # the problem is shown with the task
    assert _row(result, "1.2").status == "passed"
    # 1.3 needs nothing of 1.4: its gradient check backpropagates in the parent
    assert _row(result, "1.3").status == "passed"


def test_a_damaged_fence_is_shown_with_its_task_only(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "submission", "a1")
    scalar = sub / "minitorch" / "scalar.py"
    text = scalar.read_text()
    assert "# END SOLUTION 1.2\n" in text
    scalar.write_text(
        text.replace("# END SOLUTION 1.2\n", "# END SOLUTION 1.3\n", 1)
    )  # closes the wrong task
    result = grade(sub, "a1", limits=FAST, notebooks=False)
    damaged = [p for p in result.problems if "closes the fence of task 1.2" in p.message]
    assert (
        len(damaged) == 1
        and damaged[0].file == "minitorch/scalar.py"
        and set(damaged[0].tasks) == {"1.2", "1.3"}
    )
    assert "closes the fence of task 1.2" in _row(result, "1.2").feedback
    assert "Problems with the submitted files" not in _row(result, "1.1").feedback  # autodiff.py is intact


def test_import_error_inside_a_task(tmp_path: Path) -> None:
    result = _grade(
        tmp_path,
        "a1",
        {("1.1", "central_difference"): "from .no_such_module import helper\nreturn helper(f, *vals)"},
    )
    _assert_only(result, "1.1", "error")
    row = _row(result, "1.1")
    assert "ModuleNotFoundError" in row.message
    assert "minitorch/autodiff.py" in row.feedback and "no_such_module" in row.feedback


def test_not_implemented_left_in(tmp_path: Path) -> None:
    result = _grade(
        tmp_path, "a1", {("1.1", "central_difference"): 'raise NotImplementedError("Task 1.1: later")'}
    )
    _assert_only(result, "1.1", "error")
    assert (
        _row(result, "1.1").message
        == "not implemented yet: autodiff.central_difference (task 1.1) — Task 1.1: later"
    )


def test_exception_in_one_task(tmp_path: Path) -> None:
    body = "raise ValueError(f'bad arg {arg}')"
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): body})
    _assert_only(result, "1.1", "error")
    row = _row(result, "1.1")
    assert "ValueError" in row.message and "bad arg 0" in row.message
    assert "minitorch/autodiff.py" in row.feedback and "raise ValueError" in row.feedback
    assert "_grader_child" not in row.feedback and "grader/" not in row.feedback
    assert "Hint:" in row.feedback


def test_infinite_loop_times_out_and_other_tasks_are_graded(tmp_path: Path) -> None:
    result = _grade(
        tmp_path,
        "a1",
        {("1.1", "central_difference"): "while True:\n    pass"},
        limits=Limits(check_timeout=3, start_timeout=60),
    )
    _assert_only(result, "1.1", "timeout")
    assert "3 s" in _row(result, "1.1").message


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)", "import os\nos._exit(0)"])
def test_exit_inside_a_task(tmp_path: Path, exit_call: str) -> None:
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): exit_call})
    _assert_only(result, "1.1", "error")
    row = _row(result, "1.1")
    if "sys.exit" in exit_call:
        assert "SystemExit" in row.message  # caught in the child: the process lives on
    else:
        assert "ended" in row.message and "os._exit" in row.message


def test_crash_mid_run_restarts_a_fresh_child(tmp_path: Path) -> None:
    # 1.3 kills its process on the first backward; 1.4 (graded after it) needs a new child.
    body = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"
    result = _grade(tmp_path, "a1", {("1.3", "Add.backward"): body})
    row = _row(result, "1.3")
    assert row.status == "error" and row.score == 0 and "SIGSEGV" in row.message
    assert _row(result, "1.1").status == "passed" and _row(result, "1.2").status == "passed"
    # 1.4's graphs use Add: it fails honestly (the crash again), but grading completes
    assert _row(result, "1.4").status in ("error", "passed")


def test_memory_hog_is_stopped_by_the_address_space_limit(tmp_path: Path) -> None:
    body = "import numpy as np\nhog = np.empty(3 * 2 ** 27)  # 3 GiB of address space, more than the limit\nreturn float(hog.size)"
    result = _grade(
        tmp_path, "a1", {("1.1", "central_difference"): body}, limits=Limits(check_timeout=8, mem_mb=2048)
    )
    _assert_only(result, "1.1", "error")
    assert "MemoryError" in _row(result, "1.1").message


def test_output_flood_is_capped(tmp_path: Path) -> None:
    body = "import sys\nfor _ in range(20_000):\n    print('x' * 100)\n    print('y' * 100, file=sys.stderr)\nreturn 0.0"
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): body}, task="1.1")
    row = _row(result, "1.1")
    assert row.status == "failed" and row.score == 0
    assert len(result.output) < 100_000  # ~40 MB printed over the check, a few KB kept


# --------------------------------------------------------------------------- cheating


def test_printing_fake_results_changes_nothing(tmp_path: Path) -> None:
    fake = json.dumps({"score": 100, "tests": [{"name": "1.1", "score": 10, "status": "passed"}]})
    body = f"print({fake!r})\nprint('1.1 PASSED', flush=True)\nprint('ALL TESTS PASSED 100/100')\nreturn 0.0"
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): body})
    _assert_only(result, "1.1", "failed")


def test_overwriting_the_report_changes_nothing(tmp_path: Path) -> None:
    from grader.commands.cli import main

    out = tmp_path / "out"
    out.mkdir()
    report = out / "results.json"
    # The child does not know the output path; it searches for it (its cwd and parents,
    # the parent process's command line) and overwrites every results.json it finds.
    body = """
import json, os
fake = json.dumps({"score": 1000, "tests": []})
targets = {os.path.join(os.getcwd(), "results.json")}
try:
    argv = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")
    targets |= {a.decode() for a in argv if a.endswith(b"results.json")}
except OSError:
    pass
d = os.getcwd()
for _ in range(6):
    d = os.path.dirname(d)
    targets.add(os.path.join(d, "results.json"))
for t in targets:
    try:
        with open(t, "w") as fh:
            fh.write(fake)
    except OSError:
        pass
return 0.0
"""
    sub = write_submission(tmp_path / "submission", "a1", {("1.1", "central_difference"): body})
    report.write_text('{"score": 1000}')  # even a file that is already there is replaced
    code = main(
        ["run", str(sub), "-a", "a1", "--json", str(report), "--no-notebooks", "--timeout", "8", "-q"]
    )
    assert code == 0
    data = json.loads(report.read_text())
    assert data["score"] == 75  # 85 - 10: the honest score
    assert by_number(data)["1.1"]["score"] == 0


def test_always_equal_object_is_a_wrong_type(tmp_path: Path) -> None:
    body = """
class AlwaysEqual(float):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
return AlwaysEqual(0.0)
"""
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): body})
    _assert_only(result, "1.1", "failed")
    assert (
        "expected the float" in _row(result, "1.1").message
        and "got an object of type" in _row(result, "1.1").message
    )
    assert "AlwaysEqual" in _row(result, "1.1").message


def test_numpy_subclass_storage_cannot_fake_values(tmp_path: Path) -> None:
    # Neg.forward returns a tensor whose storage is an ndarray subclass that claims to
    # equal anything; the parent rebuilds plain arrays from raw bytes and sees zeros.
    body = """
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)
out = a.backend.id_map(a)
out._tensor._storage = np.zeros_like(out._tensor._storage).view(Liar)
return out
"""
    result = _grade(tmp_path, "a2", {("2.3", "Neg.forward"): body}, task="2.3")
    row = _row(result, "2.3")
    assert row.score < row.max_points
    forward = next(c for c in row.checks if c.name == "tensor_forward")
    assert forward.status == "failed" and "-a" in forward.message and "expected" in forward.message


def test_a_numpy_array_instead_of_a_tensor_is_a_wrong_type(tmp_path: Path) -> None:
    body = """
import numpy as np
class Sub(np.ndarray):
    pass
return np.array(np.broadcast_shapes(tuple(shape1), tuple(shape2))).view(Sub)
"""
    result = _grade(tmp_path, "a2", {("2.2", "shape_broadcast"): body}, task="2.2")
    row = _row(result, "2.2")
    checks = {c.name: c for c in row.checks}
    # only shape_broadcast's own checks lose their share (broadcast_index and
    # reduce_to_shape do not call it)
    assert (
        checks["shape_broadcast"].status == "failed"
        and checks["shape_broadcast_incompatible"].status != "passed"
    )
    assert checks["broadcast_index"].status == "passed" and 0 < row.score < row.max_points
    assert "expected a sequence" in row.message and "Sub" in row.message


@pytest.mark.parametrize("value, shown", [("math.nan", "nan"), ("math.inf", "inf")])
def test_nan_and_inf_where_the_reference_is_finite(tmp_path: Path, value: str, shown: str) -> None:
    result = _grade(
        tmp_path,
        "a0",
        {
            (
                "0.1",
                "sigmoid",
            ): f"return {value} if x > 5 else 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))"
        },
        task="0.1",
    )
    row = _row(result, "0.1")
    assert row.status == "failed" and row.score == 32.5  # only relu_and_sigmoid and sigmoid_large_inputs fail
    assert f"got {shown}" in row.message and "sigmoid" in row.message


@pytest.mark.parametrize(
    "body, expected",
    [
        ("return a.backend.neg_map(a).to(np.float32)", "dtype float32, expected float64"),
        ("out = a.backend.neg_map(a)\nreturn out.sum(0) if out.dims > 1 else out", "shape"),
    ],
)
def test_wrong_dtype_or_shape(tmp_path: Path, body: str, expected: str) -> None:
    result = _grade(tmp_path, "a2", {("2.3", "Neg.forward"): body}, task="2.3")
    forward = next(c for c in _row(result, "2.3").checks if c.name == "tensor_forward")
    assert forward.status == "failed" and expected in forward.message, forward.message


def test_the_child_cannot_import_the_grader(tmp_path: Path) -> None:
    body = "import grader.checks.a1.task_1_1 as hidden\nreturn hidden.central_difference(f, *vals)"
    result = _grade(tmp_path, "a1", {("1.1", "central_difference"): body}, task="1.1")
    row = _row(result, "1.1")
    assert row.status == "error" and ("ImportError" in row.message or "ModuleNotFoundError" in row.message), (
        row.message
    )


def test_the_child_runs_in_a_scratch_directory_without_the_output_path(tmp_path: Path) -> None:
    from grader.commands.cli import main

    # central_difference reports what it sees through the value it returns; the parent
    # shows that value in the report.
    body = """
import os
leak = any("secret-out" in v for v in os.environ.values()) or "secret-out" in os.getcwd()
here = os.path.realpath(os.getcwd())
inside = os.path.realpath(__file__).startswith(here + os.sep)
return 1000.0 * leak + 10.0 * inside + 1.0 * (here == os.path.realpath(os.environ.get("HOME", "")))
"""
    sub = write_submission(tmp_path / "submission", "a1", {("1.1", "central_difference"): body})
    report = tmp_path / "secret-out" / "results.json"
    assert (
        main(["run", str(sub), "-a", "a1", "--task", "1.1", "--json", str(report), "--timeout", "8", "-q"])
        == 0
    )
    test = task_tests(json.loads(report.read_text()))[0]
    assert re.search(r"got 10\b", test["output"]), test[
        "output"
    ]  # its own tree as cwd; no output path; HOME elsewhere


SLOW_MATMUL = """
for n in range(out_shape[0]):
    for i in range(out_shape[1]):
        for j in range(out_shape[2]):
            acc = 0.0
            for k in range(a_shape[2]):
                idx = np.empty(2, np.int64)  # an allocation for every multiply-add
                idx[0] = n * a_batch_stride + i * a_strides[1] + k * a_strides[2]
                idx[1] = n * b_batch_stride + k * b_strides[1] + j * b_strides[2]
                acc += a_storage[idx[0]] * b_storage[idx[1]]
            out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
"""


def test_a_slow_kernel_fails_its_performance_check(tmp_path: Path) -> None:
    # Correct but serial, with an allocation per multiply-add: ~10-20x the reference.
    result = _grade(
        tmp_path, "a3", {("3.2", "tensor_matmul"): SLOW_MATMUL}, task="3.2", limits=Limits(check_timeout=60)
    )
    row = _row(result, "3.2")
    status = {c.name: c for c in row.checks}
    assert status["fast_matmul"].status == "passed"
    speed = status["fast_matmul_speed"]
    assert speed.status == "failed" and "slower than the reference (limit 3×)" in speed.message, speed.message
    assert "ms per run" in speed.details
    assert status["fast_matmul_race_free"].status == "passed"  # serial: nothing shared
    assert row.score == row.max_points * 3 / 5  # the speed check weighs 2 of 2 + 1 + 2


# --------------------------------------------------------------------------- no answer leaks


@pytest.mark.parametrize(
    "fence, body",
    [
        (("2.1", "to_index"), "pass"),  # out_index must not arrive holding the answer
        (("2.2", "broadcast_index"), "pass"),  # nor out_index of broadcast_index
    ],
)
def test_a_no_op_body_that_should_fill_a_buffer_scores_nothing(
    tmp_path: Path, fence: tuple, body: str
) -> None:
    """The reference runs a decoded copy of each probe, so a kernel that writes into its
    arguments cannot leave the expected values in what the child receives."""
    result = _grade(tmp_path, "a2", {fence: body}, task=fence[0])
    row = _row(result, fence[0])
    assert row.score < row.max_points, row.feedback
    assert row.status == "failed", (row.status, row.message)
