"""Stage A3 (CUDA): the tensor kernels on a GPU, with Numba CUDA.

The kernels compute exactly what the kernels of `tensor_ops` compute (same signatures, any
strides, broadcasting), but one GPU *thread* computes one small piece of the output, and the
threads run in parallel.

A CUDA launch ``kernel[blocks, threads](args…)`` starts a *grid* of ``blocks`` thread
blocks of ``threads`` threads each. Inside the kernel a thread finds out who it is from
``cuda.blockIdx``, ``cuda.blockDim`` and ``cuda.threadIdx``. Threads of one block can share
fast on-chip memory (``cuda.shared.array``) and wait for each other (``cuda.syncthreads()``);
threads of different blocks cannot. Each kernel below says in its docstring how it splits
the work between blocks and threads:

* map / zip: one thread per output element (a 1-D grid of 1-D blocks);
* reduce: one block per output element; its threads fold the reduced dimension together
  (a strided loop, then a tree in shared memory);
* matmul: one TILE × TILE block per TILE × TILE tile of one output matrix, computed from
  tiles of a and b staged in shared memory.

How data moves: every tensor has its storage in host (CPU) memory as a NumPy array, and a
tensor of this backend also a copy in GPU memory, made when a kernel first needs it
(`device_memory`). A kernel reads and writes the GPU copies; the host gets the values back
only when host code asks for them (`x.numpy()`, `loss.item()`, printing). Each copy costs a
PCIe transfer (~10 µs latency plus size / ~20 GB/s), which is why a chain of operations
must not pass through host memory: a training step (forward, backward, clipping and the
optimizer's update, `optim/on_gpu.py`) sends its new inputs over and brings back only the
loss it is asked for. Shapes and strides, a few integers each, are sent once per distinct
layout and kept.

Compilation is lazy: importing this module compiles nothing. A kernel is compiled the first
time it runs, for each (scalar function, dtype) pair, and kept in `_KERNELS` for the rest of
the process. Float32 and float64 get separate kernels because shared arrays are typed.

Tests run without a GPU under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` set before
Numba is imported): it runs every GPU thread as a Python thread, slowly but with bounds
checks, which makes it a good debugger for kernels.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import numba
import numpy as np
from numba import cuda

from .cuda_simulator import make_shared_arrays_atomic
from .device_memory import newest_copy, on_device, send, written_on_device
from .fast_paths import cuda_twin
from .tensor_data import MAX_DIMS, broadcast_index, index_to_position, to_index
from .tensor_ops import TensorOps

if TYPE_CHECKING:
    from .tensor import Tensor
    from .tensor_data import Shape, Storage, Strides

#: True when kernels run in Numba's CUDA simulator instead of on a GPU.
SIMULATOR: bool = bool(numba.config.ENABLE_CUDASIM)
if SIMULATOR:
    make_shared_arrays_atomic()  # a race in the simulator itself (see cuda_simulator)

#: Threads per block for map / zip (at most) and reduce (at most). A multiple of the warp
#: size (32 threads that the GPU runs in lockstep) and a power of two (for the reduce tree).
THREADS_PER_BLOCK = 256

#: Side of the square tiles of the shared-memory matmul: blocks of TILE × TILE threads.
TILE = 16

#: CUDA limit on gridDim.y and gridDim.z (matmul puts row tiles on y and batches on z).
MAX_GRID_YZ = 65535

# Index helpers of tensor_data, compiled for the GPU on first use (each thread calls them).
_to_index = cuda.jit(device=True)(to_index)
_broadcast_index = cuda.jit(device=True)(broadcast_index)
_index_to_position = cuda.jit(device=True)(index_to_position)

#: Compiled kernels, keyed by (kind, scalar function, dtype): each compiles once per process.
_KERNELS: dict[tuple[str, Any, np.dtype], Any] = {}
_DEVICE_FNS: dict[Callable[..., float], Any] = {}


def device_function(fn: Callable[..., float]) -> Any:
    """The scalar function `fn` (e.g. `operators.add`) compiled for the GPU, cached."""
    if fn not in _DEVICE_FNS:
        _DEVICE_FNS[fn] = cuda.jit(device=True)(fn)
    return _DEVICE_FNS[fn]


def _cached(kind: str, fn: Any, dtype: np.dtype, build: Callable[[], Any]) -> Any:
    key = (kind, fn, np.dtype(dtype))
    if key not in _KERNELS:
        _KERNELS[key] = build()
    return _KERNELS[key]


# ## Task 3.3: CUDA map / zip / reduce


def _map_kernel(fn: Callable[[float], float]) -> Any:
    """Build the CUDA map kernel for the scalar function `fn`."""
    fn_gpu = device_function(fn)

    def _map(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        in_storage: Storage,
        in_shape: Shape,
        in_strides: Strides,
    ) -> None:
        """out[i] = fn(in[broadcast(i)]): one thread per output element.

        Grid: a 1-D grid of 1-D blocks; thread ``t`` of block ``b`` handles the output
        ordinal ``b · blockDim.x + t``. The launch rounds the thread count up to whole
        blocks, so threads whose ordinal is ≥ the output size must do nothing.
        Index arrays live in per-thread local memory (`cuda.local.array`, MAX_DIMS long),
        cut to the tensor's number of dimensions.
        """
        # BEGIN SOLUTION 3.3
        out_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(out_shape)]
        in_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(in_shape)]
        ordinal = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        size = 1
        for d in range(len(out_shape)):
            size *= out_shape[d]
        if ordinal < size:
            _to_index(ordinal, out_shape, out_index)
            _broadcast_index(out_index, out_shape, in_shape, in_index)
            value = in_storage[_index_to_position(in_index, in_strides)]
            out[_index_to_position(out_index, out_strides)] = fn_gpu(value)
        # END SOLUTION 3.3

    return cuda.jit(_map)


def _zip_kernel(fn: Callable[[float, float], float]) -> Any:
    """Build the CUDA zip kernel for the scalar function `fn`."""
    fn_gpu = device_function(fn)

    def _zip(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        b_storage: Storage,
        b_shape: Shape,
        b_strides: Strides,
    ) -> None:
        """out[i] = fn(a[broadcast(i)], b[broadcast(i)]): one thread per output element.

        Same decomposition as map: a 1-D grid of 1-D blocks, output ordinal
        ``blockIdx.x · blockDim.x + threadIdx.x``, threads past the end do nothing.
        """
        # BEGIN SOLUTION 3.3
        out_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(out_shape)]
        a_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(a_shape)]
        b_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(b_shape)]
        ordinal = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        size = 1
        for d in range(len(out_shape)):
            size *= out_shape[d]
        if ordinal < size:
            _to_index(ordinal, out_shape, out_index)
            _broadcast_index(out_index, out_shape, a_shape, a_index)
            _broadcast_index(out_index, out_shape, b_shape, b_index)
            a_value = a_storage[_index_to_position(a_index, a_strides)]
            b_value = b_storage[_index_to_position(b_index, b_strides)]
            out[_index_to_position(out_index, out_strides)] = fn_gpu(a_value, b_value)
        # END SOLUTION 3.3

    return cuda.jit(_zip)


def _reduce_kernel(fn: Callable[[float, float], float], dtype: np.dtype) -> Any:
    """Build the CUDA reduce kernel for `fn` with a shared-memory cache of `dtype`."""
    fn_gpu = device_function(fn)
    cache_type = numba.from_dtype(np.dtype(dtype))
    cache_size = THREADS_PER_BLOCK

    def _reduce(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        reduce_dim: int,
    ) -> None:
        """out[o] = fn(out[o], fold of a[o with reduce_dim = 0 … n−1]): one block per o.

        Grid: one block per output element (output ordinal = ``blockIdx.x``); ``blockDim.x``
        threads, a power of two ≤ THREADS_PER_BLOCK. `fn` must be associative (add, mul, max).

        1. Strided loop: thread t folds a[…, t], a[…, t + blockDim.x], a[…, t + 2·blockDim.x]
           … into a private accumulator and stores it in the shared array ``cache[t]``
           (threads with t ≥ n hold nothing).
        2. Tree: for s = blockDim.x/2, …, 2, 1, thread t < s folds cache[t + s] into cache[t]
           when that entry holds a value; ``cuda.syncthreads()`` between steps, so a step
           reads only finished results of the step before. After log₂(blockDim.x) steps
           cache[0] holds the fold of the whole row.
        3. Thread 0 folds cache[0] into out[o], which arrived holding the start value.

        Every thread reaches every `syncthreads` (no early return): a barrier that only
        part of a block reaches is undefined behaviour on a GPU.
        """
        # BEGIN SOLUTION 3.3
        cache = cuda.shared.array(cache_size, cache_type)
        out_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(out_shape)]
        t = cuda.threadIdx.x
        threads = cuda.blockDim.x
        _to_index(cuda.blockIdx.x, out_shape, out_index)
        n = a_shape[reduce_dim]
        step = a_strides[reduce_dim]
        start = _index_to_position(out_index, a_strides)  # out_index[reduce_dim] is 0
        if t < n:
            acc = a_storage[start + t * step]
            for r in range(t + threads, n, threads):
                acc = fn_gpu(acc, a_storage[start + r * step])
            cache[t] = acc
        cuda.syncthreads()
        # cache[0 … valid−1] hold values (written without min(): Numba's CUDA min() fails
        # on an int64 and an int32)
        valid = n if n < threads else threads
        s = threads // 2
        while s > 0:
            if t < s and t + s < valid:
                cache[t] = fn_gpu(cache[t], cache[t + s])
            if s < valid:
                valid = s
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out_pos = _index_to_position(out_index, out_strides)
            out[out_pos] = fn_gpu(out[out_pos], cache[0])
        # END SOLUTION 3.3

    return cuda.jit(_reduce)


# ## Task 3.4: CUDA matrix multiplication with shared-memory tiles


def _matmul_kernel(dtype: np.dtype) -> Any:
    """Build the tiled CUDA matmul kernel whose shared tiles and accumulator are `dtype`."""
    tile_type = numba.from_dtype(np.dtype(dtype))
    zero = np.dtype(dtype).type(0)
    T = TILE

    def _matmul(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        b_storage: Storage,
        b_shape: Shape,
        b_strides: Strides,
    ) -> None:
        """out[n, i, j] = Σ_k a[n, i, k] · b[n, k, j], one TILE × TILE output tile per block.

        Shapes: a [B or 1, I, K], b [B or 1, K, J], out [B, I, J]; a batch size of 1
        broadcasts (batch stride 0). Grid: (⌈J/TILE⌉, ⌈I/TILE⌉, B) blocks of TILE × TILE
        threads; block (x, y, n) computes out[n, y·TILE : (y+1)·TILE, x·TILE : (x+1)·TILE]
        and thread (tx, ty) in it the entry i = y·TILE + ty, j = x·TILE + tx.

        The k axis is walked one tile at a time. For each k-tile, every thread copies ONE
        entry of a (a[n, i, k0 + tx]) and ONE entry of b (b[n, k0 + ty, j]) from global
        memory into the shared tiles — zero where the index falls outside the matrices, so
        sizes need not be multiples of TILE. ``syncthreads`` (the tiles are complete), each
        thread adds the TILE products of its row of the a-tile and column of the b-tile,
        ``syncthreads`` (nobody still reads the tiles when they are overwritten). So each
        input entry is read from global memory once per block that needs it instead of once
        per product, and each output entry is written once. Threads outside the output
        still load and reach every barrier; they only skip the final write.
        """
        # BEGIN SOLUTION 3.4
        a_tile = cuda.shared.array((T, T), tile_type)
        b_tile = cuda.shared.array((T, T), tile_type)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n = cuda.blockIdx.z
        i = cuda.blockIdx.y * T + ty
        j = cuda.blockIdx.x * T + tx
        rows, inner, cols = a_shape[1], a_shape[2], b_shape[2]
        a_base = (n * a_strides[0] if a_shape[0] > 1 else 0) + i * a_strides[1]
        b_base = (n * b_strides[0] if b_shape[0] > 1 else 0) + j * b_strides[2]
        acc = zero
        for k0 in range(0, inner, T):
            if i < rows and k0 + tx < inner:
                a_tile[ty, tx] = a_storage[a_base + (k0 + tx) * a_strides[2]]
            else:
                a_tile[ty, tx] = zero
            if k0 + ty < inner and j < cols:
                b_tile[ty, tx] = b_storage[b_base + (k0 + ty) * b_strides[1]]
            else:
                b_tile[ty, tx] = zero
            cuda.syncthreads()
            for k in range(T):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if i < rows and j < cols:
            out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
        # END SOLUTION 3.4

    return cuda.jit(_matmul)


# ---------------------------------------------------------------------------------------
# Host side: the arrays' GPU copies, the launch


def to_device(array: np.ndarray) -> Any:
    """A copy of a host array in GPU memory."""
    return send(np.ascontiguousarray(array))


#: Small read-only arrays (shapes, strides) already copied to the GPU, by their contents.
_SMALL: dict[tuple[bytes, str], Any] = {}
_SMALL_KEPT = 4096
SMALL = MAX_DIMS  # a shape or strides array has at most this many entries


def _small(array: np.ndarray) -> Any:
    """The GPU copy of a small array no kernel writes (a shape, strides), kept by its
    contents: each distinct one is sent once per process."""
    key = (array.tobytes(), array.dtype.str)
    found = _SMALL.get(key)
    if found is None:
        if len(_SMALL) >= _SMALL_KEPT:
            _SMALL.clear()
        found = _SMALL[key] = to_device(array)
    return found


def _read(array: np.ndarray) -> Any:
    """The GPU copy of an array a kernel only reads: a storage through its mirror
    (`device_memory.on_device`: sent only when the host holds newer values); a small array
    whose newest values are on the host, by its contents (`_small`)."""
    if array.size <= SMALL and newest_copy(array) != "device":
        return _small(array)
    return on_device(array)


def _layout(shape: Shape, strides: Strides) -> tuple[Any, Any]:
    """Shape and strides on the device; a 0-d tensor travels as shape (1,) (same element)."""
    if len(shape) == 0:
        shape, strides = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    return _small(shape), _small(strides)


def num_elements(shape: Shape) -> int:
    return int(np.prod(shape)) if len(shape) else 1


def _fills(out: Storage, out_shape: Shape, out_strides: Strides) -> bool:
    """True when a kernel that writes every element of the layout writes every entry of
    `out` (row-major over the whole storage): the output's old values need not travel."""
    if num_elements(out_shape) != out.size:
        return False
    expected = 1
    for size, stride in zip(reversed(out_shape), reversed(out_strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


class DeviceOut:
    """The output storage on the device (`device_memory`): `finish()` records that the
    kernel wrote it there. `fills`: the kernel writes every entry (nothing need be sent)."""

    def __init__(self, out: Storage, fills: bool = False):
        self.host = out
        self.device = on_device(out, overwritten=fills)

    def finish(self) -> None:
        written_on_device(self.host, self.device)


def elementwise_grid(size: int) -> tuple[int, int]:
    """(blocks, threads) for one thread per element: whole warps, at most THREADS_PER_BLOCK."""
    threads = min(THREADS_PER_BLOCK, 32 * math.ceil(size / 32))
    return math.ceil(size / threads), threads


def launch_per_element(kernel: Any, size: int, *args: Any, written: tuple[int, ...] = (0,)) -> None:
    """Launch `kernel` with one thread per element of a `size`-element output (the CUDA
    twins of the library's loop kernels use it): every NumPy array among `args` is passed
    as its GPU copy, and those at the positions `written` are recorded as written there."""
    if size == 0:
        return
    outs = {i: DeviceOut(args[i]) for i in written}
    device_args = [
        outs[i].device if i in outs else _read(a) if isinstance(a, np.ndarray) else a
        for i, a in enumerate(args)
    ]
    blocks, threads = elementwise_grid(size)
    kernel[blocks, threads](*device_args)
    for out in outs.values():
        out.finish()


@cuda.jit
def _where(
    out, out_shape, out_strides, cond, cond_shape, cond_strides, a, a_shape, a_strides, b, b_shape, b_strides
):  # type: ignore[no-untyped-def]
    """out[i] = a[i] if cond[i] else b[i], each operand broadcast: one thread per element of
    out, as the zip kernel."""
    out_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(out_shape)]
    cond_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(cond_shape)]
    a_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(a_shape)]
    b_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(b_shape)]
    ordinal = cuda.grid(1)
    size = 1
    for d in range(len(out_shape)):
        size *= out_shape[d]
    if ordinal < size:
        _to_index(ordinal, out_shape, out_index)
        _broadcast_index(out_index, out_shape, cond_shape, cond_index)
        position = _index_to_position(out_index, out_strides)
        if cond[_index_to_position(cond_index, cond_strides)]:
            _broadcast_index(out_index, out_shape, a_shape, a_index)
            out[position] = a[_index_to_position(a_index, a_strides)]
        else:
            _broadcast_index(out_index, out_shape, b_shape, b_index)
            out[position] = b[_index_to_position(b_index, b_strides)]


