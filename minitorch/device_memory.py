"""Where a CUDA tensor's values live: in host memory, in GPU memory, or in both.

Every tensor keeps its values in a host NumPy array, its storage (`TensorData._buffer`;
views of a tensor share it). A tensor of the CUDA backend also gets a *mirror*: one array in
GPU memory per host array — per *root*, the array that owns the memory, of which the
storages of views are slices — made the first time a CUDA kernel reads or writes it. The
mirror records which copy holds the newest values:

    HOST    the host array: it is new, or host code has used it since; a kernel that
            needs it copies it over first
    BOTH    the two copies are equal
    DEVICE  a kernel wrote the GPU copy; host code must fetch it first

The CUDA launchers (`cuda_ops`) take `on_device(array)` — copied over only when the host
copy is newer — and call `written_on_device(array, …)` after a kernel wrote it, so a chain
of CUDA ops (a forward pass, a backward pass) runs without passing through host memory.

Host code reaches the values through `TensorData._storage`, which calls `on_host`: a
DEVICE mirror is copied back, and every mirror that host code reaches becomes HOST, because
host code may write what it reads (`x[0] = 1`, `load_state_dict`, an optimizer step of a
CPU parameter). So kernels and host code always see the same numbers, whatever host code
does; the price of a host access is a transfer or two, which `transfers` counts (the tests
read it). A program that never uses the CUDA backend has no mirrors, and `on_host` returns
at its first test.

Two cases keep the plain way (copy in, launch, copy out at once): an array whose root is
not one contiguous block, and a storage of another dtype than its root's.

When a root dies its GPU array is not freed but kept in `POOL` for the next new GPU copy of
the same size and dtype, as PyTorch's caching allocator does: on an H200 a `cudaMalloc` and
Numba's device-array object per output cost more than the kernels of a small model's step.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "filled",
    "on_device",
    "written_on_device",
    "on_host",
    "send",
    "transfers",
    "Transfers",
    "newest_copy",
]

HOST, BOTH, DEVICE = "host", "both", "device"


class _Mirror:
    """The GPU copy of one root array (held weakly: the mirror must not keep it alive):
    `device`, the root's entries as one flat GPU array; `newest`, which copy holds the newest
    values. A root that was made holding one value everywhere (`filled`) has no GPU copy
    yet, only that `fill`."""

    __slots__ = ("root", "device", "newest", "fill")

    def __init__(self, root: weakref.ref, device: Any, newest: str, fill: Any = None) -> None:
        self.root, self.device, self.newest, self.fill = root, device, newest, fill


#: id(root array) → its mirror; an entry leaves when its root is garbage collected. Never
#: rebound (`TensorData._storage` tests this very dict: empty means no CUDA storage at all).
MIRRORS: dict[int, _Mirror] = {}


class _Pool:
    """The pool of the module docstring: GPU arrays whose root died, by (entries, dtype), kept
    while their bytes stay under `limit`. Reuse is safe at once: every kernel and copy runs on
    the default stream, in order."""

    def __init__(self, limit: int) -> None:
        self.free: dict[tuple[int, str], list[Any]] = {}
        self.bytes, self.limit = 0, limit

    def take(self, size: int, dtype: np.dtype) -> Any:
        """A kept array of `size` entries of `dtype` (its values: anything), or None."""
        kept = self.free.get((size, dtype.str))
        if not kept:
            return None
        device = kept.pop()
        self.bytes -= device.nbytes
        return device

    def give(self, device: Any) -> None:
        """Keep `device` for reuse, unless that would pass the limit (then it is freed)."""
        if self.bytes + device.nbytes <= self.limit:
            self.free.setdefault((device.size, device.dtype.str), []).append(device)
            self.bytes += device.nbytes


POOL = _Pool(limit=1 << 30)


def _new_device_array(size: int, dtype: np.dtype) -> Any:
    """A flat GPU array of `size` entries (its values: anything), from the pool if it has one."""
    device = POOL.take(size, dtype)
    if device is None:
        from numba import cuda

        device = cuda.device_array(size, dtype)
    return device


def _recycle(mirror: _Mirror | None, pool: _Pool = POOL) -> None:
    """The root of `mirror` died: its GPU array, if it has one, goes to the pool."""
    if mirror is not None and mirror.device is not None:
        pool.give(mirror.device)


@dataclass
class Transfers:
    """Copies between host and GPU memory since the start (or the last `reset`)."""

    to_device: int = 0
    to_host: int = 0
    bytes_to_device: int = 0
    bytes_to_host: int = 0

    def reset(self) -> None:
        self.to_device = self.to_host = self.bytes_to_device = self.bytes_to_host = 0


transfers = Transfers()


def _root(array: np.ndarray) -> np.ndarray:
    """The array that owns `array`'s memory (views of one tensor share a root)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _mirror_of(root: np.ndarray) -> _Mirror | None:
    mirror = MIRRORS.get(id(root))
    return mirror if mirror is not None and mirror.root() is root else None


