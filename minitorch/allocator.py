"""Keep freed memory in the process, so that a training step does not page-fault.

A training step allocates the same large arrays every time — activations saved for
backward, gradients, temporaries — and frees them when the step ends. glibc's `malloc`
serves a large request (from 128 KiB, a threshold it raises up to 32 MiB as it goes) with
fresh pages from the kernel (`mmap`), and gives memory back (`munmap`, or trimming the heap
top) as soon as it is freed. The next step asks for the same sizes and gets fresh pages
again: the first write to each 4 KiB page is a *page fault*, in which the kernel finds and
zeroes a page. PyTorch allocates far less per step (in-place updates, one kernel per layer), so it
hardly notices; here every step paid for it. Measured on this project's training steps
(`python -m bench.train_step` models, 2 threads, float32, `resource.getrusage`):

    char LSTM   7,200 page faults and 20 ms of system time per step → 0
    tiny GPT    3,700 page faults and  9 ms of system time per step → 0

The fix is two `mallopt` settings, made by `tune_malloc()`:

* ``M_MMAP_THRESHOLD`` = 32 MiB (glibc's largest): requests below it come from the heap;
* ``M_TRIM_THRESHOLD`` = 1 GiB: freed heap memory stays in the process for reuse.

The cost: the process keeps the memory of its largest step (its peak does not grow — the
same memory is reused; what changes is that it is not returned between steps). Only on
Linux with glibc; elsewhere nothing happens. Settings already made in the environment
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) are left alone, and
``MINITORCH_MALLOC_TUNING=0`` turns this off.

It is opt-in: importing minitorch changes nothing in the process. The examples' `main` and
the benchmarks call `tune_malloc()` first; a training script of your own can do the same.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

__all__ = ["tune_malloc", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

# mallopt parameters, from glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc refuses more (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1024 * 1024 * 1024


def tune_malloc() -> bool:
    """Apply the two settings above; True when they were applied."""
    if os.environ.get("MINITORCH_MALLOC_TUNING", "1") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = False
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        applied |= mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        applied |= mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    return applied
