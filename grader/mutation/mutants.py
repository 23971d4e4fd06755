"""Mutants of the fenced regions: small wrong versions of the reference a grader must catch.

    mutants = generate("a1")              # every mutant of every fence of stage A1

A mutant is the reference file with one change strictly inside one task's fence (the rest
of the file is byte-identical, the markers stay). `grader.mutation.analysis` grades each one and
checks that the task's hidden checks notice it (see there); a stage's `mutants.toml` adds real
students' mistakes as mutants and names the equivalent ones (`grader.mutation.catalogue`).

Node operators come from mutmut (`mutmut.mutation.mutators.mutation_operators`, pinned:
an internal module), applied to one libcst node at a time; we use

* ``number``: a numeric literal + 1 · ``name``: True ↔ False · ``assignment``: ``a = b``
  → ``a = None`` · ``augmented_assignment``: ``a += b`` → ``a = b`` · ``remove_unary_ops``:
  ``not x`` → ``x`` · ``arg_removal``: one call argument → None, or dropped ·
  ``keywords``: is ↔ is not, in ↔ not in, break → return, continue → break ·
  ``swap_op``: + ↔ −, * ↔ /, < ↔ <=, == ↔ !=, and ↔ or … · ``lambda``: body → None ·
  ``if_exp``: a conditional expression forced down one branch · ``match``: a case dropped.

We skip mutmut's string operators (``operator_string``, the string-method swaps and
``dict(a=…)`` keyword renames): inside our fences strings are error messages and
f-string labels, so those mutants only measure whether a check reads a message.

Statement-level operators of our own (mutmut has none):

* ``delete_statement``: one statement of the fence (at any depth) becomes ``pass``;
* ``noop_body``: the whole fence becomes ``pass`` (the function returns None);
* ``early_return``: ``return E`` copied before the loop/branch that precedes it, or
  before the statement just before it (skipping work), where E's names are bound there;
* ``number_minus_one``: a numeric literal − 1 (mutmut only adds 1);
* ``return_type``: ``return E`` → ``bool(E)`` / ``int(E)`` in a function annotated
  ``-> float``, ``iter(E)`` / ``tuple(E)`` for ``-> list[…]``, ``float(E)`` for ``-> Scalar``.

Mutants that do not compile, or whose fences are not intact, are dropped; mutants that
give the same file text are kept once. Each has a stable id ``task:function:operator:hash``
(the hash of the mutated fence bodies), so `mutants.toml` can name equivalent ones.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.mutators import mutation_operators

from grader.release.examples import splice, stage_files
from grader.core.fences import Fence, find_fences
from grader.core.manifest import load_manifest, repo_root

__all__ = ["OPERATORS", "Mutant", "file_mutants", "generate"]

#: mutmut's operators we apply (see the module docstring for those we skip).
MUTMUT_OPERATORS = (
    "number",
    "name",
    "assignment",
    "augmented_assignment",
    "remove_unary_ops",
    "arg_removal",
    "keywords",
    "swap_op",
    "lambda",
    "if_exp",
    "match",
)
#: Every operator name a generated mutant can carry (+ "mistake" for the catalogue).
OPERATORS = MUTMUT_OPERATORS + (
    "delete_statement",
    "noop_body",
    "early_return",
    "number_minus_one",
    "return_type",
)

_RETURN_TYPES = {"float": ("bool", "int"), "list": ("iter", "tuple"), "Scalar": ("float",)}


@dataclass(frozen=True)
class Mutant:
    """One wrong version of one file of the reference.

    Attributes:
        id: ``task:function:operator:hash`` (stable while the reference fence is unchanged).
        task, function: the fence the change lies in.
        file: ``minitorch/…``; `text` is that file, mutated.
        operator: what made it (one of `OPERATORS`, or "mistake" for a catalogue entry).
        line: the first changed line; description: ``file:line function: `old` → `new```.
        why: for a catalogue mistake, the students' mistake it reproduces.
    """

    id: str
    task: str
    function: str
    file: str
    operator: str
    line: int
    description: str
    text: str = field(repr=False)
    why: str = ""


# ---------------------------------------------------------------------------- generation


def generate(stage: str, tasks: Optional[Sequence[str]] = None) -> list[Mutant]:
    """Every mutant of the fences of `stage`'s tasks (or of `tasks`), in file order."""
    wanted = {t.id for t in load_manifest(stage).tasks if tasks is None or t.id in tasks}
    out: list[Mutant] = []
    for rel in stage_files(stage):
        text = (repo_root() / rel).read_text(encoding="utf-8")
        out.extend(file_mutants(text, rel, frozenset(wanted)))
    return out


