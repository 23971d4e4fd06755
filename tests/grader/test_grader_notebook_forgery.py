"""Notebooks graded by the parent (issue 14, hole 5): the student's kernel gives values only.

A notebook's test cells run in the grader's process on plain data from the student's
kernel (`grader.notebooks.plans`, `grader.notebooks.judge`), so a notebook that rewrites its
own process — the import machinery, the channel, the answers' types — cannot claim points,
and nothing of a hidden test is sent to the jailed child: the cases below attack both, in
every isolation tier this machine provides, and check that honest notebooks still score
exactly what they earn.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import nbformat
import numpy as np
import pytest

from grader.sandbox import tiers
from grader.sandbox.child import protocol
from grader.sandbox.child.main import _plain
from grader.release.examples import solved_notebook, write_submission
from grader.core.manifest import NotebookPart, load_manifest, repo_root
from grader.notebooks.grading import grade_notebook
from grader.notebooks.judge import NotebookError, Opaque, decode_value
from grader.notebooks.plans import NotebookDesignError, plan_tests
from grader.notebooks.parts import release_notebook, run_notebook
from grader.core.results import TaskResult
from grader.sandbox.session import Limits, Session
from grader.trees.child_tree import build_tree

pytestmark = pytest.mark.grader

TIERS = tiers.available_tiers()
JAILED = [t for t in TIERS if t != "process"] or [
    pytest.param("bwrap", marks=pytest.mark.skip(reason=f"no jail on this machine: {tiers.tier_reasons()}"))
]
A1 = repo_root() / "solutions" / "a1" / "backprop.ipynb"
A5 = repo_root() / "solutions" / "a5" / "vanishing_gradients.ipynb"


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A scratch directory laid out as `grade()` lays out its own (the jail tiers expect it)."""
    path = Path(tempfile.mkdtemp(prefix="grader-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _notebook(stage: str, answers: dict[str, str] | None = None, added: str | None = None) -> str:
    """The stage's released notebook: solved, or blank with `answers` (grade id → code) and
    an `added` code cell at the top."""
    part = load_manifest(stage).notebooks[0]
    if answers is None and added is None:
        return solved_notebook(stage, part.name)
    with tempfile.TemporaryDirectory() as tmp:
        release_notebook(repo_root() / "solutions" / part.path, Path(tmp) / part.name)
        nb = nbformat.read(str(Path(tmp) / part.name), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in (answers or {}):
            cell.source = answers[cell.metadata["nbgrader"]["grade_id"]]
    if added is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(added))
    return nbformat.writes(nb, version=4)


def _grade(stage: str, notebook: str, scratch: Path, tier: str = "auto") -> TaskResult:
    part: NotebookPart = load_manifest(stage).notebooks[0]
    sub = write_submission(scratch / "sub", stage, extra={f"notebooks/{part.name}": notebook})
    build_tree(stage, sub, scratch / "tree")
    return grade_notebook(part, sub, scratch / "tree", scratch, Limits(sandbox=tier, notebook_timeout=120))


# ---------------------------------------------------------------------------- forgery

#: Answers that say yes to every comparison, and a float whose difference with anything is 0.
LIARS = """
class Yes(float):
    __eq__ = lambda self, other: True
    __hash__ = float.__hash__
    __sub__ = __rsub__ = lambda self, other: Yes(0.0)
    __abs__ = lambda self: Yes(0.0)
    __le__ = __lt__ = __ge__ = __gt__ = lambda self, other: True

df_dq = df_dx = df_dy = df_dz = dsigma_dz = Yes(0.0)
df_dw0 = df_dx0 = df_dw1 = df_dx1 = df_dw2 = Yes(0.0)
"""

#: A blank notebook's first cell: it claims full points in every way its process allows —
#: the import machinery, the modules a verdict could be computed with, the channel to the
#: grader (every reply says "full marks", and holds no values) — and lies in its answers.
FORGER = (
    """
import builtins, json, sys, types
FULL = [[gid, pts, pts, True, "passed"] for gid, pts in
        [("part1_tests", 6.0), ("part2_local_tests", 3.0), ("part2_grad_tests", 6.0)]]

class Finder:  # any later import of a grading module gets a fake that says "full marks"
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("_grader_notebooks", "nbgrader", "nbclient", "grader"):
            import importlib.machinery
            return importlib.machinery.ModuleSpec(name, Finder)
    @staticmethod
    def create_module(spec):
        fake = types.ModuleType(spec.name)
        fake.autograde_notebook = lambda *a, **k: FULL
        fake.__path__ = []
        return fake
    @staticmethod
    def exec_module(module):
        pass

sys.meta_path.insert(0, Finder)
real_import = builtins.__import__
builtins.__import__ = lambda name, *a, **k: Finder.create_module(types.SimpleNamespace(name=name)) \\
    if name.split(".")[0] in ("_grader_notebooks", "nbgrader") else real_import(name, *a, **k)
json.loads = lambda *a, **k: FULL
P = sys.modules.get("_grader_protocol")
if P is not None:  # every reply to the grader claims full points
    real_send = P.send
    P.send = lambda sock, value, deadline=None: real_send(sock, {"notebook": {
        "ok": FULL, "grades": FULL, "passed": True, "points": 15, "score": 15,
        "values": {}, "kernel": [], "errors": []}}, deadline)
"""
    + LIARS
)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize(
    "forger, seen",
    [
        (FORGER, "part1_tests: AssertionError: set df_dq"),  # the forged reply, with no values, is what came
        (LIARS, "part1_tests: AssertionError: df_dq must be a number, got <a Yes: not plain data"),
    ],
    ids=["channel-and-imports", "lying-answers"],
)
def test_a_blank_notebook_that_forges_its_verdict_scores_zero(
    tier: str, forger: str, seen: str, scratch: Path
) -> None:
    row = _grade("a1", _notebook("a1", added=forger), scratch, tier)
    assert row.score == 0 and row.status == "failed", (row.message, row.feedback)
    assert row.message == "0 of 15 notebook points"
    assert "passed" not in row.feedback and seen in row.feedback, row.feedback


def test_answers_that_lie_about_their_value_are_not_numbers() -> None:
    """What the forger's answers become on the way to the grader (no verdict involved)."""
    liar = type("Yes", (float,), {"__eq__": lambda self, other: True, "__hash__": float.__hash__})(0.0)
    sly = type("Same", (str,), {"__eq__": lambda self, other: True, "__hash__": str.__hash__})("lstm")
    sent = {
        "liar": _plain(liar, [100]),
        "sly": _plain(sly, [100]),
        "honest": _plain([-4.0, ("rnn", np.float64(0.5))], [100]),
    }
    got = {k: decode_value(v) for k, v in protocol.decode(protocol.encode(sent)[8:]).items()}
    assert type(got["liar"]) is Opaque and type(got["sly"]) is Opaque
    assert got["liar"] != 0.0 and got["sly"] != "rnn" and not isinstance(got["liar"], float)
    assert got["honest"] == [-4.0, ("rnn", 0.5)] and type(got["honest"][1][1]) is np.float64
    with pytest.raises(NotebookError):
        decode_value({"__kind__": "verdict", "passed": True})


# ---------------------------------------------------------------------------- no leak

#: The student's cell: search the files and processes this child can see, and its own
#: memory, for the marker of the hidden tests (given as two halves: the marker itself is
#: never in this code), now and again while the grader's call of `double` runs.
SEARCH = """
import os, sys
A, B = {a!r}, {b!r}
def _found(data):
    i = data.find(A.encode())
    while i >= 0:
        if data[i + len(A):i + len(A) + len(B)] == B.encode():
            return data[max(i - 8, 0):i + len(A) + len(B) + 8].decode("latin-1")
        i = data.find(A.encode(), i + 1)
    return None

def _memory(pid):
    hits, size = [], 0
    try:
        regions = open(f"/proc/{{pid}}/maps").read().splitlines()
        fd = os.open(f"/proc/{{pid}}/mem", os.O_RDONLY)
    except OSError:
        return hits, size
    for line in regions:
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if "r" not in perms or end - start > 1 << 30 or line.endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        for at in range(start, end, 1 << 22):
            try:
                data = os.pread(fd, min(1 << 22, end - at) + len(A) + len(B), at)
            except OSError:
                break
            size += len(data)
            hit = _found(data)
            if hit:
                hits.append(("memory", hit))
    os.close(fd)
    return hits, size

def _search():
    hits, files, size = [], 0, 0
    home = os.environ.get("HOME", "/")
    runtime = os.path.dirname(getattr(sys.modules.get("_grader_protocol"), "__file__", "/") or "/")
    for root in dict.fromkeys([os.environ.get("TMPDIR", "/tmp"), home, os.getcwd(), runtime, os.path.dirname(home), "/tmp"]):
        for n, (folder, _, names) in enumerate(os.walk(root)):
            for name in names[:1000] if n < 2000 else ():
                path = os.path.join(folder, name)
                files += 1
                try:
                    if os.path.isfile(path) and os.path.getsize(path) < 5 << 20:
                        hit = _found(open(path, "rb").read())
                        if hit:
                            hits.append(("file " + name, hit))
                except OSError:
                    pass
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        for name in ("cmdline", "environ"):
            try:
                hit = _found(open(f"/proc/{{pid}}/{{name}}", "rb").read())
            except OSError:
                continue
            if hit:
                hits.append((f"/proc/*/{{name}}", hit))
        more, seen = _memory(pid)
        hits += more
        size += seen
    if hits:
        return f"FOUND in {{sorted(set(kind for kind, _ in hits))}}: {{hits[0][1]!r}}"
    return f"nothing in {{files}} files and {{size >> 20}} MiB of memory"

def double(x):
    global late_findings
    late_findings = _search()
    return 2 * x

findings = _search()
"""

PLANT = """
planted = A + B
with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "planted.txt"), "w") as f:
    f.write(planted)
findings = _search()
"""


def _meta(gid: str, grade: bool, points: int = 0) -> dict:
    return {
        "nbgrader": {
            "grade": grade,
            "grade_id": gid,
            "locked": grade,
            "points": points,
            "schema_version": 3,
            "solution": not grade,
            "task": False,
        }
    }


def _marked_source(marker: str) -> nbformat.NotebookNode:
    """A small source notebook whose hidden tests hold `marker` in a comment, a constant
    next to a call of the student's function, and an expected value."""
    cells = [
        nbformat.v4.new_code_cell(
            '### BEGIN SOLUTION\nfindings = late_findings = "nothing"\n\ndef double(x):\n'
            "    return 2 * x\n### END SOLUTION",
            metadata=_meta("answers", False),
        ),
        nbformat.v4.new_code_cell(
            f'# Tests for double\n### BEGIN HIDDEN TESTS\n# {marker}\n_secret = "{marker}"\n'
            f'_got = double(21)  # {marker}\nassert _got == 42 != _secret, "double(21) is wrong"\n'
            "### END HIDDEN TESTS",
            metadata=_meta("test_double", True, 1),
        ),
        nbformat.v4.new_code_cell(
            'assert findings.startswith("nothing"), findings\n'
            'assert late_findings.startswith("nothing"), late_findings',
            metadata=_meta("test_search", True, 1),
        ),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def _search_feedback(tier: str, scratch: Path, plant: bool) -> tuple[str, str, list]:
    marker = f"HIDDEN-{uuid.uuid4().hex}"
    source = scratch / "source" / "marked.ipynb"
    source.parent.mkdir()
    nbformat.write(_marked_source(marker), str(source))
    student = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                SEARCH.format(a=marker[:12], b=marker[12:]) + (PLANT if plant else ""),
                metadata=_meta("answers", False),
            )
        ]
    )
    nbformat.write(student, str(scratch / "marked.ipynb"))
    build_tree("a1", write_submission(scratch / "sub", "a1"), scratch / "tree")
    session = Session(scratch / "tree", scratch, Limits(sandbox=tier, notebook_timeout=120), name="notebook")
    try:
        run = run_notebook(scratch / "marked.ipynb", source, session, timeout=120)
    finally:
        session.close()
    return (
        marker,
        "\n".join(f"{g.cell_id}: {g.message}" for g in run.grades) + session_output(session),
        run.grades,
    )


