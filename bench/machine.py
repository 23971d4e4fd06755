"""What the benchmarks say about the machine they ran on: figures compare only within one run.

Every figure is for one CPU and one kind of code. Numba compiles for the CPU it runs on;
`CODE["avx2"]` makes every library of a benchmark run AVX2 code on an AVX-512 machine (the
code most students' laptops run), so both tables can be measured on one machine:

* Numba (minitorch's kernels): ``NUMBA_CPU_NAME=haswell`` and no extra features, the first
  CPU with AVX2 and FMA (`minitorch.accel.cpu_target` then picks the AVX2 matmul tiles);
* NumPy's OpenBLAS: ``OPENBLAS_CORETYPE=Haswell``;
* PyTorch: ``ATEN_CPU_CAPABILITY=avx2`` (its own kernels), ``MKL_ENABLE_INSTRUCTIONS=AVX2``
  and ``ONEDNN_MAX_CPU_ISA=AVX2`` (its matrix products).

These variables are read when each library loads, so a benchmark sets them for the fresh
processes it starts (`code_env`), or starts itself again with them (`python -m bench`).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

#: The environment of each kind of code: "native" changes nothing.
CODE: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {
        "NUMBA_CPU_NAME": "haswell",
        "NUMBA_CPU_FEATURES": "",
        "OPENBLAS_CORETYPE": "Haswell",
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    },
}


#: How BENCHMARKS.md names each kind of code (its section titles).
CODE_LABELS = {"native": "native code of the machine", "avx2": "AVX2 code"}

#: How the tables name `cpu_target.vector_extension`'s answers.
LABELS = {"avx512": "AVX-512", "avx512-256": "AVX-512 (256-bit vectors)", "avx2": "AVX2"}


def cpu_name() -> str:
    """The CPU's model name, family and model, and its vector extensions (Linux), or what
    `platform` knows: e.g. "AMD EPYC (family 26, model 2: avx2, fma, avx512f)"."""
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip():
                break  # the first processor is enough
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        fields = {}
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    simd = ", ".join(f for f in ("avx2", "fma", "avx512f") if f in flags) or "no AVX2"
    return f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}: {simd})"


def cpu_label() -> str:
    """The CPU without its extensions, as BENCHMARKS.md's section titles name it (one section
    per CPU and kind of code): e.g. "AMD EPYC (family 26, model 2)"."""
    return cpu_name().split(":")[0] + (")" if ":" in cpu_name() else "")


def code_env(code: str) -> dict[str, str]:
    """This process's environment with `code`'s settings added."""
    return {**os.environ, **CODE[code]}


def runs_code(code: str) -> bool:
    """Whether this process was started with `code`'s settings."""
    return all(os.environ.get(name) == value for name, value in CODE[code].items())


def code_line() -> str:
    """The code minitorch runs in this process: Numba's target and the matmul tiles it
    selects (imports Numba: call it where minitorch's figures are measured)."""
    import numpy as np

    from minitorch.accel.cpu_target import matmul_tile, target, vector_extension

    name, features = target()
    tiles = ", ".join(f"{np.dtype(d).name} {matmul_tile(d)}" for d in (np.float32, np.float64))
    how = "given by NUMBA_CPU_NAME" if os.environ.get("NUMBA_CPU_NAME") else "this machine's CPU"
    return (
        f"Code: Numba compiles for {name} ({how}): {LABELS[vector_extension(name, features)]} "
        f"kernels, matmul tiles {tiles}"
    )