@lru_cache(maxsize=32)
def file_mutants(text: str, rel: str, tasks: frozenset[str]) -> tuple[Mutant, ...]:
    """The mutants of the fences of `tasks` in one file (`rel` names it in ids and messages)."""
    every = find_fences(text, rel)
    fences = [f for f in every if f.task in tasks]
    if not fences:
        return ()
    seen: set[str] = {text}
    out: list[Mutant] = []
    for operator, mutated in _candidates(text, fences):
        if mutated in seen:
            continue
        seen.add(mutated)
        mutant = _finish(text, mutated, rel, operator, before=every)
        if mutant is not None:
            out.append(mutant)
    return tuple(out)


def _candidates(text: str, fences: Sequence[Fence]) -> Iterator[tuple[str, str]]:
    """(operator, mutated text) pairs; validity is checked later by `_finish`."""
    for key in dict.fromkeys((f.task, f.function) for f in fences):
        yield "noop_body", splice(text, key[0], key[1], "pass")
    wrapper = MetadataWrapper(cst.parse_module(text))
    collector = _Collector(fences)
    wrapper.visit(collector)
    render = _Renderer(wrapper.module, text)
    for node, func, unit in collector.nodes:
        for kind, op in mutation_operators:
            name = op.__name__.removeprefix("operator_")
            if name in MUTMUT_OPERATORS and isinstance(node, kind):
                for new in op(node):
                    yield name, render(unit, node, new)
        if isinstance(node, (cst.Integer, cst.Float)):
            yield "number_minus_one", render(unit, node, _minus_one(node))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and not _is_pass(node):
            yield (
                "delete_statement",
                render(unit, node, cst.SimpleStatementLine([cst.Pass()], leading_lines=node.leading_lines)),
            )
        if isinstance(node, cst.Return) and node.value is not None and func is not None:
            for wrap in _RETURN_TYPES.get(_return_kind(render.module, func), ()):
                call = cst.Call(cst.Name(wrap), [cst.Arg(node.value)])
                yield "return_type", render(unit, node, node.with_changes(value=call))
    for block, inside, unit in collector.blocks:
        for new_block in _early_returns(render.module, block, inside):
            yield "early_return", render(unit, block, new_block)


#: The outermost function around a node, with the indentation of the blocks around it.
_Unit = tuple[cst.FunctionDef, tuple[Optional[str], ...]]


class _Renderer:
    """The file's text with one node replaced. Only the outermost function holding it is
    re-rendered and put back in place of its original text (rendering a whole module for
    each of hundreds of mutants is slow); the whole module when that text is not unique."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self.module, self.text = module, text
        self.spans: dict[int, Optional[tuple[int, int]]] = {}

    def _code(self, func: cst.CSTNode, indents: tuple[Optional[str], ...]) -> str:
        for indent in reversed(indents):  # nest it in `class _:` blocks to indent it
            func = cst.ClassDef(cst.Name("_"), cst.IndentedBlock([func], indent=indent))
        return self.module.code_for_node(func).split("\n", len(indents))[-1]

    def __call__(self, unit: _Unit, old: cst.CSTNode, new: cst.CSTNode) -> str:
        func, indents = unit
        if id(func) not in self.spans:
            code = self._code(func, indents)
            start = self.text.find(code)
            unique = start >= 0 and self.text.find(code, start + 1) < 0
            self.spans[id(func)] = (start, start + len(code)) if unique else None
        span = self.spans[id(func)]
        if span is None:
            return self.module.deep_replace(old, new).code
        return self.text[: span[0]] + self._code(func.deep_replace(old, new), indents) + self.text[span[1] :]


class _Collector(cst.CSTVisitor):
    """Nodes strictly inside a fence (with their innermost function and their `_Unit`),
    and the blocks holding at least two fenced statements."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fences: Sequence[Fence]) -> None:
        super().__init__()
        self.fences = fences
        self.functions: list[cst.FunctionDef] = []
        self.indents: list[Optional[str]] = []
        self.unit: Optional[_Unit] = None
        self.nodes: list[tuple[cst.CSTNode, Optional[cst.FunctionDef], _Unit]] = []
        self.blocks: list[tuple[cst.IndentedBlock, list[bool], _Unit]] = []

    def _inside(self, node: cst.CSTNode) -> bool:
        pos = self.get_metadata(PositionProvider, node, None)
        return pos is not None and any(f.begin < pos.start.line and pos.end.line < f.end for f in self.fences)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef) and not self.functions:
            self.unit = (node, tuple(self.indents))
        if self.unit is not None and self._inside(node):
            self.nodes.append((node, self.functions[-1] if self.functions else None, self.unit))
        if isinstance(node, cst.IndentedBlock):
            inside = [self._inside(s) for s in node.body]
            if sum(inside) >= 2 and self.unit is not None:
                self.blocks.append((node, inside, self.unit))
            self.indents.append(node.indent)
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()
        if isinstance(original_node, cst.IndentedBlock):
            self.indents.pop()


