"""The probe interpreter: runs probe programs against one ``minitorch`` package.

A probe is a small program of data, not code::

    {"steps": [["get", {"path": "minitorch.operators.mul"}],
               ["call", {"fn": {"$": 0}, "args": [2.0, 3.0]}]],
     "returns": [1]}

Each step's value lands in a register (its index); arguments refer to registers with
``{"$": i}``. The answer carries the values of the ``returns`` registers, encoded by
`Executor.encode_value` (tensors become arrays read straight from storage, shape and
strides; anything unexpected becomes a tagged description), or the student's exception
with the traceback lines that lie in the child tree.

The same class runs in two places: in the sandboxed child over the student's tree (this
file is copied next to `grader/sandbox/child/main.py` as ``_grader_executor.py``), and in the parent
over the reference (`grader.checks.reference`), so that both compute from the very same
programs. It therefore imports nothing of the grader but `grader.sandbox.child.prange_trace` (copied
next to it as ``_grader_prange_trace.py``), NumPy only lazily, and never sees an expected
value, a tolerance or a verdict: it computes and describes, nothing else.
"""

from __future__ import annotations

import importlib
import operator
import os
import sys
import traceback
from typing import Any

try:  # in the grader package; in the child, the copy the parent put next to this file
    from .prange_trace import prange_trace
except ImportError:
    from _grader_prange_trace import prange_trace  # type: ignore[no-redef]

__all__ = ["Executor", "ProbeError", "safe_str", "MAX_MESSAGE"]

#: Operators a probe may apply with the ``op`` step (Python's ``operator`` module names).
OPERATORS = {
    "add",
    "sub",
    "mul",
    "truediv",
    "matmul",
    "pow",
    "neg",
    "lt",
    "gt",
    "le",
    "ge",
    "eq",
    "ne",
    "getitem",
}
MAX_REPR = 200
MAX_MESSAGE = 2000
MAX_FRAMES = 12


class ProbeError(Exception):
    """A malformed probe (a grader bug, reported as a grading error)."""


