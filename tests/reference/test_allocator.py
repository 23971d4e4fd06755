"""`minitorch.allocator`: after `tune_malloc()`, memory freed by one step is reused by the
next without page faults (counted by the kernel, not timed); `import minitorch` alone changes
nothing (the setting is opt-in)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.library,
    pytest.mark.skipif(
        platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
        reason="the malloc settings exist on Linux with glibc only",
    ),
]

# One "step": eight 8 MiB arrays written and freed, as a training step's activations are.
# Prints the page faults of the last three steps (the first ones fault on any allocator).
STEPS = """
import resource, sys, numpy as np, minitorch
from minitorch.allocator import tune_malloc
if sys.argv[1] == "tune":
    tune_malloc()
def step():
    arrays = [np.empty(1 << 20) for _ in range(8)]
    for a in arrays:
        a.fill(1.0)
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(tuning: str, call: str = "tune") -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["MINITORCH_MALLOC_TUNING"] = tuning
    done = subprocess.run(
        [sys.executable, "-c", STEPS, call], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_freed_memory_is_reused_without_page_faults() -> None:
    touched = 3 * 8 * (8 << 20) // 4096  # pages of 4 KiB written by three steps: 49,152
    untuned = _faults("0")  # measured: about 12,000 (glibc keeps some of it)
    assert untuned > touched // 8, f"glibc's defaults should give memory back ({untuned} faults)"
    tuned = _faults("1")  # measured: under 10
    assert tuned < touched // 100, f"{tuned} page faults in three steps after tune_malloc()"
    imported_only = _faults("1", call="none")
    assert imported_only > touched // 8, f"import minitorch alone changed malloc ({imported_only} faults)"
