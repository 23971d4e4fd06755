"""The matmul's register tile follows the CPU Numba compiles for (`minitorch/accel/cpu_target.py`),
and its micro-kernels are the generator's output (`scripts/generate_matmul_tiles.py`).

That every tile computes the product is tests/reference/test_tuned_ops.py's
`test_tiled_matmul` (all tiles, whatever this machine picks). Here: the choice itself, from
feature strings and CPU names, and end to end in fresh interpreters whose Numba target is set
with ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` — a matmul there runs the kernel of the
target's tile and no other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minitorch.accel import cpu_target, matmul_tiles
from minitorch.accel.cpu_target import TILES, vector_extension

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.library


def test_generated_micro_kernels_are_up_to_date() -> None:
    """matmul_tiles.py is exactly what the generator writes (never edited by hand)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_matmul_tiles.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_tile_has_its_micro_kernel() -> None:
    for by_dtype in TILES.values():
        for dtype, tile in by_dtype.items():
            kernel = getattr(matmul_tiles, tile.kernel)
            inner = 3
            rng = np.random.default_rng(0)
            ap = rng.standard_normal(inner * tile.rows).astype(dtype)
            bp = rng.standard_normal(inner * tile.cols).astype(dtype)
            out = np.full(tile.rows * tile.cols, np.nan, dtype=dtype)
            kernel(inner, ap, bp, out, dtype(0))
            expected = ap.reshape(inner, tile.rows).T.astype(np.float64) @ bp.reshape(inner, tile.cols)
            np.testing.assert_allclose(out.reshape(tile.rows, tile.cols), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("name", "features", "expected"),
    [
        ("znver5", "+avx,+avx2,+avx512f,+fma,-amx-tile", "avx512"),
        ("znver5", "+avx,+avx2,-avx512f,+fma", "avx2"),  # features win over the name
        ("haswell", "+avx,+avx2,+fma", "avx2"),
        ("znver3", "", "avx2"),  # a name alone: the named CPU's own features
        ("skylake-avx512", "", "avx512-256"),  # Intel: LLVM's tuning prefers 256-bit vectors
        ("emeraldrapids", "", "avx512-256"),
        ("x86-64-v4", "", "avx512-256"),
        ("skylake-avx512", "-prefer-256-bit", "avx512"),  # ... unless the features turn it off
        ("emeraldrapids", "+avx2,+avx512f,+fma,-prefer-256-bit", "avx512"),
        ("emeraldrapids", "+avx2,+avx512f,+fma", "avx512-256"),
        ("emeraldrapids", "+avx2,-avx512f,-prefer-256-bit", "avx2"),
        ("znver4", "", "avx512"),
        ("znver5", "+avx,+avx2,+fma", "avx512"),  # a flag not named keeps the CPU's own
        ("knl", "", "avx512"),
        ("generic", "", "avx2"),
        ("apple-m1", "+neon,+fp-armv8", "avx2"),  # neither: the 16-register tiles
    ],
)
def test_vector_extension(name: str, features: str, expected: str) -> None:
    assert vector_extension(name, features) == expected


def test_this_process_uses_numba_s_own_target() -> None:
    from numba.core.registry import cpu_target as numba_target

    _triple, name, features = numba_target.target_context.codegen().magic_tuple()
    assert cpu_target.target() == (name, features)
    for dtype in (np.float32, np.float64):
        assert cpu_target.matmul_tile(dtype) == TILES[vector_extension(name, features)][dtype]


#: Run in a fresh interpreter: float32 and float64 products through the fast backend, their
#: error against NumPy in float64, and which tiled kernels were compiled (or loaded) to run them.
PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import minitorch
    from minitorch.accel import cpu_target, tuned_kernels
    from minitorch.jit import serial_twin

    rng = np.random.default_rng(1)
    report = {"target": list(cpu_target.target()), "errors": {}, "ran": []}
    for dtype in (np.float32, np.float64):
        a_np = rng.standard_normal((40, 50)).astype(dtype)
        b_np = rng.standard_normal((50, 70)).astype(dtype)
        a = minitorch.tensor(a_np, backend=minitorch.FastBackend)
        b = minitorch.tensor(b_np, backend=minitorch.FastBackend)
        got = (a @ b).numpy()
        report["errors"][np.dtype(dtype).name] = float(np.max(np.abs(got - a_np.astype(np.float64) @ b_np)))
    for tile in sorted({t for by_dtype in cpu_target.TILES.values() for t in by_dtype.values()}):
        kernel = tuned_kernels.tiled_kernel(tile)
        for compiled in (kernel, serial_twin(kernel)):
            for signature in compiled.signatures:
                report["ran"].append([tile.rows, tile.cols, str(signature[0].dtype)])
    print(json.dumps(report))
    """
)

#: Numba targets set from outside, and the vector extension each stands for.
TARGETS = {
    "avx2": {"NUMBA_CPU_NAME": "znver3", "NUMBA_CPU_FEATURES": ""},
    "avx512-256": {"NUMBA_CPU_NAME": "skylake-avx512", "NUMBA_CPU_FEATURES": ""},
    "avx512": {"NUMBA_CPU_NAME": "skylake-avx512", "NUMBA_CPU_FEATURES": "-prefer-256-bit"},
}


@pytest.mark.slow
@pytest.mark.parametrize("extension", sorted(TARGETS))
def test_a_product_runs_the_tile_of_numba_s_target(extension: str) -> None:
    """With Numba's target set to an AVX2 CPU, or an AVX-512 one on 256-bit or 512-bit vectors,
    products of each dtype run that target's tile, and only it, and give the product. Skipped
    where the machine cannot run the target's code (AVX-512 code on an AVX2 machine)."""
    if extension.startswith("avx512") and "avx512f" not in Path("/proc/cpuinfo").read_text(errors="replace"):
        pytest.skip("this CPU cannot run AVX-512 code")
    env = {**os.environ, **TARGETS[extension]}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["target"] == [
        TARGETS[extension]["NUMBA_CPU_NAME"],
        TARGETS[extension]["NUMBA_CPU_FEATURES"],
    ]
    expected = sorted([t.rows, t.cols, np.dtype(d).name] for d, t in TILES[extension].items())
    assert sorted(report["ran"]) == expected
    assert report["errors"]["float32"] < 1e-4 and report["errors"]["float64"] < 1e-12, report["errors"]
