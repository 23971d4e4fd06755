"""512-bit vectors for the kernels on Intel CPUs with AVX-512.

Numba compiles with LLVM, and LLVM's tuning for Intel's AVX-512 CPUs (Skylake-X to Emerald
Rapids, the Ice Lake and Tiger Lake laptops) *prefers 256-bit vectors*: it has 512-bit
registers and instructions, but its loop and SLP vectorizers fill only the lower half of them
(the tuning ``prefer-256-bit``, chosen when 512-bit instructions slowed the clock of the first
of these CPUs). On AMD's Zen 4 and Zen 5 it uses all 512 bits. minitorch's kernels are faster
with 512-bit vectors on Intel too. Products of n × n matrices through the fast backend
(`python -m bench --only matmul`, GFLOP/s, n = 256 / 512 / 1024), on an Intel Xeon, Emerald
Rapids (family 6, model 207), 2 cores, before and after this module:

    float32   256-bit vectors (LLVM's choice)   119 /  97 / 121      NumPy 292 / 245 / 301
              512-bit vectors                   236 / 242 / 255      NumPy 272 / 312 / 317
    float64   256-bit vectors                    36 /  40 /  42      NumPy  91 / 108 / 133
              512-bit vectors                   113 / 120 / 127      NumPy 137 / 144 / 160

(the matmul's tiles are sized for 32 registers of 512 bits: on 256-bit vectors they spill).
The char-LSTM step (`python -m bench.train_step`) went from 67 to 46–55 ms.

So importing minitorch (this module, which its ``__init__`` imports first, before anything
imports Numba) asks LLVM for 512-bit vectors: it sets ``NUMBA_CPU_FEATURES`` to this CPU's own
features (as Numba reads them from LLVM) plus ``-prefer-256-bit``. The code is still this
CPU's code; the variable is inherited by the processes this one starts, so they compile the
same code. Numba files its on-disk cache under the features, so code compiled with and
without them never mixes.

It changes nothing when:

* the CPU has no AVX-512 (there is no wider vector to prefer);
* ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES`` is set: the user chose the target (the
  benchmarks' ``--code avx2`` does);
* ``NUMBA_ENABLE_AVX=0`` (Numba then removes every AVX feature itself);
* Numba was imported before minitorch: its compiler already exists, with its target fixed.
  The kernels then run on 256-bit vectors, and `minitorch.accel.cpu_target` picks matmul
  tiles that fit 32 registers of 256 bits;
* ``MINITORCH_WIDE_VECTORS=0``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["prefer_512_bit_vectors", "SET_HERE"]

#: The LLVM feature that turns the 256-bit preference off.
NO_256_BIT_PREFERENCE = "-prefer-256-bit"


def prefer_512_bit_vectors() -> bool:
    """Set ``NUMBA_CPU_FEATURES`` to the host's features plus ``-prefer-256-bit`` where that
    makes LLVM use 512-bit vectors (see the module docstring); True when it did."""
    if os.environ.get("MINITORCH_WIDE_VECTORS", "1") == "0" or "numba" in sys.modules:
        return False
    if any(name in os.environ for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")):
        return False
    if os.environ.get("NUMBA_ENABLE_AVX", "1") == "0":
        return False
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
    except (ImportError, RuntimeError):  # no llvmlite, or LLVM cannot read this CPU
        return False
    if not features.get("avx512f", False):
        return False
    os.environ["NUMBA_CPU_FEATURES"] = f"{features.flatten()},{NO_256_BIT_PREFERENCE}"
    return True


#: Whether importing this module (minitorch's ``__init__`` does, first) set the features.
SET_HERE = prefer_512_bit_vectors()
