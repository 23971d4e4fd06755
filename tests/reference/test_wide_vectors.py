"""Importing minitorch asks LLVM for 512-bit vectors on Intel's AVX-512 CPUs
(`minitorch/wide_vectors.py`), and only where that is safe and wanted.

The branches are checked in this process with a made-up CPU (every machine runs them); the
whole effect — the variable set, the matmul's tiles chosen for it, and 512-bit instructions
in compiled code — in fresh interpreters, where the CPU has AVX-512.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import pytest
from llvmlite.binding.targets import FeatureMap

from minitorch import wide_vectors
from minitorch.accel.cpu_target import vector_extension

pytestmark = pytest.mark.library

TARGET_VARIABLES = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX", "MINITORCH_WIDE_VECTORS")


def cpu(**flags: bool) -> FeatureMap:
    features = FeatureMap()
    features.update(flags)
    return features


@pytest.fixture
def before_numba(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process as it was before Numba's import, with no target variables set."""
    monkeypatch.delitem(sys.modules, "numba")
    for name in TARGET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_an_avx512_cpu_gets_its_own_features_without_the_256_bit_preference(before_numba) -> None:
    before_numba.setattr(llvm, "get_host_cpu_features", lambda: cpu(avx2=True, avx512f=True, sse4a=False))
    assert wide_vectors.prefer_512_bit_vectors() is True
    assert os.environ["NUMBA_CPU_FEATURES"] == "+avx2,+avx512f,-sse4a,-prefer-256-bit"


@pytest.mark.parametrize(
    ("flags", "environment"),
    [
        ({"avx2": True, "avx512f": False}, {}),  # no AVX-512: nothing wider to prefer
        ({"avx2": True}, {}),  # LLVM does not name it at all (not an x86 CPU)
        ({"avx512f": True}, {"NUMBA_CPU_NAME": "haswell"}),  # the user chose the target
        ({"avx512f": True}, {"NUMBA_CPU_FEATURES": ""}),
        ({"avx512f": True}, {"NUMBA_ENABLE_AVX": "0"}),  # Numba removes AVX itself
        ({"avx512f": True}, {"MINITORCH_WIDE_VECTORS": "0"}),
    ],
)
def test_nothing_changes_where_it_should_not(before_numba, flags: dict, environment: dict) -> None:
    before_numba.setattr(llvm, "get_host_cpu_features", lambda: cpu(**flags))
    for name, value in environment.items():
        before_numba.setenv(name, value)
    assert wide_vectors.prefer_512_bit_vectors() is False
    assert os.environ.get("NUMBA_CPU_FEATURES") == environment.get("NUMBA_CPU_FEATURES")


def test_nothing_changes_once_numba_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Numba's compiler, made when Numba is imported, has its target already."""
    assert "numba" in sys.modules
    for name in TARGET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: cpu(avx512f=True))
    assert wide_vectors.prefer_512_bit_vectors() is False
    assert "NUMBA_CPU_FEATURES" not in os.environ


#: In a fresh interpreter: what minitorch did, the matmul's tile family, and the widest
#: vector register of a float32 loop Numba compiled (`numba-first`: Numba imported first).
PROBE = textwrap.dedent(
    r"""
    import json, os, re, sys
    if sys.argv[1] == "numba-first":
        import numba
    import numpy as np
    import minitorch
    import numba
    from minitorch.accel import cpu_target

    @numba.njit
    def axpy(out, a, b):
        for i in range(out.size):
            out[i] = a[i] * b[i] + a[i]

    x = np.ones(256, np.float32)
    axpy(x.copy(), x, x)
    asm = axpy.inspect_asm(axpy.signatures[0])
    widths = set(re.findall(r"\tv(?:fmadd\w*|add|mul)ps\t.*%([xyz]mm)\d+$", asm, re.M))
    print(json.dumps({
        "set": minitorch.wide_vectors.SET_HERE,
        "features": os.environ.get("NUMBA_CPU_FEATURES"),
        "extension": cpu_target.vector_extension(*cpu_target.target()),
        "widest": max(widths) if widths else None,
    }))
    """
)


def probe(order: str) -> dict:
    env = {name: value for name, value in os.environ.items() if name not in TARGET_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, order], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


HOST_HAS_AVX512 = bool(llvm.get_host_cpu_features().get("avx512f", False))


@pytest.mark.skipif(not HOST_HAS_AVX512, reason="this CPU has no AVX-512")
def test_on_an_avx512_cpu_the_kernels_use_512_bit_vectors() -> None:
    report = probe("minitorch-first")
    assert report["set"] is True
    assert report["features"] == llvm.get_host_cpu_features().flatten() + ",-prefer-256-bit"
    assert report["extension"] == "avx512"  # the tiles for 512-bit registers
    assert report["widest"] == "zmm"


def test_numba_imported_first_keeps_llvm_s_choice_and_tiles_that_fit_it() -> None:
    """Whatever the CPU: nothing set, and the tiles follow the vectors LLVM then uses
    (on an Intel AVX-512 CPU, 256-bit ones)."""
    report = probe("numba-first")
    assert report["set"] is False and report["features"] is None
    expected = vector_extension(llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
    assert report["extension"] == expected
    if expected == "avx512":
        assert report["widest"] == "zmm"
    elif report["widest"] is not None:  # AVX2, or AVX-512 on 256 bits: never zmm
        assert report["widest"] in ("xmm", "ymm")
