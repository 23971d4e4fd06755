"""The grader's rich Consoles: as rich makes them on a terminal; wide and unwrapped in a
pipe, a file or a CI log.

    console = make_console()                 # standard output
    progress = make_console(stderr=True)     # standard error

On a terminal rich wraps text to the window's width, which is what a reader there wants.
Elsewhere rich assumes 80 columns and wraps there too, in the middle of whatever crosses
the edge: ``op`` / ``erators.sigmoid``, ``192.0`` / ``ms`` in a CI log, which no one can
search for or copy. Not on a terminal, a console here is `PIPE_WIDTH` columns wide (a
table is only as wide as its contents need, so its columns are not squeezed) and prints
text with ``soft_wrap`` (a line is written whole; whatever shows it may wrap it, between
any characters, without changing the text). Every grader command makes its consoles here
(`grader.commands.cli`, `grader.grading.report`, `grader.commands.invariants`, `grader.mutation.analysis`).

A console parses a ``str`` it prints as rich markup; text a student controls (an exception
message, a file name, a student id) is printed as `grader.core.safe_text.terminal_text`, a
`rich.text.Text` that is never parsed and whose control characters show as escapes.
"""

from __future__ import annotations

from typing import IO, Any, Optional

from rich.console import Console

__all__ = ["PIPE_WIDTH", "is_a_terminal", "make_console"]

#: The width of a console that does not write to a terminal.
PIPE_WIDTH = 240


def make_console(*, stderr: bool = False, file: Optional[IO[str]] = None, **options: Any) -> Console:
    """A rich Console writing to `file` (default: standard output, or standard error with
    `stderr`); `options` go to `rich.console.Console` (``emoji=False`` …).

    When the stream is a terminal (its ``isatty()``), the console is rich's default.
    Otherwise it is `PIPE_WIDTH` columns wide (unless `options` give a width) and
    soft-wraps, even where rich is told to write colours (``FORCE_COLOR`` in a CI job):
    colours are rich's choice, wrapping is not.
    """
    console = Console(stderr=stderr, file=file, **options)
    if is_a_terminal(console.file):
        return console
    options.setdefault("width", PIPE_WIDTH)
    options.setdefault("soft_wrap", True)
    return Console(stderr=stderr, file=file, **options)


def is_a_terminal(stream: IO[str]) -> bool:
    """Whether `stream` is a terminal (False for a pipe, a file, a StringIO, a closed stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