def session_output(session: Session) -> str:
    return "\n".join(session.outputs)


@pytest.mark.parametrize("tier", JAILED)
def test_no_hidden_test_reaches_the_child(tier: str, scratch: Path) -> None:
    marker, feedback, grades = _search_feedback(tier, scratch, plant=False)
    assert marker not in feedback
    assert [(g.cell_id, g.passed) for g in grades] == [("test_double", True), ("test_search", True)], feedback


@pytest.mark.parametrize("tier", JAILED)
def test_the_search_finds_the_marker_where_it_is(tier: str, scratch: Path) -> None:
    """The control of the test above: a marker the notebook plants itself is found, in a
    file and in memory, and reported in the feedback."""
    marker, feedback, grades = _search_feedback(tier, scratch, plant=True)
    assert not grades[1].passed and "FOUND" in grades[1].message, feedback
    assert "'file planted.txt'" in grades[1].message and "'memory'" in grades[1].message
    assert marker in feedback


def test_the_kernel_is_sent_inputs_and_calls_never_expectations() -> None:
    plans = {p.grade_id: p for p in plan_tests(nbformat.read(str(A5), as_version=4))}
    sent = "\n".join(k.code for p in plans.values() for k in p.kernel)
    assert "hidden_grad_norms(" in sent and "_want" not in sent and "_ref" not in sent
    assert "assert" not in sent and "isclose" not in sent and "4.1161446169e-19" not in sent
    assert plans["part1_tests"].names == ("B", "H", "T", "norms")
    assert [k.returns for k in plans["part1_tests"].kernel if k.returns] == [("_got",), ("_got",)]
    a1 = {p.grade_id: p.names for p in plan_tests(nbformat.read(str(A1), as_version=4))}
    assert a1["part2_grad_tests"] == (
        "df_dw0",
        "df_dw1",
        "df_dw2",
        "df_dx0",
        "df_dx1",
    )  # read as globals()[name]


