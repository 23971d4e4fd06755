"""Hidden checks of stage A3: the parallel CPU kernels (3.1, 3.2) and the CUDA kernels
(3.3, 3.4; run on Numba's CUDA simulator unless the grader is given a GPU).

The reference's tuned CPU loops (flat and row-wise paths, the tiled matmul) live in
`minitorch/accel/` (`tuned_ops`, `tuned_kernels`), which the A3 manifest lists as
``reference_only``: A3 child trees do not contain them, so `FastBackend` runs the student's kernels on every layout, contiguous
ones included, and the probes below use both kinds. The probes that call the kernels
of `fast_ops` directly (`tensor_map(fn)`, …, `tensor_matmul`) reach the student's code
whatever the tree holds; the parent computes their expected values with the simple kernels
(`REFERENCE_ALIASES` in `grader/reference.py`).

Data races are found, not stumbled on: `fast_kernels_race_free` and `fast_matmul_race_free`
run each kernel's Python source once with every ``prange`` a loop that remembers its
iteration (`grader.prange_trace`) and fail when two iterations touch the same
output cell, one of them writing. That finds a race on every run, on a machine of any
number of cores — comparing outputs finds one only when the threads happen to collide
(a reduce with its ``prange`` over the reduced dimension passed the equivalence check and
was caught once, by one value of one timed call). Like every answer, the trace is computed
in the child, where the student's code could tamper with it; writing the kernel without
the race is less work.

The performance checks of 3.1 and 3.2 live in `a3_speed` (imported below, which registers
them with the stage): the task's kernels timed against the reference's, on fresh inputs for
every timed call, every timed output checked.
"""

from __future__ import annotations

import numpy as np

from . import a3_speed  # noqa: F401 - registers the performance checks of 3.1 and 3.2
from .base import CheckContext, CheckFailed, StudentError, check
from .feedback import inputs_text
from .inputs import I64, layout_text, reversed_order, strides_for, values
from .probe import F32, Probe, Ref, Tol

FAST = "minitorch.FastBackend"
CUDA = "minitorch.CudaBackend"


# ---------------------------------------------------------------------------- probes

#: (backend op, positive inputs) — one compiled kernel each, so the list is short.
MAPS = [("neg_map", False), ("exp_map", False), ("log_map", True), ("relu_map", False)]
ZIPS = ["add_zip", "mul_zip", "lt_zip"]
REDUCES = ["add_reduce", "max_reduce"]
#: (a shape, a memory order, b shape, b memory order): broadcast and/or permuted.
ZIP_LAYOUTS = [
    ((3, 4), (1, 0), (3, 4), None),
    ((2, 3, 5), None, (3, 1), None),
    ((4, 1, 3), (2, 1, 0), (5, 3), (1, 0)),
    ((2, 3, 4, 2), (3, 2, 1, 0), (4, 2), None),
]
#: Row-major layouts (the ones the reference's tuned loops take): same shape, a long bias
#: row, a single value broadcast.
CONTIGUOUS_ZIP_LAYOUTS = [
    ((3, 4), None, (3, 4), None),
    ((2, 9), None, (9,), None),
    ((4, 10), None, (1,), None),
]


