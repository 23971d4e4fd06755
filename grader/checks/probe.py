"""Building probes (parent side only).

A `Probe` is written like straight-line code against ``minitorch``::

    p = Probe("mul(2.0, 3.0)")
    mul = p.get("minitorch.operators.mul")
    p.returns(p.call(mul, 2.0, 3.0))

and serialised to the data program that `grader.sandbox.child.executor.Executor` runs, in the child on
the student's code and in the parent on the reference. The label and the inputs shown in
feedback stay here, in the parent: a program names only inputs and calls.

The answers come back through `grader.sandbox.answers` and are compared by `grader.checks.compare`;
their names are re-exported here so that a stage's checks import what they use from one
place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from grader.sandbox.answers import (
    Answer,
    ArrayVal,
    BadTensor,
    ErrorInfo,
    NpScalar,
    ObjectVal,
    TensorVal,
    parse_answer,
    parse_error,
    parse_value,
)
from .compare import F32, Tol, describe, diff, diff_arrays, fmt_array, is_number, kind_name, num_text  # noqa: F401


@dataclass(frozen=True)
class Ref:
    """A register of a probe (the value of one step)."""

    index: int


class Probe:
    """A straight-line program run in the child (and, for the expected values, the parent).

    Args:
        label: how the case is shown to the student, e.g. "mul(2.0, 3.0)".
        inputs: named input values shown with a failure (never sent anywhere).
        expect_error: the reference raises on this probe, and so must the student's code
            (an exception of the same class or a subclass).
        error_match: with expect_error, words the exception's message must hold (a
            regular expression, searched): where the public tests ask for them too.
    """

    def __init__(
        self,
        label: str,
        inputs: Optional[dict[str, Any]] = None,
        expect_error: bool = False,
        error_match: str = "",
    ):
        self.label = label
        self.expect_error = expect_error
        self.error_match = error_match
        self.inputs = dict(inputs or {})
        self.steps: list[list[Any]] = []
        self.outputs: list[int] = []
        self.output_names: list[str] = []
        self._texts: list[str] = []  # each register as an expression, for output names

    def _add(self, op: str, **args: Any) -> Ref:
        self.steps.append([op, {k: _wire(v) for k, v in args.items()}])
        self._texts.append(_short(self._step_text(op, args)))
        return Ref(len(self.steps) - 1)

    def text(self, v: Any) -> str:
        """A register (or a constant) as a short expression: "module.a.training"."""
        if isinstance(v, Ref):
            return self._texts[v.index]
        if isinstance(v, np.ndarray):
            return next((k for k, x in self.inputs.items() if x is v), f"array{v.shape}")
        if isinstance(v, (list, tuple)):  # long lists are cut: a name, not a dump
            inner = ", ".join(self.text(x) for x in v[:4]) + (", …" if len(v) > 4 else "")
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        return _short(repr(v), 20)

    def _step_text(self, op: str, a: dict[str, Any]) -> str:
        def args() -> str:
            return ", ".join(
                [self.text(x) for x in a.get("args", [])]
                + [f"{k}={self.text(x)}" for k, x in a.get("kwargs", {}).items()]
            )

        if op == "get":
            return a["path"].removeprefix("minitorch.")
        if op == "call":
            return f"{self.text(a['fn'])}({args()})"
        if op == "method":
            return f"{self.text(a['obj'])}.{a['name']}({args()})"
        if op in ("attr", "setattr"):
            return f"{self.text(a['obj'])}.{a['name']}"
        if op == "op":
            xs = [self.text(x) for x in a["args"]]
            if a["name"] == "getitem" and len(xs) == 2:
                return f"{xs[0]}[{xs[1]}]"
            sym = _OPS.get(a["name"])
            return f"({f' {sym} '.join(xs)})" if sym and len(xs) == 2 else f"{a['name']}({', '.join(xs)})"
        if op == "tensor":
            return self.text(a["array"])
        if op == "project":
            path = "".join(f".{x}" if isinstance(x, str) else f"[{x}]" for x in a["path"])
            return f"[item{path} for item in {self.text(a['obj'])}]"
        if op in ("list", "repeat"):
            return f"{op}({self.text(a.get('obj', a.get('fn')))})"
        if op == "module":
            return "root"  # the root of a module tree (the checks' labels call it so)
        if op in ("random", "full"):
            return f"{op}({a['size']})"
        if op == "digest":
            return f"sha256({self.text(a['obj'])})"
        return self.text(a["value"]) if op == "const" else op

    def get(self, path: str) -> Ref:
        """A minitorch object by dotted path, e.g. "minitorch.operators.mul"."""
        return self._add("get", path=path)

    def const(self, value: Any) -> Ref:
        return self._add("const", value=value)

    def call(self, fn: Ref | str, *args: Any, **kwargs: Any) -> Ref:
        if isinstance(fn, str):
            fn = self.get(fn)
        return self._add("call", fn=fn, args=list(args), kwargs=kwargs)

    def method(self, obj: Ref, name: str, *args: Any, **kwargs: Any) -> Ref:
        return self._add("method", obj=obj, name=name, args=list(args), kwargs=kwargs)

    def attr(self, obj: Ref, name: str) -> Ref:
        return self._add("attr", obj=obj, name=name)

    def setattr(self, obj: Ref, name: str, value: Any) -> Ref:
        return self._add("setattr", obj=obj, name=name, value=value)

    def op(self, name: str, *args: Any) -> Ref:
        """Python operator by `operator` module name: op("add", x, y) is x + y."""
        return self._add("op", name=name, args=list(args))

    def tensor(
        self,
        array: np.ndarray,
        order: Optional[Sequence[int]] = None,
        requires_grad: bool = False,
        backend: Optional[str] = "simple",
    ) -> Ref:
        """A tensor with `array`'s values; `order` stores it in memory permuted (strided)."""
        return self._add(
            "tensor",
            array=np.asarray(array),
            order=None if order is None else [int(o) for o in order],
            requires_grad=requires_grad,
            backend=backend,
        )

    def list(self, obj: Ref) -> Ref:
        return self._add("list", obj=obj)

    def project(self, obj: Ref, path: Sequence[Any]) -> Ref:
        """[item[path…] for item in obj]: ints index, strings read attributes."""
        return self._add("project", obj=obj, path=list(path))

    def repeat(self, n: int, fn: Ref, *args: Any) -> Ref:
        return self._add("repeat", n=int(n), fn=fn, args=list(args), kwargs={})

    def module(self, spec: dict) -> Ref:
        return self._add("module", spec=spec)

    def random(self, seed: int, size: int) -> Ref:
        """A float64 storage of `size` values uniform in [0, 1), drawn where the probe runs
        from a generator seeded with `seed` (the same values on both sides; nothing sent)."""
        return self._add("random", seed=int(seed), size=int(size))

    def full(self, size: int, fill: float = 0.0) -> Ref:
        """A new float64 storage of `size` values, all `fill`, made where the probe runs."""
        return self._add("full", size=int(size), fill=float(fill))

    def digest(self, obj: Ref) -> Ref:
        """The SHA-256 (hex) of an array's float64 values, computed where the probe runs."""
        return self._add("digest", obj=obj)

    def prange_trace(self, kernel: Ref, out: int, *args: Any) -> Ref:
        """The cells of argument `out` that two iterations of the kernel's outermost
        ``prange`` touch (one writing): its data races (`grader.sandbox.child.prange_trace`)."""
        return self._add("prange_trace", kernel=kernel, out=out, args=list(args))

    def returns(self, *refs: Ref, names: Optional[Sequence[str]] = None) -> "Probe":
        """The registers the probe answers with. Feedback names them by `names`, or else by
        the expressions that computed them ("module.a.training"), never "output 1"."""
        self.outputs = [r.index for r in refs]
        if names:
            self.output_names = list(names)
        elif len(refs) > 1:
            texts = [self.text(r) for r in refs]
            unique = len(set(texts)) == len(texts)
            self.output_names = (
                texts
                if unique
                else [f"{t} (returned value {i + 1} of {len(refs)})" for i, t in enumerate(texts)]
            )
        else:
            self.output_names = ["output"]
        return self

    def program(self) -> dict:
        return {"steps": self.steps, "returns": self.outputs}


#: `operator` names shown as Python operators in output names.
_OPS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "matmul": "@",
    "pow": "**",
    "lt": "<",
    "gt": ">",
    "eq": "==",
    "ne": "!=",
    "le": "<=",
    "ge": ">=",
}


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _wire(v: Any) -> Any:
    if isinstance(v, Ref):
        return {"$": v.index}
    if isinstance(v, tuple):
        return {"$tuple": [_wire(x) for x in v]}
    if isinstance(v, list):
        return [_wire(x) for x in v]
    if isinstance(v, dict):
        return {k: _wire(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v
