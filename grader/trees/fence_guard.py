"""The fence guard: a student's fence body is code of its own function, or it is left out.

A child tree is the reference's text with the student's bodies pasted between the markers,
line for line. Two kinds of body would cost more than their own task:

* a body that does not compile breaks its whole file, so ``import minitorch`` fails and
  with it every task of the stage;
* a body that leaves its block is code outside the fences in disguise: a line at column 0
  ends the function, and what follows runs when minitorch is imported, as module code (a
  wrapper that memoises a timed kernel, a monkeypatch of the release's code).

`guard_render` renders one file through the caller's renderer, compiles the result, and
checks by AST that every statement of each student body lies inside the function (or
method) that encloses the fence in the reference and ends before the END marker. A body
that fails is left out — the release's stub takes its place (a partner fence of
``--isolate`` keeps the reference) — and reported as a `BrokenFence`, a `Problem` that
costs its task all its points and says why; the file is rendered again until it compiles
clean. The bodies that stay are `PlacedFence`s, where they lie in the tree, so that an
error at import time can be traced back to a fence (`grader.grading.import_guard`).

This module parses and compiles student code in the grader's process; it never runs it.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Mapping, Optional, Sequence

from grader.core.fences import Fence, StudentBodies, fence_keys, find_fences
from grader.core.results import Problem

__all__ = [
    "BrokenFence",
    "Guarded",
    "PlacedFence",
    "broken_message",
    "compile_error",
    "escapes",
    "fences_in",
    "guard_render",
]

#: A fence within one file: (fence id, enclosing function, order within that function).
Key = tuple[str, str, int]
#: ``render_with(leave_out) -> (text, problems)``: the file with those student bodies left out.
Renderer = Callable[[AbstractSet[Key]], tuple[str, list[Problem]]]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_REPLACED = "it was replaced by the stub so that your other tasks could be graded"


@dataclass(frozen=True)
class BrokenFence(Problem):
    """A student's fence body left out of the child tree: it does not compile, escapes its
    fence, or breaks the import of minitorch. Its task scores 0; `message` says why."""


@dataclass(frozen=True)
class PlacedFence:
    """A student's fence body as written into the child tree.

    Attributes:
        file: the file, "minitorch/scalar.py".
        key: (fence id, enclosing function, order) — as `grader.core.fences.fence_keys`.
        task: the manifest's task id covering the fence.
        begin, end: the 1-based lines of its markers in the tree's copy of the file.
        student_begin: the line of its BEGIN marker in the student's own file.
        code: the body's lines, as the student wrote them.
    """

    file: str
    key: Key
    task: str
    begin: int
    end: int
    student_begin: int
    code: tuple[str, ...] = ()

    @property
    def ref(self) -> tuple[str, str, str, int]:
        """(file, fence id, function, order): how `build_tree(stub_fences=…)` names it."""
        return (self.file, *self.key)

    def holds(self, file: str, line: int) -> bool:
        """Whether line `line` of `file` (in the tree) is one of the body's lines."""
        return file == self.file and self.begin < line < self.end

    def student_line(self, line: Optional[int]) -> int:
        """The line of the student's file for a line of the tree (clamped into the body)."""
        size = max(self.end - self.begin - 1, 1)
        offset = min(max((line or 0) - self.begin, 1), size)
        return self.student_begin + offset

    def shown(self, line: Optional[int]) -> str:
        """The student's code at that line of the tree, stripped (for messages)."""
        offset = self.student_line(line) - self.student_begin
        text = self.code[offset - 1].strip() if 0 < offset <= len(self.code) else ""
        return text if len(text) <= 60 else text[:59] + "…"


@dataclass
class Guarded:
    """What `guard_render` made of a file: the text, the problems, the bodies kept."""

    text: str
    problems: list[Problem] = field(default_factory=list)
    placed: list[PlacedFence] = field(default_factory=list)


def broken_message(fence: PlacedFence, line: Optional[int], what: str) -> BrokenFence:
    """The `BrokenFence` for `fence`: "your code of task 1.2 (in minitorch/scalar.py, line
    57, Scalar.__add__: `…`) <what>; it was replaced by the stub …". `line` is a line of
    the tree's file."""
    code = fence.shown(line)
    at = f"in {fence.file}, line {fence.student_line(line)}, {fence.key[1]}" + (f": `{code}`" if code else "")
    return BrokenFence(
        f"your code of task {fence.task} ({at}) {what}; {_REPLACED}",
        fence.file,
        fence.student_line(line),
        (fence.task,),
    )


