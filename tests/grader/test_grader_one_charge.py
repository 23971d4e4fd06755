"""One mistake, one charge (`grader.grading.one_charge`): a task that loses points in the student's
whole tree is graded again alone, and only the verdicts of that run count."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from grader.release.examples import write_submission
from grader.trees.fence_guard import BrokenFence
from grader.grading.grade import grade
from grader.core.manifest import load_manifest
from grader.grading.one_charge import ALONE, charge_notebook_once, charge_once, needs_second_look
from grader.grading.report import gradescope, junit
from grader.checks.runner import VerdictWithheld
from grader.core.results import CheckResult, TaskResult
from grader.sandbox.session import Limits
from test_grader_one_charge_stages import STRIDES_REVERSED

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)


def _task(stage: str, task_id: str):
    return next(t for t in load_manifest(stage).tasks if t.id == task_id)


def _row(task_id: str, checks: list[CheckResult], points: float = 20) -> TaskResult:
    passed = sum(c.status == "passed" for c in checks)
    failing = [c for c in checks if c.status != "passed"]
    return TaskResult(
        task_id,
        "",
        points,
        round(points * passed / len(checks), 4),
        failing[0].status if failing else "passed",
        failing[0].message if failing else "all checks passed",
        feedback="whole-tree feedback",
        checks=checks,
    )


# --------------------------------------------------------------------------- the rules


def test_a_task_with_full_marks_a_broken_body_or_only_its_own_stubs_is_not_graded_again() -> None:
    task = _task("a2", "2.2")
    full = _row("2.2", [CheckResult(n, "", "passed") for n in task.checks])
    assert not needs_second_look(task, full, [])
    own_stub = [
        CheckResult(
            n,
            "",
            "error",
            "not implemented yet",
            raised_in="tensor.reduce_to_shape",
            raised_in_task="2.2",
            unfinished=True,
        )
        for n in task.checks
    ]
    assert not needs_second_look(task, _row("2.2", own_stub), [])
    wrong = [CheckResult(task.checks[0], "", "failed", "value: expected 1.0, got 2.0")] + own_stub[1:]
    assert needs_second_look(task, _row("2.2", wrong), [])
    # a stub of another task is reached: with the reference there, the check may pass
    other_stub = [
        CheckResult(
            n,
            "",
            "error",
            "depends on task 2.1",
            raised_in="tensor_data.strides_from_shape",
            raised_in_task="2.1",
            unfinished=True,
        )
        for n in task.checks
    ]
    assert needs_second_look(task, _row("2.2", other_stub), [])
    broken = BrokenFence("does not import", file="minitorch/tensor.py", tasks=("2.2",))
    assert not needs_second_look(task, _row("2.2", wrong), [broken])


def test_only_the_verdicts_of_the_alone_run_reach_the_row() -> None:
    task = _task("a2", "2.4")
    whole = _row(
        "2.4",
        [
            CheckResult(
                "backward_neg",
                "equivalence",
                "error",
                "ShapeError in Neg.apply(a).backward(g)",
                details="Traceback (your code): …",
            ),
            CheckResult(
                "backward_mul", "equivalence", "failed", "Mul.apply(a, b).backward(g): expected 1.0, got 2.0"
            ),
        ],
        points=30,
    )
    secret = "REFERENCE-ONLY TEXT"
    alone = TaskResult(
        "2.4",
        "",
        30,
        15,
        "failed",
        secret,
        feedback=secret,
        checks=[
            CheckResult("backward_neg", "equivalence", "passed", secret, details=secret),
            CheckResult("backward_mul", "equivalence", "failed", secret, details=secret),
        ],
    )
    culprit = _row(
        "2.1",
        [CheckResult("strides_from_shape", "", "failed", "item 0"), CheckResult("permute", "", "passed")],
    )
    row = charge_once(task, whole, alone, [culprit])
    assert secret not in json.dumps(row.__dict__, default=lambda o: o.__dict__)
    assert row.score == 10 and row.status == "failed"  # backward_neg's weight 1 of 1 + 2
    assert [c.status for c in row.checks] == ["passed", "failed"]
    assert row.checks[0].message.startswith(f"passes {ALONE}; with your own code: ShapeError")
    assert (
        row.checks[1].message == "Mul.apply(a, b).backward(g): expected 1.0, got 2.0"
    )  # the whole tree's words
    assert "task 2.1 (strides_from_shape) fails its own checks: fix it first" in row.feedback
    assert row.feedback.endswith("whole-tree feedback")


def test_a_check_the_whole_tree_could_not_judge_counts_when_it_passes_alone_and_blames_no_task() -> None:
    """A verdict withheld in the whole tree (a speed check on a busy machine) is not a failure:
    passing alone judges the task's own code, no other task is named as its cause, and the
    staff is not asked to grade it again (seen beside two busy loops: the row claimed that
    "the cause is in your code of another task" for the reference itself)."""
    task = _task("a3", "3.1")
    withheld = CheckResult(
        "fast_map_zip_reduce_speed",
        "performance",
        "error",
        VerdictWithheld.message,
        grader_error="a3/fast_map_zip_reduce_speed: verdict withheld: 2 busy CPUs",
    )
    whole = _row(
        "3.1",
        [CheckResult(name, "equivalence", "passed") for name in task.checks if name != withheld.name]
        + [withheld],
        points=task.points,
    )
    alone = TaskResult(
        "3.1",
        "",
        task.points,
        task.points,
        "passed",
        "x",
        checks=[replace(withheld, status="passed", message="x", grader_error="")],
    )
    culprit = _row("3.2", [CheckResult("matmul", "", "failed", "expected 1.0")])
    row = charge_once(task, whole, alone, [culprit])
    assert row.score == row.max_points and row.status == "passed"
    speed = next(c for c in row.checks if c.name == withheld.name)
    assert speed.status == "passed" and speed.grader_error == ""
    assert (
        speed.message
        == f"passes {ALONE}; with your own code for every task it could not be judged (not your fault)"
    )
    assert row.message == f"passes {ALONE}"
    assert "3.2" not in row.feedback and "another task" not in row.feedback
    assert (
        f"{withheld.name} could not be judged with your code for every task (not your fault) and passes {ALONE}"
        in row.feedback
    )
    repaired = charge_once(task, whole, alone, [culprit], repaired={withheld.name}, roots=["3.2"])
    assert (
        repaired.message == "passes with the reference in place of task 3.2"
    )  # where it passed: the repaired tree


def test_a_grader_error_in_the_whole_tree_counts_when_the_check_passes_alone_and_is_still_reported() -> None:
    task = _task("a3", "3.1")
    crashed = CheckResult(
        "fast_map_zip_reduce",
        "equivalence",
        "error",
        "internal grader error (not your fault; tell the course staff)",
        grader_error="a3/fast_map_zip_reduce: KeyError: 'x'",
    )
    whole = _row(
        "3.1",
        [crashed] + [CheckResult(name, "", "passed") for name in task.checks if name != crashed.name],
        points=task.points,
    )
    alone = TaskResult(
        "3.1",
        "",
        task.points,
        task.points,
        "passed",
        "x",
        checks=[replace(crashed, status="passed", grader_error="")],
    )
    row = charge_once(task, whole, alone, [])
    check = next(c for c in row.checks if c.name == crashed.name)
    assert row.score == row.max_points and check.status == "passed"
    assert check.grader_error == crashed.grader_error  # the staff still hears of the grader's bug


def test_a_task_that_fails_alone_too_is_told_the_mistake_is_its_own() -> None:
    """Only where another task fails too (else there is nothing to tell apart), and
    without naming that task: a cause is named only when it was shown to be one."""
    task = _task("a1", "1.3")
    whole = _row("1.3", [CheckResult("log_backward", "", "failed", "expected 0.5, got 2.0")], points=30)
    alone = TaskResult(
        "1.3", "", 30, 0, "failed", "x", checks=[CheckResult("log_backward", "", "failed", "x")]
    )
    row = charge_once(
        task, whole, alone, [_row("1.1", [CheckResult("central_difference", "", "failed", "one-sided")])]
    )
    assert row.score == 0 and row.messages == whole.messages
    assert row.feedback.endswith("this task fails the same checks: the mistake is in this task's own code")
    assert "1.1" not in row.feedback
    assert charge_once(task, whole, alone, []).feedback == whole.feedback


def test_a_notebook_cell_that_passes_with_the_reference_tasks_counts_and_only_its_verdict_is_read() -> None:
    cells = [
        CheckResult("gates", "notebook-cell", "failed", "AssertionError: the gate values"),
        CheckResult("shapes", "notebook-cell", "passed"),
        CheckResult("own_answer", "notebook-cell", "failed", "AssertionError: your answer"),
    ]
    whole = TaskResult(
        "nb:cells",
        "cells",
        15,
        3.0,
        "failed",
        "2 of 10 notebook points",
        feedback="whole-tree cells",
        checks=cells,
        kind="notebook",
    )
    secret = "REFERENCE-ONLY TEXT"
    alone = TaskResult(
        "nb:cells",
        "cells",
        15,
        9.0,
        "failed",
        secret,
        feedback=secret,
        kind="notebook",
        checks=[
            CheckResult("gates", "notebook-cell", "passed", secret),
            CheckResult("shapes", "notebook-cell", "passed", secret),
            CheckResult("own_answer", "notebook-cell", "failed", secret),
        ],
    )
    culprit = _row("5.2", [CheckResult("lstm_cell", "", "failed", "gates")])
    row = charge_notebook_once(whole, alone, {"gates": 5, "shapes": 2, "own_answer": 3}, [culprit])
    assert secret not in json.dumps(row.__dict__, default=lambda o: o.__dict__)
    assert row.score == 10.5 and row.status == "failed"  # 7 of 10 cell points, of the part's 15
    assert [c.status for c in row.checks] == ["passed", "passed", "failed"]
    assert row.checks[2].message == "AssertionError: your answer"  # the whole tree's words
    assert "task 5.2 (lstm_cell) fails its own checks: fix it first" in row.feedback
    assert row.feedback.endswith("whole-tree cells")
    # nothing rescued: the row as it was
    assert charge_notebook_once(whole, whole, {"gates": 5}, [culprit]).score == 3.0


# --------------------------------------------------------------------------- graded end to end


def test_a_wrong_strides_from_shape_costs_task_2_1_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.grading import grade as grading

    trees: list[str] = []
    real_alone, real_repaired = grading.grade_alone, grading.grade_repaired
    monkeypatch.setattr(
        grading, "grade_alone", lambda *a, **k: trees.append(f"alone {a[7].id}") or real_alone(*a, **k)
    )
    monkeypatch.setattr(
        grading,
        "grade_repaired",
        lambda *a, **k: trees.append(f"repaired {sorted(a[8])}") or real_repaired(*a, **k),
    )
    sub = write_submission(tmp_path / "sub", "a2", {("2.1", "strides_from_shape"): STRIDES_REVERSED})
    whole = {r.id: r for r in grade(sub, "a2", one_charge=False, limits=FAST, notebooks=False).tasks}
    fair = {r.id: r for r in grade(sub, "a2", limits=FAST, notebooks=False).tasks}
    # 2.1 fails alone too (the root); 2.2-2.4 pass in one tree with only 2.1 the reference
    assert trees == ["alone 2.1", "repaired ['2.1']"]
    assert all(
        c.message.startswith("passes with the reference in place of task 2.1; with your own code: ")
        for c in fair["2.3"].checks
        if c.name in {c.name for c in whole["2.3"].checks if c.status != "passed"}
    )
    assert whole["2.3"].score == 0 and whole["2.4"].score == 0  # the whole tree charges it three times
    assert fair["2.1"].score == whole["2.1"].score < fair["2.1"].max_points
    for task in ("2.2", "2.3", "2.4"):
        assert fair[task].score == fair[task].max_points, fair[task].feedback
        assert (
            fair[task].message
            == "passes with the reference for the other tasks: task 2.1 fails its own checks: fix it first"
        )
        assert (
            "so they count: task 2.1 (strides_from_shape" in fair[task].feedback
            or "so it counts: task 2.1 (strides_from_shape" in fair[task].feedback
        )
        assert "With your own code for every task:" in fair[task].feedback
    assert (
        "the mistake is in this task's own code" not in fair["2.1"].feedback
    )  # no other task fails in the end


#: 2.3's map written by the student in their own words: it passes, and the reference's
#: line below is nowhere in their tree.
OWN_MAP = """oi = np.zeros(len(out_shape), dtype=INDEX_DTYPE)
ii = np.zeros(len(in_shape), dtype=INDEX_DTYPE)
for k in range(int(np.prod(out_shape))):
    to_index(k, out_shape, oi)
    broadcast_index(oi, out_shape, in_shape, ii)
    out[index_to_position(oi, out_strides)] = fn(in_storage[index_to_position(ii, in_strides)])
