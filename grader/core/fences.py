"""Solution fences: find, validate and render the student regions of `minitorch/`.

A fence is a block of lines between two marker comments at the same indentation:

    def central_difference(f, *vals, arg=0, epsilon=1e-6):
        \"\"\"Central difference  f'(x) ≈ (f(x+ε) − f(x−ε)) / 2ε.\"\"\"
        # BEGIN SOLUTION 1.1
        ...                      <- the body: reference code, a stub, or a student's code
        # END SOLUTION 1.1

`find_fences` parses a file's fences (strictly: any malformed marker is a `FenceError`
naming file and line). `render` rewrites a file, choosing for each fence, by its task id,
the reference body (`keep`), a `raise NotImplementedError("Task X.Y: …")` stub (`stub`),
given bodies (`replace`), or the bodies of a student's copy of the file (`from_student`,
parsed by `student_bodies`, which tolerates a damaged file). The markers always stay, so a
released file still shows the student where to write, and the grader finds the student's
regions again.

A student's fence is matched to the reference's by (task id, enclosing function, order
within that function), so a fence lost in one function never shifts bodies into another.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Callable, Mapping, Sequence

from .results import Problem

__all__ = [
    "Fence",
    "FenceError",
    "StudentBodies",
    "fence_keys",
    "find_fences",
    "is_stub",
    "package_fences",
    "render",
    "student_bodies",
    "stub_line",
]

_BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<task>\d+\.\d+)[ \t]*$")
_END = re.compile(r"^(?P<indent>[ \t]*)# END SOLUTION (?P<task>\d+\.\d+)[ \t]*$")
# Anything that looks like a marker must be a well-formed one.
_LOOSE = re.compile(r"^[ \t]*#+[ \t]*(BEGIN|END)[ \t]+SOLUTION\b")
_LOOSE_TASK = re.compile(r"SOLUTION[ \t]+(\d+\.\d+)")
_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(?P<name>\w+)")


class FenceError(ValueError):
    """A malformed fence, with the file and (1-based) line where it was found, and the
    task ids its markers name (none for a marker without one)."""

    def __init__(self, filename: str, line: int, message: str, tasks: Sequence[str] = ()) -> None:
        self.filename = filename
        self.line = line
        self.message = message
        self.tasks = tuple(dict.fromkeys(tasks))
        super().__init__(f"{filename}:{line}: {message}")


@dataclass(frozen=True)
class Fence:
    """One fenced region.

    Attributes:
        task: the task id of the markers, e.g. "1.1".
        begin: 1-based line number of the `# BEGIN SOLUTION` marker.
        end: 1-based line number of the `# END SOLUTION` marker.
        indent: the markers' indentation (the stub is written at this indentation).
        body: the lines strictly between the markers, each with its line ending.
        function: dotted name of the enclosing functions/classes ("Mul.forward",
            "tensor_map._map"), "<module>" at top level.
    """

    task: str
    begin: int
    end: int
    indent: str
    body: tuple[str, ...]
    function: str

    @property
    def stage(self) -> str:
        """The stage id of the task: "1.1" → "a1"."""
        return "a" + self.task.split(".")[0]


def _split(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _enclosing(lines: Sequence[str], index: int, indent: str, skip: Sequence[range]) -> str:
    """Dotted name of the defs/classes around line `index` (0-based), scanning upwards.

    Lines inside `skip` (other fences' bodies, written by students) are ignored.
    """
    names: list[str] = []
    width = len(indent.expandtabs(8))
    i = index - 1
    while i >= 0 and width > 0:
        if any(i in r for r in skip):
            i -= 1
            continue
        m = _DEF.match(lines[i])
        if m is not None:
            w = len(m.group("indent").expandtabs(8))
            if w < width:
                names.append(m.group("name"))
                width = w
        i -= 1
    return ".".join(reversed(names)) if names else "<module>"


def _scan(text: str, filename: str, strict: bool) -> tuple[list[Fence], list[FenceError]]:
    lines = _split(text)
    spans: list[tuple[str, int, int, str]] = []  # task, begin idx, end idx, indent
    errors: list[FenceError] = []
    open_: tuple[str, int, str] | None = None  # task, begin idx, indent

    def fail(i: int, message: str, *tasks: str) -> None:
        err = FenceError(filename, i + 1, message, tasks)
        if strict:
            raise err
        errors.append(err)

    for i, line in enumerate(lines):
        stripped = line.rstrip("\r\n")
        b = _BEGIN.match(stripped)
        e = _END.match(stripped)
        if b is None and e is None:
            if _LOOSE.match(stripped):
                fail(
                    i,
                    f"malformed fence marker {stripped.strip()!r}; expected "
                    "'# BEGIN SOLUTION X.Y' or '# END SOLUTION X.Y' (with the task id)",
                    *_LOOSE_TASK.findall(stripped),
                )
            continue
        if b is not None:
            if open_ is not None:
                fail(
                    i,
                    f"BEGIN SOLUTION {b['task']} inside the fence of task {open_[0]} "
                    f"opened at line {open_[1] + 1} (fences do not nest; is an END marker missing?)",
                    b["task"],
                    open_[0],
                )
            open_ = (b["task"], i, b["indent"])
            continue
        assert e is not None
        if open_ is None:
            fail(i, f"END SOLUTION {e['task']} without a matching BEGIN SOLUTION", e["task"])
            continue
        task, start, indent = open_
        open_ = None
        if e["task"] != task:
            fail(
                i,
                f"END SOLUTION {e['task']} closes the fence of task {task} opened at line {start + 1}",
                e["task"],
                task,
            )
            continue
        if e["indent"] != indent:
            fail(
                i,
                f"END SOLUTION {task} is not at the indentation of its BEGIN marker "
                f"(line {start + 1}); both markers must be indented alike",
                task,
            )
            continue
        spans.append((task, start, i, indent))
    if open_ is not None:
        fail(open_[1], f"BEGIN SOLUTION {open_[0]} is never closed by '# END SOLUTION {open_[0]}'", open_[0])

    bodies = [range(s + 1, e) for _, s, e, _ in spans]
    fences = [
        Fence(
            task=task,
            begin=start + 1,
            end=stop + 1,
            indent=indent,
            body=tuple(lines[start + 1 : stop]),
            function=_enclosing(lines, start, indent, bodies),
        )
        for task, start, stop, indent in spans
    ]
    return fences, errors


def find_fences(text: str, filename: str = "<string>") -> list[Fence]:
    """All fences of a source text, in file order.

    Raises:
        FenceError: on an unclosed fence, an END without BEGIN, mismatched task ids,
            nested fences, markers at different indentation, or a malformed marker.
    """
    fences, _ = _scan(text, filename, strict=True)
    return fences


def package_fences(package_dir: Path, prefix: str | None = None) -> dict[str, list[Fence]]:
    """Fences of every `.py` file under `package_dir`, keyed by POSIX path.

    Paths are relative to `package_dir`'s parent and start with `prefix` (default: the
    package's name), e.g. "minitorch/autodiff.py". Files without fences are left out.
    Raises `FenceError` for a malformed fence.
    """
    package_dir = Path(package_dir)
    prefix = package_dir.name if prefix is None else prefix
    found: dict[str, list[Fence]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = f"{prefix}/{path.relative_to(package_dir).as_posix()}"
        fences = find_fences(path.read_text(encoding="utf-8"), rel)
        if fences:
            found[rel] = fences
    return found


def stub_line(fence: Fence, title: str | None = None) -> str:
    """The line that replaces a fence body in a release:

    raise NotImplementedError("Task 1.1: Central difference (central_difference) — …")
    """
    what = f"Task {fence.task}: {title}" if title else f"Task {fence.task}"
    message = f"{what} ({fence.function}) — write your code between the markers"
    return f"{fence.indent}raise NotImplementedError({json.dumps(message, ensure_ascii=False)})\n"


def fence_keys(fences: Sequence[Fence]) -> list[tuple[str, str, int]]:
    """(task, function, order within that function) for each fence: how a student's fence
    is matched to the reference's."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for f in fences:
        k = (f.task, f.function)
        seen[k] = seen.get(k, 0) + 1
        keys.append((f.task, f.function, seen[k]))
    return keys


@dataclass(frozen=True)
class StudentBodies:
    """The bodies found in a student's copy of a file, keyed like the reference's fences.

    `bodies[(task, function, n)]` is the n-th (from 1) body of `task` inside `function`;
    `problems` lists what was wrong with the file (damaged markers), for the student.
    """

    bodies: Mapping[tuple[str, str, int], tuple[str, ...]]
    problems: tuple[Problem, ...]
    fences: tuple[Fence, ...] = ()


def student_bodies(text: str, filename: str) -> StudentBodies:
    """Parse a student's file leniently: broken fences are dropped and reported."""
    fences, errors = _scan(text, filename, strict=False)
    problems = [
        Problem(f"{e} — the fence is ignored (graded as not implemented)", e.filename, e.line, e.tasks)
        for e in errors
    ]
    bodies = {k: f.body for k, f in zip(fence_keys(fences), fences)}
    return StudentBodies(bodies=bodies, problems=tuple(problems), fences=tuple(fences))


def is_stub(body: Sequence[str]) -> bool:
    """Whether a fence body holds nothing of the student's: only comments, ``pass``, ``...``
    or one ``raise NotImplementedError…`` (the release's stub). Unparsable code is not a stub."""
    try:
        statements = ast.parse(textwrap.dedent("".join(body))).body
    except (SyntaxError, ValueError):
        return False
    rest = [
        n
        for n in statements
        if not isinstance(n, ast.Pass) and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    if not rest:
        return True
    if len(rest) > 1 or not isinstance(rest[0], ast.Raise):
        return False
    exc = rest[0].exc.func if isinstance(rest[0].exc, ast.Call) else rest[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def render(
    text: str,
    *,
    keep: AbstractSet[str] = frozenset(),
    stub: AbstractSet[str] = frozenset(),
    replace: Mapping[str, Sequence[Sequence[str]]] | None = None,
    from_student: AbstractSet[str] = frozenset(),
    student: StudentBodies | None = None,
    partners: AbstractSet[tuple[str, str]] = frozenset(),
    titles: Mapping[str, str] | Callable[[str], str | None] | None = None,
    filename: str = "<string>",
    leave_out: AbstractSet[tuple[str, str, int]] = frozenset(),
) -> tuple[str, list[Problem]]:
    """Rewrite `text`, choosing each fence's body by its task id; the markers stay.

    Args:
        text: a reference source file.
        keep: task ids whose reference body stays.
        stub: task ids whose body becomes `raise NotImplementedError("Task X.Y: …")`.
        replace: task id → replacement bodies in file order (each a list of lines with
            their line endings); a fence beyond the bodies given becomes a stub.
        from_student: task ids whose bodies come from `student`, the parsed student copy
            of this file, matched by (task, enclosing function, order in that function),
            which survives a student deleting or breaking one fence.
        partners: (task, enclosing function) of `keep` fences that take the student's
            body where the student wrote one (`is_stub` false): fences sharing state with
            a `from_student` fence (`grader.core.shared_state`). Where the student's is
            missing or a stub, the reference stays, silently (that task is not graded).
        titles: task id → title for the stub message (a mapping or a function).
        filename: used in messages.
        leave_out: keys (task, function, order) of student bodies not to use, silently:
            a `from_student` fence gets the stub, a partner the reference
            (`grader.trees.fence_guard` leaves out the bodies that do not compile or escape).

    Returns:
        (new text, problems). A fence of a `replace`/`from_student` task without a body
        becomes a stub and adds a problem ("minitorch/x.py:12: the fence of task 1.1 in f
        is missing …"); student fences that match no reference fence are reported too.

    Raises:
        FenceError: the reference text has malformed fences.
        ValueError: a fence's task id is in none, or several, of keep / stub / replace /
            from_student.
    """
    fences = find_fences(text, filename)
    lines = _split(text)
    problems: list[Problem] = []
    replace = replace or {}
    student_map = student.bodies if student is not None else {}

    def title_of(task: str) -> str | None:
        if titles is None:
            return None
        return titles(task) if callable(titles) else titles.get(task)

    out: list[str] = []
    cursor = 0
    used: set[tuple[str, str, int]] = set()
    order: dict[str, int] = {}
    for fence, key in zip(fences, fence_keys(fences)):
        where = [fence.task in keep, fence.task in stub, fence.task in replace, fence.task in from_student]
        if sum(where) != 1:
            raise ValueError(
                f"{filename}:{fence.begin}: task {fence.task} must be in exactly one of "
                f"keep / stub / replace / from_student (found in {sum(where)})"
            )
        out.extend(lines[cursor : fence.begin])  # up to and including BEGIN
        body: Sequence[str] | None
        if fence.task in keep:
            body = fence.body
            mate = student_map.get(key) if (fence.task, fence.function) in partners else None
            if mate is not None and not is_stub(mate) and key not in leave_out:
                body = mate
        elif fence.task in stub:
            body = None
        elif fence.task in replace:
            n = order.get(fence.task, 0)
            order[fence.task] = n + 1
            bodies = replace[fence.task]
            body = bodies[n] if n < len(bodies) else None
        else:
            body = None if key in leave_out else student_map.get(key)
            used.add(key)
        if body is None and fence.task not in stub and key not in leave_out:
            problems.append(
                Problem(
                    f"{filename}:{fence.begin}: the fence of task {fence.task} in "
                    f"{fence.function} is missing from your file — graded as not implemented",
                    filename,
                    fence.begin,
                    (fence.task,),
                )
            )
        if body is None:
            out.append(stub_line(fence, title_of(fence.task)))
        else:
            body_lines = list(body)
            if body_lines and not body_lines[-1].endswith(("\n", "\r")):
                body_lines[-1] += "\n"
            out.extend(body_lines)
        out.append(lines[fence.end - 1])  # END marker
        cursor = fence.end
    out.extend(lines[cursor:])
    for key in sorted(set(student_map) - used):
        if key[0] in from_student:
            problems.append(
                Problem(
                    f"{filename}: your fence of task {key[0]} in {key[1]} (#{key[2]}) "
                    "matches no fence of the assignment — ignored",
                    filename,
                    None,
                    (key[0],),
                )
            )
    return "".join(out), problems
