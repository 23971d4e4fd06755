"""The reference's tuning of the fast CPU backend — not a task.

`fast_ops` holds the kernels of tasks 3.1 and 3.2: general strided loops that work for
every layout. This module holds what makes the reference faster than those loops on the
layouts that occur most, each as its own compiled kernel:

* **flat** map / zip: every operand shares the output's dense layout, or is a single value.
  Output position p reads position p (or 0) of each operand: no index arithmetic at all.
* **rows** map / zip: the output's last dimension has at least ROW_MIN elements. Each output
  row (all dimensions but the last) finds its starting positions once, then walks the row
  with one stride per operand (0 for a broadcast dimension).
* **contiguous** reduce: input and output row-major. Then a = [outer, R, inner] and the
  fold runs over blocks of `inner` neighbouring outputs at once, reading `a` row by row.
* **tiled** matmul: operands packed into contiguous panels, register tiles of accumulators
  sized for the CPU's vector registers (BLAS-style; see `cpu_target` and BENCHMARKS.md).
* **one thread for small inputs**: entering the thread pool costs more than a small loop, so
  small calls run a serial twin of each kernel (`serial_twin`).

`TunedOps` (in `tuned_ops`) asks `map_path_code`, `zip_path_code`, `reduce_fits` and
`tiled_applies` which kernel fits the layouts of a call, and runs it through `launch` (the
thread policy); otherwise it runs the task's kernel. Both ship from stage A4 on (the A3
manifest lists them as ``reference_only``): in an A3 release every call reaches the
student's kernels, which must work — and are timed — on every layout.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numba import prange

from ..jit import jit_scalar, njit, serial_twin, stable_identity
from ..tensor_data import Shape, Storage, Strides
from . import matmul_tiles
from .cpu_target import Tile, matmul_tile

__all__ = [
    "elementwise_path",
    "reduce_path",
    "tiled_applies",
    "launch",
    "tensor_map_fast",
    "tensor_zip_fast",
    "tensor_map_dense",
    "tensor_zip_dense",
    "tensor_reduce_dense",
    "tensor_reduce_fast",
    "tiled_kernel",
    "tiled_kernel_for",
    "pack_right",
    "not_packed",
]

#: The fast loops hand out blocks of this many output elements of a row to threads.
BLOCK = 1024
#: The fast paths index storage with unsigned positions (their positions are never
#: negative): a signed index makes Numba test for a negative index and wrap it around,
#: which blocks vectorization — the loops run several times slower.
U = np.uint64
#: Elementwise kernels over fewer elements run on the calling thread only: waking the other
#: threads costs microseconds — milliseconds on a busy machine — more than such a loop takes.
PARALLEL_MIN = 1 << 14
#: Outputs whose last dimension is at least this long take the row-wise fast path.
ROW_MIN = 8


# ## The thread policy


def launch(kernel: Callable[..., None], work: int, threshold: int, *args: Any) -> None:
    """Run `kernel(*args)` in parallel when `work` ≥ `threshold`, else its serial twin
    (`jit.serial_twin`: entering the thread pool costs more than a small loop)."""
    if work >= threshold:
        kernel(*args)
    else:
        serial_twin(kernel)(*args)


# ## Layout checks (cheap: O(dims²) once per call)


@njit
def _numel(shape: Shape) -> int:
    size = 1
    for s in shape:
        size *= s
    return size


@njit
def _is_dense(shape: Shape, strides: Strides) -> bool:
    """True when the positions of all indices are exactly 0 … size−1 (in some order).

    That holds when, with the dimensions sorted by stride, each stride is the product of the
    sizes of the dimensions with smaller strides: a contiguous tensor or any permutation of
    one. Dimensions of size 1 never move the position and are ignored.
    """
    for k in range(len(shape)):
        if shape[k] > 1:
            expected = 1
            for j in range(len(shape)):
                if j != k and shape[j] > 1:
                    if strides[j] == strides[k]:
                        return False
                    if strides[j] < strides[k]:
                        expected *= shape[j]
            if strides[k] != expected:
                return False
    return True


@njit
def _same_dense_layout(shape1: Shape, strides1: Strides, shape2: Shape, strides2: Strides) -> bool:
    """Same shape, same strides, dense: then position p of one holds the index of position p
    of the other, and a flat loop over positions 0 … size−1 visits every element once."""
    if len(shape1) != len(shape2):
        return False
    for k in range(len(shape1)):
        if shape1[k] != shape2[k]:
            return False
        if shape1[k] > 1 and strides1[k] != strides2[k]:
            return False
    return _is_dense(shape1, strides1)


@njit
def _flat_step(out_shape: Shape, out_strides: Strides, shape: Shape, strides: Strides) -> int:
    """How an operand moves along a flat loop over a dense `out`: 1 when it shares out's
    dense layout (position p ↔ position p), 0 when it holds a single value, −1 otherwise."""
    if _same_dense_layout(out_shape, out_strides, shape, strides):
        return 1
    if _numel(shape) == 1 and _is_dense(out_shape, out_strides):
        return 0
    return -1


@njit
def _row_start(row: int, out_shape: Shape, shape: Shape, strides: Strides) -> int:
    """Storage position, in an operand broadcast to `out_shape`, of the first element of
    output row `row` (rows enumerate all output dimensions but the last, row-major)."""
    position = 0
    offset = len(out_shape) - len(shape)
    for k in range(len(out_shape) - 2, -1, -1):
        i = row % out_shape[k]
        row = row // out_shape[k]
        if k >= offset and shape[k - offset] > 1:
            position += i * strides[k - offset]
    return position


@njit
def _last_step(shape: Shape, strides: Strides) -> int:
    """Storage step along the last (broadcast) dimension: its stride, or 0 if it repeats."""
    if len(shape) > 0 and shape[len(shape) - 1] > 1:
        return strides[len(shape) - 1]
    return 0


@njit
def _non_negative(strides: Strides) -> bool:
    """No negative stride (never made by minitorch's views; checked before the fast paths,
    whose unsigned positions must not go below 0)."""
    for stride in strides:
        if stride < 0:
            return False
    return True


@njit
def _is_contiguous(shape: Shape, strides: Strides) -> bool:
    """Row-major strides (dimensions of size 1 ignored), as `TensorData.is_contiguous`."""
    expected = 1
    for k in range(len(shape) - 1, -1, -1):
        if shape[k] != 1 and strides[k] != expected:
            return False
        expected *= shape[k]
    return True


@njit
def _rows_fit(out_shape: Shape, out_strides: Strides) -> bool:
    """The output's last dimension is long enough for the row-wise loop (no negative stride)."""
    n = len(out_shape)
    return n > 0 and out_shape[n - 1] >= ROW_MIN and _non_negative(out_strides)


