"""LLVM's SLP vectorizer is on while Numba compiles minitorch's own kernels, and only then
(`minitorch.jit.Vectorised`): `import minitorch` changes nothing for other Numba code in the
process, and a value the user set is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.library

# Numba re-reads its settings at the start of each compilation, so `config.SLP_VECTORIZE`
# after a compilation is the value that compilation used.
PROBE = """
import os
import numba
from numba.core import config
import minitorch
from minitorch import jit, operators

def other(x):
    return x + 1.0

def another(x):
    return x * 2.0

def show(what):
    print(what, config.SLP_VECTORIZE, os.environ.get("NUMBA_SLP_VECTORIZE", "unset"))

show("import")
numba.njit(other)(1.0)
show("other")
jit.jit_scalar(operators.add)(1.0, 2.0)  # a function of minitorch.operators
show("ours")
numba.njit(another)(1.0)
show("other")
"""


def _probe(tmp_path: Path, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_SLP_VECTORIZE"}
    environ.update(env, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_only_minitorchs_compilations_are_vectorised(tmp_path: Path) -> None:
    assert _probe(tmp_path) == ["import 0 unset", "other 0 unset", "ours 1 unset", "other 0 unset"]


def test_a_value_the_user_set_is_kept(tmp_path: Path) -> None:
    assert _probe(tmp_path, NUMBA_SLP_VECTORIZE="0") == ["import 0 0", "other 0 0", "ours 0 0", "other 0 0"]


def test_the_listener_restores_the_environment_after_nested_compilations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from minitorch import fast_ops
    from minitorch.jit import SLP, Vectorised

    class Event:
        def __init__(self, fn: object) -> None:
            self.data = {"dispatcher": type("D", (), {"py_func": fn})()}

    monkeypatch.delenv(SLP, raising=False)
    listener = Vectorised()
    ours, theirs = Event(fast_ops.tensor_map), Event(os.path.join)
    listener.on_start(ours)
    assert os.environ[SLP] == "1"
    listener.on_start(theirs)  # a function it calls, compiled inside: unchanged
    assert os.environ[SLP] == "1"
    listener.on_end(theirs)
    assert os.environ[SLP] == "1"
    listener.on_end(ours)
    assert SLP not in os.environ