def test_a_call_the_grader_cannot_split_is_a_fault_of_the_kit() -> None:
    nb = _marked_source("x")
    nb.cells[1].source = "assert double(21) == 42"
    with pytest.raises(NotebookDesignError, match="double"):
        plan_tests(nb)


# ---------------------------------------------------------------------------- honest notebooks


@pytest.mark.parametrize("stage", ["a1", "a5"])
def test_the_reference_solution_scores_full(stage: str, scratch: Path) -> None:
    row = _grade(stage, _notebook(stage), scratch)
    assert row.score == row.max_points == 15 and row.status == "passed", (row.message, row.feedback)


PART1_RIGHT = "x, y, z = -2.0, 5.0, -4.0\ndf_dq, df_dx, df_dy, df_dz = -4.0, -4.0, -4.0, 3.0\n"
PART2_HALF = (
    "import math\ns = 1 / (1 + math.exp(-1.0))\ndsigma_dz = s * (1 - s)\n"
    "df_dw0 = df_dx0 = df_dw1 = df_dx1 = df_dw2 = 1.0\n"
)


def test_a_partly_right_notebook_scores_partly(scratch: Path) -> None:
    row = _grade("a1", _notebook("a1", {"part1_answers": PART1_RIGHT, "part2_answers": PART2_HALF}), scratch)
    assert row.score == 9 and row.status == "failed", (row.message, row.feedback)
    assert "part2_grad_tests: AssertionError: df_dw0 is wrong" in row.feedback