# ## Which loop fits: one compiled call from Python per operation

FLAT, ROWS, GENERAL = 0, 1, 2
_PATH_NAMES = ("flat", "rows", "general")


@njit
def map_path_code(out_shape: Shape, out_strides: Strides, in_shape: Shape, in_strides: Strides) -> int:
    """FLAT, ROWS or GENERAL (the task's kernel) for a map with these layouts."""
    if _flat_step(out_shape, out_strides, in_shape, in_strides) >= 0:
        return FLAT
    if _rows_fit(out_shape, out_strides) and _non_negative(in_strides):
        return ROWS
    return GENERAL


@njit
def zip_path_code(
    out_shape: Shape,
    out_strides: Strides,
    a_shape: Shape,
    a_strides: Strides,
    b_shape: Shape,
    b_strides: Strides,
) -> int:
    """FLAT, ROWS or GENERAL (the task's kernel) for a zip with these layouts."""
    if (
        _flat_step(out_shape, out_strides, a_shape, a_strides) >= 0
        and _flat_step(out_shape, out_strides, b_shape, b_strides) >= 0
    ):
        return FLAT
    if _rows_fit(out_shape, out_strides) and _non_negative(a_strides) and _non_negative(b_strides):
        return ROWS
    return GENERAL


@njit
def reduce_fits(out_shape: Shape, out_strides: Strides, a_shape: Shape, a_strides: Strides) -> bool:
    """Whether the contiguous reduce loop applies: input and output both row-major."""
    return _is_contiguous(a_shape, a_strides) and _is_contiguous(out_shape, out_strides)


