"""`minitorch.cuda`, as `torch.cuda`: whether the CUDA backend can run here, so that PyTorch's
idiom works unchanged:

    device = minitorch.device("cuda" if minitorch.cuda.is_available() else "cpu")

Numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`) counts as available: the CUDA backend runs
on it, slowly, on any machine.
"""

from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available() -> bool:
    """Whether a GPU (or Numba's CUDA simulator) can run the CUDA backend."""
    from numba import cuda

    return bool(cuda.is_available())


def device_count() -> int:
    """How many CUDA devices minitorch uses: 1 where one is available, else 0."""
    return 1 if is_available() else 0
