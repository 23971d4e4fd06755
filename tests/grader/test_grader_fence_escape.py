"""Fences that do not compile, leave their function, or break the import cost their own task.

Issue 14, hole 5: a line at column 0 inside a fence ended the function, so what followed ran
at import time as module code; and one fence that stopped ``import minitorch`` zeroed every
task of the stage. Now (`grader.trees.fence_guard`, `grader.grading.import_guard`) such a body is replaced
by the release's stub and reported, its task scores 0 and says why, and every other task
scores what it scores without that body.

Submissions are the reference with fence bodies replaced: `write_submission` for indented
bodies, `_raw` for bodies whose lines are taken verbatim (column 0 included).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.trees import fence_guard
from grader.grading import import_guard
from grader.release.examples import submission_files, write_files, write_submission
from grader.trees.fence_guard import BrokenFence, compile_error, escapes
from grader.core.fences import find_fences, render
from grader.grading.grade import grade
from grader.core.manifest import load_manifest
from grader.core.results import GradeResult
from grader.sandbox.child_process import ChildStartFailed
from grader.sandbox.session import Limits, Session
from grader.trees.child_tree import build_tree

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=8, start_timeout=60)
STAGES = ["a0", "a1", "a2", "a3", "a4", "a5"]

#: The reference body of 1.1 followed by code at column 0: it would run at import time.
CENTRAL = """    up = list(vals)
    down = list(vals)
    up[arg] = up[arg] + epsilon
    down[arg] = down[arg] - epsilon
    return (f(*up) - f(*down)) / (2.0 * epsilon)
"""
#: Module code smuggled after 1.1: every Scalar product becomes 0 (costs task 1.2).
SMUGGLED = "import minitorch.operators as _ops\n_ops.mul = lambda a, b: 0.0\n"
#: A real mistake of 1.1 (divides by ε, not 2ε), so that the other rows are not all full.
WRONG_CENTRAL = (
    "up = list(vals)\ndown = list(vals)\nup[arg] = up[arg] + epsilon\n"
    "down[arg] = down[arg] - epsilon\nreturn (f(*up) - f(*down)) / epsilon"
)


def _raw(files: dict[str, str], rel: str, task: str, function: str, body: str) -> dict[str, str]:
    """`files` with the body of that fence replaced by `body`'s lines as they are."""
    text = files[rel]
    fence = next(f for f in find_fences(text, rel) if f.task == task and f.function == function)
    lines = text.splitlines(keepends=True)
    lines[fence.begin : fence.end - 1] = body.splitlines(keepends=True)
    return {**files, rel: "".join(lines)}


def _grade(sub: Path, stage: str, **kwargs) -> GradeResult:
    result = grade(sub, stage, limits=FAST, notebooks=False, **kwargs)
    assert not result.grader_errors, result.grader_errors
    return result


def _rows(result: GradeResult) -> dict[str, tuple[float, str]]:
    return {r.id: (r.score, r.status) for r in result.tasks}


def _row(result: GradeResult, task: str):
    return next(r for r in result.tasks if r.id == task)


def _line_of(path: Path, code: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if code in line)


def _assert_costs_only(broken: GradeResult, honest: GradeResult, task: str, *words: str) -> None:
    """`task` scores 0 with `words` in its message and feedback; every other task scores
    (and has the status) it has in `honest`, the same submission without the bad body."""
    row = _row(broken, task)
    assert (row.score, row.status) == (0.0, "error"), (row.score, row.status, row.feedback)
    for word in words:
        assert word in row.message and word in row.feedback, (word, row.feedback)
    assert "replaced by the stub so that your other tasks could be graded" in row.feedback
    assert any(isinstance(p, BrokenFence) and p.tasks == (task,) for p in broken.problems)
    others = {k: v for k, v in _rows(broken).items() if k != task}
    assert others == {k: v for k, v in _rows(honest).items() if k != task}


@pytest.fixture(scope="module")
def a1_reference(tmp_path_factory: pytest.TempPathFactory) -> GradeResult:
    result = _grade(write_submission(tmp_path_factory.mktemp("a1-ref"), "a1"), "a1")
    assert result.score == result.max_score and not result.problems
    return result


# --------------------------------------------------------------------------- the AST check

REFERENCE = '''class A:
    def method(self, x):
        """Doc."""
        # BEGIN SOLUTION 9.1
        return x
        # END SOLUTION 9.1


def outer(x):
    def inner(y):
        # BEGIN SOLUTION 9.2
        return y
        # END SOLUTION 9.2
    return inner
'''


def _rendered(task: str, body: str) -> str:
    other = {"9.1": "9.2", "9.2": "9.1"}[task]
    text, _ = render(
        REFERENCE, replace={task: [body.splitlines(keepends=True)]}, keep={other}, filename="m.py"
    )
    return text


