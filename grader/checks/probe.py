"""Building probes, and reading and comparing the answers (parent side only).

A `Probe` is written like straight-line code against ``minitorch``::

    p = Probe("mul(2.0, 3.0)")
    mul = p.get("minitorch.operators.mul")
    p.returns(p.call(mul, 2.0, 3.0))

and serialised to the data program that `grader.child.Executor` runs. The label and the
inputs shown in feedback stay here, in the parent.

Answers come back as tagged trees (see `Executor.encode_value`); `parse_value` turns them
into `TensorVal`, `ArrayVal`, `ObjectVal` … after checking every field, and `diff` compares
an expected value with a got value: type first, then dtype and shape, then the numbers
(a NaN or ±inf where the reference has a finite number is a mismatch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..protocol import ProtocolError

# --------------------------------------------------------------------------- probes


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


# --------------------------------------------------------------------------- answers


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
    return ErrorInfo(type=etype[:100], message=msg[:2000], mro=tuple(m[:100] for m in mro[:16]), traceback=tuple(frames))


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
        _expect(set(node) == {"__kind__", "type", "value"} and type(node["value"]) in (bool, int, float), kind)
        return NpScalar(node["value"], str(node["type"])[:100])
    if kind == "object":
        _expect(set(node) == {"__kind__", "type", "repr"} and type(node["type"]) is str and type(node["repr"]) is str, kind)
        return ObjectVal(node["type"][:200], node["repr"][:300])
    if kind == "bad_tensor":
        _expect(set(node) == {"__kind__", "why"} and type(node["why"]) is str, kind)
        return BadTensor(node["why"][:500])
    raise ProtocolError(f"malformed answer: unknown kind {kind!r}")


# --------------------------------------------------------------------------- comparing


def describe(v: Any) -> str:
    """A short description of a value for feedback."""
    if isinstance(v, TensorVal):
        return f"tensor of shape {v.array.shape}, dtype {v.array.dtype}: {fmt_array(v.array)}"
    if isinstance(v, ArrayVal):
        return f"{v.type} of shape {v.array.shape}: {fmt_array(v.array)}"
    if isinstance(v, NpScalar):
        return f"{v.type}({v.value!r})"
    if isinstance(v, ObjectVal):
        return f"an object of type {v.type}" + (f" ({v.repr})" if v.repr else "")
    if isinstance(v, BadTensor):
        return f"a broken tensor ({v.why})"
    if isinstance(v, float):
        return num_text(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe(x) for x in v[:8]) + (", …" if len(v) > 8 else "")
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def num_text(x: float) -> str:
    """A float in at most 10 significant digits, still looking like a float ("2.0")."""
    text = f"{x:.10g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def kind_name(v: Any) -> str:
    if isinstance(v, TensorVal):
        return "a Tensor"
    if isinstance(v, ArrayVal):
        return f"a {v.type}"
    if isinstance(v, ObjectVal):
        return f"an object of type {v.type}"
    if isinstance(v, BadTensor):
        return "a broken Tensor"
    if isinstance(v, NpScalar):
        return f"a {v.type}"
    return f"a {type(v).__name__}"


def fmt_array(a: np.ndarray) -> str:
    if a.ndim == 0:
        return f"{a.item()!r}"
    return np.array2string(a, precision=6, separator=", ", threshold=40, edgeitems=3).replace("\n", " ")


def is_number(v: Any) -> bool:
    return (type(v) in (int, float, bool)) or (isinstance(v, NpScalar) and type(v.value) in (int, float, bool))


def _num(v: Any) -> float:
    return float(v.value if isinstance(v, NpScalar) else v)


@dataclass(frozen=True)
class Tol:
    """|got − expected| ≤ atol + rtol · |expected| (per element)."""

    rtol: float = 1e-6
    atol: float = 1e-8


F32 = Tol(rtol=1e-4, atol=1e-5)


def diff(expected: Any, got: Any, tol: Tol = Tol(), strict_bool: bool = True) -> Optional[str]:
    """None when `got` matches `expected`, else what differs (for the student)."""
    if isinstance(expected, TensorVal):
        if isinstance(got, BadTensor):
            return f"returned a broken Tensor: {got.why}"
        if not isinstance(got, TensorVal):
            return f"expected a Tensor, got {kind_name(got)}"
        return diff_arrays(expected.array, got.array, tol)
    if isinstance(expected, ArrayVal):
        if not isinstance(got, ArrayVal):
            return f"expected a numpy.ndarray, got {kind_name(got)}"
        if got.type != "numpy.ndarray":
            return f"expected a plain numpy.ndarray, got the subclass {got.type}"
        return diff_arrays(expected.array, got.array, tol)
    if type(expected) is bool and strict_bool:
        if type(got) is not bool:
            return f"expected {expected!r}, got {describe(got)} ({kind_name(got)})"
        return None if got == expected else f"expected {expected!r}, got {got!r}"
    if is_number(expected):
        if not is_number(got):
            return f"expected a number, got {kind_name(got)}"
        return diff_arrays(np.asarray(_num(expected)), np.asarray(_num(got)), tol)
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"expected a sequence of {len(expected)} items, got {kind_name(got)}"
        if len(got) != len(expected):
            return f"expected {len(expected)} items, got {len(got)}: {describe(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            d = diff(e, g, tol, strict_bool)
            if d:
                return f"item {i}: {d}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected a dict, got {kind_name(got)}"
        if set(expected) != set(got):
            return f"expected keys {sorted(expected)}, got {sorted(got)}"
        for k in expected:
            d = diff(expected[k], got[k], tol, strict_bool)
            if d:
                return f"[{k!r}]: {d}"
        return None
    if isinstance(expected, ObjectVal):
        if not isinstance(got, ObjectVal) or got.type != expected.type:
            return f"expected an object of type {expected.type}, got {kind_name(got)}"
        return None
    if expected is None:
        return None if got is None else f"expected None, got {describe(got)}"
    if isinstance(expected, str):
        return None if got == expected else f"expected {expected!r}, got {describe(got)}"
    raise TypeError(f"cannot compare a value of type {type(expected).__name__}")


def diff_arrays(e: np.ndarray, g: np.ndarray, tol: Tol) -> Optional[str]:
    """Compare dtype, then shape, then values (NaN and ±inf must match the reference)."""
    if e.ndim > 0 or g.ndim > 0:
        if g.dtype != e.dtype:
            return f"dtype {g.dtype}, expected {e.dtype}"
        if g.shape != e.shape:
            return f"shape {g.shape}, expected {e.shape}"
    if e.size == 0:
        return None
    if e.dtype.kind in "biu" and g.dtype.kind in "biu":
        bad = e != g
    else:
        ef, gf = e.astype(np.float64), g.astype(np.float64)
        e_nan, g_nan = np.isnan(ef), np.isnan(gf)
        e_inf, g_inf = np.isinf(ef), np.isinf(gf)
        finite = ~(e_nan | e_inf) & ~(g_nan | g_inf)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(gf - ef) <= tol.atol + tol.rtol * np.abs(ef)
        bad = (e_nan != g_nan) | (e_inf & (gf != ef)) | (g_inf & ~e_inf) | (finite & ~close)
    if not np.any(bad):
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    ev, gv = e[idx] if idx else e.reshape(()), g[idx] if idx else g.reshape(())
    where = f" at index {idx}" if idx else ""
    count = int(np.count_nonzero(bad))
    more = f" ({count} of {bad.size} values differ)" if bad.size > 1 else ""
    show = (lambda x: str(int(x))) if e.dtype.kind in "biu" and g.dtype.kind in "biu" else (lambda x: num_text(float(x)))
    return f"value{where}: expected {show(ev)}, got {show(gv)}{more}"
