"""Student text is data, never markup (issue 26, findings 3 and 9).

A student controls the type name and message of an exception their code raises, the lines
of their traceback, their folder and file names and their links' targets. Every report
must be written whatever that text holds, and show it as text:

* a lone surrogate (it crosses the wire as JSON) must not stop ``grader run`` (exit 1, no
  results.json) nor ``grader batch`` (no row for anyone after it): finding 3;
* ESC/OSC sequences must not reach the terminal, C0 controls must not make junit.xml
  unparseable, HTML must not land raw in feedback.md, a cell starting with ``=`` must not
  be a formula in gradebook.csv, and ``[/bold]`` must not be read as rich markup: finding 9.

The sanitisers of `grader.core.safe_text` are tested one by one, each report on a hand-made
`GradeResult`, and end to end a real submission whose fence raises such an exception.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hostile.container import SHARES_NETWORK
from results_json import task_tests
from rich.console import Console

from grader.batch.run import BatchOptions, run_batch
from grader.batch.screen import BatchScreen
from grader.batch.worker import feedback_markdown, finished_outcome
from grader.core.console import make_console
from grader.release.examples import write_submission
from grader.batch.gradebook import Gradebook, summarize
from grader.grading.grade import grade
from grader.core.manifest import repo_root
from grader.grading.report import junit, print_report, write_atomic, write_reports
from grader.core.results import CheckResult, GradeResult, Problem, TaskResult
from grader.core.safe_text import (
    code_fence,
    csv_cell,
    csv_value,
    json_safe,
    markdown_cell,
    markdown_text,
    terminal_text,
    visible,
    xml_text,
)
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

#: A type name an exception class can have (no NUL): clear the screen, an OSC 8 hyperlink,
#: HTML, a rich closing tag, an 8-bit CSI, a right-to-left override.
HOSTILE_TYPE = "\x1b[2J\x1b]8;;http://evil.example/\x07<script>alert(1)</script>[/bold]\x9b31m\u202eEvil"
#: A message: a lone surrogate, NUL, an OSC hyperlink, a carriage return and a fake verdict,
#: HTML, a spreadsheet formula, a surrogate-escaped byte.
HOSTILE_MESSAGE = (
    "\ud800 \x00 \x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 [/bold] [bold red]x\r"
    "ALL CHECKS PASSED <img src=x onerror=alert(1)> =cmd|' /C calc'!A0 \udcff"
)
HOSTILE = [
    HOSTILE_TYPE,
    HOSTILE_MESSAGE,
    '=HYPERLINK("http://evil.example","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1)",
    "\t=1",
    "\r=1",
    "'=1",
    "a | b\nc ``` d",
    b"caf\xe9 \xff".decode("utf-8", "surrogateescape"),
    "x" * 1_000_000 + "\x1b[2J",
]


def _no_controls(text: str, allow: str = "\n\t") -> None:
    bad = [
        hex(ord(c))
        for c in set(text)
        if (ord(c) < 0x20 and c not in allow)
        or 0x7F <= ord(c) <= 0x9F
        or 0xD800 <= ord(c) <= 0xDFFF
        or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    ]
    assert not bad, bad


# --------------------------------------------------------------------------- the sanitisers


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_visible_shows_every_control_as_its_escape_and_keeps_the_rest(text: str) -> None:
    shown = visible(text)
    _no_controls(shown)
    _no_controls(visible(text, one_line=True), allow="")
    assert visible(shown) == shown  # nothing left to escape
    assert visible("a\x1b[2Jb\rc\ud800d") == "a\\x1b[2Jb\\rc\\ud800d"
    assert visible("plain text, 1.5 → 2 ✓\n\tnext") == "plain text, 1.5 → 2 ✓\n\tnext"


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_terminal_text_is_never_markup(text: str) -> None:
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=100).print(terminal_text(text, style="bold"))
    printed = out.getvalue()
    for sequence in ("\x1b[2J", "\x1b]8;;", "\x07", "\x9b", "\r", "\u202e", "\x00"):
        assert sequence not in printed
    assert "[/bold]" not in text or "[/bold]" in printed  # printed as it is, not read as a tag


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_json_safe_replaces_lone_surrogates_only(text: str) -> None:
    data = json_safe({text: [text, (text,), 1.5, None]})
    encoded = json.dumps(data, ensure_ascii=False).encode("utf-8")  # a lone surrogate raises here
    key, (value, (inner,), number, none) = next(iter(json.loads(encoded).items()))
    assert key == value == inner and number == 1.5 and none is None
    assert value == "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_xml_text_always_parses(text: str) -> None:
    root = ET.Element("r", message=xml_text(text))
    root.text = xml_text(text)
    back = ET.fromstring(ET.tostring(root, encoding="utf-8"))
    assert back.text == xml_text(text)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_markdown_cells_hold_no_html_no_pipe_and_one_line(text: str) -> None:
    cell = markdown_cell(text)
    _no_controls(cell, allow="")
    assert "\n" not in cell
    for active in "<>|`[]*_":
        assert cell.count(active) == cell.count("\\" + active)  # each one escaped
    assert markdown_text("<b>x</b> | [a](http://e)") == "\\<b\\>x\\</b\\> \\| \\[a\\](http://e)"


def test_a_code_fence_is_longer_than_any_run_of_backticks_inside() -> None:
    assert code_fence("no ticks") == "```"
    assert code_fence("a ```` b ` c") == "`````"


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_csv_cells_are_never_formulas_and_read_back_as_written(text: str) -> None:
    cell = csv_cell(text)
    _no_controls(cell, allow="")
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert csv_value(cell) == visible(text, one_line=True)
    assert csv_cell("-0.5") == "-0.5" and csv_cell("10") == "10"  # numbers stay numbers


# --------------------------------------------------------------------------- the reports

#: One kind of hostile text each, so that a failure names what a report obeyed.
KINDS = {
    "escapes": "\x1b[2J\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\r  ALL CHECKS PASSED \x9b31m\u202eevil",
    "markup": "[/bold] [bold red]x[/] [link=http://evil.example]y",
    "surrogates": "\ud800 and \udcff (a byte decoded with surrogateescape)",
    "c0": "\x00\x01\x02\x0b\x0c\x1f\x7f",
    "html": "<script>alert(1)</script> | <img src=x onerror=alert(1)> [a](javascript:x) ``` **",
    "formula": "=cmd|' /C calc'!A0",
    "huge": "y" * 1_000_000,
}
#: What no terminal, XML or CSV text may hold of those.
OBEYED = (
    "\x1b[2J",
    "\x1b]8;;",
    "\x07",
    "\r",
    "\x9b",
    "\u202e",
    "\x00",
    "\x01",
    "\x0b",
    "\x7f",
    "\ud800",
    "\udcff",
)


def _result(text: str) -> GradeResult:
    """A result carrying `text` wherever a student's text goes: an exception's type name
    and message, the feedback, the submission's name, a problem, a grader error."""
    message = f"{text}Error in central_difference(operators.id, 2.0): got {text}"
    feedback = f"✗ central_difference: error — {message}\n    Traceback (your code):\n{text}Error: {text}"
    check = CheckResult("central_difference", "equivalence", "error", message, details=feedback)
    row = TaskResult(
        "1.1",
        "Central difference",
        10,
        0.0,
        "error",
        message,
        feedback=feedback,
        checks=[check],
        messages=[message, f"other: {text}"],
    )
    return GradeResult(
        "a1",
        "Scalar autodiff",
        f"{text}/submission",
        [row],
        1.0,
        problems=[Problem(f"minitorch/{text}.py is a symbolic link to {text}", file="minitorch/x.py")],
        grader_errors=[f"check crashed: {text}"],
    )


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_report_on_a_console_shows_student_text_and_obeys_none_of_it(kind: str, terminal: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120) if terminal else make_console(file=out)
    print_report(_result(KINDS[kind]), console)  # a MarkupError raised here
    printed = out.getvalue()
    assert not [s for s in OBEYED if s in printed]
    assert terminal or "\x1b" not in printed  # in a pipe, not even a colour
    printed.encode("utf-8")  # a lone surrogate raised here, on writing to a real stream
    if kind in ("markup", "html"):
        assert KINDS[kind][:20] in printed  # shown as it is


