"""The child's main loop: the only grader code that runs next to student code.

The parent (`grader.sandbox`) starts this file as a script in a fresh interpreter::

    python -I -S _grader_child.py '{"fd": N, "tree": DIR, "runtime": DIR, "paths": [...], "mem_mb": M}'

``-I`` ignores ``PYTHON*`` variables and the user site, ``-S`` skips ``site`` (so no
``.pth`` file, e.g. an editable install of the reference, is processed). The script then
sets ``sys.path`` itself: the child tree first, then the standard library and the
third-party directories the parent passed (never the repository holding the reference),
applies its resource limits, imports ``minitorch`` and checks that it came from the child
tree. After that it answers the parent's commands arriving on the inherited socket:
``batch`` (run probe programs with `grader.executor.Executor`, copied next to this file
as ``_grader_executor.py``), ``notebook`` (autograde a notebook with
``_grader_notebooks.py``) and ``exit``.

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
    """Limits and import path, before any student code can run."""
    import resource

    mem = int(args["mem_mb"]) * 1024 * 1024
    if mem > 0:
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    tree = os.path.realpath(args["tree"])
    base = [p for p in sys.path if p and os.path.realpath(p) != tree]
    sys.path[:] = [tree, args["runtime"], *base, *args["paths"]]


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

        mt = importlib.import_module("minitorch")
        where = os.path.realpath(getattr(mt, "__file__", "") or "")
        if not where.startswith(tree + os.sep):
            P.send(sock, {"hello": {"error": {"type": "ImportError", "message": f"minitorch was imported from {where}, not from the submission", "traceback": []}}})
            return 3
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, ImportError, SystemExit …
        ex = Executor(None, tree)
        info = ex.describe_error(exc)
        if isinstance(exc, SyntaxError) and exc.filename:
            rel = ex._relative(exc.filename) or os.path.basename(exc.filename)
            info["traceback"].append({"file": rel, "line": exc.lineno or 0, "function": "<module>", "code": (exc.text or "").rstrip()[:200]})
        P.send(sock, {"hello": {"error": info}})
        return 2
    executor = Executor(mt, tree)
    P.send(sock, {"hello": {"minitorch": os.path.relpath(where, tree), "import_s": time.perf_counter() - started}})
    while True:
        try:
            msg = P.recv(sock)
        except P.ChannelClosed:
            return 0
        kind = msg.get("cmd")
        if kind == "exit":
            return 0
        if kind == "batch":
            answers = []
            for program in msg["programs"]:
                try:
                    answers.append(_sendable(P, executor.run(program), safe_str))
                except ProbeError as exc:
                    answers.append({"probe_error": str(exc)})
            P.send(sock, {"answers": answers})
        elif kind == "notebook":
            P.send(sock, {"notebook": _notebook(msg, args["runtime"], safe_str)})
        else:
            P.send(sock, {"probe_error": f"unknown command {kind!r}"})


def _sendable(P: Any, answer: dict, safe_str: Callable[[Any, Any, int], str]) -> dict:  # noqa: N803
    """`answer`, or an error answer when it cannot be encoded (e.g. an int of 5000 digits)."""
    try:
        P.encode(answer)
        return answer
    except Exception as exc:  # noqa: BLE001
        return {"error": {"type": "ValueError", "mro": ["ValueError"], "message": f"the result cannot be sent to the grader: {safe_str(str, exc, 300)}", "traceback": []}}


def _notebook(msg: dict, runtime: str, safe_str: Callable[[Any, Any, int], str]) -> dict:
    """Autograde a notebook here, in the child (nbgrader runs the student's cells)."""
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_grader_notebooks", os.path.join(runtime, "_grader_notebooks.py"))
        module = importlib.util.module_from_spec(spec)  # copied next to this file by the parent
        spec.loader.exec_module(module)
        result = module.autograde_notebook(msg["student"], msg["source"], msg["workdir"])
        return {"ok": json.loads(json.dumps(result, default=str))}
    except BaseException as exc:  # noqa: BLE001
        return {"error": {"type": type(exc).__name__, "message": safe_str(str, exc, 2000), "traceback": []}}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
