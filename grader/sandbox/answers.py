"""Answers from a child, decoded and validated in the parent.

The child (`grader.sandbox.child.executor`) encodes what a probe produced as a tagged tree; after
`grader.sandbox.child.protocol` has decoded the frame, `parse_answer` turns it into an `Answer`: values
(`TensorVal`, `ArrayVal`, `ObjectVal` …, plain numbers, lists) or the student's exception
(`ErrorInfo`), checking every field, so that nothing a child sends can be mistaken for
something else. A malformed answer is a `ProtocolError`.

The sandbox uses `parse_error` for a child that fails to start; the checks use the rest.
This module only parses: it compares nothing and decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .child.protocol import ProtocolError

__all__ = [
    "Answer",
    "ArrayVal",
    "BadTensor",
    "ErrorInfo",
    "NpScalar",
    "ObjectVal",
    "TensorVal",
    "parse_answer",
    "parse_error",
    "parse_value",
]


@dataclass(frozen=True)
class TensorVal:
    """A minitorch Tensor as the child saw it: values read from storage/shape/strides."""

    array: np.ndarray
    requires_grad: bool = False


@dataclass(frozen=True)
class ArrayVal:
    """A NumPy array; `type` is its class ("numpy.ndarray" unless a subclass)."""

    array: np.ndarray
    type: str


@dataclass(frozen=True)
class NpScalar:
    value: Any
    type: str


@dataclass(frozen=True)
class ObjectVal:
    """Anything else: only its type name and a short repr come back."""

    type: str
    repr: str = ""


@dataclass(frozen=True)
class BadTensor:
    """A Tensor whose storage, shape and strides do not describe valid values."""

    why: str


@dataclass(frozen=True)
class ErrorInfo:
    """An exception raised by the student's code."""

    type: str
    message: str
    mro: tuple[str, ...] = ()
    traceback: tuple[dict, ...] = ()

    def is_a(self, name: str) -> bool:
        return name == self.type or name in self.mro

    def format(self) -> str:
        lines = []
        for fr in self.traceback:
            lines.append(f"  {fr['file']}:{fr['line']} in {fr['function']}")
            if fr.get("code"):
                lines.append(f"    {fr['code']}")
        head = f"{self.type}: {self.message}" if self.message else self.type
        return "\n".join(lines + [head]) if lines else head


@dataclass
class Answer:
    """What one program produced: values, or the student's exception."""

    values: Optional[list[Any]] = None
    error: Optional[ErrorInfo] = None


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise ProtocolError(f"malformed answer: {what}")


def parse_error(node: Any) -> ErrorInfo:
    _expect(type(node) is dict, "error is not a table")
    etype, msg = node.get("type"), node.get("message", "")
    _expect(type(etype) is str and type(msg) is str, "error without type/message")
    mro = node.get("mro", [])
    _expect(type(mro) is list and all(type(m) is str for m in mro), "error mro")
    frames = []
    tb = node.get("traceback", [])
    _expect(type(tb) is list, "traceback is not a list")
    for fr in tb[:20]:
        _expect(type(fr) is dict, "traceback frame")
        f = {
            "file": str(fr.get("file", "?"))[:200],
            "line": fr.get("line") if type(fr.get("line")) is int else 0,
            "function": str(fr.get("function", "?"))[:100],
            "code": str(fr.get("code", ""))[:200],
        }
        frames.append(f)
    return ErrorInfo(
        type=etype[:100], message=msg[:2000], mro=tuple(m[:100] for m in mro[:16]), traceback=tuple(frames)
    )


def parse_answer(node: Any) -> Answer:
    """Validate one decoded answer ``{"ok": [...]}`` / ``{"error": {...}}``."""
    _expect(type(node) is dict and len(node) == 1, "answer is not a one-key table")
    if "ok" in node:
        _expect(type(node["ok"]) is list, "values are not a list")
        return Answer(values=[parse_value(v) for v in node["ok"]])
    if "error" in node:
        return Answer(error=parse_error(node["error"]))
    if "probe_error" in node:
        raise ProtocolError(f"the child could not run a probe: {str(node['probe_error'])[:500]}")
    raise ProtocolError("malformed answer")


def parse_value(node: Any, depth: int = 0) -> Any:
    """Turn a tagged tree into values (`TensorVal`, lists, floats …), checking every field."""
    _expect(depth < 40, "value nested too deeply")
    t = type(node)
    if node is None or t in (bool, int, float, str):
        return node
    _expect(t is dict and type(node.get("__kind__")) is str, f"untagged value of type {t.__name__}")
    kind = node["__kind__"]
    if kind in ("list", "tuple"):
        _expect(set(node) == {"__kind__", "items"} and type(node["items"]) is list, kind)
        items = [parse_value(v, depth + 1) for v in node["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        _expect(set(node) == {"__kind__", "items"} and type(node["items"]) is dict, kind)
        return {k: parse_value(v, depth + 1) for k, v in node["items"].items()}
    if kind == "tensor":
        _expect(set(node) == {"__kind__", "array", "requires_grad"}, kind)
        _expect(type(node["array"]) is np.ndarray and type(node["requires_grad"]) is bool, kind)
        return TensorVal(node["array"], node["requires_grad"])
    if kind == "ndarray_value":
        _expect(set(node) == {"__kind__", "array", "type"}, kind)
        _expect(type(node["array"]) is np.ndarray and type(node["type"]) is str, kind)
        return ArrayVal(node["array"], node["type"][:200])
    if kind == "npscalar":
        _expect(
            set(node) == {"__kind__", "type", "value"} and type(node["value"]) in (bool, int, float), kind
        )
        return NpScalar(node["value"], str(node["type"])[:100])
    if kind == "object":
        _expect(
            set(node) == {"__kind__", "type", "repr"}
            and type(node["type"]) is str
            and type(node["repr"]) is str,
            kind,
        )
        return ObjectVal(node["type"][:200], node["repr"][:300])
    if kind == "bad_tensor":
        _expect(set(node) == {"__kind__", "why"} and type(node["why"]) is str, kind)
        return BadTensor(node["why"][:500])
    raise ProtocolError(f"malformed answer: unknown kind {kind!r}")
