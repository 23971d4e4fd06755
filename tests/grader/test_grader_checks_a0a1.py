"""The hidden checks of stages A0 and A1: weights, strictness, and one bug costing one task.

Each submission is the reference with one fence body replaced (`write_submission`), graded
as a student's would be. The bugs are the ones real submissions had: a comparison that
returns a bool, a recursive topological sort, an iterator for a list, a chain_rule that
drops constants, a backpropagation that accumulates once per path. Each must lose points
on its own task, only on the check of that behaviour, and on no other task.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox.answers import NpScalar
from grader.checks.compare import diff, int_zero_note
from grader.checks.runner import task_score
from grader.release.examples import write_submission
from grader.grading.grade import grade
from grader.core.manifest import ManifestError, Task, load_manifest
from grader.core.results import CheckResult, GradeResult, TaskResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)
FULL = {"0.1": 40, "0.2": 30, "0.3": 30, "1.1": 10, "1.2": 20, "1.3": 30, "1.4": 25}


def _grade(tmp_path: Path, stage: str, edits: dict, task: str | None = None) -> GradeResult:
    sub = write_submission(tmp_path / "submission", stage, edits)
    result = grade(sub, stage, task=task, limits=FAST, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    return result


def _row(result: GradeResult, task: str) -> TaskResult:
    return next(r for r in result.tasks if r.id == task)


def _failed(row: TaskResult) -> dict[str, str]:
    """The checks that did not pass: name → message."""
    return {c.name: c.message for c in row.checks if c.status != "passed"}


def _only(result: GradeResult, task: str) -> None:
    """Every task but `task` scores full marks."""
    for row in result.tasks:
        if row.id != task:
            assert row.score == FULL[row.id], (row.id, row.feedback)


# --------------------------------------------------------------------------- weights


def test_weights_are_read_and_others_weigh_one() -> None:
    task = load_manifest("a0").task("0.1")
    assert task.weight("backward_helpers") == 1.5 and task.weight("inv_of_zero") == 0.5
    assert task.weight("arithmetic") == 1.0
    # ordinary inputs first, edge cases after
    assert task.checks.index("exp_log_inv") < task.checks.index("log_of_zero_and_negatives")


def test_a_task_scores_the_weights_of_its_passed_checks() -> None:
    task = Task("0.1", "t", 40.0, ("0.1",), ("a", "b", "c"), weights=(("a", 2.0), ("c", 0.5)))
    results = [
        CheckResult("a", "equivalence", "passed"),
        CheckResult("b", "equivalence", "failed"),
        CheckResult("c", "property", "passed"),
    ]
    assert task_score(task, results) == pytest.approx(40.0 * 2.5 / 3.5, abs=1e-4)
    assert task_score(task, [CheckResult(n, "", "failed") for n in "abc"]) == 0.0


def _kit(tmp_path: Path, weights: str) -> Path:
    (tmp_path / "minitorch").mkdir()
    (tmp_path / "minitorch" / "m.py").write_text(
        "def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n    # END SOLUTION 1.1\n", encoding="utf-8"
    )
    folder = tmp_path / "assignments" / "a1-demo"
    folder.mkdir(parents=True)
    manifest = f"""\
        id = "a1"
        title = "Demo"
        [[tasks]]
        id = "1.1"
        title = "One"
        points = 100
        fences = ["1.1"]
        checks = ["one", "two"]
        weights = {weights}
        """
    (folder / "manifest.toml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "weights, fragment",
    [
        ("{ three = 2.0 }", "weights names 'three', which is not one of its checks (one, two)"),
        ("{ one = 0 }", "the weight of one must be a positive number, got 0"),
        ("{ one = -1.5 }", "the weight of one must be a positive number"),
        ("{ one = true }", "the weight of one must be a positive number, got True"),
        ('{ one = "2" }', "the weight of one must be a positive number, got '2'"),
        ("{ one = inf }", "the weight of one must be a positive number, got inf"),
        ("[2.0]", "weights must be a table"),
    ],
)
def test_invalid_weights_name_the_manifest_and_the_task(tmp_path: Path, weights: str, fragment: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifest("a1", _kit(tmp_path, weights))
    assert (
        fragment in str(info.value) and "manifest.toml" in str(info.value) and "task 1.1" in str(info.value)
    )


def test_valid_weights_load(tmp_path: Path) -> None:
    task = load_manifest("a1", _kit(tmp_path, "{ two = 3 }")).task("1.1")
    assert task.weights == (("two", 3.0),) and task.weight("one") == 1.0


# --------------------------------------------------------------------------- comparing numbers


def test_numbers_compare_by_kind() -> None:
    assert diff(1.0, True) == (
        "expected the float 1.0, got the bool True (a comparison's 1.0 / 0.0 is used in arithmetic, "
        "and NumPy refuses to subtract bools)"
    )
    assert diff(0.0, 0) is None  # max(0, x): harmless, accepted with a note (int_zero_note)
    assert diff(0.0, 1) == "expected the float 0.0, got the int 1"
    assert diff(2.0, 2) == "expected the float 2.0, got the int 2"  # an int() somewhere: not the handout's 0
    assert diff(0.0, False) is not None  # a bool 0 is a comparison's, and stays wrong
    assert diff([1.0, 0.0], [1.0, 0]) is None
    assert int_zero_note([1.0, 0.0], [1.0, 0]).startswith(
        "returned the int 0 where the reference returns the float 0.0"
    )
    assert int_zero_note(0.0, 0.0) is None and int_zero_note(1.0, 1) is None
    assert diff(True, 1.0) == "expected the bool True, got the float 1.0"
    assert diff(3, 3.0) == "expected the int 3, got the float 3.0"
    assert diff(1.0, NpScalar(1.0, "float64")) is None  # np.float64 is a float
    assert diff(2, NpScalar(2, "int64")) is None
    assert diff(1.0, True, strict_bool=False) is None
    assert diff(float("inf"), float("nan")) == "value: expected inf, got nan"
    assert diff(np.float64(1.0).item(), 1.5) == "value: expected 1.0, got 1.5"


# --------------------------------------------------------------------------- A0


@pytest.mark.parametrize("fn", ["lt", "eq", "is_close"])
def test_a_comparison_returning_a_bool_loses_the_comparisons_check(tmp_path: Path, fn: str) -> None:
    body = {"lt": "return x < y", "eq": "return x == y", "is_close": "return abs(x - y) < 1e-2"}[fn]
    row = _row(_grade(tmp_path, "a0", {("0.1", fn): body}, task="0.1"), "0.1")
    assert set(_failed(row)) == {"comparisons"}
    assert row.score == 35
    assert (
        f"operators.{fn}(" in row.message
        and "expected the float" in row.message
        and "got the bool" in row.message
    )
    assert "✗ comparisons (equivalence, 5 of 40 points)" in row.feedback
    assert "✓ arithmetic (equivalence, 5 of 40 points): passed" in row.feedback


def test_the_handouts_int_zero_costs_nothing_and_gets_a_note(tmp_path: Path) -> None:
    """max(0, x), d if x > 0 else 0 and the sum of [] as 0: the handout's own formulas
    (13 of 16 real A0 submissions lost 7.5–25 points each to this before)."""
    edits = {
        ("0.1", "relu"): "return max(0, x)",
        ("0.1", "relu_back"): "return d if x > 0 else 0",
        ("0.2", "sum"): "return reduce(add, 0)(ls)",
    }
    result = _grade(tmp_path, "a0", edits)
    assert [(r.id, r.score) for r in result.tasks] == [("0.1", 40), ("0.2", 30), ("0.3", 30)], [
        r.feedback for r in result.tasks
    ]
    feedback = "\n".join(r.feedback for r in result.tasks)
    assert (
        "relu_and_sigmoid (equivalence, 5 of 40 points): passed — note: operators.relu(-1.0) returned the int 0"
        in feedback
    )
    assert "returned the int 0 where the reference returns the float 0.0: accepted" in feedback


def test_log10_is_reported_on_ordinary_inputs(tmp_path: Path) -> None:
    body = "if x > 0.0:\n    return math.log10(x)\nreturn -math.inf if x == 0.0 else math.nan"
    row = _row(_grade(tmp_path, "a0", {("0.1", "log"): body}, task="0.1"), "0.1")
    assert set(_failed(row)) == {"exp_log_inv"}
    assert "operators.log(" in row.message and "expected" in row.message


@pytest.mark.parametrize(
    "fn, body, check, expected",
    [
        ("log", "return math.log(x)", "log_of_zero_and_negatives", "operators.log(0.0): expected -inf"),
        ("inv", "return 1.0 / x", "inv_of_zero", "operators.inv(0.0): expected inf"),
        ("exp", "return math.exp(x)", "exp_overflow", "operators.exp(710.0): expected inf"),
        ("sigmoid", "return 1.0 / (1.0 + math.exp(-x))", "sigmoid_large_inputs", "expected 0.0"),
        ("relu_back", "return d if x >= 0.0 else 0.0", "relu_back_at_zero", "operators.relu_back(0.0, 5.0)"),
    ],
)
def test_a_missing_edge_case_costs_its_own_check(
    tmp_path: Path, fn: str, body: str, check: str, expected: str
) -> None:
    row = _row(_grade(tmp_path, "a0", {("0.1", fn): body}, task="0.1"), "0.1")
    assert set(_failed(row)) == {check}, row.feedback
    assert row.score == 37.5 and expected in _failed(row)[check]


def test_zip_with_raising_index_error_costs_a_fraction(tmp_path: Path) -> None:
    body = "def apply(a, b):\n    a, b = list(a), list(b)\n    return [fn(a[i], b[i]) for i in range(max(len(a), len(b)))]\nreturn apply"
    row = _row(_grade(tmp_path, "a0", {("0.2", "zipWith"): body}, task="0.2"), "0.2")
    assert set(_failed(row)) == {"zip_with_unequal_lengths"} and row.score == 27.5
    assert "expected ValueError, got IndexError" in row.message


def test_zip_with_value_error_must_name_the_lengths(tmp_path: Path) -> None:
    body = (
        "def apply(a, b):\n    a, b = list(a), list(b)\n    if len(a) != len(b):\n        raise ValueError('bad lists')\n"
        "    return [fn(x, y) for x, y in zip(a, b)]\nreturn apply"
    )
    row = _row(_grade(tmp_path, "a0", {("0.2", "zipWith"): body}, task="0.2"), "0.2")
    assert set(_failed(row)) == {"zip_with_unequal_lengths"}
    assert "should name zipWith and both lengths (3 and 2)" in row.message


def test_map_returning_a_tuple_is_a_wrong_type(tmp_path: Path) -> None:
    row = _row(
        _grade(tmp_path, "a0", {("0.2", "map"): "return lambda ls: tuple(fn(x) for x in ls)"}, task="0.2"),
        "0.2",
    )
    assert "map" in _failed(row) and "expected 'list', got 'tuple'" in _failed(row)["map"]
    assert "zip_with" not in _failed(row)


def test_named_parameters_as_a_generator_is_a_wrong_type(tmp_path: Path) -> None:
    body = textwrap.dedent("""\
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen = set()
        for path, module in modules:
            for name, param in module._parameters.items():
                if remove_duplicate and id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{path}.{name}" if path else name, param)""")
    row = _row(_grade(tmp_path, "a0", {("0.3", "Module.named_parameters"): body}, task="0.3"), "0.3")
    assert {"named_parameters", "shared_submodules"} == set(_failed(row))
    assert "expected 'list', got 'generator'" in _failed(row)["named_parameters"]