def _elementwise_probes(ctx: CheckContext, backend: str, small: bool) -> list[Probe]:
    """map / zip / reduce probes on `backend` ("fast" or "cuda")."""
    name = "FastBackend" if backend == "fast" else "CudaBackend"
    probes = []
    shapes = [(3, 4), (2, 3, 5)] if small else [(3, 4), (2, 3, 5), (4, 3, 2, 3)]
    for k, shape in enumerate(shapes):
        # permuted, and row-major (on the simulator, for the first shape only)
        orders = [reversed_order(len(shape))] + ([None] if not small or k == 0 else [])
        for order in orders:
            for op, positive in MAPS:
                a = values(ctx.rng, shape, positive)
                p = Probe(f"{name}.{op}(a) for a of shape {shape}, {layout_text(order)}", {"a": a})
                p.returns(p.call(f"minitorch.{name}.{op}", p.tensor(a, order, backend=backend)))
                probes.append(p)
    # map broadcasting into a larger `out`
    a = values(ctx.rng, (3, 1))
    p = Probe(f"{name}.neg_map(a, out) for a of shape (3, 1) broadcast into out of shape (2, 3, 4)", {"a": a})
    out = p.tensor(np.zeros((2, 3, 4)), backend=backend)
    p.call(f"minitorch.{name}.neg_map", p.tensor(a, backend=backend), out)
    p.returns(out)
    probes.append(p)
    for sa, oa, sb, ob in ZIP_LAYOUTS[: 3 if small else 4] + CONTIGUOUS_ZIP_LAYOUTS[: 1 if small else 3]:
        for op in ZIPS:
            a, b = values(ctx.rng, sa), values(ctx.rng, sb)
            if op == "lt_zip":
                b = np.round(b)  # ties
            p = Probe(f"{name}.{op}(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})", {"a": a, "b": b})
            p.returns(p.call(f"minitorch.{name}.{op}", p.tensor(a, oa, backend=backend), p.tensor(b, ob, backend=backend)))
            probes.append(p)
    reduce_layouts = [((3, 4), (1, 0)), ((2, 3, 5), (2, 1, 0)), ((3, 4), None)]
    if not small:
        reduce_layouts += [((3, 2, 4, 2), (3, 2, 1, 0)), ((2, 3, 5), None)]
    for shape, order in reduce_layouts:
        for dim in range(len(shape)):
            for op in REDUCES:
                a = values(ctx.rng, shape)
                p = Probe(f"{name}.{op}(a, dim={dim}) for a of shape {shape}, {layout_text(order)}", {"a": a})
                p.returns(p.call(f"minitorch.{name}.{op}", p.tensor(a, order, backend=backend), dim))
                probes.append(p)
    # float32 keeps float32
    a, b = values(ctx.rng, (2, 3), dtype=np.float32), values(ctx.rng, (3,), dtype=np.float32)
    p = Probe(f"{name}.add_zip(a, b) for float32 a (2, 3) ({layout_text((1, 0))}), b (3,)", {"a": a, "b": b})
    p.returns(p.call(f"minitorch.{name}.add_zip", p.tensor(a, (1, 0), backend=backend), p.tensor(b, backend=backend)))
    probes.append(p)
    return probes


def _raw(x: np.ndarray, order) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # noqa: ANN001
    """(storage, shape, strides) of `x` stored in dimension order `order` (None: row-major)."""
    order = list(range(x.ndim)) if order is None else list(order)
    storage = np.ascontiguousarray(x.transpose(order)).reshape(-1)
    return storage, np.array(x.shape, dtype=I64), np.array(strides_for(x.shape, order), dtype=I64)


def _raw_out(p: Probe, shape: tuple[int, ...], fill: float = 0.0) -> tuple[Ref, np.ndarray, np.ndarray]:
    """A row-major output storage (a register of `p`) with its shape and strides.

    The storage is a *copy* made by the executor (``const.copy()``): the parent runs the
    probe on the reference before the child gets it, and a kernel writing into the const
    itself would send the child an `out` that already holds the expected values.
    """
    out = p.method(p.const(np.full(int(np.prod(shape)), fill)), "copy")
    return out, np.array(shape, dtype=I64), np.array(strides_for(shape), dtype=I64)


def _kernel(p: Probe, factory: str, fn: str) -> Ref:
    """`minitorch.fast_ops.<factory>(minitorch.operators.<fn>)`: the task's compiled kernel."""
    return p.call(f"minitorch.fast_ops.{factory}", p.get(f"minitorch.operators.{fn}"))