def _is_pass(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in node.body)


def _minus_one(node: cst.Integer | cst.Float) -> cst.BaseExpression:
    value = node.evaluated_value - 1
    literal = (cst.Integer if isinstance(node, cst.Integer) else cst.Float)(repr(abs(value)))
    return cst.UnaryOperation(cst.Minus(), literal) if value < 0 else literal


def _return_kind(module: cst.Module, func: cst.FunctionDef) -> str:
    """ "float", "list", "Scalar" … from the function's return annotation ("" if none)."""
    if func.returns is None:
        return ""
    code = module.code_for_node(func.returns.annotation).strip("\"' ")
    return code.split("[", 1)[0]


def _early_returns(
    module: cst.Module, block: cst.IndentedBlock, inside: list[bool]
) -> Iterator[cst.IndentedBlock]:
    """Copies of `block` with a fenced ``return E`` also placed before the loop or branch
    preceding it, and before the statement just before it, when E's local names are bound
    at that point."""
    body = list(block.body)
    try:
        stores = [_stores(textwrap.dedent(module.code_for_node(s))) for s in body]
    except SyntaxError:  # a statement that does not parse alone (odd indentation): skip the block
        return
    local = set().union(*(names for names, ok in zip(stores, inside) if ok))
    for r, stmt in enumerate(body):
        if not (
            inside[r] and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return)
        ):
            continue
        ret = stmt.body[0]
        if ret.value is None:
            continue
        needed = _loads(module.code_for_node(ret.value)) & local
        points = {i for i in range(r) if inside[i] and isinstance(body[i], cst.BaseCompoundStatement)}
        points |= {r - 1} if r >= 1 and inside[r - 1] else set()
        for i in sorted(points):
            bound = set().union(*stores[:i])
            if needed <= bound:
                early = cst.SimpleStatementLine([ret], leading_lines=body[i].leading_lines)
                yield block.with_changes(
                    body=[*body[:i], early, body[i].with_changes(leading_lines=()), *body[i + 1 :]]
                )


def _stores(code: str) -> set[str]:
    """Names a statement binds in its own scope (not inside nested defs or comprehensions)."""
    out: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                out.add(child.id)
            elif not isinstance(
                child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
            ):
                walk(child)

    walk(ast.parse(code))
    return out


def _loads(code: str) -> set[str]:
    """Free names an expression reads (minus its own comprehension and lambda variables)."""
    tree = ast.parse(code.strip(), mode="eval")
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in n.args.args}
    return names - own


def _finish(
    text: str, mutated: str, rel: str, operator: str, why: str = "", before: Optional[list[Fence]] = None
) -> Optional[Mutant]:
    """The `Mutant`, or None when `mutated` does not compile or its fences are not intact
    (`before`: the fences of `text`, when the caller has them)."""
    try:
        compile(mutated, rel, "exec")
        before, after = before or find_fences(text, rel), find_fences(mutated, rel)
    except (SyntaxError, ValueError):
        return None
    if [(f.task, f.function) for f in before] != [(f.task, f.function) for f in after] or _outside(
        text, before
    ) != _outside(mutated, after):
        return None
    changed = [(b, a) for b, a in zip(before, after) if b.body != a.body]
    if not changed:
        return None
    task, function = changed[0][0].task, changed[0][0].function
    bodies = "".join(line for f in after if (f.task, f.function) == (task, function) for line in f.body)
    digest = hashlib.sha1(bodies.encode("utf-8")).hexdigest()[:8]
    line, old, new = _diff(text, mutated)
    where = f"{rel}:{line} {function}"
    if why:
        description = f"{where}: {why}"
    elif old:
        description = f"{where}: `{old}` → `{new}`"
    else:  # an insertion
        description = f"{where}: `{new}` inserted before `{text.splitlines()[line - 1].strip()}`"
    return Mutant(
        f"{task}:{function}:{operator}:{digest}",
        task,
        function,
        rel,
        operator,
        line,
        description,
        mutated,
        why,
    )


def _outside(text: str, fences: Sequence[Fence]) -> list[str]:
    """The lines of `text` outside fence bodies (markers included)."""
    lines = text.splitlines(keepends=True)
    body = {i for f in fences for i in range(f.begin, f.end - 1)}  # 0-based body indices
    return [line for i, line in enumerate(lines) if i not in body]


def _diff(old_text: str, new_text: str) -> tuple[int, str, str]:
    """(first changed line, the changed old lines, the changed new lines), each shortened."""
    old, new = old_text.splitlines(), new_text.splitlines()
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1

    def short(lines: list[str]) -> str:
        joined = " ⏎ ".join(line.strip() for line in lines)
        return joined if len(joined) <= 90 else joined[:87] + "…"

    return start + 1, short(old[start : len(old) - end]), short(new[start : len(new) - end])