def test_train_must_set_every_sub_module(tmp_path: Path) -> None:
    row = _row(
        _grade(tmp_path, "a0", {("0.3", "Module.train"): "self.training = mode\nreturn self"}, task="0.3"),
        "0.3",
    )
    assert set(_failed(row)) == {"train_eval", "shared_submodules"}
    assert "a.training" in row.message


# --------------------------------------------------------------------------- A1

RECURSIVE_SORT = """\
order = []
seen = set()
def visit(node):
    if node.unique_id in seen or node.is_constant():
        return
    seen.add(node.unique_id)
    for parent in node.parents:
        visit(parent)
    order.append(node)
visit(variable)
return order[::-1]"""

ONCE_PER_PATH = """\
def walk(node, d):
    if node.is_leaf():
        node.accumulate_derivative(d)
        return
    for parent, d_parent in node.chain_rule(d):
        if not parent.is_constant():
            walk(parent, d_parent)
walk(variable, deriv)"""


def test_the_reference_scores_full_marks_on_a1(tmp_path: Path) -> None:
    result = _grade(tmp_path, "a1", {})
    assert {r.id: r.score for r in result.tasks} == {t: FULL[t] for t in ("1.1", "1.2", "1.3", "1.4")}


def test_the_child_has_the_default_recursion_limit(tmp_path: Path) -> None:
    # a recursive depth-first search fails on the 5,000-node chain only if nothing raised the limit
    row = _row(
        _grade(
            tmp_path,
            "a1",
            {("1.1", "central_difference"): "import sys\nreturn float(sys.getrecursionlimit())"},
            task="1.1",
        ),
        "1.1",
    )
    assert "got 1000.0" in row.message