KEYS = {"9.1": ("9.1", "A.method", 1), "9.2": ("9.2", "outer.inner", 1)}


@pytest.mark.parametrize(
    ("task", "body", "line", "where"),
    [
        ("9.1", "        return x\nhack = 1\n", 6, "not inside A.method"),  # module code at import
        (
            "9.1",
            "        return x\n    def __eq__(self, other):\n        return True\n",
            6,
            "not inside A.method",
        ),  # class level
        ("9.2", "        return y\n    x = 0\n", 13, "not inside outer.inner"),  # out of the inner function
        ("9.1", "def method(self, x):\n    return 1\n", 5, "not inside A.method"),  # everything at column 0
    ],
)
def test_a_body_that_leaves_its_function_escapes(task: str, body: str, line: int, where: str) -> None:
    text = _rendered(task, body)
    assert compile_error(text, "m.py") is None  # it compiles: only the AST check sees it
    found = escapes(REFERENCE, text, "m.py", {KEYS[task]})
    assert list(found) == [KEYS[task]] and found[KEYS[task]][0] == line and where in found[KEYS[task]][1]


def test_a_body_with_nested_code_and_column_0_comments_stays_inside() -> None:
    body = (
        "        def helper(z):\n"
        "# a comment at column 0\n"
        "\n"
        "            class Box:\n"
        "                value = z\n"
        "            return Box.value\n"
        '        note = """a string\n'
        'whose second line is at column 0"""\n'
        "\n"
        "        return helper(x)\n"
    )
    text = _rendered("9.1", body)
    assert compile_error(text, "m.py") is None
    assert escapes(REFERENCE, text, "m.py", {KEYS["9.1"], KEYS["9.2"]}) == {}


def test_a_statement_running_past_the_end_marker_escapes() -> None:
    # The release's code after a fence is never at a deeper indentation, so a body cannot
    # swallow it and still compile; the check is a safety net, shown on a hand-made text.
    rendered = REFERENCE.replace(
        "        return x\n        # END SOLUTION 9.1\n",
        "        return [x,\n        # END SOLUTION 9.1\n        ]\n",
    )
    found = escapes(REFERENCE, rendered, "m.py", {KEYS["9.1"]})
    assert found[KEYS["9.1"]][0] == 5 and "END marker" in found[KEYS["9.1"]][1]


@pytest.mark.parametrize("stage", STAGES)
def test_the_reference_bodies_of_every_stage_pass_the_guard(tmp_path: Path, stage: str) -> None:
    built = build_tree(stage, write_submission(tmp_path / "sub", stage), tmp_path / "tree")
    assert not [p for p in built.problems if isinstance(p, BrokenFence)], built.problems
    ids = {f for t in load_manifest(stage).tasks for f in t.fences}
    expected = {
        (rel, f.task, f.function)
        for rel, text in submission_files(stage).items()
        for f in find_fences(text, rel)
        if f.task in ids
    }
    assert {(p.file, p.key[0], p.key[1]) for p in built.placed} == expected


# --------------------------------------------------------------------------- grading


def test_a_syntax_error_costs_only_its_task_a1(tmp_path: Path) -> None:
    edits = {("1.1", "central_difference"): WRONG_CENTRAL}
    honest = _grade(write_submission(tmp_path / "honest", "a1", edits), "a1")
    assert 0 < honest.score < honest.max_score  # a wrong 1.1, the rest right
    sub = write_submission(
        tmp_path / "broken", "a1", {**edits, ("1.2", "Scalar.__add__"): "return Add.apply(self, b"}
    )
    broken = _grade(sub, "a1")
    line = _line_of(sub / "minitorch" / "scalar.py", "return Add.apply(self, b")
    _assert_costs_only(
        broken,
        honest,
        "1.2",
        "does not compile",
        "SyntaxError",
        f"minitorch/scalar.py, line {line}",
        "Add.apply(self, b",
    )
    assert broken.score == honest.score - 20  # 1.2's points only, not 0/85 for the stage


def test_a_syntax_error_costs_only_its_task_a2(tmp_path: Path) -> None:
    honest = _grade(write_submission(tmp_path / "honest", "a2"), "a2")
    assert honest.score == honest.max_score
    body = "a, b = ctx.saved_values\nreturn grad_output * b, grad_output *"
    sub = write_submission(tmp_path / "broken", "a2", {("2.4", "Mul.backward"): body})
    broken = _grade(sub, "a2")
    line = _line_of(sub / "minitorch" / "tensor_functions.py", "return grad_output * b, grad_output *")
    _assert_costs_only(
        broken, honest, "2.4", "does not compile", f"minitorch/tensor_functions.py, line {line}"
    )


