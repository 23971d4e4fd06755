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
* **tiled** matmul: operands packed into contiguous panels, 8 × 16 register tiles of
  accumulators (BLAS-style; near BLAS speed on AVX-512, see BENCHMARKS.md).
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

import numba
import numpy as np
from numba import prange

from ..jit import jit_scalar, njit, serial_twin
from ..tensor_data import Shape, Storage, Strides

__all__ = [
    "elementwise_path",
    "reduce_path",
    "tiled_applies",
    "launch",
    "tensor_map_fast",
    "tensor_zip_fast",
    "tensor_reduce_fast",
    "tensor_matmul_tiled",
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
# panels of MR = 8 rows stored k-major (ap[k, r]), b into panels of NR = 16 columns
# (bp[k, j]), zero-padded at the edges. Packing reads each operand once, whatever its
# strides, and converts it to the output dtype. Then each 8×16 block of the output is one
# call of the *micro-kernel*: 128 running sums held in local variables (LLVM keeps them in
# vector registers), and for each k one row of 16 values of b and 8 values of a are loaded
# and each reused 8 and 16 times — so the loop is bound by multiply-adds, not by memory.

MR = 8
NR = 16
#: Products with fewer multiply-adds, or a side shorter than TILED_MIN_SIDE, use the task's
#: kernel (`fast_ops.tensor_matmul`): packing and padding would cost more than they save.
TILED_MIN_WORK = 32 * 32 * 32
TILED_MIN_SIDE = 4
#: The tiled kernel splits its work into at least this many tasks (when the output allows).
MIN_TASKS = 16
#: Products of fewer multiply-adds run on one thread (about 20 µs of work or less), tiled
#: or not.
MATMUL_PARALLEL_MIN = 1 << 20


@njit(fastmath={"contract"})
def _micro_8x16(inner: int, ap: Storage, bp: Storage, tile: Storage, zero: float) -> None:
    """tile[r·16 + j] = Σ_k ap[k·8 + r] · bp[k·16 + j] for r < 8, j < 16 (packed panels).

    Written out by hand on purpose: one local variable per output (c{row}{column in hex}),
    k innermost. `fastmath={"contract"}` lets LLVM fuse each multiply and add into one FMA.
    `zero` carries the dtype, so float32 products accumulate in float32 registers.
    """
    # fmt: off
    c00 = c01 = c02 = c03 = c04 = c05 = c06 = c07 = c08 = c09 = c0a = c0b = c0c = c0d = c0e = c0f = zero
    c10 = c11 = c12 = c13 = c14 = c15 = c16 = c17 = c18 = c19 = c1a = c1b = c1c = c1d = c1e = c1f = zero
    c20 = c21 = c22 = c23 = c24 = c25 = c26 = c27 = c28 = c29 = c2a = c2b = c2c = c2d = c2e = c2f = zero
    c30 = c31 = c32 = c33 = c34 = c35 = c36 = c37 = c38 = c39 = c3a = c3b = c3c = c3d = c3e = c3f = zero
    c40 = c41 = c42 = c43 = c44 = c45 = c46 = c47 = c48 = c49 = c4a = c4b = c4c = c4d = c4e = c4f = zero
    c50 = c51 = c52 = c53 = c54 = c55 = c56 = c57 = c58 = c59 = c5a = c5b = c5c = c5d = c5e = c5f = zero
    c60 = c61 = c62 = c63 = c64 = c65 = c66 = c67 = c68 = c69 = c6a = c6b = c6c = c6d = c6e = c6f = zero
    c70 = c71 = c72 = c73 = c74 = c75 = c76 = c77 = c78 = c79 = c7a = c7b = c7c = c7d = c7e = c7f = zero
    for k in range(inner):
        p = k * 16
        b0 = bp[p]; b1 = bp[p + 1]; b2 = bp[p + 2]; b3 = bp[p + 3]
        b4 = bp[p + 4]; b5 = bp[p + 5]; b6 = bp[p + 6]; b7 = bp[p + 7]
        b8 = bp[p + 8]; b9 = bp[p + 9]; ba = bp[p + 10]; bb = bp[p + 11]
        bc = bp[p + 12]; bd = bp[p + 13]; be = bp[p + 14]; bf = bp[p + 15]
        q = k * 8
        a = ap[q]
        c00 += a * b0; c01 += a * b1; c02 += a * b2; c03 += a * b3
        c04 += a * b4; c05 += a * b5; c06 += a * b6; c07 += a * b7
        c08 += a * b8; c09 += a * b9; c0a += a * ba; c0b += a * bb
        c0c += a * bc; c0d += a * bd; c0e += a * be; c0f += a * bf
        a = ap[q + 1]
        c10 += a * b0; c11 += a * b1; c12 += a * b2; c13 += a * b3
        c14 += a * b4; c15 += a * b5; c16 += a * b6; c17 += a * b7
        c18 += a * b8; c19 += a * b9; c1a += a * ba; c1b += a * bb
        c1c += a * bc; c1d += a * bd; c1e += a * be; c1f += a * bf
        a = ap[q + 2]
        c20 += a * b0; c21 += a * b1; c22 += a * b2; c23 += a * b3
        c24 += a * b4; c25 += a * b5; c26 += a * b6; c27 += a * b7
        c28 += a * b8; c29 += a * b9; c2a += a * ba; c2b += a * bb
        c2c += a * bc; c2d += a * bd; c2e += a * be; c2f += a * bf
        a = ap[q + 3]
        c30 += a * b0; c31 += a * b1; c32 += a * b2; c33 += a * b3
        c34 += a * b4; c35 += a * b5; c36 += a * b6; c37 += a * b7
        c38 += a * b8; c39 += a * b9; c3a += a * ba; c3b += a * bb
        c3c += a * bc; c3d += a * bd; c3e += a * be; c3f += a * bf
        a = ap[q + 4]
        c40 += a * b0; c41 += a * b1; c42 += a * b2; c43 += a * b3
        c44 += a * b4; c45 += a * b5; c46 += a * b6; c47 += a * b7
        c48 += a * b8; c49 += a * b9; c4a += a * ba; c4b += a * bb
        c4c += a * bc; c4d += a * bd; c4e += a * be; c4f += a * bf
        a = ap[q + 5]
        c50 += a * b0; c51 += a * b1; c52 += a * b2; c53 += a * b3
        c54 += a * b4; c55 += a * b5; c56 += a * b6; c57 += a * b7
        c58 += a * b8; c59 += a * b9; c5a += a * ba; c5b += a * bb
        c5c += a * bc; c5d += a * bd; c5e += a * be; c5f += a * bf
        a = ap[q + 6]
        c60 += a * b0; c61 += a * b1; c62 += a * b2; c63 += a * b3
        c64 += a * b4; c65 += a * b5; c66 += a * b6; c67 += a * b7
        c68 += a * b8; c69 += a * b9; c6a += a * ba; c6b += a * bb
        c6c += a * bc; c6d += a * bd; c6e += a * be; c6f += a * bf
        a = ap[q + 7]
        c70 += a * b0; c71 += a * b1; c72 += a * b2; c73 += a * b3
        c74 += a * b4; c75 += a * b5; c76 += a * b6; c77 += a * b7
        c78 += a * b8; c79 += a * b9; c7a += a * ba; c7b += a * bb
        c7c += a * bc; c7d += a * bd; c7e += a * be; c7f += a * bf
    tile[0] = c00; tile[1] = c01; tile[2] = c02; tile[3] = c03
    tile[4] = c04; tile[5] = c05; tile[6] = c06; tile[7] = c07
    tile[8] = c08; tile[9] = c09; tile[10] = c0a; tile[11] = c0b
    tile[12] = c0c; tile[13] = c0d; tile[14] = c0e; tile[15] = c0f
    tile[16] = c10; tile[17] = c11; tile[18] = c12; tile[19] = c13
    tile[20] = c14; tile[21] = c15; tile[22] = c16; tile[23] = c17
    tile[24] = c18; tile[25] = c19; tile[26] = c1a; tile[27] = c1b
    tile[28] = c1c; tile[29] = c1d; tile[30] = c1e; tile[31] = c1f
    tile[32] = c20; tile[33] = c21; tile[34] = c22; tile[35] = c23
    tile[36] = c24; tile[37] = c25; tile[38] = c26; tile[39] = c27
    tile[40] = c28; tile[41] = c29; tile[42] = c2a; tile[43] = c2b
    tile[44] = c2c; tile[45] = c2d; tile[46] = c2e; tile[47] = c2f
    tile[48] = c30; tile[49] = c31; tile[50] = c32; tile[51] = c33
    tile[52] = c34; tile[53] = c35; tile[54] = c36; tile[55] = c37
    tile[56] = c38; tile[57] = c39; tile[58] = c3a; tile[59] = c3b
    tile[60] = c3c; tile[61] = c3d; tile[62] = c3e; tile[63] = c3f
    tile[64] = c40; tile[65] = c41; tile[66] = c42; tile[67] = c43
    tile[68] = c44; tile[69] = c45; tile[70] = c46; tile[71] = c47
    tile[72] = c48; tile[73] = c49; tile[74] = c4a; tile[75] = c4b
    tile[76] = c4c; tile[77] = c4d; tile[78] = c4e; tile[79] = c4f
    tile[80] = c50; tile[81] = c51; tile[82] = c52; tile[83] = c53
    tile[84] = c54; tile[85] = c55; tile[86] = c56; tile[87] = c57
    tile[88] = c58; tile[89] = c59; tile[90] = c5a; tile[91] = c5b
    tile[92] = c5c; tile[93] = c5d; tile[94] = c5e; tile[95] = c5f
    tile[96] = c60; tile[97] = c61; tile[98] = c62; tile[99] = c63
    tile[100] = c64; tile[101] = c65; tile[102] = c66; tile[103] = c67
    tile[104] = c68; tile[105] = c69; tile[106] = c6a; tile[107] = c6b
    tile[108] = c6c; tile[109] = c6d; tile[110] = c6e; tile[111] = c6f
    tile[112] = c70; tile[113] = c71; tile[114] = c72; tile[115] = c73
    tile[116] = c74; tile[117] = c75; tile[118] = c76; tile[119] = c77
    tile[120] = c78; tile[121] = c79; tile[122] = c7a; tile[123] = c7b
    tile[124] = c7c; tile[125] = c7d; tile[126] = c7e; tile[127] = c7f
    # fmt: on


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
    """dst[offset + k·width + l] = src[base + l·lane_stride + k·k_stride] (l < lanes), else 0."""
    for k in range(inner):
        row = offset + k * width
        for lane in range(width):
            if lane < lanes:
                dst[U(row + lane)] = src[U(base + lane * lane_stride + k * k_stride)]
            else:
                dst[U(row + lane)] = zero


@njit(parallel=True)
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
    tasks, each writing its own 8×16 output tiles.
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
    for task in prange(tasks * chunks):
        jp = task % col_panels
        chunk = (task // col_panels) % chunks
        n = task // (col_panels * chunks)
        a_n = n if a_batches > 1 else 0
        b_n = n if b_batches > 1 else 0
        tile = np.empty(MR * NR, out.dtype)
        b_start = (b_n * col_panels + jp) * b_panel
        j0 = jp * NR
        j_count = min(NR, cols - j0)
        for ip in range(chunk * per_chunk, min(row_panels, (chunk + 1) * per_chunk)):
            a_start = (a_n * row_panels + ip) * a_panel
            _micro_8x16(inner, ap[a_start:], bp[b_start:], tile, zero)
            i0 = ip * MR
            base = n * out_strides[0] + i0 * out_strides[1] + j0 * out_strides[2]
            for r in range(min(MR, rows - i0)):
                for j in range(j_count):
                    out[U(base + r * out_strides[1] + j * out_strides[2])] = tile[r * NR + j]


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
# packs it once per sequence, and `tensor_matmul_tiled(…, packed_b=that)` packs only the
# small h — the same micro-kernel in the same order, so the same numbers bit for bit as
# the plain product, and the same compiled kernel (one compilation, not two).


@njit(parallel=True)
def pack_right(b_storage: Storage, b_shape: Shape, b_strides: Strides, dtype_of: Storage) -> Storage:
    """b [B, k, m] (any non-negative strides) packed into 16-column panels of `dtype_of`'s
    dtype, as `tensor_matmul_tiled` packs its right operand."""
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


@njit
def _unit_stride(shape: Shape, strides: Strides) -> bool:
    """True when a stack of matrices [B, p, q] is row- or column-major (a unit stride)."""
    return shape[2] == 1 or strides[2] == 1 or shape[1] == 1 or strides[1] == 1


@njit
def _tiled_layouts(
    out_shape: Shape,
    out_strides: Strides,
    a_shape: Shape,
    a_strides: Strides,
    b_shape: Shape,
    b_strides: Strides,
) -> bool:
    """The layout half of `tiled_applies`, compiled: one call instead of a dozen NumPy
    scalar operations (a matmul of 64×64 spent 4 µs here in Python)."""
    if not (_non_negative(out_strides) and _non_negative(a_strides) and _non_negative(b_strides)):
        return False
    rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
    if rows * cols * inner < TILED_MIN_WORK or min(rows, cols) < TILED_MIN_SIDE:
        return False
    return _unit_stride(a_shape, a_strides) and _unit_stride(b_shape, b_strides)


def tiled_applies(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    a_shape: Shape,
    a_strides: Strides,
    b_shape: Shape,
    b_strides: Strides,
) -> bool:
    """Whether `FastOps` runs `tensor_matmul_tiled`: float output, not tiny, both operands
    row- or column-major matrices (any batch stride, broadcast included), no negative
    stride (the tiled kernel indexes with unsigned positions)."""
    if out.dtype != np.float64 and out.dtype != np.float32:
        return False
    return _tiled_layouts(out_shape, out_strides, a_shape, a_strides, b_shape, b_strides)
