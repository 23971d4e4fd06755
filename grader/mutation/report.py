"""The report of a mutation analysis: a table on the terminal, a section of ``MUTATION.md``.

    print_report([report], Console())           # the table, then what to look at
    update_markdown(Path("assignments/MUTATION.md"), report)   # replace the stage's section

Both give one row per task (`TaskSummary`) and then, most urgent first, the problems, the
grader errors, the (a) and (b) violations, the surviving catalogue mistakes, the other
survivors and the notes. On the terminal a row is red on a violation and yellow under the
target score (`TARGET`); in the file each stage has its own section, and writing one stage
keeps the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.table import Table

from grader.core.manifest import load_manifest, stage_number
from .verdicts import StageReport, TaskSummary

__all__ = ["TARGET", "print_report", "render_markdown", "update_markdown"]

#: The mutation score a task should reach, in percent.
TARGET = 95.0

_COLUMNS = (
    "stage",
    "task",
    "mutants",
    "killed",
    "equivalent",
    "survived",
    "score %",
    "(a)",
    "(b)",
    "seconds",
)


def _cells(row: TaskSummary) -> list[str]:
    return [
        row.stage,
        row.task,
        str(row.mutants),
        str(row.killed),
        str(row.equivalent),
        str(row.survived),
        f"{row.score:.1f}",
        str(row.violations_a),
        str(row.violations_b),
        f"{row.seconds:.0f}",
    ]


def _listing(report: StageReport) -> list[tuple[str, list[str]]]:
    """(heading, lines) of everything a reader must look at, in order of urgency."""
    vs = report.verdicts
    return [
        ("problems", report.problems),
        (
            "grader errors",
            [f"`{v.mutant.id}` {v.mutant.description}: {'; '.join(v.errors)}" for v in vs if v.errors],
        ),
        (
            "(a) survivors that fail the public tests",
            [
                f"`{v.mutant.id}` {v.mutant.description} — public tests: {v.public}"
                for v in vs
                if not v.killed and v.public_failed
            ],
        ),
        (
            "(b) mutants that change another task's score",
            [f"`{v.mutant.id}` {v.mutant.description} — {'; '.join(v.others)}" for v in vs if v.others],
        ),
        (
            "surviving catalogue mistakes",
            [
                f"`{v.mutant.id}` {v.mutant.description} — public tests: {v.public or 'not run'}"
                for v in vs
                if not v.killed and v.mutant.operator == "mistake"
            ],
        ),
        (
            "survivors",
            [
                f"`{v.mutant.id}` {v.mutant.description}"
                + (
                    f" — equivalent: {v.equivalent}"
                    if v.equivalent
                    else f" — public tests: {v.public or 'not run'}"
                )
                for v in vs
                if not v.killed and v.mutant.operator != "mistake" and not v.public_failed
            ],
        ),
        ("notes", report.notes),
    ]


def print_report(reports: Sequence[StageReport], console: Console) -> None:
    """The table of every stage, then each stage's violations, survivors and problems."""
    table = Table(title="grader check --mutants")
    for col in _COLUMNS:
        table.add_column(col, justify="left" if col in ("stage", "task") else "right")
    for report in reports:
        for row in report.tasks():
            style = (
                "red" if row.violations_a or row.violations_b else ("yellow" if row.score < TARGET else "")
            )
            table.add_row(*_cells(row), style=style)
    console.print(table)
    for report in reports:
        for heading, lines in _listing(report):
            if lines:
                console.print(f"[bold]{report.stage}: {heading}[/bold]")
                for line in lines:
                    console.print(f"  • {line}", markup=False, highlight=False)
        console.print(
            f"{report.stage}: {'ok' if report.ok else 'FAILED'} ({report.scope}; {report.seconds:.0f} s)"
        )


_HEADER = """# Mutation analysis of the hidden checks

Written by `grader check -a STAGE --mutants` (one section per stage; a run replaces its
stage's section). Each mutant is the reference with one small change inside one task's
fence (`grader/mutation/mutants.py`), or a real student's mistake from the stage's `mutants.toml`;
the whole stage is graded with it. *killed*: the task lost points. *(a)*: survivors that
fail the task's public tests (the hidden checks are weaker). *(b)*: mutants that changed
another task's score. Score = killed / (mutants − equivalent); the target is ≥ 95 %.
"""


def render_markdown(report: StageReport) -> str:
    """The stage's section of MUTATION.md."""
    title = load_manifest(report.stage).title
    lines = [
        f"## {report.stage} — {title}",
        "",
        f"{report.scope}; {report.seconds:.0f} s in all.",
        "",
        "| " + " | ".join(_COLUMNS[1:]) + " |",
        "|" + "---|" * (len(_COLUMNS) - 1),
    ]
    lines += ["| " + " | ".join(_cells(row)[1:]) + " |" for row in report.tasks()]
    for heading, items in _listing(report):
        if items:
            lines += ["", f"**{heading[0].upper() + heading[1:]}**", ""] + [f"- {item}" for item in items]
    return "\n".join(lines) + "\n"


def update_markdown(path: Path, report: StageReport) -> None:
    """Replace (or add) the stage's section of `path`, keeping the other stages'."""
    sections: dict[str, str] = {}
    if path.is_file():
        current = None
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.startswith("## a"):
                current = line[3:].split()[0]
                sections[current] = ""
            if current is not None:
                sections[current] += line
    sections[report.stage] = render_markdown(report)
    body = "\n".join(sections[s].rstrip("\n") + "\n" for s in sorted(sections, key=stage_number))
    path.write_text(_HEADER + "\n" + body, encoding="utf-8")
