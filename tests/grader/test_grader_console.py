"""The grader's consoles (`grader.core.console`): in a pipe or a CI log nothing is wrapped in
the middle of a word — a dotted identifier and a number with its unit come out whole, in
the feedback and in the report's table; on a terminal rich's own console is kept.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys

import pytest
from rich.text import Text

from grader.core.console import PIPE_WIDTH, make_console
from grader.core.manifest import repo_root
from grader.grading.report import print_report
from grader.core.results import CheckResult, GradeResult, TaskResult

pytestmark = pytest.mark.grader

IDENTIFIER = "minitorch.operators.sigmoid_backward_of_a_rather_long_name"
NUMBER = "192.0 ms"
# words enough to pass any usual width, then the identifier and the number
LINE = " ".join(["word"] * 30) + f" {IDENTIFIER} took {NUMBER} " + " ".join(["more"] * 30)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_console_that_is_not_a_terminal_is_wide_and_soft_wraps() -> None:
    out = io.StringIO()
    console = make_console(file=out)
    assert console.width == PIPE_WIDTH and console.soft_wrap
    console.print(Text(LINE))
    assert out.getvalue() == LINE + "\n"  # one line, as written


def test_a_terminal_keeps_richs_console() -> None:
    console = make_console(file=_Terminal(), width=80)
    assert console.width == 80 and not console.soft_wrap
    wrapped = io.StringIO()
    make_console(file=wrapped, width=40, soft_wrap=False).print(Text(LINE))  # options given win
    assert wrapped.getvalue().count("\n") > 1


def test_the_report_in_a_pipe_keeps_identifiers_and_numbers_whole() -> None:
    checks = [
        CheckResult(
            "sigmoid", "equivalence", "failed", f"{IDENTIFIER}(0.5): {NUMBER} is too slow", details=LINE
        )
    ]
    row = TaskResult(
        "0.1",
        "Operators",
        10,
        0,
        "failed",
        checks[0].message,
        feedback=LINE,
        checks=checks,
        messages=[
            f"sigmoid: {IDENTIFIER}(0.5): {NUMBER} is too slow",
            f"relu: expected 2, got 0 in {IDENTIFIER}",
        ],
    )
    result = GradeResult("a0", "Operators", "/tmp/submission", [row], 1.0, isolation="bwrap")
    out = io.StringIO()
    print_report(result, make_console(file=out))
    text = out.getvalue()
    assert f"{IDENTIFIER}(0.5): {NUMBER} is too slow" in text  # in the table, one line
    assert f"relu: expected 2, got 0 in {IDENTIFIER}" in text
    assert LINE in text  # the feedback


@pytest.mark.parametrize("stderr", [False, True])
def test_a_real_pipe(stderr: bool) -> None:
    code = f"from grader.core.console import make_console; make_console(stderr={stderr}).print({LINE!r})"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo_root(),
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo_root()), "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert (done.stderr if stderr else done.stdout) == LINE + "\n"


def test_the_grader_makes_its_consoles_in_one_place() -> None:
    """No grader module but grader/core/console.py calls rich's Console(…) itself."""
    calls = []
    for path in sorted((repo_root() / "grader").rglob("*.py")):
        if path.relative_to(repo_root()).as_posix() == "grader/core/console.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Console"
            ):
                calls.append(f"{path.relative_to(repo_root())}:{node.lineno}")
    assert not calls, calls