def test_a_notebook_that_kills_its_kernel_keeps_the_points_before(scratch: Path) -> None:
    row = _grade(
        "a1",
        _notebook("a1", {"part1_answers": PART1_RIGHT, "part2_answers": "import os\nos._exit(3)\n"}),
        scratch,
    )
    assert row.score == 6, (row.message, row.feedback)
    assert "part2_local_tests: not run: the notebook's process ended (exit status 3)" in row.feedback


def test_a_partly_right_a5_notebook_scores_partly(scratch: Path) -> None:
    nb = nbformat.read(str(A5), as_version=4)
    answer = next(c.source for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "part1_answer")
    answer = "\n".join(line for line in answer.splitlines() if "### " not in line)
    row = _grade(
        "a5",
        _notebook(
            "a5",
            {"part1_answer": answer, "part2_answers": 'smallest_at_start = "rnn"\norders_gained = 1.0\n'},
        ),
        scratch,
    )
    assert row.score == 11, (row.message, row.feedback)
    assert "part2_orders_tests: AssertionError: orders_gained is wrong" in row.feedback


@pytest.mark.slow
def test_a_notebook_that_never_ends_is_a_timeout_and_keeps_the_points_before(scratch: Path) -> None:
    part = load_manifest("a1").notebooks[0]
    notebook = _notebook("a1", {"part1_answers": PART1_RIGHT, "part2_answers": "while True:\n    pass\n"})
    sub = write_submission(scratch / "sub", "a1", extra={f"notebooks/{part.name}": notebook})
    build_tree("a1", sub, scratch / "tree")
    row = grade_notebook(part, sub, scratch / "tree", scratch, Limits(notebook_timeout=20))
    assert row.status == "timeout" and row.score == 6, (row.message, row.feedback)
    assert "part2_local_tests: not run: the notebook ran past its time limit" in row.feedback
