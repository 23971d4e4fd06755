"""A notebook's test cells, split between the student's kernel and the grader.

    plans = plan_tests(source)      # one CellPlan per autograded test cell, from the source alone
    request = plans[0].request()    # what the kernel is asked before that cell: names, calls
    # the kernel answers with values; grader.notebooks.judge.judge runs the cell on them, here

Why: nbgrader runs a notebook's test cells in the student's kernel, next to code that can
rewrite anything there (the import system, nbgrader, the reply to the grader), so the
verdict is the student's to write, and the hidden tests must be sent into the process the
student controls. Here a test cell runs in the grader's own process, in a namespace that
holds only plain data: the values that the names it reads had in the student's kernel just
before it, sent as numbers, strings, lists, tuples, dicts and exact NumPy arrays over
`grader.sandbox.child.protocol` (no pickle, no objects). Anything else arrives as an `Opaque`
placeholder: a float subclass or a str whose ``__eq__`` always says yes is not a number or
a string here, and equals nothing.

A test that *calls* a function of the notebook (A5: ``hidden_grad_norms(step, xs,
state)``) cannot run outside the kernel. Such a statement — ``names = f(...)`` or a bare
``f(...)`` at the top level of the cell, ``f`` bound by the notebook's own cells (or an
attribute of a module they import, or of an object an earlier such call returned) — is a
*kernel statement*. The kernel runs it, in a copy of its namespace, after the statements
of the cell that build its inputs (those binding a name it reads, or calling a method of
one, e.g. drawing from a random generator), and sends back the values of the names it
binds that the rest of the cell reads. So the kernel sees what a probe shows: the inputs
and the calls (as ``ast.unparse`` writes them: no comments). It never sees an assertion,
an expected value, a tolerance or a message: those statements run here, with each kernel
statement replaced by its results.

What a notebook's author keeps to (`plan_tests` raises NotebookDesignError otherwise, and
the test suite grades every shipped notebook's own solution): a call of a notebook
function sits at the top level of a test cell, alone or assigned to names; the statements
that build its inputs hold no expected value (and use only the notebook's names and the
cell's own, not a helper of an earlier test cell); what the grader's part reads is plain data.
The names asked for are those that the notebook's non-test cells bind (found by AST, also
when a test reads them by string, ``globals()["df_dq"]``); names that they import from
`LIBRARIES` are the grader's own modules, never the kernel's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType
from typing import Any, Optional

__all__ = ["LIBRARIES", "CellPlan", "KernelStatement", "NotebookDesignError", "is_test_cell", "plan_tests"]

#: Modules whose names the grader binds to its own imports (functions of plain data).
LIBRARIES = frozenset(
    {
        "math",
        "cmath",
        "numpy",
        "statistics",
        "fractions",
        "decimal",
        "itertools",
        "functools",
        "operator",
        "collections",
    }
)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class NotebookDesignError(ValueError):
    """A source notebook whose test cells cannot be split (a fault of the kit, not of a student)."""


@dataclass(frozen=True)
class KernelStatement:
    """A statement the kernel runs: a call of a notebook function, or one building its inputs.

    Attributes:
        code: the statement (``ast.unparse``: no comments).
        returns: the names it binds whose values the grader's part reads.
        call: the notebook function it calls, for messages ("" for an input statement).
    """

    code: str
    returns: tuple[str, ...]
    call: str


@dataclass(frozen=True)
class CellPlan:
    """How one autograded test cell is graded.

    Attributes:
        grade_id, points: the cell's nbgrader id and points (from the source).
        names: the kernel's names whose values the grader's part reads.
        kernel: the statements the kernel runs, in order (`KernelStatement`).
        program: the whole cell, compiled, each kernel statement replaced by
            ``__kernel__(i)`` (binding the returned values of ``kernel[i]``).
        library: (name, module, attribute or "") of the notebook's imports from `LIBRARIES`.
    """

    grade_id: str
    points: float
    names: tuple[str, ...]
    kernel: tuple[KernelStatement, ...]
    program: CodeType
    library: tuple[tuple[str, str, str], ...]

    def request(self) -> dict:
        """The part of the kernel's command that concerns this cell (no expected values)."""
        return {"names": list(self.names), "kernel": [[k.code, list(k.returns)] for k in self.kernel]}


# ---------------------------------------------------------------------------- analysis