def _short_type(obj: Any) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def safe_str(fn: Any, obj: Any, limit: int) -> str:
    try:
        text = fn(obj)
        if type(text) is not str:
            return "<unprintable>"
    except BaseException:  # noqa: BLE001 - student objects may raise anything
        return "<unprintable>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Executor:
    """Runs probe programs against one ``minitorch`` package (the child's or the reference).

    Args:
        root: the imported ``minitorch`` package to run against.
        tree: the directory the package lives in; traceback frames outside it are dropped.
        backend_map: backend names to substitute (the parent computes expected values of
            fast / CUDA probes on the simple backend: the same numbers, no compilation).
        aliases: object paths (or path prefixes) to substitute, e.g. a fast kernel by the
            simple kernel of the same signature.
    """

    def __init__(
        self,
        root: Any,
        tree: str | None = None,
        backend_map: dict[str, str] | None = None,
        aliases: dict[str, str] | None = None,
    ):
        self.root = root
        self.tree = os.path.realpath(tree) if tree else None
        self.backend_map = backend_map or {}
        self.aliases = aliases or {}

    # ---------------------------------------------------------------- programs

    def run(self, program: dict) -> dict:
        """Run one program: ``{"ok": [values]}`` or ``{"error": {...}}``."""
        regs: list[Any] = []
        try:
            steps = program["steps"]
            returns = program["returns"]
        except (KeyError, TypeError):
            raise ProbeError("a probe needs 'steps' and 'returns'") from None
        try:
            for op, args in steps:
                regs.append(self._step(op, args, regs))
            return {"ok": [self.encode_value(regs[i]) for i in returns]}
        except ProbeError:
            raise
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the student's exception (even SystemExit) is the answer
            return {"error": self.describe_error(exc)}

    def _step(self, op: str, a: dict, regs: list) -> Any:
        val = lambda v: self._resolve(v, regs)  # noqa: E731
        if op == "get":
            return self._get(a["path"])
        if op == "const":
            return val(a["value"])
        if op == "call":
            return val(a["fn"])(*val(a.get("args", [])), **val(a.get("kwargs", {})))
        if op == "method":
            return getattr(val(a["obj"]), a["name"])(*val(a.get("args", [])), **val(a.get("kwargs", {})))
        if op == "attr":
            return getattr(val(a["obj"]), a["name"])
        if op == "setattr":
            setattr(val(a["obj"]), a["name"], val(a["value"]))
            return None
        if op == "op":
            name = a["name"]
            if name not in OPERATORS:
                raise ProbeError(f"operator {name!r} is not allowed")
            return getattr(operator, name)(*val(a["args"]))
        if op == "tensor":
            return self._tensor(
                val(a["array"]), a.get("order"), a.get("requires_grad", False), a.get("backend")
            )
        if op == "list":
            return list(val(a["obj"]))
        if op == "project":
            return [self._follow(item, a["path"]) for item in val(a["obj"])]
        if op == "repeat":
            fn, args, kwargs = val(a["fn"]), val(a.get("args", [])), val(a.get("kwargs", {}))
            out = None
            for _ in range(int(a["n"])):
                out = fn(*args, **kwargs)
            return out
        if op == "module":
            return self._module(a["spec"])
        if op in ("random", "full"):
            return self._array(op, a)
        if op == "digest":
            return self._digest(val(a["obj"]))
        if op == "prange_trace":
            return prange_trace(val(a["kernel"]), int(a["out"]), val(a["args"]))
        raise ProbeError(f"unknown probe step {op!r}")

    @staticmethod
    def _array(op: str, a: dict) -> Any:
        """A new float64 storage of ``a["size"]`` values made here, not sent: ``random``
        draws them uniformly from [-1, 1) with NumPy's default generator seeded by
        ``a["seed"]`` (the parent draws the seed, so both sides build the same values and
        nothing can know them before the probe arrives); ``full`` fills them with
        ``a["fill"]``. Performance checks build a fresh input and output for every timed
        call this way without moving megabytes through the channel."""
        import numpy as np

        size = int(a["size"])
        if size < 0 or size > 1 << 27:
            raise ProbeError(f"an array of {size} values is out of range")
        if op == "random":
            return np.random.default_rng(int(a["seed"])).random(size)
        return np.full(size, float(a["fill"]))

    @staticmethod
    def _digest(array: Any) -> str:
        """SHA-256 of an array's float64 values (C order), in hex: a performance check
        compares the outputs of kernels that must agree to the bit (an elementwise ``neg``
        or ``mul``) without moving them through the channel. No shortcut gives the digest
        of the right values without computing them, unlike a sum or a random projection."""
        import hashlib

        import numpy as np

        if not isinstance(array, np.ndarray):
            raise TypeError(f"a digest needs an ndarray, not {_short_type(array)}")
        return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float64).data).hexdigest()

    def _resolve(self, v: Any, regs: list) -> Any:
        t = type(v)
        if t is list:
            return [self._resolve(x, regs) for x in v]
        if t is dict:
            if "$" in v:
                return regs[v["$"]]
            if "$tuple" in v:
                return tuple(self._resolve(x, regs) for x in v["$tuple"])
            return {k: self._resolve(x, regs) for k, x in v.items()}
        return v

    @staticmethod
    def _follow(item: Any, path: list) -> Any:
        for key in path:
            item = item[key] if type(key) is int else getattr(item, key)
        return item

    def _get(self, path: str) -> Any:
        """Resolve "minitorch.a.b.c": the longest prefix that is a module, then attributes
        (so "minitorch.tensor.reduce_to_shape" finds the module, not the function
        ``minitorch.tensor``)."""
        for src, dst in self.aliases.items():
            if path == src or path.startswith(src + "."):
                path = dst + path[len(src) :]
                break
        parts = path.split(".")
        if parts[0] != "minitorch":
            raise ProbeError(f"probes may only name minitorch objects, not {path!r}")
        base = self.root.__name__
        obj, used = self.root, 1
        for i in range(len(parts), 1, -1):
            name = ".".join([base, *parts[1:i]])
            mod = sys.modules.get(name)
            if mod is None:
                try:
                    mod = importlib.import_module(name)
                except ModuleNotFoundError as exc:
                    if exc.name is not None and name.startswith(exc.name):
                        continue  # not a module: an attribute
                    raise
            obj, used = mod, i
            break
        for part in parts[used:]:
            obj = getattr(obj, part)
        return obj

    def _tensor(self, array: Any, order: list | None, requires_grad: bool, backend: str | None) -> Any:
        """A tensor holding `array`'s values, laid out in memory in dimension order `order`.

        ``order=None`` is row-major. Otherwise storage holds ``array.transpose(order)`` in
        row-major order and the strides are set so that the tensor still *reads* as
        `array`: a non-contiguous layout built without calling any student code.
        """
        import numpy as np

        mt = self.root
        arr = np.asarray(array)
        shape = tuple(int(s) for s in arr.shape)
        if order is None:
            storage = np.ascontiguousarray(arr).reshape(-1).copy()
            strides = None
        else:
            physical = np.ascontiguousarray(arr.transpose(order))
            phys_strides = [0] * arr.ndim
            step = 1
            for k in range(arr.ndim - 1, -1, -1):
                phys_strides[k] = step
                step *= physical.shape[k]
            strides_list = [0] * arr.ndim
            for k, dim in enumerate(order):
                strides_list[dim] = phys_strides[k]
            storage = physical.reshape(-1).copy()
            strides = tuple(strides_list)
        backend = self.backend_map.get(backend, backend) if backend else backend
        be = {"simple": "SimpleBackend", "fast": "FastBackend", "cuda": "CudaBackend"}.get(backend or "")
        kwargs = {"backend": getattr(mt, be)} if be else {}
        if strides is None:
            t = mt.Tensor.make(storage, shape, **kwargs)
        else:
            t = mt.Tensor.make(storage, shape, strides, **kwargs)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _module(self, spec: dict) -> Any:
        """A `Module` tree: ``{"params": [[name, value]], "children": [[name, spec]],
        "alias": [[name, "dotted.path"]]}``; an alias registers an existing sub-module or
        parameter (found from the root) a second time."""
        root = self._build_module(spec)
        for name, path in spec.get("alias", []):
            *parents, last = path.split(".")
            owner = root
            for part in parents:
                owner = getattr(owner, part)
            setattr(root, name, getattr(owner, last))
        return root

    def _build_module(self, spec: dict) -> Any:
        mt = self.root
        mod = mt.Module()
        for name, value in spec.get("params", []):
            setattr(mod, name, mt.Parameter(self._resolve(value, [])))
        for name, child in spec.get("children", []):
            setattr(mod, name, self._build_module(child))
        return mod

    # ---------------------------------------------------------------- answers

    def encode_value(self, value: Any, depth: int = 0) -> Any:
        """A plain description of `value` that `protocol.encode` can send.

        Exact bool/int/float/str/None pass through; lists, tuples and dicts are walked;
        a tensor becomes ``{"__kind__": "tensor", "array": values}`` read from its storage,
        shape and strides; an ndarray is tagged with its class (so a NumPy subclass is
        visible as one); anything else becomes ``{"__kind__": "object", "type": …}``.
        """
        import numpy as np

        t = type(value)
        if depth > 32:
            return {"__kind__": "object", "type": "<nested too deeply>", "repr": ""}
        if value is None or t in (bool, int, float, str):
            if t is str and len(value) > 10_000:
                return value[:10_000]
            return value
        if t in (list, tuple):
            if len(value) > 100_000:
                return {"__kind__": "object", "type": f"{t.__name__} of {len(value)} items", "repr": ""}
            return {"__kind__": t.__name__, "items": [self.encode_value(v, depth + 1) for v in value]}
        if t is dict:
            if all(type(k) is str for k in value):
                return {
                    "__kind__": "dict",
                    "items": {k: self.encode_value(v, depth + 1) for k, v in value.items()},
                }
        if isinstance(value, (np.floating, np.integer, np.bool_)):
            return {"__kind__": "npscalar", "type": t.__name__, "value": value.item()}
        if isinstance(value, np.ndarray):
            tag = {"__kind__": "ndarray_value", "type": _short_type(value)}
            try:
                tag["array"] = np.array(value, copy=True, subok=False)
            except Exception:  # noqa: BLE001
                return {"__kind__": "object", "type": _short_type(value), "repr": ""}
            if tag["array"].dtype.kind not in "fib":
                return {"__kind__": "object", "type": f"ndarray of dtype {tag['array'].dtype}", "repr": ""}
            return tag
        tensor_cls = getattr(self.root, "Tensor", None)
        if isinstance(tensor_cls, type) and isinstance(value, tensor_cls):
            return self._encode_tensor(value)
        return {"__kind__": "object", "type": _short_type(value), "repr": safe_str(repr, value, MAX_REPR)}

    def _encode_tensor(self, value: Any) -> dict:
        """The tensor's values, read from raw storage/shape/strides with bounds checked."""
        import numpy as np

        try:
            data = value._tensor
            storage = data._storage
            shape = tuple(int(s) for s in data.shape)
            strides = tuple(int(s) for s in data.strides)
            if not isinstance(storage, np.ndarray) or storage.ndim != 1:
                raise ValueError(f"its storage is a {_short_type(storage)}, not a 1-D ndarray")
            if len(shape) != len(strides):
                raise ValueError(f"shape {shape} and strides {strides} differ in length")
            if any(s < 0 for s in shape) or any(s < 0 for s in strides):
                raise ValueError(f"negative size or stride in shape {shape}, strides {strides}")
            storage = np.array(storage, copy=False, subok=False)
            if storage.dtype.kind not in "fib":
                raise ValueError(f"its storage has dtype {storage.dtype}")
            if 0 not in shape:
                last = sum((n - 1) * st for n, st in zip(shape, strides))
                if last >= storage.size:
                    raise ValueError(
                        f"shape {shape} with strides {strides} reaches past storage of {storage.size}"
                    )
            item = storage.itemsize
            view = np.lib.stride_tricks.as_strided(
                storage, shape=shape, strides=tuple(s * item for s in strides)
            )
            array = np.array(view, copy=True)
            requires_grad = bool(getattr(value, "requires_grad", False))
        except Exception as exc:  # noqa: BLE001
            return {"__kind__": "bad_tensor", "why": safe_str(str, exc, MAX_MESSAGE)}
        return {"__kind__": "tensor", "array": array, "requires_grad": requires_grad}

    def describe_error(self, exc: BaseException) -> dict:
        """Exception type, message and the traceback frames that lie in the child tree."""
        frames = []
        for fs in traceback.extract_tb(exc.__traceback__):
            rel = self._relative(fs.filename)
            if rel is None:
                continue
            frames.append(
                {"file": rel, "line": fs.lineno or 0, "function": fs.name, "code": (fs.line or "")[:200]}
            )
        if len(frames) > MAX_FRAMES:
            frames = frames[:2] + frames[-(MAX_FRAMES - 2) :]
        return {
            "type": type(exc).__name__,
            "mro": [c.__name__ for c in type(exc).__mro__][:16],
            "message": safe_str(str, exc, MAX_MESSAGE),
            "traceback": frames,
        }

    def _relative(self, filename: str) -> str | None:
        if not os.path.isabs(filename):  # "<frozen importlib._bootstrap>", "<string>"
            return None
        if self.tree is None:
            return os.path.basename(filename) if "minitorch" in filename else None
        path = os.path.realpath(filename)
        if path.startswith(self.tree + os.sep):
            return os.path.relpath(path, self.tree)
        return None