def _offset(array: np.ndarray, root: np.ndarray) -> int | None:
    """Where the 1-D storage `array` starts inside its contiguous root, in elements; None when
    it is not a plain slice of it (another dtype, or a step)."""
    if array is root and array.ndim == 1:  # a tensor's own storage, the common case: no arithmetic
        return 0
    if (
        array.dtype != root.dtype
        or array.ndim != 1
        or (array.size > 1 and array.strides[0] != array.itemsize)
    ):
        return None
    start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return start // array.itemsize


def send(host: np.ndarray) -> Any:
    """A new copy of `host` in GPU memory (counted in `transfers`)."""
    from numba import cuda

    transfers.to_device += 1
    transfers.bytes_to_device += host.nbytes
    return cuda.to_device(host)


def _send_into(device: Any, host: np.ndarray) -> None:
    """Copy `host` into the GPU array `device` (counted in `transfers`)."""
    transfers.to_device += 1
    transfers.bytes_to_device += host.nbytes
    device.copy_to_device(host)


def _to_host(device: Any, host: np.ndarray) -> None:
    transfers.to_host += 1
    transfers.bytes_to_host += host.nbytes
    device.copy_to_host(host)


def _add(root: np.ndarray, device: Any, newest: str, fill: Any = None) -> _Mirror:
    key = id(root)
    # the entry goes when the root does, its GPU array to the pool; the dict and the
    # function are bound here because module globals are gone when the last arrays die at exit
    forget = lambda _, key=key, mirrors=MIRRORS, recycle=_recycle: recycle(mirrors.pop(key, None))  # noqa: E731
    mirror = MIRRORS[key] = _Mirror(weakref.ref(root, forget), device, newest, fill)
    return mirror


def filled(array: np.ndarray, value: Any) -> None:
    """`array` (a new storage of the CUDA backend: `Tensor.new_full`, the outputs of its
    operations) holds `value` in every entry: its GPU copy, when a kernel first needs it, is
    filled on the GPU, and nothing is sent."""
    root = _root(array)
    if root.flags.c_contiguous and root.size and _mirror_of(root) is None:
        _add(root, None, HOST, root.dtype.type(value))


def on_device(array: np.ndarray, overwritten: bool = False) -> Any:
    """The GPU copy of the values of `array` (a storage, or any NumPy array a kernel reads).

    Copied over from the host only when the host holds newer values (or no copy exists yet).
    `overwritten`: the kernel will write every element of `array` and read none, so a first
    copy need not carry the host's values (a fresh output's zeros)."""
    root = _root(array)
    if not root.flags.c_contiguous:
        return send(np.ascontiguousarray(array))
    offset = _offset(array, root)
    if offset is None:
        return send(np.ascontiguousarray(array))
    mirror = _mirror_of(root)
    # `whole`: the kernel writes all of the root, so no values need to be there first. The
    # new GPU array then holds nothing yet: the mirror stays HOST until the kernel's write
    # is recorded, so that an input that shares the root (x.map(out=x)) is still sent.
    whole = overwritten and array.size == root.size
    if mirror is None:
        mirror = _add(root, _new_device_array(root.size, root.dtype), HOST)
        if not whole:
            _send_into(mirror.device, root.reshape(-1))
            mirror.newest = BOTH
    elif mirror.device is None:  # made filled with one value: fill the GPU copy there
        mirror.device = _new_device_array(root.size, root.dtype)
        if not whole:
            from .cuda_fill import fill_on_device

            fill_on_device(mirror.device, mirror.fill)
            mirror.newest = BOTH
    elif mirror.newest == HOST and not whole:
        _send_into(mirror.device, root.reshape(-1))
        mirror.newest = BOTH
    if offset == 0 and array.size == root.size:
        return mirror.device  # the whole copy: slicing a GPU array costs ~40 µs in Numba
    return mirror.device[offset : offset + array.size]


def written_on_device(array: np.ndarray, device: Any) -> None:
    """A kernel wrote `device` (what `on_device(array)` returned): the newest values of
    `array` are on the GPU now. Without a mirror they are copied back at once."""
    root = _root(array)
    mirror = _mirror_of(root)
    if mirror is not None and _offset(array, root) is not None:
        mirror.newest = DEVICE
        return
    values = np.empty(array.shape, array.dtype)
    _to_host(device, values)
    array[...] = values


def on_host(array: np.ndarray) -> np.ndarray:
    """`array`, holding the newest values (fetched from the GPU when a kernel wrote them
    there). Its mirror, if any, becomes HOST: the caller may write the values."""
    if not MIRRORS:
        return array
    root = _root(array)
    mirror = _mirror_of(root)
    if mirror is None:
        return array
    if mirror.device is None:  # filled, never on the GPU: the host may change the values
        del MIRRORS[id(root)]
        return array
    if mirror.newest == DEVICE:
        _to_host(mirror.device, root.reshape(-1))  # a view: copied into the root
    mirror.newest = HOST
    return array


def newest_copy(array: np.ndarray) -> str:
    """Which copy of `array`'s values is the newest: "host", "both" or "device" (tests,
    and the curious); "host" for an array without a mirror."""
    mirror = _mirror_of(_root(array))
    return HOST if mirror is None else mirror.newest