def _fast_kernel_probes(ctx: CheckContext) -> list[Probe]:
    """The kernels of task 3.1 called directly on raw row-major storages: no backend
    choice in between, whatever the child's tree holds."""
    probes = []
    a = values(ctx.rng, (3, 5))
    p = Probe("fast_ops.tensor_map(neg) called on a row-major a (3, 5)", {"a": a})
    out, *out_layout = _raw_out(p, (3, 5))
    p.call(_kernel(p, "tensor_map", "neg"), out, *out_layout, *_raw(a, None))
    probes.append(p.returns(out))
    for sb in [(3, 9), (9,), (1,)]:
        a, b = values(ctx.rng, (3, 9)), values(ctx.rng, sb)
        p = Probe(f"fast_ops.tensor_zip(mul) called on row-major a (3, 9) and b {sb}", {"a": a, "b": b})
        out, *out_layout = _raw_out(p, (3, 9))
        p.call(_kernel(p, "tensor_zip", "mul"), out, *out_layout, *_raw(a, None), *_raw(b, None))
        probes.append(p.returns(out))
    for dim in range(3):
        a = values(ctx.rng, (2, 3, 4))
        shape = tuple(1 if d == dim else s for d, s in enumerate(a.shape))
        p = Probe(f"fast_ops.tensor_reduce(add) over dim {dim} of a row-major a (2, 3, 4)", {"a": a})
        out, *out_layout = _raw_out(p, shape)
        p.call(_kernel(p, "tensor_reduce", "add"), out, *out_layout, *_raw(a, None), dim)
        probes.append(p.returns(out))
    return probes


def _matmul_case(p: Probe, a: np.ndarray, oa, b: np.ndarray, ob, kernel: str) -> Ref:  # noqa: ANN001
    """Call a matmul kernel directly on raw storage/shape/strides; return `out` after."""
    batch = max(a.shape[0], b.shape[0])
    out, *out_layout = _raw_out(p, (batch, a.shape[1], b.shape[2]))
    p.call(kernel, out, *out_layout, *_raw(a, oa), *_raw(b, ob))
    return out


MATMUL_CASES = [
    ((1, 1, 1), None, (1, 1, 1), None),
    ((1, 2, 3), None, (1, 3, 4), None),
    ((2, 3, 4), (0, 2, 1), (2, 4, 5), (2, 1, 0)),
    ((1, 5, 3), None, (3, 3, 2), (1, 2, 0)),  # a broadcast over the batch
    ((4, 3, 2), (2, 0, 1), (1, 2, 6), None),  # b broadcast, a with no unit stride
    ((2, 7, 9), (1, 2, 0), (2, 9, 5), (0, 2, 1)),
    ((1, 33, 40), None, (1, 40, 35), None),  # row-major, large enough for the reference's tiles
]


def _matmul_probes(ctx: CheckContext, kernel_path: str, label: str) -> list[Probe]:
    probes = []
    for sa, oa, sb, ob in MATMUL_CASES:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"{label}: a {sa} ({layout_text(oa)}) @ b {sb} ({layout_text(ob)})", {"a": a, "b": b})
        p.returns(_matmul_case(p, a, oa, b, ob, kernel_path))
        probes.append(p)
    return probes


# ---------------------------------------------------------------------------- 3.1 / 3.2


@check("a3", "fast_map_zip_reduce", kind="equivalence", timeout_scale=3.0)
def fast_map_zip_reduce(ctx: CheckContext) -> None:
    """FastBackend map / zip / reduce on permuted, broadcast and row-major layouts, and the
    kernels of `fast_ops` called directly, against the reference."""
    probes = _elementwise_probes(ctx, "fast", small=False) + _fast_kernel_probes(ctx)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a3", "fast_matmul", kind="equivalence", timeout_scale=3.0)
def fast_matmul(ctx: CheckContext) -> None:
    """fast_ops.tensor_matmul called directly (any strides, broadcast batches, row-major),
    and FastBackend matrix products."""
    probes = _matmul_probes(ctx, "minitorch.fast_ops.tensor_matmul", "tensor_matmul")
    for sa, sb in [((2, 3), (3, 4)), ((2, 2, 5), (5, 3)), ((2, 24, 40), (40, 36))]:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"a @ b on FastBackend for a {sa}, b {sb}", {"a": a, "b": b})
        p.returns(p.op("matmul", p.tensor(a, backend="fast"), p.tensor(b, backend="fast")))
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


