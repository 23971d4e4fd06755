"""Pieces of attack code shared by several bodies (plain Python source, no braces to format).

Every piece is inserted into a fence body, i.e. inside the function the fence belongs to,
after the ``T = {...}`` line (`hostile.attack.Target`). A fence body is indented as a whole
when it is written, so no piece holds a multi-line string literal: code that a spawned
process runs is a list of one-line strings joined with newlines.
"""

from __future__ import annotations

#: `_marked()`: pids of the processes whose environment holds the test's marker — the
#: grading process, and nothing else on the machine (attacks touch only those).
MARKED = r"""
import os
def _marked():
    want = (T["marker_var"] + "=" + T["marker"]).encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if want in fh.read().split(b"\0"):
                        found.append(int(name))
            except OSError:
                pass
    return found
"""

#: `_kit_roots()`: every directory that may hold the kit, found the ways a student would:
#: the path it was told, the checkout's usual place, its own and its parent's PWD,
#: PYTHONPATH and cwd, and the editable install's finder in site-packages.
KIT_ROOTS = r"""
import glob, os, re, sys
def _kit_roots():
    roots = [T["kit"], "/work/main", os.environ.get("PWD", ""), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    for pid in {os.getppid(), 1}:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            env = []
        for item in env:
            key, _, value = item.decode(errors="replace").partition("=")
            if key in ("PWD", "PYTHONPATH", "MINITORCH_KIT_ROOT"):
                roots += value.split(os.pathsep)
        try:
            roots.append(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
    for entry in sys.path:
        for finder in glob.glob(os.path.join(entry or ".", "__editable__*finder.py")):
            try:
                with open(finder) as fh:
                    roots += [os.path.dirname(p) for p in re.findall(r"'minitorch': '([^']+)'", fh.read())]
            except OSError:
                pass
    own = os.path.realpath(os.getcwd())
    out = []
    for root in roots:
        if root and os.path.isfile(os.path.join(root, "minitorch", "autodiff.py")):
            real = os.path.realpath(root)
            if real != own and real not in out:
                out.append(real)
    return out
"""

#: `_reference()`: the reference's autodiff module loaded from the first kit found, or None.
REFERENCE = (
    KIT_ROOTS
    + r"""
import importlib.util, sys
def _reference():
    if "_hostile_reference" in sys.modules:
        return sys.modules["_hostile_reference"]
    for root in _kit_roots():
        try:
            spec = importlib.util.spec_from_file_location("_hostile_reference", os.path.join(root, "minitorch", "autodiff.py"))
            module = importlib.util.module_from_spec(spec)
            sys.modules["_hostile_reference"] = module
            spec.loader.exec_module(module)
            return module
        except Exception:
            sys.modules.pop("_hostile_reference", None)
    return None
"""
)

#: `_once(name)`: True the first time in this process (a check calls a fence many times).
ONCE = r"""
import sys
def _once(name):
    done = sys.__dict__.setdefault("_hostile_done", set())
    if name in done:
        return False
    done.add(name)
    return True
"""

#: `_forged()`: a results file in Gradescope's format with a score no grade can have.
FORGED = r"""
import json
def _forged():
    return json.dumps({"score": 1000.0, "output": T["marker"], "tests": [{"number": "1.1", "score": 1000.0, "max_score": 10}]})
"""
