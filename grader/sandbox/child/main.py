"""The child's main loop: the only grader code that runs next to student code.

The parent (`grader.sandbox.child_process`) starts this file as a script in a fresh interpreter::

    python -I -S _grader_child.py '{"fd": N, "tree": DIR, "runtime": DIR, "paths": [...], "mem_mb": M, …}'

(inside the jail of `grader.sandbox.jail`, which decides what this process can see and reach)

``-I`` ignores ``PYTHON*`` variables and the user site, ``-S`` skips ``site`` (so no
``.pth`` file, e.g. an editable install of the reference, is processed). The script then
sets ``sys.path`` itself: the child tree first, then the standard library and the
third-party directories the parent passed (never the repository holding the reference),
applies its resource limits (address space, CPU time, file size, processes), imports ``minitorch`` and checks that it came from the child
tree. On Numba's CUDA simulator it first makes memory that no GPU thread wrote read as
NaN (`_poison_uninitialised_cuda_memory`). After that it answers the parent's commands arriving on the inherited socket:
``batch`` (run probe programs with `grader.sandbox.child.executor.Executor`, copied next to this file
as ``_grader_executor.py``), ``notebook`` (run a notebook's cells in an IPython shell and
report the values that its next test cell reads: `_notebook`) and ``exit``.

It never receives expected values, tolerances or verdicts, and imports nothing of the
grader package (``import grader`` is refused here). Nothing in this file is secret.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any, Callable


def _setup_process(args: dict) -> None:
    """Limits and import path, before any student code can run (hard limits: no way back up)."""
    import resource

    def limit(which: int, value: int) -> None:
        if value > 0:
            resource.setrlimit(which, (value, value))

    limit(resource.RLIMIT_AS, int(args["mem_mb"]) * 1024 * 1024)
    limit(resource.RLIMIT_CPU, int(args.get("cpu_s", 0)))
    limit(resource.RLIMIT_FSIZE, int(args.get("file_mb", 0)) * 1024 * 1024)
    limit(resource.RLIMIT_NPROC, int(args.get("nproc", 0)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    tree = os.path.realpath(args["tree"])
    base = [p for p in sys.path if p and os.path.realpath(p) != tree]
    sys.path[:] = [tree, args["runtime"], *base, *args["paths"]]


class _PoisonedNumpy:
    """NumPy, but `empty` fills what it returns with values no kernel computes: NaN for
    floats, the largest value for integers (an index past any array)."""

    def __init__(self, numpy: Any) -> None:
        self._numpy = numpy

    def __getattr__(self, name: str) -> Any:
        return getattr(self._numpy, name)

    def empty(self, shape: Any, dtype: Any = float) -> Any:
        array = self._numpy.empty(shape, dtype)
        if array.dtype.kind == "f":
            array.fill(self._numpy.nan)
        elif array.dtype.kind in "iu":
            array.fill(self._numpy.iinfo(array.dtype).max)
        return array


def _poison_uninitialised_cuda_memory() -> None:
    """On Numba's CUDA simulator, make memory that no thread wrote read as poison.

    The simulator makes `cuda.shared.array` and `cuda.local.array` with `np.empty`: they
    often hold zeros, or what the last block left, so a kernel that reads a slot no thread
    wrote (a reduction that folds past the values it loaded) can give the right answer by
    luck. On a GPU that memory holds garbage. Filled with NaN, such a read shows in every
    run: NaN spreads through add, mul and max alike."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return
    import numpy
    from numba.cuda.simulator import kernelapi  # its two np.empty calls: shared and local arrays

    kernelapi.np = _PoisonedNumpy(numpy)


