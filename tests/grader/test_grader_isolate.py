"""`grader run --isolate` and the code outside the markers.

Isolated, each task is graded in a tree where the stage's other tasks hold the reference;
the fences that share state with the graded task's fences (a Function's forward fills the
``ctx`` its backward reads) come from the student too, so a right backward is never run
after a reference forward that saved something else. Outside the markers nothing is the
student's: a file whose code there differs from the release gets a note, and no score
changes.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import grader.trees.child_tree
from grader.release.examples import stage_files, write_submission
from grader.core.fences import Fence, find_fences, is_stub, package_fences, student_bodies
from grader.grading.grade import grade
from grader.core.manifest import all_stages, repo_root
from grader.release.starter import release
from grader.sandbox.session import Limits
from grader.trees.child_tree import build_child_tree, shared_state
from grader.trees.outside_code import outside_code_problem

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)
ROOT = repo_root()
OUTSIDE = "code outside the task markers"

# Right forward/backward pairs that keep the input where the reference keeps the output.
SAVES_INPUT = {
    ("1.2", "Exp.forward"): "ctx.save_for_backward(a)\nreturn operators.exp(a)",
    ("1.3", "Exp.backward"): "(a,) = ctx.saved_values\nreturn d_output * operators.exp(a)",
    ("1.2", "Sigmoid.forward"): "ctx.save_for_backward(a)\nreturn operators.sigmoid(a)",
    (
        "1.3",
        "Sigmoid.backward",
    ): "(a,) = ctx.saved_values\ns = operators.sigmoid(a)\nreturn d_output * s * (1.0 - s)",
}


def _tree_body(tree: Path, rel: str, task: str, function: str) -> str:
    text = (tree / rel).read_text(encoding="utf-8")
    fence = next(f for f in find_fences(text, rel) if f.task == task and f.function == function)
    return "".join(fence.body)


# --------------------------------------------------------------------------- shared state


def _stores_state(fence: Fence) -> bool:
    """Whether a fence body keeps something for a later call: ``save_for_backward``, an
    assignment to an attribute (``ctx.x = …``, ``self.cache[k] = …``), ``global``."""
    code = textwrap.indent(textwrap.dedent("".join(fence.body)), "    ")
    for node in ast.walk(ast.parse("def _():\n" + code)):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "save_for_backward":
            return True
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(t, ast.Attribute) or (
                    isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute)
                ):
                    return True
    return False


def test_every_fence_that_keeps_state_travels_with_the_fences_reading_it() -> None:
    # The scan of every stage: a fence that stores state for later calls must be grouped by
    # `shared_state` with each fence of another task in its class (a global: in its file).
    for rel, fences in package_fences(ROOT / "minitorch").items():
        text = (ROOT / rel).read_text(encoding="utf-8")
        groups = shared_state(text, fences)
        for fence in filter(_stores_state, fences):
            cls = fence.function.rsplit(".", 1)[0] if "." in fence.function else None
            if cls is None:
                readers = [f for f in fences if f.task != fence.task]
            else:
                readers = [f for f in fences if f.task != fence.task and f.function.startswith(cls + ".")]
            for reader in readers:
                assert any(fence in g and reader in g for g in groups), (rel, fence.function, reader.function)


def test_shared_state_pairs_each_function_forward_with_its_backward() -> None:
    # Fences of different tasks share state only in the Function classes of A1 (1.2
    # forward / 1.3 backward) and A2 (2.3 / 2.4).
    crossing = {}
    for rel, fences in package_fences(ROOT / "minitorch").items():
        text = (ROOT / rel).read_text(encoding="utf-8")
        for group in shared_state(text, fences):
            tasks = {f.task for f in group}
            if len(tasks) > 1:
                crossing.setdefault(rel, set()).add(tuple(sorted(tasks)))
                assert {f.function.rsplit(".", 1)[1] for f in group} == {"forward", "backward"}, group
    assert crossing == {
        "minitorch/scalar_functions.py": {("1.2", "1.3")},
        "minitorch/tensor_functions.py": {("2.3", "2.4")},
    }
    # Scalar holds fences of 1.2 (operators) and 1.3 (chain_rule) but shares no state through them
    scalar = (ROOT / "minitorch/scalar.py").read_text(encoding="utf-8")
    assert shared_state(scalar, find_fences(scalar)) == []


@pytest.mark.parametrize(
    "body, stub",
    [
        ('raise NotImplementedError("Task 1.2: Scalar forward (Exp.forward) — write your code")\n', True),
        ("    raise NotImplementedError\n", True),
        ("    # TODO\n    pass\n", True),
        ("", True),
        ('    raise NotImplementedError(\n        "not yet"\n    )\n', True),
        ("    return operators.exp(a)\n", False),
        ('    ctx.save_for_backward(a)\n    raise NotImplementedError("half done")\n', False),
        ("    raise ValueError('no')\n", False),
        ("    return (((\n", False),
    ],
)
def test_is_stub_recognises_only_bodies_without_student_code(body: str, stub: bool) -> None:
    assert is_stub(body.splitlines(keepends=True)) is stub


def test_isolating_a_backward_brings_the_students_forward_of_the_same_class(tmp_path: Path) -> None:
    edits = dict(SAVES_INPUT)
    edits[("1.2", "Scalar.__sub__")] = "return Add.apply(self, b)"  # a 1.2 bug outside any Function
    edits[("1.2", "Log.forward")] = 'raise NotImplementedError("Task 1.2")'  # a forward not written
    sub = write_submission(tmp_path / "sub", "a1", edits)
    tree = tmp_path / "tree"
    functions = "minitorch/scalar_functions.py"
    assert build_child_tree("a1", sub, tree, isolate_task="1.3") == []
    assert "save_for_backward(a)" in _tree_body(tree, functions, "1.2", "Exp.forward")
    # a forward left a stub gives way to the reference; Scalar's operators stay the reference
    assert _tree_body(tree, functions, "1.2", "Log.forward") == _tree_body(
        ROOT, functions, "1.2", "Log.forward"
    )
    assert "Neg.apply(b)" in _tree_body(tree, "minitorch/scalar.py", "1.2", "Scalar.__sub__")
    # isolating 1.2 brings the student's backwards
    build_child_tree("a1", sub, tree, isolate_task="1.2")
    assert "operators.exp(a)" in _tree_body(tree, functions, "1.3", "Exp.backward")
    assert _tree_body(tree, functions, "1.3", "Log.backward") == _tree_body(
        ROOT, functions, "1.3", "Log.backward"
    )


def test_isolated_tensor_backward_runs_after_the_students_forward(tmp_path: Path) -> None:
    edits = {
        ("2.3", "Exp.forward"): "ctx.save_for_backward(a)\nreturn a.backend.exp_map(a)",
        ("2.4", "Exp.backward"): "(a,) = ctx.saved_values\n"
        "return (grad_output.backend.mul_zip(grad_output, a.backend.exp_map(a)),)",
    }
    sub = write_submission(tmp_path / "sub", "a2", edits)
    assert build_child_tree("a2", sub, tmp_path / "t", isolate_task="2.4") == []
    forward = _tree_body(tmp_path / "t", "minitorch/tensor_functions.py", "2.3", "Exp.forward")
    assert "save_for_backward(a)" in forward
    result = grade(sub, "a2", task="2.4", isolate=True, limits=FAST, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    row = result.tasks[0]
    assert row.score == row.max_points, row.feedback


def test_a_backward_that_keeps_the_input_scores_full_marks_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = write_submission(tmp_path / "sub", "a1", SAVES_INPUT)
    for isolate in (False, True):
        result = grade(sub, "a1", isolate=isolate, limits=FAST, notebooks=False)
        assert not result.grader_errors, result.grader_errors
        assert {r.id: r.score for r in result.tasks} == {"1.1": 10, "1.2": 20, "1.3": 30, "1.4": 25}, [
            (r.id, r.feedback) for r in result.tasks
        ]
    # the unsound splicing this replaces: the reference forward (saving the output) next
    # to the student's backward (reading the input) fails a right 1.3
    monkeypatch.setattr(grader.trees.child_tree, "shared_state", lambda text, fences: [])
    unsound = grade(sub, "a1", task="1.3", isolate=True, limits=FAST, notebooks=False)
    assert unsound.tasks[0].score < 30


# --------------------------------------------------------------------------- outside the markers

RELEASED = '''\
"""A module."""

import math


def f(x):
    """Double."""
    # BEGIN SOLUTION 0.1
    raise NotImplementedError("Task 0.1")
    # END SOLUTION 0.1


def g(x):
    # BEGIN SOLUTION 0.2
    raise NotImplementedError("Task 0.2")
    # END SOLUTION 0.2
'''
REFERENCE = RELEASED.replace('raise NotImplementedError("Task 0.1")', "y = 2 * x\n    return y").replace(
    'raise NotImplementedError("Task 0.2")', "return math.sqrt(x)"
)


def _outside(student: str):
    return outside_code_problem(REFERENCE, student, student_bodies(student, "m.py"), "m.py", ("0.1", "0.2"))


@pytest.mark.parametrize(
    "student",
    [
        RELEASED,
        REFERENCE,
        RELEASED.replace("\n", "\r\n"),
        RELEASED.replace("import math\n", "import math   \n").rstrip("\n"),
        RELEASED.replace('"""Double."""', '"""Double x (my notes)."""'),
        RELEASED.replace("import math\n", "import math  # for sqrt\n# a comment\n\n\n"),
        "\ufeff" + RELEASED,
        RELEASED.replace(
            'raise NotImplementedError("Task 0.1")', "def helper(y):\n        return y\n    return helper(x)"
        ),
    ],
)
def test_no_note_when_only_fences_comments_whitespace_or_docstrings_change(student: str) -> None:
    assert _outside(student) is None


def test_a_helper_outside_the_fences_is_reported_at_its_line() -> None:
    student = RELEASED.replace("\n\ndef g(x):", "\n\ndef helper(x):\n    return x + 1\n\n\ndef g(x):")
    problem = _outside(student)
    line = student.splitlines().index("def helper(x):") + 1
    assert (
        problem is not None
        and problem.line == line
        and problem.file == "m.py"
        and problem.tasks == ("0.1", "0.2")
    )
    assert problem.message.startswith(f"m.py line {line}: {OUTSIDE} is not graded (`def helper(x):`)")
    assert problem.message.endswith("(2 statements differ from the release): put helpers inside a fence")
    changed = _outside(RELEASED.replace("import math", "import math, os"))
    assert changed is not None and changed.line == 3
    assert "differs from the release and is not graded (`import math, os`)" in changed.message


def test_deleted_and_broken_code_outside_the_fences_is_reported_without_crashing() -> None:
    deleted = _outside(RELEASED.replace("import math\n", ""))
    assert deleted is not None and deleted.line == 5  # def f, which the import preceded
    assert deleted.message.startswith(
        "m.py line 5: code of the release outside the task markers is missing before this line (`import math`)"
    )
    untokenizable = _outside(RELEASED.replace("import math", "import (math"))
    assert untokenizable is not None and "`import (math`" in untokenizable.message
    # a damaged fence is reported by the fence parser; the regions cannot be lined up
    damaged = RELEASED.replace("    # END SOLUTION 0.2\n", "")
    assert student_bodies(damaged, "m.py").problems and _outside(damaged) is None
    assert _outside("") is not None and _outside("\x00 garbage (((") is not None


def test_a_helper_outside_a_fence_is_noted_on_its_file_tasks_and_costs_nothing(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "sub", "a0")
    path = sub / "minitorch" / "operators.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def "))
    lines[at:at] = ["def helper(x):\n", "    return x\n", "\n", "\n"]
    path.write_text("".join(lines), encoding="utf-8")
    result = grade(sub, "a0", limits=FAST, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    assert result.score == result.max_score, [(r.id, r.feedback) for r in result.tasks]
    note = f"minitorch/operators.py line {at + 1}: {OUTSIDE} is not graded (`def helper(x):`)"
    assert len(result.problems) == 1 and result.problems[0].message.startswith(note), result.problems
    by_task = {r.id: r.feedback for r in result.tasks}
    assert note in by_task["0.1"] and note in by_task["0.2"] and note not in by_task["0.3"]


@pytest.mark.parametrize("stage", all_stages())
def test_the_reference_and_the_release_get_no_note(stage: str, tmp_path: Path) -> None:
    assert stage_files(stage)
    sub = write_submission(tmp_path / "sub", stage)
    assert build_child_tree(stage, sub, tmp_path / "t") == []
    release(stage, tmp_path / "release")
    assert build_child_tree(stage, tmp_path / "release", tmp_path / "t") == []


def test_invariant_three_grades_an_other_task_whose_isolated_tree_differs(tmp_path: Path) -> None:
    # `grader check` breaks task X and grades the others isolated; where X's fence shares
    # state with Y's (an implemented, not stubbed, forward), Y's tree is not the reference
    # tree and Y is graded: a right pair passes, a forward Y's backward cannot use fails.
    from grader.commands.invariants import _other_task_keeps_its_points
    from grader.core.results import GradeResult, TaskResult

    ref_tree = tmp_path / "ref-tree"
    build_child_tree("a1", ROOT, ref_tree)
    ref = GradeResult("a1", "", "", [TaskResult("1.3", "", 30, 30.0, "passed", "")], 0.0)
    right = write_submission(tmp_path / "right", "a1", SAVES_INPUT)
    assert _other_task_keeps_its_points("a1", "1.3", right, ref_tree, ref, FAST, tmp_path) == []
    wrong = write_submission(
        tmp_path / "wrong", "a1", {("1.2", "Exp.forward"): SAVES_INPUT[("1.2", "Exp.forward")]}
    )
    found = _other_task_keeps_its_points("a1", "1.3", wrong, ref_tree, ref, FAST, tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith("task 1.3, isolated in a tree that differs from the reference"), found
