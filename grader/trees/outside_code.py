"""Code outside the fences: the student's compared with the release's, statement by statement.

Only the fences are the student's; the child tree takes everything else from the release.
`outside_code_problem` says so to the student when a file's code outside the markers differs
(a helper function, an import, a changed line): a `Problem` naming the first difference and
how many statements differ. Comments, blank lines, whitespace and docstrings are not
changes; text that does not tokenize is compared line by line.

    problem = outside_code_problem(reference, text, student_bodies(text, name), name, tasks)  # or None
"""

from __future__ import annotations

import difflib
import io
import tokenize
from functools import lru_cache
from typing import Optional, Sequence

from grader.core.fences import Fence, StudentBodies, find_fences
from grader.core.results import Problem

__all__ = ["outside_code_problem"]


#: One statement outside the fences: (its first line, its tokens).
_Statement = tuple[int, tuple[str, ...]]
_SILENT = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _outside(text: str, fences: Sequence[Fence]) -> str:
    """`text` with every fence body blanked (line numbers kept)."""
    lines = text.splitlines(keepends=True)
    for f in fences:
        for i in range(f.begin, f.end - 1):
            lines[i] = "\n"
    return "".join(lines)


@lru_cache(maxsize=128)
def _statements(text: str) -> Optional[tuple[_Statement, ...]]:
    """The logical lines of `text` as tokens, without comments, blank lines, indentation
    and bare strings (docstrings): edits of those change nothing the grader runs.
    None when `text` does not tokenize. Cached: each tree of a grading compares the same
    files."""
    out: list[_Statement] = []
    current: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _SILENT:
                continue
            if tok.type != tokenize.NEWLINE:
                current.append(tok)
                continue
            if current and any(t.type != tokenize.STRING for t in current):
                out.append((current[0].start[0], tuple(t.string for t in current)))
            current = []
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    if current and any(t.type != tokenize.STRING for t in current):
        out.append((current[0].start[0], tuple(t.string for t in current)))
    return tuple(out)


def _lines(text: str) -> list[_Statement]:
    """The fallback for text that does not tokenize: its lines, stripped, without blank
    and comment lines."""
    return [
        (i, (s,))
        for i, line in enumerate(text.splitlines(), 1)
        if (s := line.strip()) and not s.startswith("#")
    ]


def outside_code_problem(
    reference: str, student_text: str, student: StudentBodies, filename: str, tasks: tuple[str, ...]
) -> Optional[Problem]:
    """A `Problem` (for `tasks`) when the student's code outside the fences differs from the
    release's, None when it does not or cannot be compared.

    The release has the reference's text outside the fences, so the two are compared with
    every fence body blanked, statement by statement: comments, blank lines, whitespace and
    docstrings are not changes. A file with damaged fences is not compared (its fence
    problems are reported, and its regions cannot be lined up).
    """
    if student.problems:
        return None
    ours = _outside(reference, find_fences(reference, filename))
    theirs = _outside(student_text.lstrip("\ufeff"), student.fences)
    ref, stu = _statements(ours), _statements(theirs)
    if ref is None or stu is None:
        ref, stu = _lines(ours), _lines(theirs)
    matcher = difflib.SequenceMatcher(None, [s for _, s in ref], [s for _, s in stu], autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not changes:
        return None
    tag, i1, _, j1, _ = changes[0]
    count = sum(max(b - a, d - c) for _, a, b, c, d in changes)
    more = f" ({count} statements differ from the release)" if count > 1 else ""
    if tag == "delete":
        after = j1 >= len(stu)
        line = (stu[-1][0] if stu else 1) if after else stu[j1][0]
        message = (
            f"{filename} line {line}: code of the release outside the task markers is missing "
            f"{'after' if after else 'before'} this line (`{_shown(ours, ref[i1][0])}`){more}: "
            "the grader uses the release's code there"
        )
    elif tag == "insert":
        line = stu[j1][0]
        message = (
            f"{filename} line {line}: code outside the task markers is not graded "
            f"(`{_shown(theirs, line)}`){more}: put helpers inside a fence"
        )
    else:
        line = stu[j1][0]
        message = (
            f"{filename} line {line}: code outside the task markers differs from the release and is "
            f"not graded (`{_shown(theirs, line)}`){more}: the release's code runs there; put your "
            "changes inside a fence"
        )
    return Problem(message, filename, line, tasks)


def _shown(text: str, line: int, width: int = 60) -> str:
    shown = text.splitlines()[line - 1].strip()
    return shown if len(shown) <= width else shown[: width - 1] + "…"