def compile_error(text: str, filename: str) -> Optional[tuple[Optional[int], str]]:
    """(line, "SyntaxError: …") when `text` does not compile, None when it does.

    Warnings are silenced: the student's "invalid escape sequence" is no error, and must
    not become one where warnings are turned into errors."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        return exc.lineno, f"{type(exc).__name__}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:  # null bytes, nesting, size
        return None, f"{type(exc).__name__}: {exc}"
    return None


def _positions(text: str, filename: str) -> dict[Key, Fence]:
    fences = find_fences(text, filename)
    return dict(zip(fence_keys(fences), fences))


def _scope(scopes: Sequence[ast.AST], fence: Fence) -> Optional[ast.AST]:
    """The innermost of `scopes` (the reference's defs and classes) around `fence` (None: the module)."""
    around = [n for n in scopes if n.lineno < fence.begin <= (n.end_lineno or 0)]  # type: ignore[attr-defined]
    return max(around, key=lambda n: n.lineno, default=None)  # type: ignore[attr-defined]


def escapes(
    reference: str, rendered: str, filename: str, keys: AbstractSet[Key]
) -> dict[Key, tuple[int, str]]:
    """The fences of `keys` whose body, in `rendered` (which compiles), leaves its block:
    key → (line in `rendered`, what is wrong).

    The reference's innermost def around the fence is found again in `rendered` by kind,
    name and line (lines outside the fences move only by the length of the bodies above
    them); every statement that starts between the markers must be a descendant of it and
    end before the END marker.
    """
    ref_fences, out_fences = find_fences(reference, filename), find_fences(rendered, filename)
    if len(ref_fences) != len(out_fences):  # the markers are the reference's: cannot happen
        raise ValueError(
            f"{filename}: the rendered file has {len(out_fences)} fences, the reference {len(ref_fences)}"
        )
    ref_tree, out_tree = ast.parse(reference, filename), ast.parse(rendered, filename)

    def moved(line: int) -> int:
        return line + sum(
            (o.end - o.begin) - (r.end - r.begin) for r, o in zip(ref_fences, out_fences) if r.end <= line
        )

    scopes = {(type(n), n.name, n.lineno): n for n in ast.walk(out_tree) if isinstance(n, _SCOPES)}
    statements = sorted(
        (n for n in ast.walk(out_tree) if isinstance(n, ast.stmt)), key=lambda n: (n.lineno, n.col_offset)
    )
    found: dict[Key, tuple[int, str]] = {}
    ref_scopes = [n for n in ast.walk(ref_tree) if isinstance(n, _SCOPES)]
    for ref, out, key in zip(ref_fences, out_fences, fence_keys(ref_fences)):
        if key not in keys:
            continue
        scope = _scope(ref_scopes, ref)
        home: Optional[ast.AST] = out_tree
        if scope is not None:
            home = scopes.get((type(scope), scope.name, moved(scope.lineno)))  # type: ignore[attr-defined]
        inside = {id(n) for n in ast.walk(home) if n is not home} if home is not None else set()
        for stmt in statements:
            if not out.begin < stmt.lineno < out.end:
                continue
            if id(stmt) not in inside:
                found[key] = (
                    stmt.lineno,
                    f"is not inside {ref.function}: a line less indented than the "
                    "markers ends the function, and what follows runs when minitorch is imported",
                )
                break
            if (stmt.end_lineno or stmt.lineno) >= out.end:
                found[key] = (
                    stmt.lineno,
                    "does not end before the END marker: it swallows the release's code after it",
                )
                break
    return found


def guard_render(
    reference: str,
    filename: str,
    render_with: Renderer,
    student: StudentBodies,
    own: AbstractSet[Key],
    task_of: Mapping[str, str],
    leave_out: AbstractSet[Key] = frozenset(),
) -> Guarded:
    """Render `reference` with the student's bodies, leaving out each one (`own`: the keys
    whose body comes from the student) that does not compile or escapes its fence.

    Args:
        render_with: renders the file with the given student bodies left out.
        student: the student's copy of the file, parsed (for its line numbers).
        task_of: fence id → the manifest's task id.
        leave_out: bodies to leave out from the start, without a problem (the caller
            reports them: `grader.grading.import_guard`).

    Returns:
        A `Guarded` with the text, the renderer's problems plus a `BrokenFence` per body
        left out here, and the bodies kept.
    """
    order = [k for k in fence_keys(find_fences(reference, filename)) if k in own]
    student_at = {k: f for k, f in zip(fence_keys(student.fences), student.fences)}
    left = set(leave_out) & set(order)
    broken: list[BrokenFence] = []

    def placed(text: str, key: Key) -> PlacedFence:
        at, mine = _positions(text, filename)[key], student_at.get(key)
        return PlacedFence(
            filename,
            key,
            task_of.get(key[0], key[0]),
            at.begin,
            at.end,
            mine.begin if mine else at.begin,
            tuple(mine.body) if mine else (),
        )

    while True:
        text, problems = render_with(frozenset(left))
        kept = [k for k in order if k not in left]
        error = compile_error(text, filename)
        if error is None:
            found = escapes(reference, text, filename, set(kept))
            if not found:
                return Guarded(text, problems + list(broken), [placed(text, k) for k in kept])
            for key, (line, what) in found.items():
                broken.append(broken_message(placed(text, key), line, f"escapes its fence: it {what}"))
                left.add(key)
            continue
        if not kept:  # the file fails without any student body: not the student's doing
            return Guarded(text, problems + list(broken), [])
        culprits = 0
        for key in kept:  # each body alone, the others left out
            alone, _ = render_with(frozenset(set(order) - {key}))
            err = compile_error(alone, filename)
            if err is not None:
                broken.append(broken_message(placed(alone, key), err[0], f"does not compile: {err[1]}"))
                left.add(key)
                culprits += 1
        if not culprits:  # only a combination fails: the body at the error, else the last one
            line = error[0] or 0
            key = next((k for k in kept if placed(text, k).holds(filename, line)), kept[-1])
            broken.append(
                broken_message(
                    placed(text, key), line, f"does not compile with your other code of this file: {error[1]}"
                )
            )
            left.add(key)


def fences_in(placed: Sequence[PlacedFence], file: str, line: int) -> Optional[PlacedFence]:
    """The placed body holding line `line` of `file` (a tree path), if any."""
    return next((p for p in placed if p.holds(file, line)), None)
