"""Test-suite set-up that must happen before Numba is imported.

CUDA tests run on the Numba CUDA simulator unless told otherwise: set
`NUMBA_ENABLE_CUDASIM=0` on a machine with a GPU to run them on the device.

The quick subset, ``pytest -m "not slow"``: besides the tests marked ``slow`` in their
file, the tests listed in ``tests/slow_tests.txt`` (written by ``scripts/slow_tests.py``
from the timings of a full run) are marked slow here. A test missing from the list (a new
one) is in the quick subset until the list is written again.

The tests are in four folders, by who reads them (docs/ADDING.md):

* ``public/``: the tests of the students' tasks, and their helpers (``strategies.py`` …). A
  release ships this folder (the files of its stages) and this conftest, nothing else.
* ``oracle/``: the PyTorch companions of the public tests (``*_torch.py``; they skip
  without torch).
* ``reference/``: the reference library beyond the tasks, its fast paths and its speed
  machinery.
* ``grader/``: the grader, the releases, the layout of both packages, hostile submissions.

The helpers and the test modules are imported by name across folders (an oracle test reuses
the cases of the test it accompanies), so ``public/`` and ``reference/`` are put on
``sys.path`` here (``grader/`` and ``oracle/`` import from them, never the other way).

The examples' `main` calls `minitorch.threads.share_the_cpu()`, which would set the wait
policy and the thread count of the whole test process from the load of the moment;
``MINITORCH_SHARE_CPU=0`` keeps the suite's process as it started (tests/reference/test_threads.py
tests the function in fresh interpreters).
"""

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("MINITORCH_SHARE_CPU", "0")

for _folder in ("reference", "public"):
    _path = Path(__file__).resolve().with_name(_folder)
    if _path.is_dir() and str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


@pytest.fixture
def quick_thread_switches():
    """Run a test with Python switching threads every 50 µs instead of every 5 ms.

    Numba's CUDA simulator runs every GPU thread as a Python thread, and a manager thread
    polls them to release a `cuda.syncthreads()` barrier once all have reached it. With the
    default switch interval each barrier waits several 5 ms turns for the GIL: a reduce
    block costs ~40 ms. Measured on a tiny GPT's training step (d_model 8, one block, on the
    simulator, a 2-core machine): 94 s → 19 s. Use it in the modules that run kernels on the
    simulator (`pytestmark = usefixtures(...)`). It also made a race in the simulator's shared
    arrays frequent, which minitorch/cuda_simulator.py fixes."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    yield
    sys.setswitchinterval(before)


def pytest_configure(config):
    # Registered here, not in pyproject.toml: resolving the warning class imports Numba,
    # which must not happen before the line above.
    config.addinivalue_line("filterwarnings", "ignore::numba.core.errors.NumbaPerformanceWarning")


def pytest_collection_modifyitems(config, items):
    """Every test must say which task (or which non-student part) it tests.

    A student runs `pytest -m task2_2`; a test without a task marker would never be selected
    that way, so an unmarked test is an error rather than a silently unreachable test.
    """
    import pytest

    allowed_prefixes = ("task",)
    allowed = {"library", "grader"}
    unmarked = [
        item.nodeid
        for item in items
        if not any(m.name in allowed or m.name.startswith(allowed_prefixes) for m in item.iter_markers())
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests without a task marker (add @pytest.mark.taskX_Y, library or grader):\n  "
            + "\n  ".join(unmarked[:20])
        )
    listed = Path(__file__).with_name("slow_tests.txt")
    if listed.is_file():
        slow = set(listed.read_text(encoding="utf-8").splitlines())
        for item in items:
            if item.nodeid in slow:
                item.add_marker(pytest.mark.slow)
