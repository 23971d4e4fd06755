"""The layout shows the architecture: no module-level import cycle in `grader/` or
`minitorch/`, and no grader module over ~400 lines.

Each module's *top-level* imports (its body, including ``try`` / ``if`` blocks but not
``if TYPE_CHECKING:`` and not function bodies) are read with `ast`; importing ``a.b.c``
also imports the packages ``a.b`` and ``a`` unless they are the importing module's own
ancestors (which are already being imported). A cycle in that graph is a module that can
only be imported in one order — a layer that leans on the layer above it.

    python tests/test_architecture.py          # print the cycles of both packages
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_GRADER_LINES = 420  # "about 400"


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


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports at module level."""
    modules = package_modules(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        targets: set[str] = set()
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
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
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n"
        "def f():\n    from ..a import x\nfrom .. import a\n"
    )
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}  # the lazy and TYPE_CHECKING imports do not count
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


@pytest.mark.grader
def test_grader_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "grader")
    cycles = import_cycles(graph)
    assert not cycles, "\n".join(_describe(graph, c) for c in cycles)


@pytest.mark.grader
def test_minitorch_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "minitorch")
    cycles = import_cycles(graph)
    assert not cycles, "\n".join(_describe(graph, c) for c in cycles)


@pytest.mark.grader
def test_grader_modules_are_small() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in package_modules(ROOT / "grader").items()}
    big = {m: n for m, n in sizes.items() if n > MAX_GRADER_LINES}
    assert not big, f"split these modules (one concept per file): {big}"


if __name__ == "__main__":
    for package in ("grader", "minitorch"):
        g = import_graph(ROOT / package)
        found = import_cycles(g)
        print(f"{package}: {len(g)} modules, {len(found)} cycle(s)")
        for c in found:
            print("  " + _describe(g, c))
