"""Hidden checks of task 0.3: Modules."""

from __future__ import annotations

from typing import Callable

from ..base import CheckContext, check
from ..compare import Shown
from ..probe import Probe, Ref
from .common import _type_name


TREE = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0], ["b", 3.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]], "children": [["e", {}]]}],
        ["f", {}],
    ],
}
#: "again" registers the module a.c a second time, "tied" the parameter a.w.
SHARED = {
    "params": [["p1", 1.0]],
    "children": [
        ["a", {"params": [["w", 2.0]], "children": [["c", {"params": [["z", 4.0]]}]]}],
        ["d", {"params": [["q", 5.0]]}],
    ],
    "alias": [["again", "a.c"], ["tied", "a.w"]],
}
TREES = {"TREE": TREE, "SHARED": SHARED}
MODULES = {"TREE": ["", "a", "a.c", "d", "d.e", "f"], "SHARED": ["", "a", "a.c", "d"]}
#: named_modules(remove_duplicate=False) lists a.c a second time, as "again".
ALL_MODULES = {"TREE": MODULES["TREE"], "SHARED": MODULES["SHARED"] + ["again"]}
PARAMS = {"TREE": ["p1", "a.w", "a.b", "a.c.z", "d.q"], "SHARED": ["p1", "a.w", "a.c.z", "d.q"]}

Outputs = tuple[list[Ref], list[str]]


def _describe(spec: dict) -> str:
    parts = [f"{n}=Parameter({v})" for n, v in spec.get("params", [])]
    parts += [f"{n}=Module({_describe(c)})" for n, c in spec.get("children", [])]
    parts += [f"{n}=<the same object as {path}>" for n, path in spec.get("alias", [])]
    return "{" + ", ".join(parts) + "}"


def _node(p: Probe, root: Ref, path: str) -> Ref:
    node = root
    for part in filter(None, path.split(".")):
        node = p.attr(node, part)
    return node


def _tree(tree: str, what: str, build: Callable[[Probe, Ref], Outputs]) -> Probe:
    p = Probe(f"{what} on {tree}", {tree: Shown(_describe(TREES[tree]))})
    root = p.module(TREES[tree])
    outs, names = build(p, root)
    return p.returns(*outs, names=names)


def _args(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _named_modules(tree: str, kwargs: dict) -> Probe:
    paths = ALL_MODULES[tree] if kwargs.get("remove_duplicate") is False else MODULES[tree]

    def build(p: Probe, r: Ref) -> Outputs:
        nm = p.list(p.method(r, "named_modules", **kwargs))  # any iterable of pairs will do
        same = p.op("eq", p.project(nm, [1]), p.const([_node(p, r, path) for path in paths]))
        return [p.project(nm, [0]), same], [
            "names",
            f"the modules are the tree's own objects ({', '.join(x or 'root' for x in paths)})",
        ]

    return _tree(tree, f"named_modules({_args(kwargs)})", build)


def _named_parameters(tree: str, kwargs: dict) -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        res = p.method(r, "named_parameters", **kwargs)
        outs = [
            _type_name(p, res),
            p.project(res, ["__class__", "__name__"]),
            p.project(res, [0]),
            p.project(res, [1, "value"]),
        ]
        names = ["type of the result", "type of each item", "names", "values"]
        if not kwargs:
            outs.append(
                p.op("eq", p.project(res, [1]), p.const([_node(p, r, path) for path in PARAMS[tree]]))
            )
            names.append("the parameters are the tree's own Parameter objects")
        return outs, names

    return _tree(tree, f"named_parameters({_args(kwargs)})", build)


def _parameters(tree: str) -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        res = p.method(r, "parameters")
        same = p.op("eq", p.project(res, []), p.const([_node(p, r, path) for path in PARAMS[tree]]))
        return [_type_name(p, res), p.project(res, ["value"]), same], [
            "type of the result",
            "values",
            "the parameters are the tree's own Parameter objects",
        ]

    return _tree(tree, "parameters()", build)


@check("0.3", "named_modules", kind="equivalence")
def named_modules(ctx: CheckContext) -> None:
    """named_modules: the root (named by prefix) and every sub-module by its dotted path, parents first."""
    ctx.equivalent(
        [_named_modules("TREE", kw) for kw in ({}, {"prefix": "net"}, {"remove_duplicate": False})]
    )


@check("0.3", "named_parameters", kind="equivalence")
def named_parameters(ctx: CheckContext) -> None:
    """named_parameters: a list of (dotted name, Parameter) tuples, own parameters first;
    prefix and recurse=False."""
    ctx.equivalent([_named_parameters("TREE", kw) for kw in ({}, {"prefix": "net"}, {"recurse": False})])


@check("0.3", "parameters", kind="equivalence")
def parameters(ctx: CheckContext) -> None:
    """parameters(): the list of the Parameter objects of named_parameters(), in order."""
    ctx.equivalent([_parameters("TREE")])


def _modes(calls: list[tuple[str, str]]) -> Probe:
    shown = "; ".join(f"{path or 'root'}.{call}" for path, call in calls)

    def build(p: Probe, r: Ref) -> Outputs:
        for path, call in calls:
            node = _node(p, r, path)
            if call == "eval()":
                p.method(node, "eval")
            else:
                p.method(node, "train", *([False] if call == "train(False)" else []))
        paths = MODULES["TREE"]
        return [p.attr(_node(p, r, path), "training") for path in paths], [
            f"{path or 'root'}.training" for path in paths
        ]

    return _tree("TREE", f"{shown}, then the training flags", build)


@check("0.3", "train_eval", kind="equivalence")
def train_eval(ctx: CheckContext) -> None:
    """train() / train(False) / eval() set the mode of a module and of every module below
    it, and return the module itself."""
    probes = [
        _modes(calls)
        for calls in (
            [("", "eval()")],
            [("", "train(False)")],
            [("", "eval()"), ("", "train()")],
            [("a", "eval()")],
            [("", "eval()"), ("d", "train()")],
        )
    ]
    probes.append(
        _tree(
            "TREE",
            "net.train() is net, net.eval() is net",
            lambda p, r: (
                [p.op("eq", p.method(r, "train"), r), p.op("eq", p.method(r, "eval"), r)],
                ["net.train() is net", "net.eval() is net"],
            ),
        )
    )
    ctx.equivalent(probes)


@check("0.3", "shared_submodules", kind="equivalence")
def shared_submodules(ctx: CheckContext) -> None:
    """A module or a Parameter registered twice is listed once (under its first name),
    twice with remove_duplicate=False."""
    probes = [_named_modules("SHARED", kw) for kw in ({}, {"remove_duplicate": False})]
    probes += [_named_parameters("SHARED", kw) for kw in ({}, {"remove_duplicate": False})]
    probes.append(_parameters("SHARED"))
    probes.append(_modes_shared())
    ctx.equivalent(probes)


def _modes_shared() -> Probe:
    def build(p: Probe, r: Ref) -> Outputs:
        p.method(r, "eval")
        return [p.attr(_node(p, r, path), "training") for path in MODULES["SHARED"]], [
            f"{x or 'root'}.training" for x in MODULES["SHARED"]
        ]

    return _tree("SHARED", "root.eval(), then the training flags", build)