def test_a_syntax_error_costs_only_its_task_with_isolate(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "broken", "a1", {("1.2", "Scalar.__add__"): "return Add.apply(self, b"})
    result = _grade(sub, "a1", isolate=True)
    assert _row(result, "1.2").score == 0 and "does not compile" in _row(result, "1.2").message
    assert all(r.status == "passed" for r in result.tasks if r.id != "1.2"), [
        (r.id, r.message) for r in result.tasks
    ]


def test_module_code_smuggled_in_a_fence_is_told_it_escapes(
    tmp_path: Path, a1_reference: GradeResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _raw(
        submission_files("a1"), "minitorch/autodiff.py", "1.1", "central_difference", CENTRAL + SMUGGLED
    )
    sub = write_files(tmp_path / "sub", files)
    result = _grade(sub, "a1")
    line = _line_of(sub / "minitorch" / "autodiff.py", "import minitorch.operators as _ops")
    _assert_costs_only(
        result,
        a1_reference,
        "1.1",
        "escapes its fence",
        f"minitorch/autodiff.py, line {line}",
        "not inside central_difference",
    )
    # without the AST check the smuggled code runs at import and takes 1.2's points (in the
    # student's whole tree: graded alone, 1.2 would get them back)
    monkeypatch.setattr(fence_guard, "escapes", lambda *args: {})
    unguarded = _grade(sub, "a1", one_charge=False)
    assert _row(unguarded, "1.2").score < 20 and not unguarded.problems


def test_a_legitimate_body_with_column_0_lines_grades_full(tmp_path: Path) -> None:
    body = (
        "    def shifted(delta):\n"
        "# a comment at column 0, then blank lines\n"
        "\n"
        "\n"
        "        moved = list(vals)\n"
        "        moved[arg] = moved[arg] + delta\n"
        "        return f(*moved)\n"
        '    why = """central, not one-sided:\n'
        'the error is O(eps**2)"""\n'
        "    return (shifted(epsilon) - shifted(-epsilon)) / (2.0 * epsilon)\n"
    )
    files = _raw(submission_files("a1"), "minitorch/autodiff.py", "1.1", "central_difference", body)
    result = _grade(write_files(tmp_path / "sub", files), "a1", task="1.1")
    assert _row(result, "1.1").score == 10 and not result.problems, (
        _row(result, "1.1").feedback,
        result.problems,
    )


# --------------------------------------------------------------------------- errors that only the import shows


def test_an_import_time_error_is_traced_to_its_fence(
    tmp_path: Path, a1_reference: GradeResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fence_guard, "escapes", lambda *args: {})  # let the column-0 line reach the child
    files = _raw(
        submission_files("a1"),
        "minitorch/autodiff.py",
        "1.1",
        "central_difference",
        CENTRAL + 'raise RuntimeError("boom at import")\n',
    )
    sub = write_files(tmp_path / "sub", files)
    result = _grade(sub, "a1")
    line = _line_of(sub / "minitorch" / "autodiff.py", "boom at import")
    _assert_costs_only(
        result,
        a1_reference,
        "1.1",
        "does not import: RuntimeError: boom at import",
        f"minitorch/autodiff.py, line {line}",
    )


def test_an_import_failure_raised_outside_the_fences_is_bisected(
    tmp_path: Path, a1_reference: GradeResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fence_guard, "escapes", lambda *args: {})
    searches = []
    real = import_guard._bisect
    monkeypatch.setattr(import_guard, "_bisect", lambda *args: searches.append(1) or real(*args))
    # the release's `class Variable(Protocol):` below the fence is what raises
    files = _raw(
        submission_files("a1"),
        "minitorch/autodiff.py",
        "1.1",
        "central_difference",
        CENTRAL + "Protocol = None\n",
    )
    result = _grade(write_files(tmp_path / "sub", files), "a1")
    assert searches == [1]
    _assert_costs_only(result, a1_reference, "1.1", "does not import: TypeError")


def test_an_import_failure_that_no_fence_explains_stands(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "sub", "a1")
    tree = tmp_path / "tree"

    def build(stub_fences):
        built = build_tree("a1", sub, tree, stub_fences=stub_fences)
        init = tree / "minitorch" / "__init__.py"
        init.write_text(init.read_text() + '\nraise ImportError("the kit is broken")\n')
        return built

    session, problems = import_guard.start_tree(build, lambda: Session(tree, tmp_path, FAST))
    try:
        assert not [p for p in problems if isinstance(p, BrokenFence)]  # no student body is blamed
        with pytest.raises(ChildStartFailed, match="the kit is broken"):
            session.ensure()
    finally:
        session.close()