def _python(code: str) -> str:
    """Cell text as Python: IPython's magics (``%time``, ``!ls``) become calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython comes with nbgrader
        return code
    return TransformerManager().transform_cell(code)


def _bindings(node: ast.AST) -> dict[str, Optional[tuple[str, str]]]:
    """Names a statement binds in its own scope → (module, attribute) for an import, else None."""
    out: dict[str, Optional[tuple[str, str]]] = {}

    def target(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            out[t.id] = None
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = None
            return
        if isinstance(n, ast.Lambda):
            return
        if isinstance(n, ast.Import):
            for a in n.names:
                out[(a.asname or a.name).split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], "")
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                if a.name != "*":
                    out[a.asname or a.name] = ("." * n.level + (n.module or ""), a.name)
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                target(t)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            target(n.target)
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            target(n.optional_vars)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out[n.name] = None
        for c in ast.iter_child_nodes(n):
            visit(c)

    visit(node)
    return out


def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _arguments(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def _free(node: ast.AST, bound: frozenset[str] = frozenset()) -> set[str]:
    """Names `node` reads from the cell's namespace (not those local to a lambda, def or comprehension)."""
    if isinstance(node, ast.Name):
        return {node.id} if not isinstance(node.ctx, ast.Store) and node.id not in bound else set()
    if isinstance(node, ast.Lambda):
        outer = set().union(
            *(_free(d, bound) for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None)
        )
        return outer | _free(node.body, bound | _arguments(node.args))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        outer_parts: list[ast.AST] = list(node.decorator_list)
        if isinstance(node, ast.ClassDef):
            outer_parts += node.bases
            local = frozenset(_stored(node))
        else:
            outer_parts += [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
            local = frozenset(_arguments(node.args) | _stored(node))
        inner = set().union(*(_free(s, bound | local) for s in node.body))
        return set().union(*(_free(d, bound) for d in outer_parts)) | inner
    if isinstance(node, _COMPREHENSIONS):
        local = bound | frozenset(n for g in node.generators for n in _stored(g.target))
        out = _free(node.generators[0].iter, bound)
        for i, g in enumerate(node.generators):
            out |= (_free(g.iter, local) if i else set()) | set().union(*(_free(c, local) for c in g.ifs))
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return out | set().union(*(_free(e, local) for e in elts))
    return set().union(*(_free(c, bound) for c in ast.iter_child_nodes(node)))


def _strings(node: ast.AST) -> set[str]:
    """Identifier-like string constants (``globals()["df_dq"]`` reads df_dq)."""
    return {
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and type(n.value) is str and n.value.isidentifier()
    }


def _root(expr: ast.AST) -> Optional[str]:
    while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _mutated(node: ast.AST) -> set[str]:
    """Names whose object the statement may change: receivers of method calls, roots of
    attribute and item assignments (``rng.normal()``, ``xs.append(…)``, ``a[0] = …``)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            root = _root(n.func.value)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            root = _root(n.value)
        else:
            continue
        if root is not None:
            out.add(root)
    return out


def _kernel_calls(stmt: ast.AST, functions: set[str], objects: set[str]) -> list[str]:
    """The notebook functions `stmt` calls: names in `functions`, attributes of `objects`."""
    calls = []
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Name) and n.func.id in functions:
                calls.append(n.func.id)
            elif isinstance(n.func, ast.Attribute) and _root(n.func) in objects:
                calls.append(ast.unparse(n.func))
    return calls


def _names_only(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_names_only(e) for e in target.elts)
    return isinstance(target, ast.Starred) and _names_only(target.value)


def _kernel_form(stmt: ast.stmt) -> bool:
    """A statement the kernel can run for the grader: ``f(...)`` or ``names = f(...)``."""
    if isinstance(stmt, ast.Expr):
        return True
    if isinstance(stmt, ast.Assign):
        return all(_names_only(t) for t in stmt.targets)
    return (
        isinstance(stmt, (ast.AugAssign, ast.AnnAssign))
        and stmt.value is not None
        and isinstance(stmt.target, ast.Name)
    )


def _meta(cell: Any) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_test_cell(cell: Any) -> bool:
    """An autograded test cell of nbgrader: a graded code cell that is not an answer."""
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def plan_tests(source: Any) -> list[CellPlan]:
    """One `CellPlan` per autograded test cell of the source notebook, in notebook order."""
    bound: dict[str, Optional[tuple[str, str]]] = {}
    other: set[str] = set()
    for cell in source.cells:
        if cell.get("cell_type") != "code" or is_test_cell(cell):
            continue
        if _meta(cell).get("grade"):
            raise NotebookDesignError(
                f"cell {_meta(cell).get('grade_id')}: graded answer cells are not supported"
            )
        try:
            tree = ast.parse(_python(cell.source))
        except SyntaxError as exc:
            raise NotebookDesignError(f"cell {_meta(cell).get('grade_id')} does not parse: {exc}") from None
        for stmt in tree.body:
            for name, spec in _bindings(stmt).items():
                if spec is None or spec[0].split(".")[0] not in LIBRARIES:
                    other.add(name)
                bound.setdefault(name, spec)
    library = {n: spec for n, spec in bound.items() if spec is not None and n not in other}
    kernel_names = set(bound) - set(library)
    modules = {n for n, spec in bound.items() if spec is not None and n in kernel_names}
    lib = tuple(sorted((n, m, a) for n, (m, a) in library.items()))
    return [_plan_cell(cell, kernel_names, modules, lib) for cell in source.cells if is_test_cell(cell)]


def _plan_cell(cell: Any, kernel_names: set[str], modules: set[str], library: tuple) -> CellPlan:
    gid = str(_meta(cell).get("grade_id"))
    try:
        body = ast.parse(cell.source).body
    except SyntaxError as exc:
        raise NotebookDesignError(f"test cell {gid} does not parse: {exc}") from None
    lib_names = {n for n, _, _ in library}
    kernel: dict[int, str] = {}  # statement index → the notebook function it calls
    objects, own = set(modules), set()  # own: names the cell itself binds before a call
    for i, stmt in enumerate(body):
        calls = _kernel_calls(stmt, kernel_names - own, objects - own)
        if not calls:
            own |= set(_bindings(stmt))
            continue
        if not _kernel_form(stmt):
            raise NotebookDesignError(
                f"test cell {gid}, line {stmt.lineno}: {calls[0]}(…) is called inside a "
                f"{type(stmt).__name__.lower()} statement; assign its result to a name first"
            )
        kernel[i] = calls[0]
        objects |= set(_bindings(stmt))
    # The kernel's part: its statements and, walking back, the statements building their inputs.
    needed: set[str] = set()
    sent: set[int] = set()
    for i in reversed(range(len(body))):
        stmt = body[i]
        binds = set(_bindings(stmt))
        if i in kernel or binds & needed or (_mutated(stmt) - lib_names) & needed:
            if isinstance(stmt, ast.Assert):
                raise NotebookDesignError(
                    f"test cell {gid}, line {stmt.lineno}: an assert changes an input of a call of the notebook"
                )
            sent.add(i)
            needed = (needed - binds) | _free(stmt)
    parent = [i for i in range(len(body)) if i not in kernel]
    reads_after = {
        i: set().union(*(_free(body[j]) | _strings(body[j]) for j in parent if j > i)) for i in kernel
    }
    for i, call in kernel.items():
        drawn = (_mutated(body[i]) - lib_names - objects) & reads_after[i]
        if drawn:
            raise NotebookDesignError(
                f"test cell {gid}, line {body[i].lineno}: the call of {call} changes "
                f"{', '.join(sorted(drawn))}, which the cell reads afterwards; build the inputs first"
            )
    order = sorted(sent)
    statements, program = [], []
    for i in order:
        returns = tuple(sorted(set(_bindings(body[i])) & reads_after[i])) if i in kernel else ()
        statements.append(KernelStatement(ast.unparse(body[i]), returns, kernel.get(i, "")))
    for i, stmt in enumerate(body):
        if i in kernel:
            call = ast.Expr(ast.Call(ast.Name("__kernel__", ast.Load()), [ast.Constant(order.index(i))], []))
            stmt = ast.fix_missing_locations(ast.copy_location(call, stmt))
        program.append(stmt)
    reads = set().union(*(_free(body[i]) | _strings(body[i]) for i in parent)) if parent else set()
    return CellPlan(
        gid,
        float(_meta(cell).get("points", 0)),
        tuple(sorted(reads & kernel_names)),
        tuple(statements),
        compile(ast.Module(program, []), f"<test cell {gid}>", "exec"),
        library,
    )
