"""Reports of a grading run: a rich table, Gradescope's results.json, JUnit XML.

All three are made from a `GradeResult` (`grader.results`) by the parent after every child
process is gone; they render what the results say and never change a score or a status. Files
are written atomically (a temporary file in the same directory, then a rename), so a
reader never sees half a report and nothing a child wrote at that path survives.

Much of what they render is the student's text (exception names and messages, tracebacks,
file names, the submission's name): each report passes it through `grader.safe_text` for
its own format, so no text makes the terminal, rich's markup, XML or JSON misread it, and
every report is written whatever the student's code produced.
"""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .console import is_a_terminal, make_console
from .jail import describe
from .results import GradeResult, TaskResult
from .safe_text import json_safe, terminal_text, xml_text

STATUS_STYLE = {"passed": "bold green", "failed": "bold red", "error": "bold magenta", "timeout": "bold yellow"}


def _fmt(points: float) -> str:
    return f"{points:.2f}".rstrip("0").rstrip(".")


def _name(row: TaskResult) -> str:
    return f"Task {row.id}: {row.title}" if row.kind == "task" else f"Notebook: {row.title}"


# --------------------------------------------------------------------------- terminal


def print_report(result: GradeResult, console: Optional[Console] = None, feedback: bool = True) -> None:
    """The table (task, title, points, status, message, total) and, below it, the feedback
    of every task that did not pass.

    The message cell has one line per failing message of the task (`TaskResult.messages`,
    at most `TABLE_LINES`); on a terminal the column is at most 70 wide, elsewhere (a pipe,
    a CI log: `grader.console`) as wide as its lines, so nothing is cut in a word.
    """
    console = console or make_console()
    iso = " (isolated tasks)" if result.isolate else ""
    table = Table(
        title=terminal_text(f"{result.stage.upper()} · {result.title}{iso}", style="table.title"),
        caption=terminal_text(f"{result.submission} · graded in {result.seconds:.1f} s · sandbox: {result.isolation}",
                              style="table.caption"),
        box=box.SIMPLE_HEAVY,
        show_footer=True,
    )
    pct = 100.0 * result.score / result.max_score if result.max_score else 0.0
    table.add_column("task", footer="total")
    table.add_column("title")
    table.add_column("points", justify="right", footer=f"{_fmt(result.score)} / {_fmt(result.max_score)}")
    table.add_column("status", footer=f"{pct:.0f} %")
    table.add_column("message", overflow="fold", max_width=70 if is_a_terminal(console.file) else None)
    for row in result.tasks:
        table.add_row(
            terminal_text(row.id if row.kind == "task" else "notebook"),
            terminal_text(row.title),
            f"{_fmt(row.score)} / {_fmt(row.max_points)}",
            terminal_text(row.status, style=STATUS_STYLE.get(row.status, "")),
            terminal_text(_message_cell(row)),
        )
    console.print(table)
    if feedback:
        for row in result.tasks:
            if row.status != "passed" and row.feedback:
                console.print(terminal_text(f"── {_name(row)} ({row.status})", style=STATUS_STYLE.get(row.status, "bold")))
                console.print(terminal_text(_short_lines(row.feedback, 40)))
    for p in result.problems:
        console.print(terminal_text(f"note: {p.message}", style="yellow"))
    for e in result.grader_errors:
        console.print(terminal_text(f"GRADER ERROR: {e}", style="bold red"))
    if result.isolation == "process":
        console.print(Text(f"WARNING: sandbox '{result.isolation}': {describe(result.isolation)}. Install bubblewrap "
                           "(scripts/install-sandbox.sh) before grading submissions that may be hostile; "
                           "--sandbox=require refuses to grade without it.", style="bold yellow"))


#: The most lines of a task's message cell in the table (the feedback has them all).
TABLE_LINES = 5


def _message_cell(row: TaskResult) -> str:
    """One line per failing message (`TaskResult.messages`), else the one-line message."""
    lines = row.messages if len(row.messages) > 1 else [row.message]
    shown = [_short(line, 140) for line in lines[:TABLE_LINES]]
    if len(lines) > TABLE_LINES:
        shown.append(f"… and {len(lines) - TABLE_LINES} more (see the feedback)")
    return "\n".join(shown)


def _short(text: str, limit: int) -> str:
    text = text.splitlines()[0] if text else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: The most characters of one line of feedback on the terminal (results.json has them all).
LINE_CHARS = 1000