def test_a_recursive_topological_sort_loses_the_long_chain_checks(tmp_path: Path) -> None:
    result = _grade(tmp_path, "a1", {("1.4", "topological_sort"): RECURSIVE_SORT})
    row = _row(result, "1.4")
    assert set(_failed(row)) == {"topological_sort_long_chain", "backpropagate_long_chain"}
    assert (
        row.score == 17.5 and "RecursionError in topological_sort(o) for a chain of 5000 nodes" in row.message
    )
    _only(result, "1.4")


def test_a_topological_sort_returning_an_iterator_is_a_wrong_type(tmp_path: Path) -> None:
    body = RECURSIVE_SORT.replace("return order[::-1]", "return reversed(order)").replace(
        "visit(variable)", "import sys\nsys.setrecursionlimit(20000)\nvisit(variable)"
    )
    row = _row(_grade(tmp_path, "a1", {("1.4", "topological_sort"): body}, task="1.4"), "1.4")
    assert {"topological_sort", "topological_sort_long_chain"} <= set(_failed(row))
    assert "expected a list, got a list_reverseiterator" in _failed(row)["topological_sort"]


def test_chain_rule_dropping_constants_costs_its_check_only(tmp_path: Path) -> None:
    body = "derivatives = h.last_fn._backward(h.ctx, d_output)\nreturn [(x, g) for x, g in zip(h.inputs, derivatives) if not x.is_constant()]"
    result = _grade(tmp_path, "a1", {("1.3", "Scalar.chain_rule"): body})
    row = _row(result, "1.3")
    assert set(_failed(row)) == {"chain_rule"} and row.score == 24
    assert "1 pair(s) for the 2 inputs of z" in row.message
    _only(result, "1.3")