"""
REFERENCE_LINE = "in_storage[index_to_position(in_index, in_strides)]"

#: 2.2's reduce_to_shape that reads the tree's tensor_ops.py and sends what it finds of
#: the reference's 2.3 every way it can: an exception, its output, stderr.
LEAK = f"""import sys
import minitorch.tensor_ops as _ops
_found = [line.strip() for line in open(_ops.__file__, encoding="utf-8") if {REFERENCE_LINE[:30]!r} in line]
print("LEAK", _found)
print("LEAK", _found, file=sys.stderr)
raise ValueError("LEAK " + " | ".join(_found))
"""


def test_nothing_of_the_reference_in_an_alone_tree_reaches_any_report(tmp_path: Path) -> None:
    sub = write_submission(
        tmp_path / "sub", "a2", {("2.3", "tensor_map._map"): OWN_MAP, ("2.2", "reduce_to_shape"): LEAK}
    )
    result = grade(sub, "a2", limits=FAST, notebooks=False)
    rows = {r.id: r for r in result.tasks}
    # the second look happened: 2.4 needs reduce_to_shape, which raises in the whole tree
    assert (
        rows["2.4"].score == rows["2.4"].max_points and "task 2.2 fails its own checks" in rows["2.4"].message
    )
    assert (
        rows["2.2"].score < rows["2.2"].max_points and "LEAK" in rows["2.2"].feedback
    )  # the whole tree's own words
    reports = [
        json.dumps(gradescope(result)),
        junit(result).decode(),
        result.output,
        json.dumps([p.message for p in result.problems]),
    ]
    for text in reports:
        assert REFERENCE_LINE not in text
        assert not re.search(r"in_storage\[index_to_position\(in_index", text)


def test_a_task_as_released_is_not_started_and_one_with_a_body_of_the_students_is(tmp_path: Path) -> None:
    from grader.grading.one_charge import not_started
    from grader.release.starter import release

    release("a2", tmp_path / "release")
    assert all(not_started(t, tmp_path / "release") for t in load_manifest("a2").tasks)
    ref = write_submission(
        tmp_path / "ref", "a2", {("2.2", "broadcast_index"): "pass"}
    )  # one no-op body among written ones
    assert not any(not_started(t, ref) for t in load_manifest("a2").tasks)


def test_a_second_look_that_fails_keeps_the_whole_trees_rows_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.grading import grade as grading
    from grader.checks.base import GraderBug

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise GraderBug("the reference could not be written")

    monkeypatch.setattr(grading, "grade_alone", broken)
    sub = write_submission(tmp_path / "sub", "a2", {("2.1", "strides_from_shape"): STRIDES_REVERSED})
    result = grade(sub, "a2", limits=FAST, notebooks=False)
    assert [r.id for r in result.tasks] == ["2.1", "2.2", "2.3", "2.4"]
    assert result.tasks[3].score == 0  # the whole tree's row: not rescued, not lost
    assert result.grader_errors == ["grading the tasks alone failed: the reference could not be written"]


def test_a_task_that_alone_loses_points_is_not_graded_again_unless_graded_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only task 0.3 fails: its mistake is charged once already (no second child); graded
    by itself (--task), the other tasks are unknown, so it is looked at again."""
    from grader.grading import grade as grading

    calls: list[str] = []
    real = grading.grade_alone

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[7].id)
        return real(*args, **kwargs)

    monkeypatch.setattr(grading, "grade_alone", counted)
    sub = write_submission(
        tmp_path / "sub", "a0", {("0.3", "Module.train"): "self.training = mode\nreturn self"}
    )
    result = grade(sub, "a0", limits=FAST, notebooks=False)
    assert [r.id for r in result.tasks if r.score < r.max_points] == ["0.3"] and calls == []
    alone = grade(sub, "a0", task="0.3", limits=FAST, notebooks=False)
    assert calls == ["0.3"] and alone.tasks[0].score == result.tasks[2].score


