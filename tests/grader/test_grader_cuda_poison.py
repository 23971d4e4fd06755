"""On Numba's CUDA simulator, memory that no thread wrote reads as poison in the grader's child.

The simulator makes shared and local arrays with ``np.empty``, which often holds zeros or the
last block's values: a 3.3 reduce that folds in cache slots no thread wrote (``or`` for
``and`` in the tree's guard) passed the hidden checks that way. The child poisons such
memory before student code runs (`grader.sandbox.child.main._poison_uninitialised_cuda_memory`); the
graded mistake itself is in A3's ``mutants.toml`` (tests/grader/test_grader_mutation.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.grader

KERNEL = """
import json
import numpy as np
from numba import cuda
from grader.sandbox.child.main import _poison_uninitialised_cuda_memory

_poison_uninitialised_cuda_memory()


@cuda.jit
def unwritten(floats, ints, local_floats):
    cache = cuda.shared.array(8, np.float64)
    index = cuda.shared.array(8, np.int64)
    scratch = cuda.local.array(4, np.float64)
    t = cuda.threadIdx.x
    if t < 2:  # 2 of 4 threads write their slot
        cache[t] = 1.0
        index[t] = 1
    cuda.syncthreads()
    floats[t] = cache[t]
    ints[t] = index[t]
    local_floats[t] = scratch[0]


floats, ints, local_floats = np.zeros(4), np.zeros(4, np.int64), np.zeros(4)
unwritten[1, 4](floats, ints, local_floats)
print(json.dumps([floats.tolist(), ints.tolist(), local_floats.tolist()]))
"""


def _run_kernel() -> list:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", KERNEL], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_shared_and_local_memory_no_thread_wrote_reads_as_poison() -> None:
    floats, ints, local_floats = _run_kernel()
    assert floats[:2] == [1.0, 1.0] and ints[:2] == [1, 1]  # what the threads wrote is kept
    assert all(v != v for v in floats[2:]), floats  # NaN: spreads through add, mul and max
    assert ints[2:] == [2**63 - 1] * 2, ints  # an index past any array
    assert all(v != v for v in local_floats), local_floats


def test_poisoning_is_a_no_op_off_the_simulator() -> None:
    """On a GPU (or with the simulator off) nothing is patched: the function returns at once."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    script = (
        "import sys\nfrom grader.sandbox.child.main import _poison_uninitialised_cuda_memory\n"
        "_poison_uninitialised_cuda_memory()\nprint('numba.cuda.simulator.kernelapi' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
