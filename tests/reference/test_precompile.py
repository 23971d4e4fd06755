"""`python -m minitorch.precompile`: after it, the example it ran compiles nothing in a fresh
process (Numba's compile notice, shown after 0 s of compiling, stays silent), and a failing
example is reported, not hidden."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from minitorch import precompile
from minitorch.compile_notice import MESSAGE

pytestmark = pytest.mark.library


@pytest.mark.slow
def test_after_precompile_the_example_compiles_nothing(tmp_path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    run = [sys.executable, "-m", "minitorch.precompile", "--only", "train_mlp"]
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "train_mlp:" in done.stdout and "done in" in done.stdout

    example = [sys.executable, "-m", "minitorch.examples.train_mlp", *precompile.RUNS["train_mlp"]]
    notice_at_once = {**env, "MINITORCH_COMPILE_NOTICE_AFTER": "0"}
    later = subprocess.run(example, capture_output=True, text=True, env=notice_at_once, timeout=900)
    assert later.returncode == 0, later.stderr[-2000:]
    assert MESSAGE not in later.stderr  # every kernel came from the cache

    fresh = {**notice_at_once, "NUMBA_CACHE_DIR": str(tmp_path / "empty-cache")}
    cold = subprocess.run(example, capture_output=True, text=True, env=fresh, timeout=900)
    assert MESSAGE in cold.stderr  # the check above can fail: without the cache it compiles


def test_a_failing_example_is_reported(monkeypatch, capsys) -> None:
    monkeypatch.setitem(precompile.RUNS, "train_mlp", ["--no-such-option"])
    assert precompile.main(["--only", "train_mlp"]) == 1
    out = capsys.readouterr()
    assert "train_mlp: failed (exit status 2)" in out.err and "--no-such-option" in out.err
    assert "failed: train_mlp" in out.out