@pytest.mark.parametrize("kind", KINDS)
def test_results_json_is_written_whatever_the_text(kind: str, tmp_path: Path) -> None:
    assert write_reports(_result(KINDS[kind]), tmp_path / "results.json", None) == []
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["output_format"] == "text"  # Gradescope shows it as text, never HTML
    assert all(t["output_format"] == "text" for t in data["tests"])
    expected = KINDS[kind].replace("\ud800", "\ufffd").replace("\udcff", "\ufffd")
    assert expected in task_tests(data)[0]["output"]  # the text as it was, but for lone surrogates


@pytest.mark.parametrize("kind", KINDS)
def test_junit_xml_parses_whatever_the_text(kind: str, tmp_path: Path) -> None:
    assert write_reports(_result(KINDS[kind]), None, tmp_path / "junit.xml") == []
    error = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/error")
    assert error is not None and error.text and error.text.startswith("✗ central_difference")
    assert ET.fromstring(junit(_result(KINDS[kind]))).find("testsuite") is not None


@pytest.mark.parametrize("kind", KINDS)
def test_feedback_md_shows_student_text_as_text(kind: str) -> None:
    text = feedback_markdown(_result(KINDS[kind]))
    text.encode("utf-8")
    _no_controls(text)
    prose, blocks, fence = [], [], ""
    for line in text.splitlines():  # the prose, and the code blocks as their fences delimit them
        if not fence and line.startswith("```"):
            fence = line.removesuffix("text")
            blocks.append([])
        elif fence and line == fence:
            fence = ""
        elif fence:
            blocks[-1].append(line)
        else:
            prose.append(re.sub(r"^\*\*Score: [\d.]+ / [\d.]+\*\*", "", line))
    assert not fence and len(blocks) == 1  # the feedback's ``` does not close its block
    assert "\n".join(blocks[0]).startswith("✗ central_difference")
    unescaped = re.sub(r"\\.", "", "\n".join(prose))
    assert not [c for c in "<>*[]`_&~" if c in unescaped]  # no HTML, emphasis, link or code span
    row = next(line for line in prose if line.startswith("| 1.1"))
    assert row.count("|") - row.count("\\|") == 6  # five cells: no pipe of the student's opens another


