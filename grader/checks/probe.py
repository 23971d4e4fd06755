"""Building probes (parent side only).

A `Probe` is written like straight-line code against ``minitorch``::

    p = Probe("mul(2.0, 3.0)")
    mul = p.get("minitorch.operators.mul")
    p.returns(p.call(mul, 2.0, 3.0))

and serialised to the data program that `grader.executor.Executor` runs, in the child on
the student's code and in the parent on the reference. The label and the inputs shown in
feedback stay here, in the parent: a program names only inputs and calls.

The answers come back through `grader.answers` and are compared by `grader.checks.compare`;
their names are re-exported here so that a stage's checks import what they use from one
place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..answers import (  # noqa: F401 - re-exported for the stage modules
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
    """

    def __init__(self, label: str, inputs: Optional[dict[str, Any]] = None, expect_error: bool = False):
        self.label = label
        self.expect_error = expect_error
        self.inputs = dict(inputs or {})
        self.steps: list[list[Any]] = []
        self.outputs: list[int] = []
        self.output_names: list[str] = []

    def _add(self, op: str, **args: Any) -> Ref:
        self.steps.append([op, {k: _wire(v) for k, v in args.items()}])
        return Ref(len(self.steps) - 1)

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

    def returns(self, *refs: Ref, names: Optional[Sequence[str]] = None) -> "Probe":
        self.outputs = [r.index for r in refs]
        self.output_names = list(names) if names else [f"output {i}" for i in range(len(refs))] if len(refs) > 1 else ["output"]
        return self

    def program(self) -> dict:
        return {"steps": self.steps, "returns": self.outputs}


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
