"""The layout shows the architecture: no import cycle in `grader/` or `minitorch/`, and no
grader module over ~400 lines.

Every import of a module is read with `ast`: its body, ``try`` / ``if`` blocks, function
and method bodies, and ``importlib.import_module("a.b")`` with a literal name — all but
those under ``if TYPE_CHECKING:``. Importing ``a.b.c`` also imports the packages ``a.b``
and ``a`` unless they are the importing module's own ancestors (which are already being
imported). A cycle in that graph is a layer that leans on the layer above it; an import
hidden in a function body is still such a lean. The few that are meant are listed in
`ALLOWED_UPWARD`, each with its reason. (A name computed at run time — the plugin loaders
`fast_paths.load` and `grader.checks._load` — is not seen; each says so where it imports.)

    python tests/grader/test_architecture.py          # print the cycles of both packages
    python tests/grader/test_architecture.py --top    # ... counting module-level imports only
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_GRADER_LINES = 420  # "about 400"

#: Imports that point up on purpose (inside a function, run on first use), and why. The
#: graph drops these edges, and the edges to the packages the target implies.
ALLOWED_UPWARD = {
    (
        "minitorch.tensor",
        "minitorch.nn.softmax",
    ): "Tensor.softmax / log_softmax are the method forms of the functions of task 4.4",
    (
        "minitorch.module",
        "minitorch.tensor",
    ): "Module.to parses torch's arguments as Tensor.to does: a module (A0) holds tensors from A2 on",
    (
        "minitorch.scalar_functions",
        "minitorch.scalar",
    ): "a value type and its operations: Scalar's operators call the functions, whose apply makes a Scalar",
}


def module_name(package_dir: Path, path: Path) -> str:
    rel = path.relative_to(package_dir.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted name → file of every module of the package (no caches)."""
    return {
        module_name(package_dir, p): p
        for p in sorted(package_dir.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(body: list[ast.stmt]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _top_level_imports(node.body)
            found += _top_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            found += _top_level_imports(node.body)
            for handler in node.handlers:
                found += _top_level_imports(handler.body)
            found += _top_level_imports(node.orelse) + _top_level_imports(node.finalbody)
        elif isinstance(node, ast.With):
            found += _top_level_imports(node.body)
    return found


def _import_module_call(node: ast.AST) -> ast.Import | None:
    """``importlib.import_module("a.b")`` (or ``import_module("a.b")``) with a literal name, as
    the ``import a.b`` it performs; None for anything else."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "import_module" or not isinstance(node.args[0].value, str):
        return None
    return ast.Import(names=[ast.alias(name=node.args[0].value)])


def _all_imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every import, function bodies and literal `import_module` calls included, but not
    under ``if TYPE_CHECKING:``."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            found += _all_imports(node.orelse)
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                found += _all_imports([child])
            else:
                found += [call for sub in ast.walk(child) if (call := _import_module_call(sub)) is not None]
    return found


def import_graph(package_dir: Path, lazy: bool = True) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports (with `lazy=False`, at module
    level only)."""
    imports_of = _all_imports if lazy else _top_level_imports
    modules = package_modules(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        targets: set[str] = set()
        for node in imports_of(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                continue
            if node.level:
                base_parts = here.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            targets.update(submodules)  # `from pkg import submodule`
            if len(submodules) < len(node.names):  # names defined by `base` itself
                targets.add(base)
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                mod = ".".join(parts[:i])
                implied = i < len(parts)
                if mod in modules and mod != name and not (implied and mod in ancestors):
                    graph[name].add(mod)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def without_allowed(graph: dict[str, set[str]], allowed: dict[tuple[str, str], str]) -> dict[str, set[str]]:
    """The graph less the allowed upward edges (and the package edges each implies)."""
    out = {m: set(targets) for m, targets in graph.items()}
    for source, target in allowed:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            out.get(source, set()).discard(".".join(parts[:i]))
    return out


def offending_cycles(package_dir: Path) -> list[str]:
    """The import cycles of the package, described, once the allowed edges are dropped."""
    graph = without_allowed(import_graph(package_dir), ALLOWED_UPWARD)
    return [_describe(graph, c) for c in import_cycles(graph)]


def _describe(graph: dict[str, set[str]], cycle: list[str]) -> str:
    members = set(cycle)
    edges = [f"{a} -> {b}" for a in cycle for b in sorted(graph[a] & members)]
    return f"{', '.join(cycle)}: " + "; ".join(edges)


@pytest.mark.grader
def test_the_import_graph_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from . import b\nx = 1\n")
    (pkg / "b.py").write_text("import pkg.sub.c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\nfrom .. import a\n"
    )
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}  # the TYPE_CHECKING import does not count
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


@pytest.mark.grader
@pytest.mark.parametrize(
    "hidden",
    [
        "def f():\n    from . import b\n",
        "class K:\n    def m(self):\n        if True:\n            import pkg.b\n",
        "import importlib\ndef f():\n    return importlib.import_module('pkg.b')\n",
    ],
    ids=["function", "method", "import_module"],
)
def test_a_cycle_through_a_function_level_import_fails(tmp_path: Path, hidden: str) -> None:
    """A planted cycle: b imports a at module level, a imports b only inside a function."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("x = 1\n")
    assert offending_cycles(pkg) == []
    (pkg / "a.py").write_text(hidden)
    assert offending_cycles(pkg) == ["pkg.a, pkg.b: pkg.a -> pkg.b; pkg.b -> pkg.a"]
    assert import_cycles(import_graph(pkg, lazy=False)) == []  # the old rule did not see it


@pytest.mark.grader
def test_every_allowed_upward_import_exists_and_says_why() -> None:
    graph = import_graph(ROOT / "minitorch")
    for (source, target), why in ALLOWED_UPWARD.items():
        assert target in graph[source], f"{source} no longer imports {target}: drop it from ALLOWED_UPWARD"
        assert len(why) > 20


@pytest.mark.grader
def test_grader_has_no_import_cycle() -> None:
    cycles = offending_cycles(ROOT / "grader")
    assert not cycles, "\n".join(cycles)


@pytest.mark.grader
def test_minitorch_has_no_import_cycle() -> None:
    cycles = offending_cycles(ROOT / "minitorch")
    assert not cycles, "\n".join(cycles)


#: The grader's packages, lowest first: a module imports only from its own package and the
#: packages before it (function-level imports included), so each layer can be read, and
#: tested, without those above it.
GRADER_LAYERS = (
    "core",
    "trees",
    "sandbox",
    "checks",
    "notebooks",
    "grading",
    "release",
    "mutation",
    "batch",
    "commands",
)

#: What the code next to student code (`grader/sandbox/child/`) may import besides the standard
#: library and its siblings: the student's `minitorch` (from the child's tree) and the libraries
#: of the student's environment, never the grader.
CHILD_THIRD_PARTY = {"minitorch", "numpy", "numba", "IPython", "traitlets"}


def layer_violations(package_dir: Path, layers: tuple[str, ...]) -> list[str]:
    """Every import of a module of ``package.<layer>`` from a later layer, as "a -> b", and
    every module that sits in no layer."""
    top = package_dir.name
    rank = {f"{top}.{layer}": i for i, layer in enumerate(layers)}

    def layer_of(module: str) -> int | None:
        parts = module.split(".")
        return rank.get(".".join(parts[:2])) if len(parts) > 1 else None

    out = []
    for module, targets in import_graph(package_dir).items():
        mine = layer_of(module)
        if mine is None:
            if module != top:
                out.append(f"{module} is in no layer of {layers}")
            continue
        out += [f"{module} -> {t}" for t in sorted(targets) if (layer_of(t) or -1) > mine]
    return sorted(out)


def child_imports(child_dir: Path) -> list[str]:
    """The imports of `child_dir`'s modules that are neither the standard library, a sibling
    (relative, or the ``_grader_<name>`` copy the parent makes), nor `CHILD_THIRD_PARTY`."""
    siblings = {p.stem for p in child_dir.glob("*.py")}
    out = []
    for path in sorted(child_dir.glob("*.py")):
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.ImportFrom) and node.level:
                reached = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                if node.level > 1 or not set(reached) <= siblings:
                    out.append(f"{path.name}: from {'.' * node.level}{node.module or ''} import ...")
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                first = name.split(".")[0]
                copy = first.startswith("_grader_") and first[len("_grader_") :] in siblings | {"child"}
                if not (first in sys.stdlib_module_names or copy or first in CHILD_THIRD_PARTY):
                    out.append(f"{path.name}: {name}")
    return out


@pytest.mark.grader
def test_grader_packages_import_only_downwards() -> None:
    problems = layer_violations(ROOT / "grader", GRADER_LAYERS)
    assert not problems, (
        "imports against the layer order " + " < ".join(GRADER_LAYERS) + ":\n" + "\n".join(problems)
    )


@pytest.mark.grader
def test_a_layer_importing_upwards_fails(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for layer in ("low", "high"):
        (pkg / layer).mkdir(parents=True)
        (pkg / layer / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "high" / "h.py").write_text("from pkg.low import l\n")
    (pkg / "low" / "l.py").write_text("x = 1\n")
    assert layer_violations(pkg, ("low", "high")) == []
    (pkg / "low" / "l.py").write_text("def f():\n    from ..high import h\n")
    assert layer_violations(pkg, ("low", "high")) == ["pkg.low.l -> pkg.high", "pkg.low.l -> pkg.high.h"]
    (pkg / "loose.py").write_text("")
    assert "pkg.loose is in no layer of ('low', 'high')" in layer_violations(pkg, ("low", "high"))


@pytest.mark.grader
def test_the_child_code_imports_the_standard_library_and_its_siblings_only(tmp_path: Path) -> None:
    child_dir = ROOT / "grader" / "sandbox" / "child"
    assert child_imports(child_dir) == []
    planted = tmp_path / "child"
    planted.mkdir()
    (planted / "main.py").write_text("import json\nfrom . import executor\n")
    (planted / "executor.py").write_text(
        "def f():\n    from grader.core import manifest\n    from ..jail import Jail\n"
    )
    assert child_imports(planted) == ["executor.py: grader.core", "executor.py: from ..jail import ..."]


@pytest.mark.grader
def test_grader_modules_are_small() -> None:
    sizes = {
        m: len(p.read_text(encoding="utf-8").splitlines())
        for m, p in package_modules(ROOT / "grader").items()
    }
    big = {m: n for m, n in sizes.items() if n > MAX_GRADER_LINES}
    assert not big, f"split these modules (one concept per file): {big}"


if __name__ == "__main__":
    for package in ("grader", "minitorch"):
        g = import_graph(ROOT / package, lazy="--top" not in sys.argv)
        found = import_cycles(g)
        left = import_cycles(without_allowed(g, ALLOWED_UPWARD))
        print(f"{package}: {len(g)} modules, {len(found)} cycle(s); {len(left)} without ALLOWED_UPWARD")
        for c in found:
            print("  " + _describe(g, c))