def test_a_notebook_that_fails_only_through_a_tasks_mistake_is_not_charged(tmp_path: Path) -> None:
    # A5's notebook runs the student's lstm_cell: a wrong gate order (5.2) failed two of its
    # test cells too (4/15 before notebooks had a second look)
    from grader.release.examples import EXAMPLES, write_example

    write_example("a5-lstm-gate-order", tmp_path / "sub")
    result = grade(tmp_path / "sub", "a5", limits=Limits())  # the grader's limits: Numba compiles cold here
    rows = {r.id: r for r in result.tasks}
    assert (rows["5.2"].status, rows["5.2"].score) == ("failed", 5)
    nb = rows["nb:vanishing_gradients.ipynb"]
    assert (nb.status, nb.score) == ("passed", nb.max_points)
    assert "task 5.2 (lstm_cell" in nb.feedback and "With your own code for every task:" in nb.feedback
    assert "AssertionError" in nb.feedback  # the whole tree's cell messages are what the student reads
    assert result.score == 90 and "(90/100)" in EXAMPLES["a5-lstm-gate-order"].about


def test_a_notebook_as_released_is_not_started_and_one_with_an_answer_or_a_cell_of_the_students_is(
    tmp_path: Path,
) -> None:
    import nbformat

    from grader.release.examples import solved_notebook
    from grader.notebooks.grading import notebook_not_started
    from grader.release.starter import release

    part = load_manifest("a1").notebooks[0]
    release("a1", tmp_path / "release")
    assert notebook_not_started(part, tmp_path / "release")
    path = tmp_path / "release" / "notebooks" / part.name
    released = nbformat.read(str(path), as_version=4)

    def variant(name: str, edit) -> Path:  # noqa: ANN001
        nb = nbformat.from_dict(released)
        edit(nb)
        (tmp_path / name / "notebooks").mkdir(parents=True)
        nbformat.write(nb, str(tmp_path / name / "notebooks" / part.name))
        return tmp_path / name

    answer = next(
        i for i, c in enumerate(released.cells) if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    )
    assert not notebook_not_started(
        part, variant("one-answer", lambda nb: nb.cells[answer].update(source="x = 1.0"))
    )
    assert not notebook_not_started(
        part, variant("added-cell", lambda nb: nb.cells.insert(0, nbformat.v4.new_code_cell("y = 2")))
    )
    # only the code that runs counts: a markdown cell added, or outputs, change nothing
    assert notebook_not_started(
        part, variant("markdown", lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell("notes")))
    )
    (tmp_path / "solved" / "notebooks").mkdir(parents=True)
    (tmp_path / "solved" / "notebooks" / part.name).write_text(solved_notebook("a1", part.name))
    assert not notebook_not_started(part, tmp_path / "solved")
    assert not notebook_not_started(part, tmp_path / "missing")  # graded as usual (and scores 0 there)
    (tmp_path / "garbled" / "notebooks").mkdir(parents=True)
    (tmp_path / "garbled" / "notebooks" / part.name).write_text("{not json")
    assert not notebook_not_started(part, tmp_path / "garbled")


