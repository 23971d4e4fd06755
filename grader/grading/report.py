"""Reports of a grading run: a rich table, Gradescope's results.json, JUnit XML.

All three are made from a `GradeResult` (`grader.core.results`) by the parent after every child
process is gone; they render what the results say and never change a score or a status. Files
are written atomically (a temporary file in the same directory, then a rename), so a
reader never sees half a report and nothing a child wrote at that path survives.

Much of what they render is the student's text (exception names and messages, tracebacks,
file names, the submission's name): each report passes it through `grader.core.safe_text` for
its own format, so no text makes the terminal, rich's markup, XML or JSON misread it, and
every report is written whatever the student's code produced.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.core.console import is_a_terminal, make_console
from grader.core.gradescope_settings import OUTPUT_FORMAT, GradescopeSettings, when_shown
from grader.sandbox.tiers import describe
from grader.core.manifest import ManifestError, load_manifest
from grader.core.results import GradeResult, TaskResult
from grader.core.safe_text import json_safe, terminal_text, xml_text

STATUS_STYLE = {
    "passed": "bold green",
    "failed": "bold red",
    "error": "bold magenta",
    "timeout": "bold yellow",
}


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
    a CI log: `grader.core.console`) as wide as its lines, so nothing is cut in a word.
    """
    console = console or make_console()
    iso = " (isolated tasks)" if result.isolate else ""
    table = Table(
        title=terminal_text(f"{result.stage.upper()} · {result.title}{iso}", style="table.title"),
        caption=terminal_text(
            f"{result.submission} · graded in {result.seconds:.1f} s · sandbox: {result.isolation}",
            style="table.caption",
        ),
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
                console.print(
                    terminal_text(
                        f"── {_name(row)} ({row.status})", style=STATUS_STYLE.get(row.status, "bold")
                    )
                )
                console.print(terminal_text(_short_lines(row.feedback, 40)))
    for p in result.problems:
        console.print(terminal_text(f"note: {p.message}", style="yellow"))
    for e in result.grader_errors:
        console.print(terminal_text(f"GRADER ERROR: {e}", style="bold red"))
    if result.isolation == "process":
        console.print(
            Text(
                f"WARNING: sandbox '{result.isolation}': {describe(result.isolation)}. Install bubblewrap "
                "(scripts/install-sandbox.sh) before grading submissions that may be hostile; "
                "--sandbox=require refuses to grade without it.",
                style="bold yellow",
            )
        )


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
    shown = [
        line
        if len(line) <= LINE_CHARS
        else f"{line[:LINE_CHARS]}… ({len(line) - LINE_CHARS} more characters in results.json)"
        for line in lines[:limit]
    ]
    if len(lines) > limit:
        shown.append(f"… ({len(lines) - limit} more lines in results.json)")
    return "\n".join(shown)


# --------------------------------------------------------------------------- files


def gradescope(result: GradeResult, settings: Optional[GradescopeSettings] = None) -> dict[str, Any]:
    """results.json in Gradescope's autograder schema, shown as `settings` say (by default the
    ``[gradescope]`` table of the stage's manifest: `grader.core.gradescope_settings`).

    Each task is a test holding its points (``visibility``). Where ``details`` differs, a
    task whose checks did not all pass shows there only which checks fail (`_checks_summary`)
    and has a second test, worth nothing, with its feedback (the inputs and expected values
    of the hidden checks: ``details``), and so has a notebook part that lost points (its
    test cells' messages). A passed task, or one graded without running a check (nothing to
    grade, an import failure: no check's values in it), keeps everything in its one test. Every string is `json_safe` (no lone surrogate) and declared plain text
    (``output_format``); ``execution_time`` is whole seconds, rounded up (`_whole_seconds`).
    """
    settings = settings or stage_settings(result.stage)
    tests = []
    for row in result.tasks:
        number = row.id if row.kind == "task" else row.id.removeprefix("nb:")
        full = f"{row.status}: {row.message}" + (f"\n\n{row.feedback}" if row.feedback else "")
        withheld = (
            settings.split
            and row.status != "passed"
            and bool(row.checks or (row.kind != "task" and row.feedback))
        )
        details_name = f"{_name(row)} — details"
        tests.append(
            {
                "name": _name(row),
                "number": number,
                "score": row.score,
                "max_score": row.max_points,
                "status": "passed" if row.status == "passed" else "failed",
                "output": _checks_summary(row, details_name, settings.details) if withheld else full,
                "output_format": OUTPUT_FORMAT,
                "visibility": settings.visibility,
                "extra_data": {"status": row.status, "seconds": round(row.seconds, 3), "part": "score"},
            }
        )
        if withheld:
            tests.append(
                {
                    "name": details_name,
                    "number": number,
                    "score": 0.0,
                    "max_score": 0.0,
                    "status": "failed",
                    "output": full,
                    "output_format": OUTPUT_FORMAT,
                    "visibility": settings.details,
                    "extra_data": {"status": row.status, "part": "details"},
                }
            )
    output = f"{result.stage.upper()} · {result.title}: {_fmt(result.score)} / {_fmt(result.max_score)}"
    output += f"\nSandbox: {result.isolation} — {describe(result.isolation)}"
    if any(t["extra_data"]["part"] == "details" for t in tests):
        output += (
            f"\nWhat each failing check was given and expected is shown {when_shown(settings.details)} "
            "(the tests named “… — details”)."
        )
    if result.problems:
        output += "\n\nProblems with the submission:\n" + "\n".join(f"- {p.message}" for p in result.problems)
    if result.grader_errors:
        output += "\n\nGrading failed for some checks (not your fault; the staff has been told)."
    return json_safe(
        {
            "score": result.score,
            "execution_time": _whole_seconds(result.seconds),
            "output": output,
            "output_format": OUTPUT_FORMAT,
            "test_output_format": OUTPUT_FORMAT,
            "test_name_format": OUTPUT_FORMAT,
            "visibility": settings.visibility,
            "stdout_visibility": settings.stdout_visibility,
            "extra_data": {"isolation": result.isolation},
            "tests": tests,
        }
    )


def stage_settings(stage: str) -> GradescopeSettings:
    """The ``[gradescope]`` settings of `stage`'s manifest; the defaults (which show no
    hidden check's details before the due date) for a stage without one."""
    try:
        return load_manifest(stage).gradescope
    except (ManifestError, ValueError):
        return GradescopeSettings()


def _whole_seconds(seconds: float) -> int:
    """Gradescope's ``execution_time``: an int, rounded up, so a run that took any time is
    at least 1 s (0 only for one that ran nothing, or a time that is not a number)."""
    return math.ceil(seconds) if math.isfinite(seconds) and seconds > 0 else 0


def _checks_summary(row: TaskResult, details_name: str, details: str) -> str:
    """A task's score test when its details are shown otherwise: its status, one line per
    check (its name and status; a stub: the function not written yet), where the details
    are. No check's message: it may hold the inputs and expected values (a notebook part's
    message is its points; its cells' messages are the details)."""
    passed = sum(c.status == "passed" for c in row.checks)
    lines = [
        f"{row.status}: {passed} of {len(row.checks)} checks pass"
        if row.checks
        else f"{row.status}: {row.message}"
    ]
    for c in row.checks:
        stub = f" (not implemented yet: {c.raised_in})" if c.unfinished and c.raised_in else ""
        lines.append(f"✓ {c.name}" if c.status == "passed" else f"✗ {c.name}: {c.status}{stub}")
    lines.append(
        f"The details (inputs, expected values, tracebacks) are in “{details_name}”, "
        f"shown {when_shown(details)}."
    )
    return "\n".join(lines)


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
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"grader.{result.stage}",
            name=xml_text(_name(row)),
            time=f"{row.seconds:.3f}",
        )
        if row.status == "failed":
            el = ET.SubElement(case, "failure", message=xml_text(_short(row.message, 300)), type="failed")
            el.text = xml_text(row.feedback)
        elif row.status in ("error", "timeout"):
            el = ET.SubElement(
                case, "error", message=xml_text(_short(row.message, 300)), type=xml_text(row.status)
            )
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


