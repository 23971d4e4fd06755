"""The CUDA twins of the library's loop kernels in the releases (issue 31).

The twins of im2col and pooling are tasks 4.1–4.3 in CUDA form, so they ship from A5 on;
the twin registry and the embedding twins ship from A4 on, with the rest of
`minitorch/accel/` (manifests' ``reference_only``). A release without a twin says so when
its CUDA backend is asked for the op, and one with it runs the op.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.release.starter import release

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json
import numpy as np
import minitorch
import minitorch.nn.functional as F

cuda = minitorch.CudaBackend
ops = {
    "conv1d": lambda: F.conv1d(minitorch.ones(1, 2, 5, backend=cuda), minitorch.ones(3, 2, 2, backend=cuda)),
    "max_pool2d": lambda: F.max_pool2d(minitorch.ones(1, 1, 4, 4, backend=cuda), 2),
    "embedding": lambda: F.embedding(
        minitorch.tensor([1, 0], dtype=np.int64, backend=cuda), minitorch.ones(3, 2, backend=cuda)
    ),
}
results = {}
for name, op in ops.items():
    try:
        results[name] = ["ok", op().numpy().sum().item()]
    except NotImplementedError as error:
        results[name] = ["NotImplementedError", str(error)]
print(json.dumps(results))
"""


def _run_in_release(stage: str, base: Path) -> dict[str, list]:
    out = base / stage
    release(stage, out, repo_root=ROOT)
    env = {k: v for k, v in os.environ.items() if k != "MINITORCH_BACKEND"}
    env.update(PYTHONPATH=str(out), NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=out, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_each_release_runs_the_cuda_twins_it_ships_and_names_the_ones_it_lacks(tmp_path: Path) -> None:
    missing = "is not implemented on the CUDA backend in this release"
    a3 = _run_in_release("a3", tmp_path)
    assert a3["conv1d"][1].startswith("Task 4.1: "), a3  # conv1d itself is still a stub in A3
    for name, what in [("max_pool2d", "max pooling"), ("embedding", "embedding lookup (embedding_gather)")]:
        assert a3[name][0] == "NotImplementedError" and what in a3[name][1] and missing in a3[name][1], a3

    a4 = _run_in_release("a4", tmp_path)
    assert a4["conv1d"][1].startswith("Task 4.1: "), a4  # the student's task in A4
    assert a4["max_pool2d"][0] == "NotImplementedError", a4
    assert "max pooling" in a4["max_pool2d"][1] and missing in a4["max_pool2d"][1], a4
    assert a4["embedding"] == ["ok", 4.0], a4

    a5 = _run_in_release("a5", tmp_path)
    # ones(1, 2, 5) ⋆ ones(3, 2, 2): 3 channels × 4 positions of 2·2 = 4
    assert a5 == {"conv1d": ["ok", 48.0], "max_pool2d": ["ok", 4.0], "embedding": ["ok", 4.0]}, a5