def _race_free(ctx: CheckContext, probes: list[Probe]) -> None:
    """Each probe answers its kernel's `prange_trace`: no cell may be shared."""
    for p, a in zip(probes, ctx.child(probes)):
        if a.error is not None:
            raise StudentError(p.label, a.error, inputs_text(p.inputs), expected="the kernel to run")
        (races,) = a.values
        if races:
            cell, iterations = races[0]
            more = f" (and {len(races) - 1} more cells)" if len(races) > 1 else ""
            raise CheckFailed(
                f"{p.label}: a data race: iterations {', '.join(map(str, iterations))} of the outermost prange all "
                f"touch out[{cell}], at least one writing{more}",
                "Numba runs the iterations of a prange on several threads at once, in any order: two of them "
                "updating the same output cell lose updates or read half-written values, on some runs and not "
                "others. Give each iteration its own output cells (prange over output elements or rows, and "
                "accumulate in a local variable).")


@check("a3", "fast_kernels_race_free", kind="property", timeout_scale=3.0)
def fast_kernels_race_free(ctx: CheckContext) -> None:
    """No two iterations of a prange of the map, zip and reduce kernels touch the same output
    cell: sizes of several chunks of 1,024 (and a remainder), broadcast, every reduced dimension."""
    probes = []
    a = values(ctx.rng, (3, 1100))
    p = Probe("fast_ops.tensor_map(neg) on a row-major a (3, 1100), traced", {"a": a})
    out, *out_layout = _raw_out(p, (3, 1100))
    p.returns(p.prange_trace(_kernel(p, "tensor_map", "neg"), 0, out, *out_layout, *_raw(a, None)))
    probes.append(p)
    a, b = values(ctx.rng, (3, 1100)), values(ctx.rng, (1100,))
    p = Probe("fast_ops.tensor_zip(mul) on a row-major a (3, 1100) and b (1100,), traced", {"a": a, "b": b})
    out, *out_layout = _raw_out(p, (3, 1100))
    p.returns(p.prange_trace(_kernel(p, "tensor_zip", "mul"), 0, out, *out_layout, *_raw(a, None), *_raw(b, None)))
    probes.append(p)
    a = values(ctx.rng, (5, 6, 70))
    for dim in range(3):
        shape = tuple(1 if d == dim else s for d, s in enumerate(a.shape))
        p = Probe(f"fast_ops.tensor_reduce(add) over dim {dim} of a (5, 6, 70) stored {layout_text((2, 0, 1))}, traced", {"a": a})
        out, *out_layout = _raw_out(p, shape)
        p.returns(p.prange_trace(_kernel(p, "tensor_reduce", "add"), 0, out, *out_layout, *_raw(a, (2, 0, 1)), dim))
        probes.append(p)
    _race_free(ctx, probes)


@check("a3", "fast_matmul_race_free", kind="property", timeout_scale=3.0)
def fast_matmul_race_free(ctx: CheckContext) -> None:
    """No two iterations of a prange of tensor_matmul touch the same output cell: a batch,
    a broadcast batch, a long inner dimension."""
    probes = []
    for sa, sb in [((2, 3, 40), (2, 40, 5)), ((1, 4, 33), (3, 33, 2))]:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"fast_ops.tensor_matmul: a {sa} @ b {sb}, traced", {"a": a, "b": b})
        out, *out_layout = _raw_out(p, (max(sa[0], sb[0]), sa[1], sb[2]))
        p.returns(p.prange_trace(p.get("minitorch.fast_ops.tensor_matmul"), 0, out, *out_layout, *_raw(a, None), *_raw(b, None)))
        probes.append(p)
    _race_free(ctx, probes)


# ---------------------------------------------------------------------------- 3.3 / 3.4


