"""`grader run`: the wire protocol, answer validation, comparisons, grading end to end,
reports, the command line and the generated examples."""

from __future__ import annotations

import json
import re
import socket
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox.child import protocol
from grader.sandbox.answers import ArrayVal, BadTensor, ObjectVal, TensorVal, parse_answer, parse_value
from grader.checks.compare import Tol, diff
from grader.commands.cli import main
from grader.release.examples import (
    EXAMPLES as EXAMPLE_TABLE,
    example_files,
    submission_files,
    write_example,
    write_submission,
)
from grader.core.fences import find_fences
from grader.grading.grade import grade
from grader.core.manifest import all_stages, load_manifest
from grader.grading.report import gradescope, junit, write_atomic
from grader.core.results import Problem
from grader.sandbox.session import Limits
from results_json import is_details, task_tests

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=20, start_timeout=60)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding every example submission, generated (`grader example`)."""
    base = tmp_path_factory.mktemp("examples")
    for name in EXAMPLE_TABLE:
        write_example(name, base / name)
    return base


def _roundtrip(value):
    return protocol.decode(protocol.encode(value)[8:])


# --------------------------------------------------------------------------- protocol


def test_protocol_roundtrip_plain_values_and_arrays() -> None:
    value = {
        "a": [1, 2.5, None, True, "s", float("nan"), float("inf")],
        "x": np.arange(6, dtype=np.float32).reshape(2, 3),
        "i": np.array([1, -2], dtype=np.int64),
        "b": np.array([[True, False]]),
        "e": np.zeros((0, 3)),
    }
    back = _roundtrip(value)
    assert back["a"][:5] == [1, 2.5, None, True, "s"] and np.isnan(back["a"][5]) and back["a"][6] == np.inf
    for key in ("x", "i", "b", "e"):
        assert type(back[key]) is np.ndarray
        assert back[key].dtype == value[key].dtype and back[key].shape == value[key].shape
        np.testing.assert_array_equal(back[key], value[key])
    assert back["x"].flags.writeable


def test_protocol_turns_a_numpy_subclass_into_a_plain_array() -> None:
    class Liar(np.ndarray):
        def __eq__(self, other):  # noqa: ANN001
            return True

    arr = np.arange(3.0).view(Liar)
    back = _roundtrip({"v": arr})["v"]
    assert type(back) is np.ndarray
    assert not np.array_equal(back, np.zeros(3))


@pytest.mark.parametrize(
    "header",
    [
        {
            "body": {"__kind__": "ndarray", "blob": 0, "dtype": "|O", "shape": [1]},
            "blobs": [8],
        },  # object dtype
        {
            "body": {"__kind__": "ndarray", "blob": 0, "dtype": "<f8", "shape": [3]},
            "blobs": [8],
        },  # size mismatch
        {"body": {"__kind__": "ndarray", "blob": 0, "dtype": "<f8", "shape": [-1]}, "blobs": [8]},  # negative
        {
            "body": {"__kind__": "ndarray", "blob": 5, "dtype": "<f8", "shape": [1]},
            "blobs": [8],
        },  # missing blob
        {"body": 1, "blobs": [8], "extra": 1},  # unknown key
    ],
)
def test_protocol_refuses_malformed_frames(header: dict) -> None:
    head = json.dumps(header).encode()
    frame = protocol._HEADER.pack(len(head)) + head + b"\0" * 8
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(frame)


def test_protocol_refuses_trailing_bytes_and_huge_frames() -> None:
    frame = protocol.encode([1, 2])[8:]
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(frame + b"x")
    a, b = socket.socketpair()
    try:
        a.sendall(protocol._TOTAL.pack(protocol.MAX_FRAME + 1))
        with pytest.raises(protocol.ProtocolError):
            protocol.recv(b, time.monotonic() + 5)
    finally:
        a.close()
        b.close()


def test_protocol_recv_times_out_and_notices_a_closed_peer() -> None:
    a, b = socket.socketpair()
    start = time.monotonic()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(b, time.monotonic() + 0.2)
    assert time.monotonic() - start < 5
    a.close()
    with pytest.raises(protocol.ChannelClosed):
        protocol.recv(b, time.monotonic() + 5)
    b.close()


def test_answers_are_validated_field_by_field() -> None:
    good = _roundtrip({"ok": [{"__kind__": "tensor", "array": np.ones(2), "requires_grad": False}, 1.5]})
    ans = parse_answer(good)
    assert isinstance(ans.values[0], TensorVal) and ans.values[1] == 1.5
    for bad in (
        {"ok": [{"__kind__": "tensor", "array": [1.0, 2.0], "requires_grad": False}]},  # array is a list
        {"ok": [{"__kind__": "martian"}]},
        {"ok": [{"no": "tag"}]},
        {"ok": "not a list"},
        {"ok": [], "error": {}},
    ):
        with pytest.raises(protocol.ProtocolError):
            parse_answer(_roundtrip(bad))
    assert parse_value({"__kind__": "object", "type": "x.Y", "repr": "r"}) == ObjectVal("x.Y", "r")


# --------------------------------------------------------------------------- comparisons


def test_diff_checks_type_then_dtype_then_shape_then_values() -> None:
    e = TensorVal(np.array([1.0, 2.0]))
    assert diff(e, TensorVal(np.array([1.0, 2.0]))) is None
    assert "expected a Tensor" in diff(e, ArrayVal(np.array([1.0, 2.0]), "numpy.ndarray"))
    assert "broken Tensor" in diff(e, BadTensor("no storage"))
    assert "dtype float32" in diff(e, TensorVal(np.array([1.0, 2.0], dtype=np.float32)))
    assert "shape (2, 1)" in diff(e, TensorVal(np.array([[1.0], [2.0]])))
    assert "index (1,)" in diff(e, TensorVal(np.array([1.0, 2.1])))
    assert "subclass" in diff(ArrayVal(np.ones(2), "numpy.ndarray"), ArrayVal(np.ones(2), "x.Sub"))
    assert "expected the float 1.0, got an object of type x.AlwaysEqual" in diff(
        1.0, ObjectVal("x.AlwaysEqual")
    )


def test_diff_nan_and_inf() -> None:
    assert "got nan" in diff(1.0, float("nan"))
    assert diff(float("nan"), float("nan")) is None
    assert "got 1" in diff(float("nan"), 1.0)
    assert diff(float("inf"), float("inf")) is None
    assert "got -inf" in diff(float("inf"), float("-inf"))
    assert "got inf" in diff(1e308, float("inf"))
    assert diff(1.0, 1.0 + 1e-9, Tol(rtol=1e-6)) is None


def test_diff_bools_and_sequences() -> None:
    assert diff(True, True) is None
    assert "expected the bool True, got the float 1.0" in diff(True, 1.0)
    assert diff([1.0, (2, 3)], (1.0, [2, 3])) is None
    assert "expected 2 items" in diff([1, 2], [1])


# --------------------------------------------------------------------------- grading


def test_two_wrong_example_is_graded_with_feedback(examples: Path) -> None:
    result = grade(examples / "a1-two-wrong", "a1", limits=FAST, notebooks=False)
    scores = {r.id: (r.status, r.score) for r in result.tasks}
    # 1.3 keeps its chain_rule check (6 of 30): the wrong Log.backward fails the other two
    assert scores == {
        "1.1": ("failed", 0),
        "1.2": ("passed", 20),
        "1.3": ("failed", 6),
        "1.4": ("passed", 25),
    }
    r11 = result.tasks[0]
    assert (
        "central_difference(operators." in r11.message and "expected" in r11.message and "got" in r11.message
    )
    assert "Hint: f'(x)" in r11.feedback
    r13 = result.tasks[2]
    assert "Log.backward" in r13.message
    assert "central difference" in r13.feedback  # the gradient check's evidence


def test_grading_is_deterministic(examples: Path) -> None:
    def summary():
        res = grade(examples / "a1-two-wrong", "a1", limits=FAST, notebooks=False)
        return [(r.id, r.score, r.status, r.message, r.feedback) for r in res.tasks]

    assert summary() == summary()


def test_task_option_grades_one_task(examples: Path) -> None:
    result = grade(examples / "a1-two-wrong", "a1", task="1.2", limits=FAST, notebooks=False)
    assert [r.id for r in result.tasks] == ["1.2"] and result.max_score == 20
    with pytest.raises(ValueError, match="no task"):
        grade(examples / "a1-two-wrong", "a1", task="9.9", limits=FAST)


def test_isolate_grades_each_task_with_the_reference_for_the_others(tmp_path: Path) -> None:
    # 1.2 left as a stub: the checks of 1.3 call Log.forward (1.2) and fail in the whole
    # tree; isolated (and in the default grade, alone), 1.3 is graded against the reference 1.2.
    stub = 'raise NotImplementedError("Task 1.2")'
    sub = write_submission(
        tmp_path / "sub",
        "a1",
        {
            ("1.2", f"{cls}.forward"): stub
            for cls in ("Add", "Mul", "Neg", "Inv", "Log", "Exp", "Sigmoid", "ReLU", "LT", "EQ")
        },
    )
    plain = grade(sub, "a1", one_charge=False, limits=FAST, notebooks=False)
    isolated = grade(sub, "a1", isolate=True, limits=FAST, notebooks=False)
    fair = grade(sub, "a1", limits=FAST, notebooks=False)
    assert {r.id: r.score for r in plain.tasks}["1.3"] == 0
    assert {r.id: r.score for r in fair.tasks} == {"1.1": 10, "1.2": 0, "1.3": 30, "1.4": 25}
    assert {r.id: r.score for r in isolated.tasks} == {"1.1": 10, "1.2": 0, "1.3": 30, "1.4": 25}
    assert isolated.isolate


def test_a_zip_submission_is_graded(tmp_path: Path, examples: Path) -> None:
    import zipfile

    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((examples / "a1-two-wrong" / "minitorch").glob("*.py")):
            zf.write(path, f"my-repo/minitorch/{path.name}")  # a GitHub zip nests one folder
    result = grade(archive, "a1", limits=FAST, notebooks=False)
    assert result.score == 51


def test_notebook_points_are_merged(examples: Path) -> None:
    result = grade(examples / "a1-complete", "a1", limits=Limits(check_timeout=20, notebook_timeout=240))
    nb = [r for r in result.tasks if r.kind == "notebook"]
    assert len(nb) == 1 and nb[0].score == nb[0].max_points == 15 and nb[0].status == "passed"
    assert result.score == result.max_score == 100


def test_examples_are_generated_not_committed(
    examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    root = Path(__file__).resolve().parents[2]
    assert not (root / "grader" / "examples").exists()  # no second copy of the reference
    for name in EXAMPLE_TABLE:
        on_disk = {
            p.relative_to(examples / name).as_posix(): p.read_text(encoding="utf-8")
            for p in (examples / name).rglob("*")
            if p.is_file()
        }
        assert on_disk == example_files(name), name  # deterministic
    two = example_files("a1-two-wrong")
    assert "one-sided" in two["minitorch/autodiff.py"] and "notebooks/backprop.ipynb" in two
    assert "notebooks/vanishing_gradients.ipynb" in example_files(
        "a5-complete"
    )  # a stage's notebooks, solved
    assert not any(rel.startswith("notebooks/") for rel in example_files("a0-complete"))  # A0 has none
    # the command: a list without a name; a name writes DIR (again: replaced); a foreign DIR is refused
    assert main(["example"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in EXAMPLE_TABLE)
    out = tmp_path / "ex"
    assert main(["example", "a1-two-wrong", "-o", str(out)]) == 0
    assert main(["example", "a1-two-wrong", "-o", str(out)]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(two)
    assert main(["example", "a0-complete", "-o", str(out)]) == 2  # would leave the A1 files behind
    assert main(["example", "a9-nothing", "-o", str(tmp_path / "none")]) == 2
    assert not (tmp_path / "none").exists()


#: Examples whose point is a body that does not compile (the grader stubs it: fence_guard).
NOT_COMPILING = {"a1-syntax-error"}


def test_every_example_edit_lands_in_a_fence_of_its_stage() -> None:
    # Fast (nothing graded): each (task, function) of an example names a fence of its stage,
    # the body there is the edit, and every file still compiles (but the syntax-error example's).
    references = {stage: submission_files(stage) for stage in all_stages()}
    for name, ex in EXAMPLE_TABLE.items():
        assert name.startswith(f"{ex.stage}-") and ex.about, name
        tasks = {f for t in load_manifest(ex.stage).tasks for f in t.fences}
        reference = references[ex.stage]
        files = submission_files(ex.stage, ex.edits)  # a KeyError: an edit with no fence in the stage's files
        assert files.keys() == reference.keys(), name
        for (task, function), body in ex.edits.items():
            assert task in tasks, f"{name}: task {task} is not of stage {ex.stage}"
            where = [
                rel
                for rel, text in files.items()
                if any(f.task == task and f.function == function for f in find_fences(text, rel))
            ]
            assert len(where) == 1, f"{name}: ({task}, {function}) in {where}"
            lines = files[where[0]].splitlines()
            (fence,) = [
                f for f in find_fences(files[where[0]], where[0]) if f.task == task and f.function == function
            ]
            spliced = [line[len(fence.indent) :] for line in lines[fence.begin : fence.end - 1]]
            assert spliced == body.strip("\n").splitlines(), f"{name}: ({task}, {function}) not spliced"
            assert files[where[0]] != reference[where[0]], (
                f"{name}: ({task}, {function}) is the reference's body"
            )
        broken = []
        for rel, text in files.items():
            try:
                compile(text, rel, "exec")
            except SyntaxError:
                broken.append(rel)
        assert bool(broken) == (name in NOT_COMPILING), f"{name}: {broken or 'compiles'}"
    for stage in all_stages():  # each stage: its reference solved and at least one mistake
        names = [name for name, ex in EXAMPLE_TABLE.items() if ex.stage == stage]
        assert f"{stage}-complete" in names and not EXAMPLE_TABLE[f"{stage}-complete"].edits, stage
        assert any(EXAMPLE_TABLE[name].edits for name in names), stage


def test_an_a0_example_grades_as_its_description_says(tmp_path: Path) -> None:
    # One stage end to end (A0: the cheapest); the others' descriptions were measured by hand.
    name = "a0-shallow-parameters"
    write_example(name, tmp_path / name)
    result = grade(tmp_path / name, "a0", limits=FAST)
    assert {r.id: (r.status, r.score) for r in result.tasks} == {
        "0.1": ("passed", 40),
        "0.2": ("passed", 30),
        "0.3": ("failed", 12.5),
    }
    about = EXAMPLE_TABLE[name].about
    assert "0.3 is 12.5/30" in about and f"({result.score:g}/{result.max_score:g})" in about
    assert "named_parameters() on TREE" in result.tasks[2].message


# --------------------------------------------------------------------------- reports and CLI


def test_reports_follow_the_gradescope_and_junit_schemas(tmp_path: Path, examples: Path) -> None:
    out_json, out_xml = tmp_path / "r" / "results.json", tmp_path / "r" / "junit.xml"
    code = main(
        [
            "run",
            str(examples / "a1-two-wrong"),
            "-a",
            "a1",
            "--json",
            str(out_json),
            "--junit",
            str(out_xml),
            "--no-notebooks",
            "-q",
        ]
    )
    assert code == 0
    data = json.loads(out_json.read_text())
    assert data["score"] == 51 and isinstance(data["execution_time"], int) and isinstance(data["output"], str)
    assert (
        data["execution_time"] >= 1
        and data["output_format"] == "text"
        and data["stdout_visibility"] == "hidden"
    )
    assert [t["number"] for t in task_tests(data)] == ["1.1", "1.2", "1.3", "1.4"]
    for t in data["tests"]:
        assert set(t) >= {
            "name",
            "number",
            "score",
            "max_score",
            "status",
            "output",
            "output_format",
            "visibility",
        }
        assert t["status"] in ("passed", "failed") and t["output_format"] == "text"
        assert t["visibility"] == ("after_due_date" if is_details(t) else "visible")  # a1's manifest
    assert [t["number"] for t in data["tests"] if is_details(t)] == ["1.1", "1.3"]  # the two wrong tasks
    assert sum(t["score"] for t in data["tests"]) == data["score"]
    suite = ET.parse(out_xml).getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and suite.get("errors") == "0"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["Task 1.1: Central difference", "Task 1.3: Chain rule"]
    assert not list(tmp_path.glob("r/.*.tmp"))  # no temporary files left behind


def test_exit_codes(tmp_path: Path, examples: Path) -> None:
    args = ["run", str(examples / "a1-two-wrong"), "-a", "a1", "--no-notebooks", "-q"]
    assert main(args + ["--fail-under", "55"]) == 0  # 51 / 85 = 60 %
    assert main(args + ["--fail-under", "65"]) == 1
    assert main(["run", str(tmp_path / "missing"), "-a", "a1"]) == 2
    assert main(["run", str(examples / "a1-two-wrong"), "-a", "a9"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["run"])
    assert exc.value.code == 2


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old and longer content")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_report_builders_without_files() -> None:
    from grader.core.results import GradeResult, TaskResult

    res = GradeResult(
        "a9",
        "T",
        "sub",
        [
            TaskResult("9.1", "t", 10, 5, "failed", "m", "fb"),
            TaskResult("nb:x.ipynb", "nb", 5, 5, "passed", "ok", kind="notebook"),
        ],
        1.0,
        problems=[
            Problem("minitorch/x.py:3: the fence of task 9.1 in f is missing", "minitorch/x.py", 3, ("9.1",))
        ],
    )
    data = gradescope(res)
    assert data["score"] == 10 and [t["number"] for t in data["tests"]] == ["9.1", "x.ipynb"]
    assert "- minitorch/x.py:3: the fence of task 9.1 in f is missing" in data["output"]
    root = ET.fromstring(junit(res))
    assert root.find("testsuite").get("failures") == "1"


# --------------------------------------------------------------------------- the child process


def test_problems_concern_their_tasks_or_files() -> None:
    one = Problem("m", "minitorch/a.py", 3, ("1.1",))
    two = Problem("m", "minitorch/a.py", 3, ("1.2", "1.1"))
    whole_file = Problem("m", "minitorch/a.py")
    everything = Problem("no package")
    assert one.concerns("1.1", set()) and not one.concerns("1.4", {"minitorch/a.py"})
    assert two.concerns("1.2", set()) and two.concerns("1.1", set())
    assert whole_file.concerns("1.4", {"minitorch/a.py"}) and not whole_file.concerns(
        "1.2", {"minitorch/b.py"}
    )
    assert everything.concerns("1.2", set()) and str(everything) == "no package"


def test_the_child_imports_its_own_tree_and_only_it(tmp_path: Path, examples: Path) -> None:
    from grader.sandbox.child_process import ChildStartFailed
    from grader.sandbox.session import Session
    from grader.trees.child_tree import build_child_tree

    tree = tmp_path / "tree"
    build_child_tree("a1", examples / "a1-complete", tree)  # operators (A0): the reference
    session = Session(tree, tmp_path, FAST)
    try:
        child = session.ensure()
        assert child.hello["minitorch"] == "minitorch/__init__.py"  # inside its tree
        answers = session.batch(
            [
                {
                    "steps": [
                        ["get", {"path": "minitorch.operators.mul"}],
                        ["call", {"fn": {"$": 0}, "args": [2.0, 3.0]}],
                    ],
                    "returns": [1],
                }
            ],
            time.monotonic() + 30,
        )
        assert answers == [{"ok": [6.0]}]
    finally:
        session.close()
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "s2").mkdir()
    bare = Session(empty, tmp_path / "s2", FAST)  # no minitorch/: the kit's copy is not reachable
    with pytest.raises(ChildStartFailed, match="does not import"):
        bare.ensure()
    bare.close()


def test_grader_version_names_the_kit_and_the_digest_of_the_grading_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from grader.batch.gradebook import grader_version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out == f"grader {grader_version()}\n" and re.fullmatch(
        r"grader \d+\.\d+\.\d+\+[0-9a-f]{12}\n", out
    )


def test_a_stage_id_is_read_in_either_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reports print "A1"; typing it back works (`manifest.stage_arg`)."""
    assert main(["release", "A0", "-o", str(tmp_path / "starter")]) == 0
    assert "released a0" in capsys.readouterr().out
    from grader.commands.cli import build_parser

    assert build_parser().parse_args(["run", "sub", "-a", " A1"]).assignment == "a1"
    assert build_parser().parse_args(["check", "-a", "A3"]).assignment == "a3"
