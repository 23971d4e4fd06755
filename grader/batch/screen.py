"""What `grader batch` shows: a line per submission, the progress bar and the summary.

    screen = BatchScreen()
    with screen.progress(total=40):
        screen.finished(row, failed=False)      # a gradebook row, as each submission ends
    screen.summary(summarize(rows, max_points), gradebook_path, skipped=3)

The progress bar counts the submissions sent to the workers: done, failed (a row whose
status is ``malformed``, ``grader-error`` or ``crashed``), left, and the time left
estimated from those done so far. On a terminal it redraws in place; in a log (a pipe, CI)
only the lines of the finished submissions and the summary are printed.

After ``--regrade TASK``, `regraded` lists the students whose points moved, before → after.

The summary is made from the students' current gradebook rows (`grader.batch.gradebook.summarize`):
for each task (and the total) the number of students whose score is 0, 1–49 %, 50–79 %,
80–99 % or 100 % of its points, with the mean; the slowest submissions; every row that is
not ``graded``, grouped by status and reason. It only displays: it decides nothing.

Student ids, reasons and file names are the students' text: every one is printed as a
rich `Text` made by `grader.core.safe_text.terminal_text` (never parsed as markup, control
characters shown as escapes), so no name or message can restyle the screen, move the
cursor or stop the batch with a MarkupError before its summary.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from grader.core.console import make_console
from .gradebook import BINS, Gradebook, Summary, fmt_points
from grader.core.safe_text import terminal_text

__all__ = ["BatchScreen"]

STATUS_STYLE = {
    "graded": "green",
    "timeout": "yellow",
    "malformed": "magenta",
    "grader-error": "bold red",
    "crashed": "bold red",
}
#: Sparkline blocks for the histograms, from an empty bin to the fullest.
BLOCKS = " ▁▂▃▄▅▆▇█"


class BatchScreen:
    """The batch's output: progress on stderr, the summary on stdout."""

    def __init__(self, console: Optional[Console] = None, quiet: bool = False) -> None:
        self.console = console or make_console()
        self.err = make_console(stderr=True) if console is None else console
        self.quiet = quiet
        self._progress: Optional[Progress] = None
        self._task: Optional[TaskID] = None
        self.done = self.failed = 0

    def error(self, message: str) -> None:
        self.err.print(terminal_text(message, style="bold red"))

    def note(self, message: str) -> None:
        self.err.print(terminal_text(message, style="dim"))

    def found(self, found: Any, book: Gradebook) -> None:
        """One line: how many submissions, in which layout, what was ignored."""
        line = f"{len(found.submissions)} submissions ({found.layout})"
        if book.rows:
            line += f"; {book.path} already holds {len(book.latest)} students"
        if book.repaired:
            line += " (its last line, cut short by an interruption, was removed)"
        self.note(line)
        if found.ignored:
            self.note(
                f"not submissions, ignored: {', '.join(found.ignored[:10])}"
                + (" …" if len(found.ignored) > 10 else "")
            )

    @contextmanager
    def progress(self, total: int) -> Iterator[None]:
        """The progress bar of `total` submissions, shown while the block runs."""
        columns = (
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[done]} done[/] · [red]{task.fields[failed]} failed[/] · {task.fields[left]} left"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        self.done = self.failed = 0  # the bar counts the submissions sent to the workers only
        with Progress(*columns, console=self.err, transient=False) as progress:
            self._progress = progress
            self._task = progress.add_task("grading", total=total, done=0, failed=0, left=total)
            try:
                yield
            finally:
                self._progress = self._task = None

    def finished(self, row: dict[str, str], failed: bool) -> None:
        """A submission's row was written: count it and, unless quiet, print its line."""
        self.failed += failed
        self.done += not failed
        target = self._progress.console if self._progress is not None else self.err
        if not self.quiet or failed:
            score = f"{row['total']} / {row['max']}" if row["total"] else "—"
            line = Text.assemble(
                terminal_text(f"  {row['student']:<24}", "bold"),
                terminal_text(f" {score:>12}  "),
                terminal_text(f"{row['status']:<12}", STATUS_STYLE.get(row["status"], "")),
                terminal_text(f" {row['seconds']:>6} s  "),
                terminal_text(row["reason"][:100], "dim"),
            )
            target.print(line)
        if self._progress is not None and self._task is not None:
            task = self._progress.tasks[0]
            self._progress.update(
                self._task,
                advance=1,
                done=self.done,
                failed=self.failed,
                left=int(task.total or 0) - int(task.completed) - 1,
            )

    def summary(self, summary: Summary, gradebook: Path, skipped: int) -> None:
        """The end of the batch: the histograms, the slowest submissions, the failures."""
        console = self.console
        scores = Table(title="Scores (students per share of the points)", title_justify="left")
        for name, justify in [("task", "left"), ("max", "right"), ("mean", "right")] + [
            (f"{b} %", "right") for b in BINS
        ]:
            scores.add_column(name, justify=justify)  # type: ignore[arg-type]
        scores.add_column("histogram")
        for column, counts in summary.histograms.items():
            top = max(counts) or 1
            spark = "".join(BLOCKS[round(8 * c / top)] for c in counts)
            maximum = summary.maxima.get(column, 0.0)
            scores.add_row(
                terminal_text(column),
                fmt_points(maximum),
                f"{summary.means[column]:.1f}",
                *map(str, counts),
                Text(spark, style="cyan"),
            )
        console.print(scores)
        if summary.slowest:
            slow = Table(title="Slowest submissions", title_justify="left")
            for name in ("student", "seconds", "total", "status"):
                slow.add_column(name)
            for row in summary.slowest:
                slow.add_row(
                    *(
                        terminal_text(v)
                        for v in (row["student"], row["seconds"], row["total"] or "—", row["status"])
                    )
                )
            console.print(slow)
        if summary.failures:
            fails = Table(title="Not graded normally, by reason", title_justify="left")
            for name in ("status", "reason", "students"):
                fails.add_column(name, overflow="fold")
            for (status, reason), students in sorted(
                summary.failures.items(), key=lambda kv: (-len(kv[1]), kv[0])
            ):
                shown = ", ".join(students[:5]) + (
                    f" … ({len(students)})" if len(students) > 5 else f" ({len(students)})"
                )
                fails.add_row(
                    terminal_text(status, style=STATUS_STYLE.get(status, "")),
                    terminal_text(reason or "—"),
                    terminal_text(shown),
                )
            console.print(fails)
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
        console.print(
            terminal_text(
                f"{sum(summary.counts.values())} students: {counts}; {skipped} up to date "
                f"(not regraded). Gradebook: {gradebook}"
            )
        )

    def regraded(self, task: str, pairs: list[tuple[dict[str, str], Optional[dict[str, str]]]]) -> None:
        """After ``--regrade task``: how many were regraded, and each student whose points of
        `task` moved (`pairs`: the new row and the row before it)."""
        moved = [(row, old) for row, old in pairs if old is not None and old[task] != row[task]]
        table = Table(
            title=terminal_text(
                f"Regrade of task {task}: {len(pairs)} students regraded, the points of {len(moved)} moved",
                style="table.title",
            ),
            title_justify="left",
        )
        for name in ("student", f"{task} before", f"{task} after", "total before", "total after"):
            table.add_column(name, justify="left" if name == "student" else "right")
        for row, old in sorted(moved, key=lambda pair: pair[0]["student"]):
            table.add_row(
                *(
                    terminal_text(v)
                    for v in (
                        row["student"],
                        old[task] or "—",
                        row[task] or "—",
                        old["total"] or "—",
                        row["total"] or "—",
                    )
                )
            )
        self.console.print(table)
