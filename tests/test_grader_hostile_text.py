"""Student text is data, never markup (issue 26, findings 3 and 9).

A student controls the type name and message of an exception their code raises, the lines
of their traceback, their folder and file names and their links' targets. Every report
must be written whatever that text holds, and show it as text:

* a lone surrogate (it crosses the wire as JSON) must not stop ``grader run`` (exit 1, no
  results.json) nor ``grader batch`` (no row for anyone after it): finding 3;
* ESC/OSC sequences must not reach the terminal, C0 controls must not make junit.xml
  unparseable, HTML must not land raw in feedback.md, a cell starting with ``=`` must not
  be a formula in gradebook.csv, and ``[/bold]`` must not be read as rich markup: finding 9.

The sanitisers of `grader.safe_text` are tested one by one, each report on a hand-made
`GradeResult`, and end to end a real submission whose fence raises such an exception.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from grader.batch import BatchOptions, _record, run_batch
from grader.batch_screen import BatchScreen
from grader.batch_worker import feedback_markdown, finished_outcome
from grader.console import make_console
from grader.examples import write_submission
from grader.gradebook import Gradebook, summarize
from grader.grading import grade
from grader.manifest import repo_root
from grader.report import gradescope, junit, print_report, write_reports
from grader.results import CheckResult, GradeResult, Problem, TaskResult
from grader.safe_text import (code_fence, csv_cell, csv_value, json_safe, markdown_cell, markdown_text, terminal_text,
                              visible, xml_text)
from grader.sandbox import Limits

pytestmark = pytest.mark.grader

#: A type name an exception class can have (no NUL): clear the screen, an OSC 8 hyperlink,
#: HTML, a rich closing tag, an 8-bit CSI, a right-to-left override.
HOSTILE_TYPE = "\x1b[2J\x1b]8;;http://evil.example/\x07<script>alert(1)</script>[/bold]\x9b31m\u202eEvil"
#: A message: a lone surrogate, NUL, an OSC hyperlink, a carriage return and a fake verdict,
#: HTML, a spreadsheet formula, a surrogate-escaped byte.
HOSTILE_MESSAGE = ("\ud800 \x00 \x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 [/bold] [bold red]x\r"
                   "ALL CHECKS PASSED <img src=x onerror=alert(1)> =cmd|' /C calc'!A0 \udcff")
HOSTILE = [
    HOSTILE_TYPE,
    HOSTILE_MESSAGE,
    "=HYPERLINK(\"http://evil.example\",\"x\")",
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
#: What none of the terminal's, XML's or CSV's texts may hold.
CONTROLS = ["\x00", "\x07", "\x1b", "\r", "\x9b", "\u202e", "\ud800", "\udcff"]


def _no_controls(text: str, allow: str = "\n\t") -> None:
    bad = [hex(ord(c)) for c in set(text) if (ord(c) < 0x20 and c not in allow) or 0x7F <= ord(c) <= 0x9F
           or 0xD800 <= ord(c) <= 0xDFFF or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
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


def _hostile_result() -> GradeResult:
    message = f"{HOSTILE_TYPE} in central_difference(operators.id, 2.0): {HOSTILE_MESSAGE}"
    feedback = f"✗ central_difference: error — {message}\n    Traceback (your code):\n```\n{HOSTILE_TYPE}: {HOSTILE_MESSAGE}"
    check = CheckResult("central_difference", "equivalence", "error", message, details=feedback)
    row = TaskResult("1.1", "Central difference", 10, 0.0, "error", message, feedback=feedback, checks=[check],
                     messages=[message, "x" * 1_000_000])
    return GradeResult("a1", "Scalar autodiff", f"sub[/bold]{HOSTILE_TYPE}", [row], 1.0,
                       problems=[Problem(f"minitorch/{HOSTILE_TYPE}.py is a link to [/bold]<b>", file="x")],
                       grader_errors=[f"check crashed: {HOSTILE_MESSAGE}"])


@pytest.mark.parametrize("terminal", [True, False])
def test_the_table_shows_student_text_and_obeys_none_of_it(terminal: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120) if terminal else make_console(file=out)
    print_report(_hostile_result(), console)
    printed = out.getvalue()
    for sequence in ("\x1b[2J", "\x1b]8;;", "\x07", "\x9b", "\r", "\u202e", "\x00", "\ud800", "\udcff"):
        assert sequence not in printed
    assert "[/bold]" in printed and "<script>" in printed  # shown as text
    assert terminal or "\x1b" not in printed  # in a pipe, not even a colour
    printed.encode("utf-8")  # a lone surrogate raised here, on writing to the stream


def test_results_json_and_junit_are_written_whatever_the_text(tmp_path: Path) -> None:
    result = _hostile_result()
    problems = write_reports(result, tmp_path / "results.json", tmp_path / "junit.xml")
    assert problems == []
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert "\ufffd" in data["tests"][0]["output"] and data["output_format"] == "text"
    assert "\x1b[2J" in data["tests"][0]["output"]  # JSON escapes it: the text is kept as it was
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    error = suite.find("testsuite/testcase/error")
    assert error is not None and "[/bold]" in error.get("message", "") and "\\x1b" in (error.text or "")
    assert json.dumps(gradescope(result), ensure_ascii=False).encode("utf-8") and junit(result)


def test_feedback_md_holds_no_raw_html_and_one_table_row_per_task() -> None:
    text = feedback_markdown(_hostile_result())
    _no_controls(text)
    outside_code = text.split("```")[0]  # before the first code block: the title and the table
    assert "<script>" not in outside_code and "\\<script\\>" in outside_code
    row = next(line for line in text.splitlines() if line.startswith("| 1.1"))
    assert row.count("|") - row.count("\\|") == 6  # five cells: no pipe of the student's opens another
    fence = next(line for line in text.splitlines() if line.endswith("text") and line.startswith("```"))
    assert fence.startswith("````")  # longer than the student's ``` inside the feedback
    problems = text.split("## Problems with the submission")[1]
    assert "<b>" not in problems and "\\[/bold\\]" in problems


# --------------------------------------------------------------------------- a whole class


def _row(student: str, reason: str = "", status: str = "graded", source: str = "") -> dict[str, str]:
    return {"student": student, "status": status, "reason": reason, "1.1": "0", "total": "0", "max": "10",
            "seconds": "1.0", "sha256": "s1", "grader_version": "v1", "graded_at": "2024-01-01T00:00:00+00:00",
            "source": source or student}


def test_gradebook_cells_are_never_formulas_and_read_back_as_appended(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.csv"
    book = Gradebook(path, ["1.1"])
    hostile_id = '=HYPERLINK("http://evil.example","x")'
    assert book.append(_row(hostile_id, reason=f"link to [/bold] {HOSTILE_MESSAGE}", status="malformed",
                            source="@SUM(1)+cmd|' /C calc'!A0"))
    assert book.append(_row("-2+3", reason="'=quoted"))
    assert book.append(_row("alice"))
    with open(path, newline="", encoding="utf-8") as f:  # the file as a spreadsheet reads it
        cells = [cell for row in csv.reader(f) for cell in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert "'=HYPERLINK(\"http://evil.example\",\"x\")" in cells and "''=quoted" in cells
    again = Gradebook(path, ["1.1"])
    assert again.rows == book.rows  # the escapes are undone on reading: resuming sees the same rows
    assert again.is_current(hostile_id, "s1", "v1")  # a resumed batch finds the student by the same id
    assert again.latest[hostile_id]["source"] == "@SUM(1)+cmd|' /C calc'!A0"
    assert not again.append(_row("alice", reason=""))  # the same row: not appended twice


def test_the_batch_screen_prints_markup_and_escapes_as_text() -> None:
    out = io.StringIO()
    screen = BatchScreen(Console(file=out, force_terminal=True, width=200))
    rows = [_row("[bold]eve", reason=f"a link to [/bold]{HOSTILE_TYPE}", status="malformed"), _row("alice")]
    with screen.progress(total=2):
        for row in rows:
            screen.finished(row, failed=row["status"] == "malformed")
    screen.summary(summarize(rows, {"1.1": 10.0, "total": 10.0}), Path("out/gradebook.csv"), skipped=0)
    screen.regraded("1.1", [({**rows[0], "1.1": "5"}, rows[0])])
    screen.error(f"grader batch: {HOSTILE_MESSAGE}")
    printed = out.getvalue()
    assert "[/bold]" in printed and "[bold]eve" in printed
    for sequence in ("\x1b[2J", "\x1b]8;;", "\x07", "\x9b", "\u202e", "\ud800"):
        assert sequence not in printed


def test_a_batch_whose_link_target_is_markup_reaches_its_summary(tmp_path: Path) -> None:
    """A link out of the tree is refused before any worker starts (no Dask here): its reason
    names the target, which the summary prints."""
    (tmp_path / "class").mkdir()
    sub = write_submission(tmp_path / "class" / "+cmd|' ", "a0")
    os.symlink("/nowhere/[/bold]\x1b[2J", sub / "minitorch" / "evil.py")
    out = io.StringIO()
    status = run_batch(tmp_path / "class", BatchOptions("a0", tmp_path / "out", limits=Limits(sandbox="process"),
                                                         notebooks=False), console=Console(file=out, width=200))
    assert status == 0, out.getvalue()
    printed = out.getvalue()
    assert "1 students: 1 malformed" in printed and "[/bold]" in printed and "\x1b" not in printed
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "malformed" and not [c for c in row.values() if c.startswith(("=", "+", "-", "@"))]
    ET.parse(tmp_path / "out" / csv_value(row["student"]) / "junit.xml")


# --------------------------------------------------------------------------- end to end

#: The fence of task 1.1 raising an exception of a hostile type with a hostile message; the
#: raising line itself holds an ESC and a bidi override (its traceback line shows it).
RAISING_BODY = f'''
Evil = type({HOSTILE_TYPE!r}, (Exception,), {{}})
raise Evil({HOSTILE_MESSAGE!r})  # \x1b[2J\u202e <b>bold</b> [/bold]
'''


@pytest.fixture(scope="module")
def hostile_submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_submission(tmp_path_factory.mktemp("hostile") / "sub", "a1", {("1.1", "central_difference"): RAISING_BODY})


def test_grader_run_writes_every_report_of_a_hostile_exception(hostile_submission: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "run", str(hostile_submission), "-a", "a1", "--task", "1.1", "--no-notebooks",
         "--sandbox", "process", "--json", str(tmp_path / "results.json"), "--junit", str(tmp_path / "junit.xml")],
        capture_output=True, cwd=tmp_path, timeout=600, env={**os.environ, "PYTHONPATH": str(repo_root())})
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    for sequence in (b"\x1b", b"\x07", b"\r", "\u202e".encode(), b"\xc2\x9b"):
        assert sequence not in done.stdout
    assert b"[/bold]" in done.stdout and b"Evil" in done.stdout
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    (test,) = data["tests"]
    assert test["score"] == 0 and "\ufffd" in test["output"] and "ALL CHECKS PASSED" in test["output"]
    error = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/error")
    assert error is not None and "\\x1b]8;;" in error.get("message", "")


def test_a_batch_records_a_hostile_grade_and_the_student_after_it(hostile_submission: Path, tmp_path: Path) -> None:
    """What a worker returns for the hostile submission is written (reports and row), and so
    is the next student's: the batch does not stop at the hostile one."""
    result = grade(hostile_submission, "a1", task="1.1", notebooks=False, limits=Limits(sandbox="process"))
    assert result.tasks[0].status == "error"
    book = Gradebook(tmp_path / "gradebook.csv", [t.id for t in result.tasks])
    out = io.StringIO()
    screen = BatchScreen(Console(file=out, width=200))
    for student in ("mallory", "next"):
        job = {"student": student, "label": student, "sha256": "s", "archive": f"{student}.zip"}
        _record(finished_outcome(job, result), book, tmp_path, screen, seconds=1.0)
    assert [r["student"] for r in Gradebook(tmp_path / "gradebook.csv", [t.id for t in result.tasks]).rows] == ["mallory", "next"]
    folder = tmp_path / "mallory"
    feedback = (folder / "feedback.md").read_text(encoding="utf-8")
    table = feedback.split("```")[0]
    assert "<script>" not in table and "\\<script\\>" in table
    _no_controls(feedback)
    assert "\ufffd" in json.loads((folder / "results.json").read_text(encoding="utf-8"))["tests"][0]["output"]
    ET.parse(folder / "junit.xml")
    json.loads((folder / "grade.json").read_text(encoding="utf-8"))
