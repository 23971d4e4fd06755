"""Which CPU Numba compiles for, and the matmul tile that fits its vector registers.

Numba compiles for the machine it runs on, unless ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``
name another target (``NUMBA_CPU_NAME=znver3 NUMBA_CPU_FEATURES=""`` makes AVX2 code on an
AVX-512 machine, so that both kinds of code can be measured on one machine). Its code
generator reports the target it uses as ``magic_tuple() = (triple, CPU name, features)`` —
the same tuple keys Numba's on-disk cache, so a choice made from it is never mixed up with
code compiled for another target.

The tiled matmul (`tuned_kernels.tiled_kernel`) holds an MR × NR tile of sums in
vector registers. How many fit depends on the vector extension, as BLIS chooses its
micro-kernel per architecture:

| target                                  | registers       | float32 | float64 |
|-----------------------------------------|-----------------|---------|---------|
| AVX-512 (Skylake-X …, Zen 4, Zen 5)     | 32 × 512 bits   | 8 × 32  | 12 × 16 |
| AVX2 (Haswell …, Zen 1–3), and the rest | 16 × 256 bits   | 6 × 16  | 6 × 8   |

Measured on an AMD EPYC Zen 5 (family 26): one micro-kernel call from Python, one core,
inner dimension 256, packed panels in cache (GFLOP/s; AVX2 code made with
``NUMBA_CPU_NAME=znver3``): AVX2 float32 6 × 16 77, the former 8 × 16 37 (its 16
accumulators and the loaded values need more than 16 registers: it spills); AVX2 float64
6 × 8 39, 8 × 16 29; AVX-512 float32 8 × 32 166, 8 × 16 120; AVX-512 float64 12 × 16 93,
8 × 16 79. Whole products: BENCHMARKS.md.

CPUs outside both rows (ARM's NEON: 32 × 128 bits; SSE only) get the AVX2 tiles: correct on
every CPU (every tile computes the same sums), not measured there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

__all__ = ["Tile", "target", "vector_extension", "matmul_tile", "TILES"]


class Tile(NamedTuple):
    """An MR × NR register tile of the tiled matmul; `kernel` names its micro-kernel in
    `matmul_tiles`."""

    rows: int
    cols: int

    @property
    def kernel(self) -> str:
        return f"micro_{self.rows}x{self.cols}"

    def __str__(self) -> str:
        return f"{self.rows}×{self.cols}"


#: The tile per vector extension and dtype (the table of the module docstring).
TILES: dict[str, dict[type, Tile]] = {
    "avx512": {np.float32: Tile(8, 32), np.float64: Tile(12, 16)},
    "avx2": {np.float32: Tile(6, 16), np.float64: Tile(6, 8)},
}

#: LLVM's x86 CPU names with AVX-512, for a target named without a feature list
#: (``NUMBA_CPU_FEATURES=""``: LLVM then takes the named CPU's own features).
AVX512_CPUS = {
    "knl", "knm", "skylake-avx512", "skx", "cascadelake", "cooperlake", "cannonlake",
    "icelake-client", "icelake-server", "rocketlake", "tigerlake", "sapphirerapids",
    "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids",
    "znver4", "znver5", "x86-64-v4",
}  # fmt: skip


def target() -> tuple[str, str]:
    """(CPU name, features) of the code Numba generates in this process, as its code
    generator reports them (the features are "" when only a name was given)."""
    from numba.core.registry import cpu_target

    _triple, name, features = cpu_target.target_context.codegen().magic_tuple()
    return name, features


def vector_extension(name: str, features: str) -> str:
    """The tile family of a target: `avx512` when its code may use AVX-512 registers, else
    `avx2` (also for CPUs that have neither: see the module docstring)."""
    if features:
        enabled = {flag[1:] for flag in features.split(",") if flag.startswith("+")}
        return "avx512" if "avx512f" in enabled else "avx2"
    return "avx512" if name in AVX512_CPUS else "avx2"


@lru_cache(maxsize=None)
def matmul_tile(dtype: np.dtype | type) -> Tile:
    """The register tile for products of `dtype` (float32 or float64) on Numba's target."""
    return TILES[vector_extension(*target())][np.dtype(dtype).type]
