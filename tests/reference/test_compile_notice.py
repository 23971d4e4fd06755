"""The notice that Numba is compiling: printed once when compiling takes long, never for a
cache load (`minitorch.compile_notice`)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minitorch.compile_notice import MESSAGE, CompileNotice

pytestmark = pytest.mark.library


def test_a_short_compilation_says_nothing() -> None:
    out = io.StringIO()
    notice = CompileNotice(delay=5.0, stream=out)
    notice.on_start(None)
    notice.on_end(None)
    assert out.getvalue() == "" and not notice.shown


def test_the_notice_comes_once_while_a_long_compilation_runs() -> None:
    out = io.StringIO()
    notice = CompileNotice(delay=0.05, stream=out)
    notice.on_start(None)
    notice.on_start(None)  # a nested compilation (a function the kernel calls) does not count twice
    time.sleep(0.5)  # the timer fires during the compilation, not after it
    assert out.getvalue() == MESSAGE + "\n"
    notice.on_end(None)
    notice.on_end(None)
    notice.on_start(None)
    time.sleep(0.1)
    notice.on_end(None)
    assert out.getvalue() == MESSAGE + "\n"


def test_many_short_compilations_add_up() -> None:
    out = io.StringIO()
    notice = CompileNotice(delay=0.3, stream=out)
    for _ in range(2):
        notice.on_start(None)
        time.sleep(0.1)
        notice.on_end(None)
    assert not notice.shown  # 0.2 s of compiling so far
    notice.on_start(None)
    time.sleep(0.4)  # the total passes 0.3 s during this one
    assert out.getvalue() == MESSAGE + "\n"
    notice.on_end(None)


KERNELS = """
from minitorch.jit import njit


@njit
def double(x):
    return 2 * x
"""

RUN = "import kernels; kernels.double(1); kernels.double(1.5); print('done')"


def _run(tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "MINITORCH_COMPILE_NOTICE_AFTER": "0",
        "PYTHONPATH": str(tmp_path),
    }
    env.pop("MINITORCH_COMPILE_NOTICE", None)
    return subprocess.run(
        [sys.executable, "-c", RUN],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_a_process_that_compiles_says_so_once_and_one_that_loads_the_cache_says_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS, encoding="utf-8")
    first = _run(tmp_path)
    assert first.stdout.strip() == "done"
    assert first.stderr.count(MESSAGE) == 1, first.stderr  # two signatures compiled, one notice
    second = _run(tmp_path)
    assert MESSAGE not in second.stderr, second.stderr