# --------------------------------------------------------------------------- a whole class


def _row(student: str, reason: str = "", status: str = "graded", source: str = "") -> dict[str, str]:
    return {
        "student": student,
        "status": status,
        "reason": reason,
        "1.1": "0",
        "total": "0",
        "max": "10",
        "seconds": "1.0",
        "sha256": "s1",
        "grader_version": "v1",
        "graded_at": "2024-01-01T00:00:00+00:00",
        "source": source or student,
    }


def _cells(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:  # the file as a spreadsheet reads it
        return [cell for row in csv.reader(f) for cell in row]


def test_gradebook_cells_are_never_formulas_and_read_back_as_appended(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.csv"
    book = Gradebook(path, ["1.1"])
    hostile_id = '=HYPERLINK("http://evil.example","x")'
    assert book.append(
        _row(hostile_id, reason="a link to [/bold]", status="malformed", source="@SUM(1)+cmd|' /C calc'!A0")
    )
    assert book.append(_row("-2+3", reason="+1"))
    assert book.append(_row("alice", reason="'=quoted"))
    cells = _cells(path)
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert '\'=HYPERLINK("http://evil.example","x")' in cells and "''=quoted" in cells
    again = Gradebook(path, ["1.1"])
    assert again.rows == book.rows  # the quotes are taken off on reading: resuming sees the same rows
    assert again.is_current(hostile_id, "s1", "v1")  # a resumed batch finds the student by the same id
    assert again.latest[hostile_id]["source"] == "@SUM(1)+cmd|' /C calc'!A0"
    assert not again.append(_row("alice", reason="'=quoted"))  # the same row: not appended twice


@pytest.mark.parametrize("kind", KINDS)
def test_gradebook_rows_are_written_whatever_the_text(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "gradebook.csv"
    book = Gradebook(path, ["1.1"])
    assert book.append(
        _row(f"student{kind}", reason=f"crashed: {KINDS[kind]}", source=KINDS[kind])
    )  # encodes
    cells = _cells(path)
    assert len(cells) == 2 * len(book.header)  # the header and one row, each on one line
    assert path.read_text(encoding="utf-8").count("\n") == 2
    assert not [s for s in OBEYED if any(s in c for c in cells)]
    assert Gradebook(path, ["1.1"]).rows == book.rows


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_batch_screen_prints_student_text_as_text(kind: str, terminal: bool) -> None:
    out = io.StringIO()
    screen = BatchScreen(
        Console(file=out, force_terminal=True, width=200) if terminal else make_console(file=out)
    )
    text = KINDS[kind]
    rows = [_row(f"[bold]{kind}", reason=f"a link to {text}", status="malformed"), _row("alice")]
    with screen.progress(total=2):
        for row in rows:
            screen.finished(row, failed=row["status"] == "malformed")  # a MarkupError raised here
    screen.summary(summarize(rows, {"1.1": 10.0, "total": 10.0}), Path("out/gradebook.csv"), skipped=0)
    screen.regraded("1.1", [({**rows[0], "1.1": "5"}, rows[0])])
    screen.error(f"grader batch: {text}")
    printed = out.getvalue()
    assert f"[bold]{kind}" in printed
    assert not [
        s for s in OBEYED if s in printed and not (terminal and s == "\r")
    ]  # rich's progress bar redraws with \r
    assert terminal or "\x1b" not in printed


def test_a_batch_whose_link_target_is_markup_reaches_its_summary(tmp_path: Path) -> None:
    """A link out of the tree is refused before any worker starts (no Dask here): its reason
    names the target, which the progress line and the summary print."""
    (tmp_path / "class").mkdir()
    sub = write_submission(tmp_path / "class" / "=cmd|' ", "a0")
    os.symlink("/nowhere/[/bold]\x1b[2J", sub / "minitorch" / "evil.py")
    out = io.StringIO()
    status = run_batch(
        tmp_path / "class",
        BatchOptions("a0", tmp_path / "out", notebooks=False, allow_shared_network=SHARES_NETWORK),
        console=Console(file=out, width=200),
    )
    assert status == 0, out.getvalue()
    printed = out.getvalue()
    assert "1 students: 1 malformed" in printed and "[/bold]" in printed and "\x1b" not in printed
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "malformed" and not [
        c for c in row.values() if c.startswith(("=", "+", "-", "@"))
    ]
    ET.parse(tmp_path / "out" / csv_value(row["student"]) / "junit.xml")


# --------------------------------------------------------------------------- end to end

#: The fence of task 1.1 raising an exception of a hostile type with a hostile message; the
#: raising line itself holds an ESC and a bidi override (its traceback line shows it).
RAISING_BODY = f"""
Evil = type({HOSTILE_TYPE!r}, (Exception,), {{}})
raise Evil({HOSTILE_MESSAGE!r})  # \x1b[2J\u202e <b>bold</b> [/bold]
"""


@pytest.fixture(scope="module")
def hostile_submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_submission(
        tmp_path_factory.mktemp("hostile") / "sub", "a1", {("1.1", "central_difference"): RAISING_BODY}
    )


def test_grader_run_writes_every_report_of_a_hostile_exception(
    hostile_submission: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.commands.cli",
            "run",
            str(hostile_submission),
            "-a",
            "a1",
            "--task",
            "1.1",
            "--no-notebooks",
            "--sandbox",
            "process",
            "--json",
            str(tmp_path / "results.json"),
            "--junit",
            str(tmp_path / "junit.xml"),
        ],
        capture_output=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(repo_root())},
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    for sequence in (b"\x1b", b"\x07", b"\r", "\u202e".encode(), b"\xc2\x9b"):
        assert sequence not in done.stdout
    assert b"[/bold]" in done.stdout and b"Evil" in done.stdout
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    (test,) = task_tests(data)
    assert test["score"] == 0 and "\ufffd" in test["output"] and "ALL CHECKS PASSED" in test["output"]
    error = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/error")
    assert error is not None and "\\x1b]8;;" in error.get("message", "")


def test_a_batch_records_a_hostile_grade_and_the_student_after_it(
    hostile_submission: Path, tmp_path: Path
) -> None:
    """What a worker returns for the hostile submission (`finished_outcome`) is written as
    the batch's parent writes it (each report atomically, then the row), and so is the next
    student's: the batch does not stop at the hostile one."""
    result = grade(hostile_submission, "a1", task="1.1", notebooks=False, limits=Limits(sandbox="process"))
    assert result.tasks[0].status == "error"
    book = Gradebook(tmp_path / "gradebook.csv", [t.id for t in result.tasks])
    out = io.StringIO()
    screen = BatchScreen(Console(file=out, width=200))
    for student in ("mallory", "next"):
        outcome = finished_outcome(
            {"student": student, "label": student, "sha256": "s", "archive": f"{student}.zip"}, result
        )
        for name, text in outcome["files"].items():
            write_atomic(tmp_path / student / name, text)  # a lone surrogate raised here
        row = {
            "student": student,
            "status": outcome["status"],
            "reason": outcome["reason"],
            "total": "0",
            "max": "10",
            "seconds": "1.0",
            "sha256": "s",
            "grader_version": "v",
            "graded_at": "now",
            "source": student,
            **{task: "0" for task in outcome["points"]},
        }
        assert book.append(row)
        screen.finished(row, failed=False)
    rows = Gradebook(tmp_path / "gradebook.csv", [t.id for t in result.tasks]).rows
    assert [(r["student"], r["status"]) for r in rows] == [("mallory", "graded"), ("next", "graded")]
    feedback = (tmp_path / "mallory" / "feedback.md").read_text(encoding="utf-8")
    table = feedback.split("```")[0]
    assert "<script>" not in table and "\\<script\\>" in table
    _no_controls(feedback)
    assert (
        "\ufffd"
        in task_tests(json.loads((tmp_path / "mallory" / "results.json").read_text(encoding="utf-8")))[0][
            "output"
        ]
    )
    ET.parse(tmp_path / "mallory" / "junit.xml")
    json.loads((tmp_path / "mallory" / "grade.json").read_text(encoding="utf-8"))
