"""Devices (`minitorch.device`, as `torch.device`): where a tensor's numbers are computed.

A tensor here has a *backend* (`backends.py`): the simple and the fast one compute on the
CPU, the CUDA one on the GPU. PyTorch code names devices instead, so each device stands for
a backend:

    device("cpu")    the default backend, or the fast one when the default is CUDA
    device("cuda")   the CUDA backend (Numba's CUDA kernels, or its simulator)

and `tensor.device`, `tensor.to("cuda")`, `tensor.cpu()`, `module.to(device)` and the
`device=` keyword of the constructors work as in PyTorch. There is one GPU: "cuda" and
"cuda:0" are the same device, another index is refused.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .backends import CudaBackend, FastBackend, get_default_backend
from .tensor_ops import TensorBackend

__all__ = ["device", "backend_for", "device_of"]

TYPES = ("cpu", "cuda")


class device:  # noqa: N801 - PyTorch's name
    """A device: its `type` ("cpu" or "cuda") and `index` (None, or 0 for the one GPU)."""

    def __init__(self, type: Union[str, "device"], index: Optional[int] = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(
                f"device(): expected a string such as 'cpu' or 'cuda:0', got {type.__class__.__name__}"
            )
        name, _, number = type.partition(":")
        if name not in TYPES:
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if number:
            if index is not None or not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(number)
        if index is not None and (name == "cpu" and index != 0 or name == "cuda" and index != 0):
            raise RuntimeError(
                f"minitorch has one {name} device: {name}:{index} does not exist (use '{name}')"
            )
        self.type, self.index = name, index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self) -> int:
        return hash((self.type, self.index or 0))

    def __repr__(self) -> str:
        return (
            f"device(type={self.type!r})"
            if self.index is None
            else f"device(type={self.type!r}, index={self.index})"
        )

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


def _is_cuda(backend: TensorBackend) -> bool:
    return backend is CudaBackend


def backend_for(dev: Union[str, device, TensorBackend]) -> TensorBackend:
    """The backend that computes on `dev` (module docstring); a backend is returned as it is."""
    if isinstance(dev, TensorBackend):
        return dev
    dev = device(dev)
    if dev.type == "cuda":
        from numba import cuda

        if not cuda.is_available():
            raise RuntimeError(
                "device 'cuda': no CUDA GPU is available (set NUMBA_ENABLE_CUDASIM=1 to run the CUDA "
                "backend on Numba's simulator)"
            )
        return CudaBackend
    default = get_default_backend()
    return FastBackend if _is_cuda(default) else default


def device_of(backend: TensorBackend) -> device:
    """The device a backend computes on: cuda:0 for the CUDA backend, cpu for the others."""
    return device("cuda", 0) if _is_cuda(backend) else device("cpu")


def resolve_backend(name: str, backend: Optional[TensorBackend], dev: Any) -> Optional[TensorBackend]:
    """The backend of a constructor given `backend=` and/or `device=` (None: the default)."""
    if dev is None:
        return backend
    chosen = backend_for(dev)
    if backend is not None and backend is not chosen and device_of(backend) != device_of(chosen):
        raise ValueError(
            f"{name}(): backend={backend!r} computes on {device_of(backend)}, but device={dev!r} was asked for"
        )
    return backend if backend is not None else chosen
