"""Student text is data, never markup: one sanitiser for every place the grader writes it.

A student controls much of what the grader writes: the type name and message of an
exception their code raises, the lines of their traceback, the names of their files and
folders, the targets of their links, whatever their code prints. Each report reads some
characters as instructions rather than text, and would obey a student who writes them:

==========  =======================================  ==========================================
boundary    what it would obey                       function here
==========  =======================================  ==========================================
terminal    ESC sequences (clear the screen, move    `terminal_text` (a `rich.text.Text`) and
            the cursor, OSC 8 hyperlinks), ``\\r``   `visible`: every control character is
            overwriting a line, bidi overrides;      shown as an escape (``\\x1b``); rich never
            rich's markup (``[/bold]`` raises        parses a `Text` as markup
            MarkupError)
JSON        a lone surrogate (``"\\ud800"``, or      `json_safe`: each becomes U+FFFD, so the
            bytes decoded with surrogateescape)      file encodes as UTF-8; nothing else
            cannot be encoded: no results.json       changes (JSON escapes the rest itself)
JUnit XML   C0 controls, surrogates and U+FFFE/F     `xml_text`: shown as escapes (``\\x00``)
            are not XML: the file does not parse
Markdown    HTML (``<script>``), emphasis, links,    `markdown_cell` (a table cell, one line),
            ``|`` ending a table cell, a run of      `markdown_text` (a line of prose),
            backticks closing a code block           `code_fence` (a fence longer than any
                                                     run of backticks inside)
CSV         a cell starting with ``= + - @``, tab    `csv_cell` prefixes ``'`` (OWASP's advice);
            or CR is a spreadsheet formula           `csv_value` undoes it on reading
==========  =======================================  ==========================================

Every function takes any ``str`` (also 1 MB of it, in linear time) and returns text that
its boundary cannot misread, and each keeps the text readable: a character that cannot be
written as itself is written as the escape Python would print for it, so an instructor
still sees what the student's code produced. None of them raises.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

__all__ = [
    "code_fence",
    "csv_cell",
    "csv_value",
    "json_safe",
    "markdown_cell",
    "markdown_text",
    "terminal_text",
    "visible",
    "xml_text",
]

#: Characters that are instructions to some reader, or not text at all: C0 controls but
#: tab and newline, DEL, C1 controls (U+0080–U+009F: 8-bit CSI and OSC to some terminals),
#: surrogates (never valid alone; surrogateescape's U+DC80–U+DCFF among them), the bidi
#: embeddings, overrides and isolates (they reorder what a line shows), U+FFFE and U+FFFF.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
#: The same, with newlines and tabs too: for text that must stay on one line.
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Escapes written by name, as Python's repr writes them.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: Any, one_line: bool = False) -> str:
    """`text` with every unsafe character shown as its escape (ESC → ``\\x1b``, a lone
    surrogate → ``\\udc80``); newlines and tabs are kept unless `one_line`.

    >>> visible("a\\x1b[2Jb\\rc")
    'a\\\\x1b[2Jb\\\\rc'
    """
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE).sub(_escape, str(text))


# --------------------------------------------------------------------------- terminal


def terminal_text(text: Any, style: str = "") -> Text:
    """A rich `Text` of `text` for a console: controls shown as escapes (`visible`),
    never parsed as markup, so ``[/bold]`` is printed as it is."""
    return Text(visible(text), style=style)


# --------------------------------------------------------------------------- JSON


def json_safe(value: Any) -> Any:
    """`value` (a JSON-able structure) with every lone surrogate in its strings, keys
    included, replaced by U+FFFD: ``json.dumps(..., ensure_ascii=False)`` of it encodes as
    UTF-8. Other values are returned as they are."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


# --------------------------------------------------------------------------- JUnit XML


def xml_text(text: Any) -> str:
    """`text` made of XML 1.0 characters only (for an attribute or element text of
    junit.xml): every other character as its escape. ElementTree escapes ``< & "``."""
    return visible(text)


# --------------------------------------------------------------------------- Markdown

#: Markdown's and HTML's active characters; each gets a backslash (CommonMark escapes any
#: ASCII punctuation so), ``|`` included (GitHub's tables).
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]<>|~&])")


def markdown_text(text: Any) -> str:
    """`text` as one line of Markdown prose that renders as itself: no HTML, emphasis,
    link, image or code span can start in it."""
    return _MARKDOWN_ACTIVE.sub(r"\\\1", visible(text, one_line=True).strip())


def markdown_cell(text: Any) -> str:
    """`text` for a cell of a Markdown table: `markdown_text` (one line; ``|`` escaped)."""
    return markdown_text(text)


def code_fence(body: str) -> str:
    """The backtick fence for a code block holding `body`: longer than any run of
    backticks in it, so nothing in `body` can close the block early."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


# --------------------------------------------------------------------------- CSV

#: A cell starting with one of these is a formula (or may start one) to a spreadsheet.
#: (A tab or CR, OWASP's other two, never starts one: `visible` writes them as escapes.)
_FORMULA_START = ("=", "+", "-", "@")
#: A number stays a number: a spreadsheet computes nothing from ``-0.5``.
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def csv_cell(text: Any) -> str:
    """`text` for a cell of a CSV file that spreadsheets open (gradebook.csv): one line
    (controls shown as escapes) and, when it could start a formula (``= + - @``), a ``'``
    in front, which spreadsheets show as text. A cell that starts with ``'`` gets another,
    so that `csv_value` gives back exactly the cell's text."""
    cell = visible(text, one_line=True)
    if cell.startswith("'") or (cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell)):
        return "'" + cell
    return cell


def csv_value(cell: str) -> str:
    """The text that `csv_cell` wrote as `cell` (what a reader of the file compares)."""
    return cell[1:] if cell.startswith("'") else cell
