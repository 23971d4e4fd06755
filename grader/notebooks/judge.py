"""The verdict on a notebook's test cell, reached in the grader's process on plain data.

    passed, message = judge(plan, reply, namespace)

`grader.notebooks.plans` splits each test cell; the student's kernel (in the jailed child)
answers a cell's request with the values of the names it reads and the results of its
kernel statements, in the wire form that ``_plain`` in `grader.sandbox.child.main` writes:

* ``None``, bools, ints, floats, strs and lists as themselves; exact NumPy arrays (of the
  dtypes `grader.sandbox.child.protocol` allows) as the protocol carries them;
* ``{"__kind__": "tuple", "items": [...]}``, ``{"__kind__": "dict", "items": [[k, v], ...]}``,
  ``{"__kind__": "scalar", "value": 0-d array}`` (a NumPy scalar, e.g. ``np.float64``);
* ``{"__kind__": "opaque", "type": name}`` for everything else (a tensor, a function, a
  subclass of float or str that could lie about its value).

`decode_value` rebuilds them strictly (anything else is a malformed reply), and `judge`
runs the cell — trusted code, the instructor's — with the kernel statements replaced by
their results, in a namespace holding only those values, the builtins and the grader's
own imports of `LIBRARIES`. Whatever the child did, it could only choose values: the cell
passes when it runs to its end, here, as nbgrader decides (all of its points or none).
The cell has no time limit of its own: it is the instructor's code, on at most `MAX_ITEMS`
values, and a student's function never runs here (its calls ran in the kernel).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import warnings
from typing import Any, Iterable, Optional

import numpy as np

from .plans import CellPlan

__all__ = ["MAX_ITEMS", "NotebookError", "Opaque", "decode_value", "judge"]

#: Most values (list items, dict entries; array elements count once each) decoded per cell.
MAX_ITEMS = 2_000_000


class NotebookError(Exception):
    """Something the student's kernel reported, failing the test cell that needed it."""


class Opaque:
    """A kernel value that is not plain data (a tensor, a function, a lying subclass …).

    Only its type's name crossed; it equals nothing but itself and converts to nothing.
    """

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name}: not plain data the grader can read>"


def decode_value(node: Any, budget: Optional[list[int]] = None) -> Any:
    """A kernel value from its wire form (see ``_plain`` in `grader.sandbox.child.main`); strict.

    Raises:
        NotebookError: the value is malformed or too large (a child that lies).
    """
    budget = budget if budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        raise NotebookError("the notebook sent more values than the grader reads")
    t = type(node)
    if node is None or t in (bool, int, float, str):
        return node
    if t is list:
        return [decode_value(v, budget) for v in node]
    if t is np.ndarray:
        budget[0] -= node.size
        return node
    if t is dict:
        kind = node.get("__kind__")
        if kind == "tuple" and set(node) == {"__kind__", "items"} and type(node["items"]) is list:
            return tuple(decode_value(v, budget) for v in node["items"])
        if kind == "dict" and set(node) == {"__kind__", "items"} and type(node["items"]) is list:
            pairs = [decode_value(p, budget) for p in node["items"]]
            if all(type(p) is list and len(p) == 2 for p in pairs):
                try:
                    return {k: v for k, v in pairs}
                except TypeError:
                    pass
        if (
            kind == "scalar"
            and set(node) == {"__kind__", "value"}
            and type(node["value"]) is np.ndarray
            and node["value"].shape == ()
        ):
            return node["value"][()]
        if kind == "opaque" and set(node) == {"__kind__", "type"} and type(node["type"]) is str:
            return Opaque(node["type"][:80])
    raise NotebookError("the notebook sent a malformed value")


def _import(module: str, attribute: str) -> Any:
    mod = importlib.import_module(module)
    return getattr(mod, attribute) if attribute else mod


def _describe(exc: BaseException) -> str:
    if isinstance(exc, NotebookError):
        return str(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def judge(plan: CellPlan, reply: dict, namespace: dict, errors: Iterable[str] = ()) -> tuple[bool, str]:
    """Run one test cell here, on the kernel's `reply` to ``plan.request()``.

    Args:
        reply: ``{"values": {name: wire value}, "kernel": [{"values": {…}} | {"error": str}]}``.
        namespace: the test cells' namespace, shared by the notebook's cells in order (a
            cell may use a helper an earlier test cell defined); updated in place.
        errors: what the student's cells run before this one raised (for the message).

    Returns:
        (passed, message): the cell passes when it runs to the end.
    """
    values, results = reply.get("values"), reply.get("kernel")
    if type(values) is not dict or type(results) is not list:
        return False, "the notebook sent a malformed reply"
    budget = [MAX_ITEMS]
    for name, module, attribute in plan.library:
        namespace[name] = _import(module, attribute)

    def kernel_result(k: int) -> None:
        if k >= len(results):
            failed = next(
                (r["error"] for r in results if type(r) is dict and type(r.get("error")) is str), ""
            )
            raise NotebookError(
                f"an input of the hidden tests could not be built in your notebook: {failed[:300]}"
                if failed
                else "the hidden tests were not run"
            )
        entry, call = results[k], plan.kernel[k].call
        if type(entry) is dict and type(entry.get("error")) is str:
            raise NotebookError(f"calling {call} raised {entry['error'][:400]}")
        if type(entry) is not dict or type(entry.get("values")) is not dict:
            raise NotebookError("the notebook sent a malformed reply")
        for name in plan.kernel[k].returns:
            if name not in entry["values"]:
                raise NotebookError(f"calling {call} did not give a value to {name}")
            namespace[name] = decode_value(entry["values"][name], budget)

    try:
        for name in plan.names:
            if name in values:
                namespace[name] = decode_value(values[name], budget)
            else:
                namespace.pop(name, None)
        namespace["__kernel__"] = kernel_result
        sink = io.StringIO()  # a test cell's prints are not the grader's output
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(plan.program, namespace)
    except Exception as exc:  # noqa: BLE001 - any failure of the cell fails it, with its message
        message = _describe(exc)
        earlier = [e for e in errors if e]
        if earlier:
            message += f" (before this test: {earlier[0][:300]})"
        return False, message
    return True, "passed"