def test_a_notebook_not_started_is_not_graded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh A1 release: every task loses points, the notebook too, but its answers are the
    release's, so a second run over the reference's tasks cannot change its 0 (one child, not two)."""
    from grader.grading import grade as grading
    from grader.release.starter import release

    runs: list[Path] = []
    real = grading.grade_notebook

    def counted(nb, submission, tree, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        runs.append(tree)
        return real(nb, submission, tree, *args, **kwargs)

    monkeypatch.setattr(grading, "grade_notebook", counted)
    release("a1", tmp_path / "release")
    result = grade(tmp_path / "release", "a1", limits=FAST)
    assert result.tasks[-1].id == "nb:backprop.ipynb" and result.tasks[-1].score == 0
    assert len(runs) == 1


# --------------------------------------------------------------------------- the order of the looks


def _look_rows(task_id: str, verdicts: dict[str, bool]) -> TaskResult:
    return _row(
        task_id,
        [
            CheckResult(name, "equivalence", "passed" if ok else "failed", "m")
            for name, ok in verdicts.items()
        ],
    )


def test_once_a_task_fails_alone_the_waiting_tasks_run_together_in_one_repaired_tree() -> None:
    from grader.grading.second_looks import second_looks

    tasks = {t: _task("a2", t) for t in ("2.1", "2.2", "2.3", "2.4")}
    whole = {t: _look_rows(t, {f"c{t}": False, f"d{t}": False}) for t in tasks}
    calls: list[tuple] = []

    def alone(task, only, with_partners=True):  # noqa: ANN001, ANN202
        calls.append(("alone", task.id, frozenset(only), with_partners))
        return _look_rows(task.id, {name: task.id != "2.1" for name in only})  # only 2.1 is wrong on its own

    def repaired(roots, todo):  # noqa: ANN001, ANN202
        calls.append(("repaired", roots, tuple((t.id, frozenset(c)) for t, c in todo)))
        # 2.3's dXX check still fails there (it needs the student's other code to be the reference)
        return {
            t.id: _look_rows(t.id, {name: not (t.id == "2.3" and name == "d2.3") for name in checks})
            for t, checks in todo
        }

    looks = second_looks(
        "a2", [(tasks[t], whole[t]) for t in tasks], {"2.1", "2.2", "2.3", "2.4"}, alone, repaired
    )
    assert calls[0] == ("alone", "2.1", frozenset({"c2.1", "d2.1"}), True)
    assert calls[1] == (
        "repaired",
        frozenset({"2.1"}),
        (
            ("2.2", frozenset({"c2.2", "d2.2"})),
            ("2.3", frozenset({"c2.3", "d2.3"})),
            ("2.4", frozenset({"c2.4", "d2.4"})),
        ),
    )
    # 2.3 is looked at alone for the one check the repaired tree left failing; its partner 2.4
    # fails in the whole tree, so first with the reference's half
    assert calls[2:] == [("alone", "2.3", frozenset({"d2.3"}), False)]
    assert [c.status for c in looks["2.1"].row.checks] == ["failed", "failed"] and looks["2.1"].roots == ()
    assert looks["2.2"].repaired == {"c2.2", "d2.2"} and looks["2.2"].roots == ("2.1",)
    assert {c.name: c.status for c in looks["2.3"].row.checks} == {"c2.3": "passed", "d2.3": "passed"}
    assert looks["2.3"].repaired == {"c2.3"} and looks["2.3"].roots == ("2.1",)


def test_no_repaired_tree_before_a_root_is_known_or_for_one_waiting_task() -> None:
    from grader.grading.second_looks import second_looks

    tasks = [_task("a0", t) for t in ("0.1", "0.2", "0.3")]
    calls: list[str] = []

    def alone(task, only, with_partners=True):  # noqa: ANN001, ANN202
        calls.append(task.id)
        return _look_rows(task.id, {name: task.id == "0.1" for name in only})  # 0.1 passes alone: not a root

    def repaired(roots, todo):  # noqa: ANN001, ANN202
        raise AssertionError("no repaired tree: after the first root only one task waits")

    looks = second_looks(
        "a0", [(t, _look_rows(t.id, {"x": False})) for t in tasks], {"0.1", "0.2", "0.3"}, alone, repaired
    )
    assert calls == ["0.1", "0.2", "0.3"] and looks["0.1"].row.checks[0].status == "passed"


def test_the_repaired_tree_takes_the_roots_from_the_reference_and_the_rest_from_the_student(
    tmp_path: Path,
) -> None:
    from grader.trees.child_tree import build_tree

    sub = write_submission(
        tmp_path / "sub",
        "a2",
        {("2.1", "strides_from_shape"): STRIDES_REVERSED, ("2.2", "broadcast_index"): "pass"},
    )
    build_tree("a2", sub, tmp_path / "tree", reference_tasks={"2.1"})
    text = (tmp_path / "tree" / "minitorch" / "tensor_data.py").read_text()
    assert "return tuple(reversed(strides))" in text  # 2.1: the reference
    assert "# BEGIN SOLUTION 2.2\n    pass\n    # END SOLUTION 2.2" in text  # 2.2: the student's (a no-op)
    with pytest.raises(ValueError, match="not tasks of stage a2"):
        build_tree("a2", sub, tmp_path / "t2", reference_tasks={"3.1"})
    with pytest.raises(ValueError, match="cannot be combined"):
        build_tree("a2", sub, tmp_path / "t3", reference_tasks={"2.1"}, isolate_task="2.2")