def _layout(shape: Any, strides: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(shape, dtype=np.int64), np.asarray(strides, dtype=np.int64)


def elementwise_path(out_shape: Any, out_strides: Any, *operands: tuple[Any, Any]) -> str:
    """Which loop `FastOps` runs for a map (one operand) or zip (two) with these layouts:
    "flat" or "rows" (the kernels of this module) or "general" (the task's kernel).
    `operands` are (shape, strides) pairs of the inputs."""
    out = _layout(out_shape, out_strides)
    layouts = [_layout(*op) for op in operands]
    if len(layouts) == 1:
        return _PATH_NAMES[map_path_code(*out, *layouts[0])]
    if len(layouts) == 2:
        return _PATH_NAMES[zip_path_code(*out, *layouts[0], *layouts[1])]
    raise ValueError(f"elementwise_path takes one or two operands, got {len(operands)}")


def reduce_path(out_shape: Any, out_strides: Any, a_shape: Any, a_strides: Any) -> str:
    """Which loop `FastOps` runs for a reduce: "contiguous" (this module) or "general"."""
    if reduce_fits(*_layout(out_shape, out_strides), *_layout(a_shape, a_strides)):
        return "contiguous"
    return "general"


# ## The fast elementwise kernels
#
# Both paths hand out blocks of up to BLOCK elements of a row to threads: (row, block)
# pairs are the parallel tasks, so a single long row (the flat path) still splits between
# threads. The caller has checked the path fits (`map_path_code` / `zip_path_code`).


@lru_cache(maxsize=None)
def tensor_map_fast(fn: Callable[[float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(in[broadcast(i)]) on the flat (`flat=True`) or rows path.

    Signature: the map kernel's, plus `flat`.
    """
    fn = jit_scalar(fn)

    def _map_fast(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        in_storage: Storage,
        in_shape: Shape,
        in_strides: Strides,
        flat: bool,
    ) -> None:
        size = _numel(out_shape)
        if flat:  # one row of all positions; the input steps 1 (aligned) or 0 (one value)
            rows, cols, out_step = 1, size, 1
            in_step = _flat_step(out_shape, out_strides, in_shape, in_strides)
        else:
            cols = out_shape[len(out_shape) - 1]
            rows = size // cols
            out_step = _last_step(out_shape, out_strides)
            in_step = _last_step(in_shape, in_strides)
        blocks = (cols + BLOCK - 1) // BLOCK
        for task in prange(rows * blocks):
            row = task // blocks
            start = (task % blocks) * BLOCK
            stop = min(cols, start + BLOCK)
            o = p = 0
            if not flat:
                o = _row_start(row, out_shape, out_shape, out_strides)
                p = _row_start(row, out_shape, in_shape, in_strides)
            for j in range(start, stop):
                out[U(o + j * out_step)] = fn(in_storage[U(p + j * in_step)])

    return njit(parallel=True)(_map_fast)


@lru_cache(maxsize=None)
def tensor_map_dense(fn: Callable[[float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(a[i]) for i < out.size, on one thread — for a small map
    whose input is row-major with the output's shape (`TunedOps` checks). Two arrays instead
    of six: Numba spends about 0.1 µs unpacking each array argument of a call (a 100×100
    zip's kernel call: 1.8 µs with nine arrays, 1.1 µs with three)."""
    fn = jit_scalar(fn)

    def _map_dense(out: Storage, a_storage: Storage) -> None:
        for i in range(out.size):
            out[i] = fn(a_storage[i])

    return njit(_map_dense)


@lru_cache(maxsize=None)
def tensor_zip_dense(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(a[i], b[i]) for i < out.size, on one thread — the small
    zip of two row-major operands of the output's shape (see `tensor_map_dense`)."""
    fn = jit_scalar(fn)

    def _zip_dense(out: Storage, a_storage: Storage, b_storage: Storage) -> None:
        for i in range(out.size):
            out[i] = fn(a_storage[i], b_storage[i])

    return njit(_zip_dense)


@lru_cache(maxsize=None)
def tensor_reduce_dense(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: the fold of `tensor_reduce_fast` for a small row-major `a` viewed as
    [outer, R, inner], on one thread, with sizes instead of shape and stride arrays and the
    start value written here (the output needs no fill). The same order of operations:
    start, then r = 0 … R − 1 — so the same numbers."""
    fn = jit_scalar(fn)

    def _reduce_dense(
        out: Storage, a_storage: Storage, outer: int, reduce_size: int, inner: int, start: float
    ) -> None:
        if inner == 1:  # folding the last dimension: one running value per output
            # Four rows at a time: each row is still folded in order (the same numbers), but
            # the four chains are independent, so the CPU overlaps their adds instead of
            # waiting out each one's latency (100×100 float64 sum(1): the loop 2.6 → 1.4 µs).
            quads = outer - outer % 4
            for o in range(0, quads, 4):
                out[o] = out[o + 1] = out[o + 2] = out[o + 3] = start
                acc0, acc1, acc2, acc3 = out[o], out[o + 1], out[o + 2], out[o + 3]  # out's dtype
                row = o * reduce_size
                for r in range(reduce_size):
                    acc0 = fn(acc0, a_storage[U(row + r)])
                    acc1 = fn(acc1, a_storage[U(row + reduce_size + r)])
                    acc2 = fn(acc2, a_storage[U(row + 2 * reduce_size + r)])
                    acc3 = fn(acc3, a_storage[U(row + 3 * reduce_size + r)])
                out[o], out[o + 1], out[o + 2], out[o + 3] = acc0, acc1, acc2, acc3
            for o in range(quads, outer):
                out[o] = start
                acc = out[o]  # in the output's dtype, as in tensor_reduce_fast
                for r in range(reduce_size):
                    acc = fn(acc, a_storage[U(o * reduce_size + r)])
                out[o] = acc
            return
        for o in range(outer):
            for j in range(inner):
                out[U(o * inner + j)] = start
            for r in range(reduce_size):
                row = (o * reduce_size + r) * inner
                for j in range(inner):
                    out[U(o * inner + j)] = fn(out[U(o * inner + j)], a_storage[U(row + j)])

    return njit(_reduce_dense)


@lru_cache(maxsize=None)
def tensor_zip_fast(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: out[i] = fn(a[broadcast(i)], b[broadcast(i)]) on the flat
    (`flat=True`) or rows path. Signature: the zip kernel's, plus `flat`."""
    fn = jit_scalar(fn)

    def _zip_fast(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        b_storage: Storage,
        b_shape: Shape,
        b_strides: Strides,
        flat: bool,
    ) -> None:
        size = _numel(out_shape)
        if flat:
            rows, cols, out_step = 1, size, 1
            a_step = _flat_step(out_shape, out_strides, a_shape, a_strides)
            b_step = _flat_step(out_shape, out_strides, b_shape, b_strides)
        else:
            cols = out_shape[len(out_shape) - 1]
            rows = size // cols
            out_step = _last_step(out_shape, out_strides)
            a_step = _last_step(a_shape, a_strides)
            b_step = _last_step(b_shape, b_strides)
        blocks = (cols + BLOCK - 1) // BLOCK
        for task in prange(rows * blocks):
            row = task // blocks
            start = (task % blocks) * BLOCK
            stop = min(cols, start + BLOCK)
            o = pa = pb = 0
            if not flat:
                o = _row_start(row, out_shape, out_shape, out_strides)
                pa = _row_start(row, out_shape, a_shape, a_strides)
                pb = _row_start(row, out_shape, b_shape, b_strides)
            for j in range(start, stop):
                a_value = a_storage[U(pa + j * a_step)]
                out[U(o + j * out_step)] = fn(a_value, b_storage[U(pb + j * b_step)])

    return njit(parallel=True)(_zip_fast)


@lru_cache(maxsize=None)
def tensor_reduce_fast(fn: Callable[[float, float], float]) -> Callable[..., None]:
    """Kernel factory: the reduce of `tensor_ops` for a row-major `a` and `out`.

    Then a = [outer, R, inner] in row-major order (R the reduced dimension), out = [outer,
    inner], and the fold runs over blocks of `inner` neighbouring outputs at once, reading
    `a` row by row (cache-friendly, vectorizable). Folding the last dimension (inner = 1)
    keeps one running value per output instead.
    """
    fn = jit_scalar(fn)

    def _reduce_fast(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        reduce_dim: int,
    ) -> None:
        size = _numel(out_shape)
        if size == 0:
            return
        reduce_size = a_shape[reduce_dim]
        inner = 1
        for k in range(reduce_dim + 1, len(a_shape)):
            inner *= a_shape[k]
        if inner == 1:  # folding the last dimension: one running value per output
            for o in prange(size):
                acc = out[o]
                for r in range(reduce_size):
                    acc = fn(acc, a_storage[U(o * reduce_size + r)])
                out[o] = acc
            return
        outer = size // inner
        blocks = (inner + BLOCK - 1) // BLOCK
        for task in prange(outer * blocks):
            o = task // blocks
            start = (task % blocks) * BLOCK
            stop = min(inner, start + BLOCK)
            for r in range(reduce_size):
                row = (o * reduce_size + r) * inner
                for j in range(start, stop):
                    out[U(o * inner + j)] = fn(out[U(o * inner + j)], a_storage[U(row + j)])

    return njit(parallel=True)(_reduce_fast)


# ## The tiled matmul
#
# BLAS-style blocking. Both operands are first *packed* into contiguous panels: a into
# panels of MR rows stored k-major (ap[k, r]), b into panels of NR columns (bp[k, j]),
# zero-padded at the edges. Packing reads each operand once, whatever its strides, and
# converts it to the output dtype. Then each MR × NR block of the output is one call of a
# *micro-kernel* (`matmul_tiles`): MR·NR running sums held in local variables (LLVM keeps
# them in vector registers), and for each k, NR values of b and MR values of a are loaded and
# reused MR and NR times — so the loop is bound by multiply-adds, not by memory. The tile
# is as large as the CPU's vector registers hold (`cpu_target.matmul_tile`: 8 × 32 float32
# on AVX-512, 6 × 16 on AVX2 …), so there is one compiled kernel per tile shape.

#: Products with fewer multiply-adds, or a side shorter than TILED_MIN_SIDE, use the task's
#: kernel (`fast_ops.tensor_matmul`): packing and padding would cost more than they save.
TILED_MIN_WORK = 32 * 32 * 32
TILED_MIN_SIDE = 4
#: The tiled kernel splits its work into at least this many tasks (when the output allows).
MIN_TASKS = 16
#: Products of fewer multiply-adds run on one thread (about 20 µs of work or less), tiled
#: or not.
MATMUL_PARALLEL_MIN = 1 << 20


@njit
def _pack_panel(
    src: Storage,
    base: int,
    lane_stride: int,
    k_stride: int,
    lanes: int,
    inner: int,
    width: int,
    dst: Storage,
    offset: int,
    zero: float,
) -> None:
    """dst[offset + k·width + l] = src[base + l·lane_stride + k·k_stride] (l < lanes), else 0.

    Two loop orders, each reading its source in order: a source whose lanes are adjacent
    (b row-major, a column-major) is copied k by k, `lanes` values at a time; otherwise (a
    row-major) lane by lane along k. No test inside the copy loops, so LLVM can vectorize
    them (a 64 × 64 float32 a packs in a third of the time of one loop with a test per value).
    """
    if lane_stride == 1:
        for k in range(inner):
            row = offset + k * width
            start = base + k * k_stride
            for lane in range(lanes):
                dst[U(row + lane)] = src[U(start + lane)]
            for lane in range(lanes, width):
                dst[U(row + lane)] = zero
    else:
        for lane in range(lanes):
            start = base + lane * lane_stride
            for k in range(inner):
                dst[U(offset + k * width + lane)] = src[U(start + k * k_stride)]
        for lane in range(lanes, width):
            for k in range(inner):
                dst[U(offset + k * width + lane)] = zero


@lru_cache(maxsize=None)
def tiled_kernel(tile: Tile) -> Any:
    """The tiled matmul compiled for one tile shape; `tiled_kernel_for(dtype)` takes the
    shape that fits the CPU. MR, NR and the micro-kernel are constants of the compiled code
    (the kernel closes over them), and Numba caches each shape's code on disk apart."""
    MR, NR = tile.rows, tile.cols
    micro = stable_identity(getattr(matmul_tiles, tile.kernel))

    def tensor_matmul_tiled(
        out: Storage,
        out_shape: Shape,
        out_strides: Strides,
        a_storage: Storage,
        a_shape: Shape,
        a_strides: Strides,
        b_storage: Storage,
        b_shape: Shape,
        b_strides: Strides,
        packed_b: Storage,
    ) -> None:
        """The tuned kernel: out[n, i, j] = Σ_k a[n, i, k] · b[n, k, j], packed and tiled.

        The contract of `fast_ops.tensor_matmul` (any strides, batch broadcast, any sizes),
        plus `packed_b`: b already packed by `pack_right` (an operand multiplied many times),
        or an empty array (`not_packed`), and b is packed here. Faster than the task's kernel
        from about 32³ multiply-adds on. Parallel decomposition: packing runs in parallel over
        panels; the product runs in parallel over (batch, chunk of row panels, column panel)
        tasks, each writing its own MR × NR output tiles.
        """
        batches, rows, cols = out_shape[0], out_shape[1], out_shape[2]
        inner = a_shape[2]
        a_batches, b_batches = a_shape[0], b_shape[0]
        row_panels = (rows + MR - 1) // MR
        col_panels = (cols + NR - 1) // NR
        a_panel = inner * MR
        b_panel = inner * NR
        zero = np.zeros(1, out.dtype)[0]
        ap = np.empty(a_batches * row_panels * a_panel, out.dtype)
        pack_b = packed_b.size == 0
        bp = np.empty(b_batches * col_panels * b_panel, out.dtype) if pack_b else packed_b
        a_count = a_batches * row_panels
        b_count = b_batches * col_panels if pack_b else 0
        for t in prange(a_count + b_count):  # one parallel loop packs both
            if t < a_count:
                n, i0 = t // row_panels, (t % row_panels) * MR
                _pack_panel(
                    a_storage,
                    n * a_strides[0] + i0 * a_strides[1],
                    a_strides[1],
                    a_strides[2],
                    min(MR, rows - i0),
                    inner,
                    MR,
                    ap,
                    t * a_panel,
                    zero,
                )
            else:
                u = t - a_count
                n, j0 = u // col_panels, (u % col_panels) * NR
                _pack_panel(
                    b_storage,
                    n * b_strides[0] + j0 * b_strides[2],
                    b_strides[2],
                    b_strides[1],
                    min(NR, cols - j0),
                    inner,
                    NR,
                    bp,
                    u * b_panel,
                    zero,
                )

        # Enough tasks to keep every thread busy: split the row panels into chunks if needed.
        tasks = batches * col_panels
        chunks = 1
        if tasks < MIN_TASKS:
            chunks = max(1, min(row_panels, (MIN_TASKS + tasks - 1) // tasks))
        per_chunk = (row_panels + chunks - 1) // chunks
        # The output's strides as local values: read from their array inside the loop, they
        # are read again after every store to `out` (LLVM cannot prove the two arrays apart),
        # and the copy of a 64 × 64 product's tiles took a quarter of its time.
        out_row, out_col = out_strides[1], out_strides[2]
        for task in prange(tasks * chunks):
            jp = task % col_panels
            chunk = (task // col_panels) % chunks
            n = task // (col_panels * chunks)
            a_n = n if a_batches > 1 else 0
            b_n = n if b_batches > 1 else 0
            block = np.empty(MR * NR, out.dtype)  # one output tile, from the micro-kernel
            b_start = (b_n * col_panels + jp) * b_panel
            j0 = jp * NR
            j_count = min(NR, cols - j0)
            for ip in range(chunk * per_chunk, min(row_panels, (chunk + 1) * per_chunk)):
                a_start = (a_n * row_panels + ip) * a_panel
                micro(inner, ap[a_start:], bp[b_start:], block, zero)
                i0 = ip * MR
                base = n * out_strides[0] + i0 * out_row + j0 * out_col
                if out_col == 1:  # (always, for a new output) one row of the tile at a time
                    for r in range(min(MR, rows - i0)):
                        start = base + r * out_row
                        for j in range(j_count):
                            out[U(start + j)] = block[r * NR + j]
                else:
                    for r in range(min(MR, rows - i0)):
                        for j in range(j_count):
                            out[U(base + r * out_row + j * out_col)] = block[r * NR + j]

    return njit(parallel=True)(tensor_matmul_tiled)


#: dtype → its tiled matmul: one dict lookup per product (two lru_caches cost twice that)
_KERNEL_FOR: dict[np.dtype, Any] = {}


def tiled_kernel_for(dtype: np.dtype) -> Any:
    """The tiled matmul of the tile that fits Numba's target CPU for `dtype`."""
    kernel = _KERNEL_FOR.get(dtype)
    if kernel is None:
        kernel = _KERNEL_FOR[np.dtype(dtype)] = tiled_kernel(matmul_tile(dtype))
    return kernel


_NOT_PACKED: dict[np.dtype, Storage] = {}


def not_packed(out: Storage) -> Storage:
    """The `packed_b` of a plain product: an empty array of `out`'s dtype (one per dtype,
    so that every call has the same argument types and Numba compiles the kernel once)."""
    empty = _NOT_PACKED.get(out.dtype)
    if empty is None:
        empty = _NOT_PACKED[out.dtype] = np.empty(0, dtype=out.dtype)
    return empty


# ## One operand packed once, many products (an RNN's recurrent weight)
#
# An RNN multiplies the same W_hhᵀ by a new h at every time step. A plain product would
# pack W_hhᵀ again at each of the T steps (and W_hh at each step of backward); `pack_right`
# packs it once per sequence, and `tiled_kernel(tile)(…, packed_b=that)` packs only the
# small h — the same micro-kernel in the same order, so the same numbers bit for bit as
# the plain product, and the same compiled kernel (one compilation, not two).


@njit(parallel=True)
def _pack_right(
    b_storage: Storage, b_shape: Shape, b_strides: Strides, dtype_of: Storage, NR: int
) -> Storage:
    b_batches, inner, cols = b_shape[0], b_shape[1], b_shape[2]
    col_panels = (cols + NR - 1) // NR
    b_panel = inner * NR
    zero = np.zeros(1, dtype_of.dtype)[0]
    bp = np.empty(b_batches * col_panels * b_panel, dtype_of.dtype)
    for u in prange(b_batches * col_panels):
        n, j0 = u // col_panels, (u % col_panels) * NR
        _pack_panel(
            b_storage,
            n * b_strides[0] + j0 * b_strides[2],
            b_strides[2],
            b_strides[1],
            min(NR, cols - j0),
            inner,
            NR,
            bp,
            u * b_panel,
            zero,
        )
    return bp


def pack_right(
    b_storage: Storage, b_shape: Shape, b_strides: Strides, dtype_of: Storage, tile: Tile | None = None
) -> Storage:
    """b [B, k, m] (any non-negative strides) packed into NR-column panels of `dtype_of`'s
    dtype, as `tiled_kernel(tile)` packs its right operand (default: the tile of
    `tiled_kernel_for(dtype_of.dtype)`)."""
    tile = tile or matmul_tile(dtype_of.dtype)
    return _pack_right(b_storage, b_shape, b_strides, dtype_of, tile.cols)


def _unit_stride(shape: Any, strides: Any) -> bool:
    """True when a stack of matrices [B, p, q] is row- or column-major (a unit stride)."""
    return shape[2] == 1 or strides[2] == 1 or shape[1] == 1 or strides[1] == 1


def tiled_applies(
    out: Storage,
    out_shape: Any,
    out_strides: Any,
    a_shape: Any,
    a_strides: Any,
    b_shape: Any,
    b_strides: Any,
) -> bool:
    """Whether `FastOps` runs the tiled kernel: float output, not tiny, both operands
    row- or column-major matrices (any batch stride, broadcast included), no negative
    stride (the tiled kernel indexes with unsigned positions).

    Shapes and strides as sequences of ints: `TunedOps.matrix_multiply` passes the
    layouts' Python tuples (a few hundred nanoseconds here; the same test on the kernels'
    NumPy arrays costs microseconds of NumPy scalars, and a compiled version a microsecond
    of argument checks per product)."""
    if out.dtype != np.float64 and out.dtype != np.float32:
        return False
    rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
    if rows * cols * inner < TILED_MIN_WORK or min(rows, cols) < TILED_MIN_SIDE:
        return False
    if min(out_strides) < 0 or min(a_strides) < 0 or min(b_strides) < 0:
        return False
    return _unit_stride(a_shape, a_strides) and _unit_stride(b_shape, b_strides)