def test_backpropagation_once_per_path_loses_points(tmp_path: Path) -> None:
    result = _grade(tmp_path, "a1", {("1.4", "backpropagate"): ONCE_PER_PATH})
    row = _row(result, "1.4")
    assert {"backpropagate", "backpropagate_long_chain"} == set(_failed(row))
    assert "accumulate_derivative was called 3 times on the leaf x" in _failed(row)["backpropagate"]
    _only(result, "1.4")


def test_chain_rule_once_per_path_loses_points(tmp_path: Path) -> None:
    # the leaves get one call each, but a node reached by two paths is expanded twice
    body = ONCE_PER_PATH.replace("node.accumulate_derivative(d)", "sums[node] = sums.get(node, 0.0) + d")
    body = "sums = {}\n" + body + "\nfor leaf, total in sums.items():\n    leaf.accumulate_derivative(total)"
    row = _row(_grade(tmp_path, "a1", {("1.4", "backpropagate"): body}, task="1.4"), "1.4")
    assert "backpropagate" in _failed(row)
    assert "chain_rule was called 2 time(s) on a, expected 1" in _failed(row)["backpropagate"]


@pytest.mark.parametrize(
    "task, edits",
    [
        ("1.2", {("1.2", "Mul.forward"): "ctx.save_for_backward(a, b)\nreturn a * b + 1"}),
        ("1.2", {("1.2", "Scalar.__sub__"): "return Add.apply(self, b)"}),
        ("1.2", {("1.2", "LT.forward"): "return a < b"}),
        ("1.3", {("1.3", "Mul.backward"): "a, b = ctx.saved_values\nreturn a * d_output, b * d_output"}),
        ("1.3", {("1.3", "Mul.backward"): "a, b = ctx.saved_values\nreturn b, a"}),  # ignores d_output
        ("1.3", {("1.3", "Add.backward"): "return d_output, 2.0 * d_output"}),
    ],
    ids=[
        "Mul.forward+1",
        "__sub__-is-add",
        "LT.forward-bool",
        "Mul.backward-swapped",
        "Mul.backward-ignores-d",
        "Add.backward-doubles",
    ],
)
def test_a_wrong_value_costs_only_its_own_task(tmp_path: Path, task: str, edits: dict) -> None:
    result = _grade(tmp_path, "a1", edits)
    assert 0 <= _row(result, task).score < FULL[task]
    _only(result, task)