def _short_lines(text: str, limit: int) -> str:
    """`text` cut to `limit` lines of at most `LINE_CHARS` characters each."""
    lines = text.splitlines()
    shown = [line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]}… ({len(line) - LINE_CHARS} more characters "
             "in results.json)" for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"… ({len(lines) - limit} more lines in results.json)")
    return "\n".join(shown)


# --------------------------------------------------------------------------- files


def gradescope(result: GradeResult) -> dict[str, Any]:
    """results.json in Gradescope's autograder schema; every string is `json_safe` (no lone
    surrogate) and shown by Gradescope as plain text (``output_format``)."""
    tests = []
    for row in result.tasks:
        tests.append({
            "name": _name(row),
            "number": row.id if row.kind == "task" else row.id.removeprefix("nb:"),
            "score": row.score,
            "max_score": row.max_points,
            "status": "passed" if row.status == "passed" else "failed",
            "output": f"{row.status}: {row.message}" + (f"\n\n{row.feedback}" if row.feedback else ""),
            "visibility": "visible",
            "extra_data": {"status": row.status, "seconds": round(row.seconds, 3)},
        })
    output = f"{result.stage.upper()} · {result.title}: {_fmt(result.score)} / {_fmt(result.max_score)}"
    output += f"\nSandbox: {result.isolation} — {describe(result.isolation)}"
    if result.problems:
        output += "\n\nProblems with the submission:\n" + "\n".join(f"- {p.message}" for p in result.problems)
    if result.grader_errors:
        output += "\n\nGrading failed for some checks (not your fault; the staff has been told)."
    return json_safe({
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": output,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"isolation": result.isolation},
        "tests": tests,
    })


def junit(result: GradeResult) -> bytes:
    """JUnit XML: one testcase per task; failed → <failure>, error/timeout → <error>.
    Every text in it is `xml_text`, so the file parses whatever the student wrote."""
    suite = ET.Element(
        "testsuite",
        name=f"grader.{result.stage}",
        tests=str(len(result.tasks)),
        failures=str(sum(r.status == "failed" for r in result.tasks)),
        errors=str(sum(r.status in ("error", "timeout") for r in result.tasks)),
        time=f"{result.seconds:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="score", value=_fmt(result.score))
    ET.SubElement(props, "property", name="max_score", value=_fmt(result.max_score))
    ET.SubElement(props, "property", name="isolation", value=xml_text(result.isolation))
    for row in result.tasks:
        case = ET.SubElement(suite, "testcase", classname=f"grader.{result.stage}", name=xml_text(_name(row)),
                             time=f"{row.seconds:.3f}")
        if row.status == "failed":
            el = ET.SubElement(case, "failure", message=xml_text(_short(row.message, 300)), type="failed")
            el.text = xml_text(row.feedback)
        elif row.status in ("error", "timeout"):
            el = ET.SubElement(case, "error", message=xml_text(_short(row.message, 300)), type=xml_text(row.status))
            el.text = xml_text(row.feedback)
        out = ET.SubElement(case, "system-out")
        out.text = f"score {_fmt(row.score)} / {_fmt(row.max_points)}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Write `data` to `path` via a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_reports(result: GradeResult, json_path: Optional[Path | str], junit_path: Optional[Path | str]) -> list[str]:
    """Write the requested reports; return one plain message per path that could not be written.

    A grade is never lost to a bad path (a directory, a read-only place, a full disk): that
    report is written instead to a fresh file in the system's temporary directory, and the
    message says where, so that the caller can report a grader error and exit non-zero.
    """
    problems = []
    for path, render, suffix in ((json_path, lambda: json.dumps(gradescope(result), indent=2, ensure_ascii=False) + "\n", ".json"),
                                 (junit_path, lambda: junit(result), ".xml")):
        if path is None:
            continue
        data = render()
        try:
            write_atomic(path, data)
        except OSError as exc:
            fd, kept = tempfile.mkstemp(prefix=f"grader-{result.stage}-results-", suffix=suffix)
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
            problems.append(f"cannot write {path} ({type(exc).__name__}: {exc.strerror or exc}); the report was kept in {kept}")
    return problems


def write_json(result: GradeResult, path: Path | str) -> None:
    write_atomic(path, json.dumps(gradescope(result), indent=2, ensure_ascii=False) + "\n")


def write_junit(result: GradeResult, path: Path | str) -> None:
    write_atomic(path, junit(result))