def write_reports(
    result: GradeResult, json_path: Optional[Path | str], junit_path: Optional[Path | str]
) -> list[str]:
    """Write the requested reports; return one plain message per path that could not be written.

    A grade is never lost to a bad path (a directory, a read-only place, a full disk): that
    report is written instead to a fresh file in the system's temporary directory, and the
    message says where, so that the caller can report a grader error and exit non-zero.
    """
    problems = []
    for path, render, suffix in (
        (json_path, lambda: json.dumps(gradescope(result), indent=2, ensure_ascii=False) + "\n", ".json"),
        (junit_path, lambda: junit(result), ".xml"),
    ):
        if path is None:
            continue
        data = render()
        try:
            write_atomic(path, data)
        except OSError as exc:
            fd, kept = tempfile.mkstemp(prefix=f"grader-{result.stage}-results-", suffix=suffix)
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
            problems.append(
                f"cannot write {path} ({type(exc).__name__}: {exc.strerror or exc}); the report was kept in {kept}"
            )
    return problems


def write_json(result: GradeResult, path: Path | str) -> None:
    write_atomic(path, json.dumps(gradescope(result), indent=2, ensure_ascii=False) + "\n")


def write_junit(result: GradeResult, path: Path | str) -> None:
    write_atomic(path, junit(result))