def _cuda_elementwise(ctx: CheckContext, kind: str) -> list[Probe]:
    """The CudaBackend probes of one kind of kernel: "map", "zip" or "reduce"."""
    return [p for p in _elementwise_probes(ctx, "cuda", small=True) if f"_{kind}(" in p.label]


@check("a3", "cuda_map", kind="equivalence", timeout_scale=4.0)
def cuda_map(ctx: CheckContext) -> None:
    """CudaBackend maps (simulator) on permuted layouts and broadcast into a larger out."""
    ctx.equivalent(_cuda_elementwise(ctx, "map"), Tol(rtol=1e-9, atol=1e-12))


@check("a3", "cuda_zip", kind="equivalence", timeout_scale=4.0)
def cuda_zip(ctx: CheckContext) -> None:
    """CudaBackend zips (simulator) on permuted and broadcast layouts."""
    ctx.equivalent(_cuda_elementwise(ctx, "zip"), Tol(rtol=1e-9, atol=1e-12))


@check("a3", "cuda_reduce", kind="equivalence", timeout_scale=4.0)
def cuda_reduce(ctx: CheckContext) -> None:
    """CudaBackend reductions (simulator) over every dimension, and one longer than a block."""
    probes = _cuda_elementwise(ctx, "reduce")
    a = values(ctx.rng, (2, 300))
    p = Probe("CudaBackend.add_reduce(a, dim=1) for a of shape (2, 300) (more than 256 values per output)", {"a": a})
    p.returns(p.call(f"{CUDA}.add_reduce", p.tensor(a, backend="cuda"), 1))
    ctx.equivalent(probes + [p], Tol(rtol=1e-9, atol=1e-12))


def _cuda_matmul_probes(ctx: CheckContext, cases: list) -> list[Probe]:
    probes = []
    for sa, oa, sb, ob in cases:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"CudaBackend.matrix_multiply(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})", {"a": a, "b": b})
        p.returns(p.call(f"{CUDA}.matrix_multiply", p.tensor(a, oa, backend="cuda"), p.tensor(b, ob, backend="cuda")))
        probes.append(p)
    return probes


@check("a3", "cuda_matmul", kind="equivalence", timeout_scale=4.0)
def cuda_matmul(ctx: CheckContext) -> None:
    """CudaBackend.matrix_multiply (simulator), one matrix: sizes smaller than a tile and
    sizes that are not multiples of it."""
    cases = [((1, 2, 3), None, (1, 3, 4), None), ((1, 17, 19), None, (1, 19, 18), None)]
    ctx.equivalent(_cuda_matmul_probes(ctx, cases), Tol(rtol=1e-9, atol=1e-12))


@check("a3", "cuda_matmul_batches", kind="equivalence", timeout_scale=4.0)
def cuda_matmul_batches(ctx: CheckContext) -> None:
    """CudaBackend.matrix_multiply (simulator): batches, a broadcast batch, permuted layouts."""
    cases = [((2, 5, 17), (0, 2, 1), (2, 17, 3), None), ((1, 18, 4), None, (2, 4, 3), (0, 2, 1))]
    ctx.equivalent(_cuda_matmul_probes(ctx, cases), Tol(rtol=1e-9, atol=1e-12))


@check("a3", "cuda_matmul_float32", kind="equivalence", timeout_scale=4.0)
def cuda_matmul_float32(ctx: CheckContext) -> None:
    """a @ b on CudaBackend for float32 tensors: float32 out (its sums in another order than
    the reference's, so to float32's tolerance)."""
    a, b = ctx.rng.standard_normal((3, 4)).astype(np.float32), ctx.rng.standard_normal((4, 2)).astype(np.float32)
    p = Probe("a @ b on CudaBackend for float32 a (3, 4), b (4, 2)", {"a": a, "b": b})
    p.returns(p.op("matmul", p.tensor(a, backend="cuda"), p.tensor(b, backend="cuda")))
    ctx.equivalent([p], F32)
