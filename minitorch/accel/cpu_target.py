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

| target                                        | vectors used  | float32 | float64 |
|-----------------------------------------------|---------------|---------|---------|
| AVX-512, 512-bit vectors (Zen 4, Zen 5; Intel | 32 × 512 bits | 8 × 32  | 12 × 16 |
| with `minitorch.wide_vectors`)                |               |         |         |
| AVX-512, 256-bit vectors (Intel, LLVM's own   | 32 × 256 bits | 12 × 16 | 6 × 16  |
| tuning: ``prefer-256-bit``)                   |               |         |         |
| AVX2 (Haswell …, Zen 1–3), and the rest       | 16 × 256 bits | 6 × 16  | 6 × 8   |

Which vectors LLVM uses on an AVX-512 CPU is a tuning of the target, not a feature of the CPU:
for Intel's CPUs it prefers 256-bit vectors unless the features say ``-prefer-256-bit``,
which `minitorch.wide_vectors` adds when it can (Numba imported after minitorch). The
middle row's tiles hold 24 sums of 256 bits in the 32 registers that AVX-512 has at every width.

Measured on an AMD EPYC Zen 5 (family 26): one micro-kernel call from Python, one core,
inner dimension 256, packed panels in cache (GFLOP/s; AVX2 code made with
``NUMBA_CPU_NAME=znver3``): AVX2 float32 6 × 16 77, the former 8 × 16 37 (its 16
accumulators and the loaded values need more than 16 registers: it spills); AVX2 float64
6 × 8 39, 8 × 16 29; AVX-512 float32 8 × 32 166, 8 × 16 120; AVX-512 float64 12 × 16 93,
8 × 16 79. On an Intel Xeon, Emerald Rapids (family 6, model 207), whole float32 products
of 512 × 512 through the fast backend with each tile in turn, 2 cores, GFLOP/s: 256-bit
vectors 6 × 16 107, 12 × 16 125, 8 × 32 95; 512-bit vectors 8 × 32 226 (float64, 256-bit
vectors: 6 × 16 81, 12 × 16 59). Whole products: BENCHMARKS.md; the two kinds of vectors:
`minitorch.wide_vectors`.

CPUs outside these rows (ARM's NEON: 32 × 128 bits; SSE only) get the AVX2 tiles: correct on
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
    "avx512-256": {np.float32: Tile(12, 16), np.float64: Tile(6, 16)},
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

#: The CPUs above whose LLVM tuning prefers 256-bit vectors: every Intel one (and the generic
#: x86-64-v4, tuned as Skylake-X); Knights Landing and AMD's use 512 bits.
PREFER_256_BIT_CPUS = AVX512_CPUS - {"knl", "knm", "znver4", "znver5"}


def target() -> tuple[str, str]:
    """(CPU name, features) of the code Numba generates in this process, as its code
    generator reports them (the features are "" when only a name was given)."""
    from numba.core.registry import cpu_target

    _triple, name, features = cpu_target.target_context.codegen().magic_tuple()
    return name, features


def vector_extension(name: str, features: str) -> str:
    """The tile family of a target: ``avx512`` when its code uses 512-bit vectors,
    ``avx512-256`` when it has AVX-512 but LLVM vectorizes with 256 bits, else ``avx2`` (also for
    CPUs that have neither: see the module docstring).

    As LLVM reads a target: the CPU `name` brings its own features and tuning, and each
    ``+flag`` / ``-flag`` of `features` turns one on or off (Numba's own list names every
    feature of the host, so there the list decides).
    """
    flags = {flag[1:]: flag[0] == "+" for flag in features.split(",") if flag[:1] in ("+", "-")}
    if not flags.get("avx512f", name in AVX512_CPUS):
        return "avx2"
    if flags.get("prefer-256-bit", name in PREFER_256_BIT_CPUS):
        return "avx512-256"
    return "avx512"


@lru_cache(maxsize=None)
def matmul_tile(dtype: np.dtype | type) -> Tile:
    """The register tile for products of `dtype` (float32 or float64) on Numba's target."""
    return TILES[vector_extension(*target())][np.dtype(dtype).type]
