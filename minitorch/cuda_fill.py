"""Filling a GPU array with one value, without sending anything from the host.

`device_memory` makes the GPU copy of a new tensor this way (`Tensor.new_full`, the outputs
of reductions, which start at 0, 1 or −∞): all-zero bytes (0, 0.0, False) by a memset, any
other value by a kernel of one thread per entry. Imported only when a GPU copy is made.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda
from numba.cuda.cudadrv import driver  # the simulator's, under NUMBA_ENABLE_CUDASIM

__all__ = ["fill_on_device"]

THREADS_PER_BLOCK = 256


@cuda.jit
def _fill(out: Any, value: Any) -> None:
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


def fill_on_device(device: Any, value: Any) -> None:
    """Every entry of the GPU array `device` ← `value`."""
    if not np.asarray(value).tobytes().strip(b"\0"):
        driver.device_memset(device, 0, device.nbytes)
        return
    blocks = (device.size + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    _fill[blocks, THREADS_PER_BLOCK](device, value)