class _BlockGrader:
    """Refuse ``import grader`` in the child (hygiene: the checks are not on its path)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "grader" or name.startswith("grader."):
            raise ImportError("the grader is not importable from student code")
        return None


def main(argv: list[str]) -> int:
    args = json.loads(argv[1])
    _setup_process(args)
    sys.meta_path.insert(0, _BlockGrader)
    import socket

    import _grader_protocol as P  # noqa: N812 - copied next to this file by the parent
    from _grader_executor import Executor, ProbeError, safe_str  # copied there too

    sys.path.remove(args["runtime"])
    sock = socket.socket(fileno=int(args["fd"]))
    tree = os.path.realpath(args["tree"])
    started = time.perf_counter()
    try:
        import numpy  # noqa: F401 - imported before student code so its import time is not theirs

        _poison_uninitialised_cuda_memory()

        mt = importlib.import_module("minitorch")
        where = os.path.realpath(getattr(mt, "__file__", "") or "")
        if not where.startswith(tree + os.sep):
            P.send(
                sock,
                {
                    "hello": {
                        "error": {
                            "type": "ImportError",
                            "message": f"minitorch was imported from {where}, not from the submission",
                            "traceback": [],
                        }
                    }
                },
            )
            return 3
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, ImportError, SystemExit …
        ex = Executor(None, tree)
        info = ex.describe_error(exc)
        if isinstance(exc, SyntaxError) and exc.filename:
            rel = ex._relative(exc.filename) or os.path.basename(exc.filename)
            info["traceback"].append(
                {
                    "file": rel,
                    "line": exc.lineno or 0,
                    "function": "<module>",
                    "code": (exc.text or "").rstrip()[:200],
                }
            )
        P.send(sock, {"hello": {"error": info}})
        return 2
    executor = Executor(mt, tree)
    P.send(
        sock,
        {"hello": {"minitorch": os.path.relpath(where, tree), "import_s": time.perf_counter() - started}},
    )
    while True:
        try:
            msg = P.recv(sock)
        except P.ChannelClosed:
            return 0
        kind = msg.get("cmd")
        if (
            kind == "exit"
        ):  # at once: the interpreter's teardown (Numba's, the student's atexit) is ~0.1 s per child
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - a stream the student replaced or closed
                    pass
            os._exit(0)
        if kind == "batch":
            answers = []
            for program in msg["programs"]:
                try:
                    answers.append(_sendable(P, executor.run(program), safe_str))
                except ProbeError as exc:
                    answers.append({"probe_error": str(exc)})
            try:
                P.encode({"answers": answers})
            except Exception as exc:  # noqa: BLE001 - each answer fits, all of them do not (`protocol.MAX_HEADER`)
                error = _unsendable(
                    f"the answers of this check together cannot be sent to the grader: {safe_str(str, exc, 300)}"
                )
                answers = [error] * len(answers)
            P.send(sock, {"answers": answers})
        elif kind == "notebook":
            reply = _notebook(msg, safe_str)
            try:
                P.encode({"notebook": reply})
            except Exception as exc:  # noqa: BLE001 - e.g. more values than `protocol.MAX_VALUES`
                reply = {
                    "error": f"the notebook's values cannot be sent to the grader: {safe_str(str, exc, 300)}"
                }
            P.send(sock, {"notebook": reply})
        else:
            P.send(sock, {"probe_error": f"unknown command {kind!r}"})


def _sendable(P: Any, answer: dict, safe_str: Callable[[Any, Any, int], str]) -> dict:  # noqa: N803
    """`answer`, or an error answer when it cannot be encoded (e.g. an int of 5000 digits,
    more values than the protocol's limits)."""
    try:
        P.encode(answer)
        return answer
    except Exception as exc:  # noqa: BLE001
        return _unsendable(f"the result cannot be sent to the grader: {safe_str(str, exc, 300)}")


def _unsendable(message: str) -> dict:
    """The error answer for a result that cannot travel (the student's, like an exception)."""
    return {"error": {"type": "ValueError", "mro": ["ValueError"], "message": message, "traceback": []}}


_SHELL: list = []  # the notebook's IPython shell: its namespace is the kernel's state


def _notebook(msg: dict, safe_str: Callable[[Any, Any, int], str]) -> dict:
    """One step of a notebook: run its next cells, then report values (never a verdict).

    The parent (`grader.notebooks.parts`) sends one command per test cell of the notebook:
    ``cells`` ([label, code]: the student's cells before the test, and the locked cells of
    the source), run here in one IPython shell that keeps its namespace between commands;
    ``names``, whose values to report; ``kernel`` ([code, [names]]: calls of the notebook's
    functions with the grader's inputs, run in a copy of that namespace). The test cell
    itself never comes here: the grader runs it on the values (`grader.notebooks.judge`).
    """
    try:
        if not _SHELL:
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config

            config = Config()
            config.HistoryManager.enabled = False
            _SHELL.append(InteractiveShell.instance(config=config, colors="NoColor"))
        shell = _SHELL[0]
        errors = []
        for label, code in msg["cells"]:
            result = shell.run_cell(code, store_history=False)
            exc = result.error_before_exec or result.error_in_exec
            if exc is not None:
                errors.append(f"{label} raised {_error_text(exc, safe_str)}")
        ns = shell.user_ns
        budget = [1_000_000]  # values (list items, characters, array elements) per reply
        values = {name: _plain(ns[name], budget) for name in msg["names"] if name in ns}
        results: list[dict] = []
        scope = dict(ns)
        for code, names in msg["kernel"]:
            try:
                exec(compile(code, "<hidden test>", "exec"), scope)  # noqa: S102 - the grader's call, the student's function
            except BaseException as exc:  # noqa: BLE001 - the student's function failed: the test fails
                results.append({"error": _error_text(exc, safe_str)})
                break
            results.append({"values": {n: _plain(scope[n], budget) for n in names if n in scope}})
        return {"errors": errors, "values": values, "kernel": results}
    except BaseException as exc:  # noqa: BLE001 - the shell itself broke: the notebook stops
        return {"error": _error_text(exc, safe_str)}


def _error_text(exc: BaseException, safe_str: Callable[[Any, Any, int], str]) -> str:
    text = safe_str(str, exc, 300).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _plain(value: Any, budget: list, depth: int = 0) -> Any:
    """`value` as plain data for the grader (the format: `grader.notebooks.judge`): exact
    types only, copied now; anything else, or too much, only as the name of its type."""
    import numpy as np

    t = type(value)
    size = len(value) if t in (str, list, tuple, dict) else value.size if t is np.ndarray else 1
    budget[0] -= size
    if budget[0] < 0 or depth > 32 or (t is int and abs(value) >= 1 << 1000):
        return {
            "__kind__": "opaque",
            "type": f"{t.__name__} too large to send"
            if t in (str, int, list, tuple, dict)
            else "value too large to send",
        }
    if value is None or t is bool or t is float or t is str or t is int:
        return value
    if t is list:
        return [_plain(v, budget, depth + 1) for v in value]
    if t is tuple:
        return {"__kind__": "tuple", "items": [_plain(v, budget, depth + 1) for v in value]}
    if t is dict:
        return {
            "__kind__": "dict",
            "items": [[_plain(k, budget, depth + 1), _plain(v, budget, depth + 1)] for k, v in value.items()],
        }
    if t is np.ndarray and value.dtype.str in ("<f8", "<f4", "<i8", "<i4", "|b1"):
        return value.copy()
    if t in (np.float64, np.float32, np.int64, np.int32, np.bool_):
        return {"__kind__": "scalar", "value": np.asarray(value)}
    name = getattr(t, "__qualname__", None)
    return {"__kind__": "opaque", "type": name if type(name) is str else "object"}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