def where(out: Tensor, cond: Tensor, a: Tensor, b: Tensor) -> None:
    """out ← a where cond else b, on the GPU (`selection.Where` on this backend): the three
    operands broadcast to out's shape."""
    size = num_elements(out._tensor._shape)
    if size == 0:
        return
    out_storage, out_shape, out_strides = out.tuple()
    d_out = DeviceOut(out_storage, fills=_fills(out_storage, out_shape, out_strides))
    operands = []
    for t in (cond, a, b):
        storage, shape, strides = t.tuple()
        operands += [_read(storage), *_layout(shape, strides)]
    _where[elementwise_grid(size)](d_out.device, *_layout(out_shape, out_strides), *operands)
    d_out.finish()


def _next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class CudaOps(TensorOps):
    """Tensor operations on an NVIDIA GPU (or Numba's CUDA simulator).

    The kernel factories return *host launchers* with the kernel signatures of
    `tensor_ops` (NumPy storages in, `out` filled in place): each launcher picks (and on
    first use compiles) the CUDA kernel for the output dtype, copies the arrays to the
    device, launches, and copies `out` back. So the `map` / `zip` / `reduce` /
    `matrix_multiply` that `TensorOps` builds from them work unchanged, and the tensors they
    return keep host NumPy storage.
    """

    cuda = True

    @staticmethod
    def map_kernel(fn: Callable[[float], float]) -> Callable[..., None]:
        def launch(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            in_storage: Storage,
            in_shape: Shape,
            in_strides: Strides,
        ) -> None:
            size = num_elements(out_shape)
            if size == 0:
                return
            kernel = _cached("map", fn, out.dtype, lambda: _map_kernel(fn))
            blocks, threads = elementwise_grid(size)
            d_out = DeviceOut(out, fills=_fills(out, out_shape, out_strides))
            kernel[blocks, threads](
                d_out.device,
                *_layout(out_shape, out_strides),
                _read(in_storage),
                *_layout(in_shape, in_strides),
            )
            d_out.finish()

        return launch

    @staticmethod
    def zip_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        def launch(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            a_storage: Storage,
            a_shape: Shape,
            a_strides: Strides,
            b_storage: Storage,
            b_shape: Shape,
            b_strides: Strides,
        ) -> None:
            size = num_elements(out_shape)
            if size == 0:
                return
            kernel = _cached("zip", fn, out.dtype, lambda: _zip_kernel(fn))
            blocks, threads = elementwise_grid(size)
            d_out = DeviceOut(out, fills=_fills(out, out_shape, out_strides))
            kernel[blocks, threads](
                d_out.device,
                *_layout(out_shape, out_strides),
                _read(a_storage),
                *_layout(a_shape, a_strides),
                _read(b_storage),
                *_layout(b_shape, b_strides),
            )
            d_out.finish()

        return launch

    @staticmethod
    def reduce_kernel(fn: Callable[[float, float], float]) -> Callable[..., None]:
        def launch(
            out: Storage,
            out_shape: Shape,
            out_strides: Strides,
            a_storage: Storage,
            a_shape: Shape,
            a_strides: Strides,
            reduce_dim: int,
        ) -> None:
            size = num_elements(out_shape)
            n = int(a_shape[reduce_dim])
            if size == 0 or n == 0:
                return  # nothing to fold: out keeps its start value
            kernel = _cached("reduce", fn, out.dtype, lambda: _reduce_kernel(fn, out.dtype))
            threads = min(THREADS_PER_BLOCK, _next_power_of_two(n))
            d_out = DeviceOut(out)  # read too: it holds the start value
            kernel[size, threads](
                d_out.device,
                *_layout(out_shape, out_strides),
                _read(a_storage),
                *_layout(a_shape, a_strides),
                int(reduce_dim),
            )
            d_out.finish()

        return launch

    @staticmethod
    def matmul_kernel() -> Callable[..., None]:
        return _launch_matmul

    @staticmethod
    def compile_kernel(kernel: Callable[..., None], name: str) -> Callable[..., None]:
        """The CUDA twin of a library loop kernel (im2col, pooling, the embedding gather):
        a launcher of the same name and arguments that runs the loop's work as a grid of
        GPU threads, where this tree has one; else a NotImplementedError naming `name`."""
        twin = cuda_twin(kernel.__name__)
        if twin is None:  # a release before the stage that ships it
            raise NotImplementedError(
                f"{name} is not implemented on the CUDA backend in this release: move the tensors "
                f"to minitorch.FastBackend (or SimpleBackend) for this operation"
            )
        return twin


def _launch_matmul(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    a_storage: Storage,
    a_shape: Shape,
    a_strides: Strides,
    b_storage: Storage,
    b_shape: Shape,
    b_strides: Strides,
) -> None:
    """Host launcher of the tiled matmul: grid (⌈J/TILE⌉, ⌈I/TILE⌉, B) of TILE×TILE blocks."""
    batch, rows, cols = (int(s) for s in out_shape)
    if batch * rows * cols == 0:
        return
    grid = (math.ceil(cols / TILE), math.ceil(rows / TILE), batch)
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        raise ValueError(
            f"CUDA matmul: output {tuple(out_shape)} needs a grid of {grid} blocks, "
            f"but CUDA allows at most {MAX_GRID_YZ} along y (row tiles) and z (batch)"
        )
    kernel = _cached("matmul", None, out.dtype, lambda: _matmul_kernel(out.dtype))
    d_out = DeviceOut(out, fills=_fills(out, out_shape, out_strides))
    kernel[grid, (TILE, TILE)](
        d_out.device,
        *_layout(out_shape, out_strides),
        _read(a_storage),
        *_layout(a_shape, a_strides),
        _read(b_storage),
        *_layout(b_shape, b_strides),
    )
    d_out.finish()
