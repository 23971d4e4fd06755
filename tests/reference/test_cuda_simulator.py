"""minitorch/cuda_simulator.py: a block's shared array is one array for all its threads.

Numba's simulator makes a `cuda.shared.array` by a lookup, then an insert; threads that ask
between the two get arrays of their own. A slow `np.empty` (what the simulator allocates
with) holds the gap open, so the race shows on every run: without the fix each thread sees
only some of the block's writes; with it, all of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys, time
import numpy as np
from numba import cuda
from numba.cuda.simulator import kernelapi

if sys.argv[1] == "fixed":
    from minitorch.cuda_simulator import make_shared_arrays_atomic

    make_shared_arrays_atomic()
    make_shared_arrays_atomic()  # a second call changes nothing


class SlowEmpty:  # NumPy whose `empty` takes 2 ms: Python switches threads meanwhile
    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, *args, **kwargs):
        time.sleep(0.002)
        return np.empty(*args, **kwargs)


kernelapi.np = SlowEmpty()


@cuda.jit
def count_the_block(out):
    seen = cuda.shared.array(8, np.float64)
    also = cuda.shared.array(8, np.float64)  # another line: another array
    t = cuda.threadIdx.x
    seen[t] = 1.0
    also[t] = 10.0
    cuda.syncthreads()
    total = 0.0
    for i in range(8):
        total += seen[i] + also[i]
    out[t] = total


out = np.zeros(8)
count_the_block[1, 8](out)
print(json.dumps(out.tolist()))
"""


def _run(mode: str) -> list[float]:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_thread_of_a_block_sees_the_same_shared_arrays() -> None:
    assert _run("fixed") == [88.0] * 8


def test_the_simulator_without_the_fix_still_races() -> None:
    """If this fails, Numba fixed the race: minitorch/cuda_simulator.py can go."""
    assert _run("as shipped") != [88.0] * 8


def test_the_cuda_backend_applies_the_fix_on_the_simulator() -> None:
    import minitorch.cuda_ops as cuda_ops

    if not cuda_ops.SIMULATOR:
        pytest.skip("the simulator is off")
    from numba.cuda.simulator import kernelapi

    assert getattr(kernelapi.FakeCUDAShared.array, "atomic", False)
