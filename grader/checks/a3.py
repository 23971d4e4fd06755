"""Hidden checks of stage A3: the parallel CPU kernels (3.1, 3.2) and the CUDA kernels
(3.3, 3.4; run on Numba's CUDA simulator unless the grader is given a GPU).

The reference's tuned CPU loops (flat and row-wise paths, the tiled matmul) live in
`minitorch/fast_tuned.py`, which the A3 manifest lists as ``reference_only``: A3 child trees
do not contain it, so `FastBackend` runs the student's kernels on every layout, contiguous
ones included, and the probes below use both kinds. The probes that call the kernels
of `fast_ops` directly (`tensor_map(fn)`, …, `tensor_matmul`) reach the student's code
whatever the tree holds; the parent computes their expected values with the simple kernels
(`REFERENCE_ALIASES` in `grader/reference.py`).

Performance (3.1, 3.2): the same inputs are timed in the student's child and in a child
running the kit's minitorch (same limits, same channel), calling the task's kernels of
`fast_ops` directly in both — never the reference's tuned loops, so the ratio compares the
student's loops with the reference's loops for the same task. The parent measures the round
trip of a probe that runs the kernel N times, subtracts the round trip of the same probe
with N = 0 (input transfer and set-up), and compares the best of several rounds,
alternating student and reference. Kernels are compiled (and their output checked) in a
first, untimed call.
"""

from __future__ import annotations

import numpy as np

from .base import CheckContext, CheckFailed, GraderBug, StudentError, inputs_text, check
from .inputs import I64, layout_text, reversed_order, strides_for, values
from .probe import F32, Probe, Ref, Tol, diff

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


#: A difference of round trips at least this long (seconds) is taken as a measurement;
#: shorter ones are within the noise of moving the probe's inputs.
RELIABLE_S = 0.025


def _speed(ctx: CheckContext, label: str, build, inputs: dict, rounds: int = 5, target_s: float = 0.1) -> float:  # noqa: ANN001
    """Time `build(p, n)` (the kernel run n times) in both children; return the ratio
    student / reference of the per-run times.

    n is chosen so that the reference needs about `target_s` for the n runs; each round
    times n runs and 0 runs (the same probe without the kernel: transfer and set-up) in
    the student's child and in the reference child, alternating; the per-run time is
    (best of n-run round trips − best of 0-run round trips) / n. A ratio above the
    task's limit (but below twice the limit) is measured once more and the better of the
    two kept, so that a burst of load on the machine does not fail a kernel that is fast
    enough.
    """

    def probe(n: int) -> Probe:
        p = Probe(label, inputs)
        out = build(p, n)
        if n == 1:
            p.returns(out)
        else:
            p.returns()
        return p

    # compile and check the output on the timed input (untimed)
    (mine,), _ = ctx.timed_child([probe(1)])
    (ref,), _ = ctx.timed_reference_child([probe(1)])
    if mine.error:
        raise StudentError(label, mine.error, inputs_text(inputs))
    problem = diff(ref.values[0], mine.values[0], Tol(rtol=1e-9, atol=1e-12))
    if problem:
        raise CheckFailed(f"{label}: wrong output on the timing input: {problem}", inputs_text(inputs))
    # The reference's time per run, from k runs minus 0 runs with k grown until the
    # difference stands well above the noise of a round trip (which moves megabytes of
    # input): with too few runs the difference can even come out negative.
    _, t0 = ctx.timed_reference_child([probe(0)])
    k = 4
    while True:
        _, tk = ctx.timed_reference_child([probe(k)])
        if tk - t0 >= RELIABLE_S or k >= 512:
            break
        k *= 4
    per_run = max((tk - t0) / k, 1e-6)
    repeat = int(min(max(np.ceil(target_s / per_run), 3), 500))

    # A kernel far slower than the limit is judged on one run: repeating it `repeat` times
    # (sized for the reference) could take minutes and end as a timeout instead of a verdict.
    # Only a run long enough to be measured alone qualifies.
    _, s0 = ctx.timed_child([probe(0)])
    _, s1 = ctx.timed_child([probe(1)])
    once = max(s1 - s0, 1e-9) / per_run
    if s1 - s0 >= RELIABLE_S and once > 2 * _threshold(ctx):
        ctx.services.timings.append((label, s1 - s0, per_run, once, 1))
        return once

    def measure() -> tuple[float, dict[str, float]]:
        best = {"student": np.inf, "reference": np.inf}
        base = {"student": np.inf, "reference": np.inf}
        for _ in range(rounds):
            for who, run in (("student", ctx.timed_child), ("reference", ctx.timed_reference_child)):
                _, zero = run([probe(0)])
                answers, full = run([probe(repeat)])
                if answers[0].error:
                    raise StudentError(label, answers[0].error, inputs_text(inputs))
                base[who] = min(base[who], zero)
                best[who] = min(best[who], full)
        times = {w: max(best[w] - base[w], 1e-9) / repeat for w in best}
        return times["student"] / times["reference"], times

    ratio, times = measure()
    if _threshold(ctx) < ratio < 2 * _threshold(ctx):  # near the limit: once more
        again, times2 = measure()
        if again < ratio:
            ratio, times = again, times2
    ctx.services.timings.append((label, times["student"], times["reference"], ratio, repeat))
    return ratio


def _threshold(ctx: CheckContext) -> float:
    task = ctx.services.task
    perf = getattr(task, "performance", None)
    if perf is None:
        raise GraderBug(f"check {ctx.check.name} needs [tasks.performance] max_ratio in the manifest")
    return float(perf.max_ratio)


def _verdict(ctx: CheckContext, results: list[tuple[str, float]]) -> str:
    limit = _threshold(ctx)
    shown = ", ".join(f"{name} {r:.2f}×" for name, r in results)
    for name, ratio in results:
        if ratio > limit:
            timings = "\n".join(
                f"{lab}: yours {s * 1e3:.2f} ms, reference {r * 1e3:.2f} ms per run (ratio {q:.2f}, "
                + (f"best of 5 rounds of {n} runs)" if n > 1 else "one run: far over the limit)")
                for lab, s, r, q, n in ctx.services.timings
            )
            raise CheckFailed(f"{name} is {ratio:.1f}× slower than the reference (limit {limit:g}×); all: {shown}", timings)
    return f"time / reference: {shown} (limit {limit:g}×)"


@check("a3", "fast_map_zip_reduce_speed", kind="performance", timeout_scale=4.0)
def fast_map_zip_reduce_speed(ctx: CheckContext) -> str:
    """The kernels of task 3.1 — fast_ops.tensor_map(neg), tensor_zip(mul),
    tensor_reduce(add), called directly — on permuted and broadcast inputs of ~400k
    elements: time as a ratio to the reference's kernels of the task, timed in the same run."""
    shape = (64, 1250, 5)
    order = (2, 1, 0)
    a = ctx.rng.standard_normal(shape)
    b = ctx.rng.standard_normal((1250, 1))
    results = []

    def run_map(p: Probe, n: int) -> Ref:
        out, *out_layout = _raw_out(p, shape)
        p.repeat(n, _kernel(p, "tensor_map", "neg"), out, *out_layout, *_raw(a, order))
        return out

    def run_zip(p: Probe, n: int) -> Ref:
        out, *out_layout = _raw_out(p, shape)
        p.repeat(n, _kernel(p, "tensor_zip", "mul"), out, *out_layout, *_raw(a, order), *_raw(b, None))
        return out

    def run_reduce(p: Probe, n: int) -> Ref:
        out, *out_layout = _raw_out(p, (shape[0], 1, shape[2]))
        p.repeat(n, _kernel(p, "tensor_reduce", "add"), out, *out_layout, *_raw(a, order), 1)
        return out

    for name, build, what in (("map", run_map, "tensor_map(neg)"), ("zip", run_zip, "tensor_zip(mul) with b (1250, 1)"),
                              ("reduce", run_reduce, "tensor_reduce(add) over dim 1")):
        label = f"fast_ops.{what} on a {shape} tensor stored in order {order}"
        results.append((name, _speed(ctx, label, build, {"shape": shape})))
    return _verdict(ctx, results)


@check("a3", "fast_matmul_speed", kind="performance", timeout_scale=4.0)
def fast_matmul_speed(ctx: CheckContext) -> str:
    """fast_ops.tensor_matmul (the kernel of task 3.2, called directly) on [8, 96, 96] @
    [8, 96, 96]: time as a ratio to the reference's kernel of the task, timed in the same
    run."""
    a = ctx.rng.standard_normal((8, 96, 96))
    b = ctx.rng.standard_normal((8, 96, 96))

    def run(p: Probe, n: int) -> Ref:
        out_shape = np.array(a.shape, dtype=I64)
        strides = np.array(strides_for(a.shape), dtype=I64)
        out = p.method(p.const(np.zeros(a.size)), "copy")  # see _raw_out
        args = [out, out_shape, strides, a.reshape(-1), out_shape, strides, b.reshape(-1), out_shape, strides]
        p.repeat(n, p.get("minitorch.fast_ops.tensor_matmul"), *args)
        return out

    ratio = _speed(ctx, "fast_ops.tensor_matmul on [8, 96, 96] @ [8, 96, 96]", run, {})
    return _verdict(ctx, [("matmul", ratio)])


# ---------------------------------------------------------------------------- 3.3 / 3.4


@check("a3", "cuda_map_zip_reduce", kind="equivalence", timeout_scale=4.0)
def cuda_map_zip_reduce(ctx: CheckContext) -> None:
    """CudaBackend map / zip / reduce (simulator) on permuted and broadcast layouts,
    against the reference."""
    probes = _elementwise_probes(ctx, "cuda", small=True)
    # a reduction longer than one block of threads
    a = values(ctx.rng, (2, 300))
    p = Probe("CudaBackend.add_reduce(a, dim=1) for a of shape (2, 300) (more than 256 values per output)", {"a": a})
    p.returns(p.call(f"{CUDA}.add_reduce", p.tensor(a, backend="cuda"), 1))
    probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a3", "cuda_matmul", kind="equivalence", timeout_scale=4.0)
def cuda_matmul(ctx: CheckContext) -> None:
    """CudaBackend.matrix_multiply (simulator): sizes that are not multiples of the tile,
    broadcast batches, permuted layouts."""
    probes = []
    for sa, oa, sb, ob in [((1, 2, 3), None, (1, 3, 4), None), ((2, 5, 17), (0, 2, 1), (2, 17, 3), None), ((1, 18, 4), None, (2, 4, 3), (0, 2, 1))]:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"CudaBackend.matrix_multiply(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})", {"a": a, "b": b})
        p.returns(p.call(f"{CUDA}.matrix_multiply", p.tensor(a, oa, backend="cuda"), p.tensor(b, ob, backend="cuda")))
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))
    a, b = ctx.rng.standard_normal((3, 4)).astype(np.float32), ctx.rng.standard_normal((4, 2)).astype(np.float32)
    p = Probe("a @ b on CudaBackend for float32 a (3, 4), b (4, 2)", {"a": a, "b": b})
    p.returns(p.op("matmul", p.tensor(a, backend="cuda"), p.tensor(b, backend="cuda")))
    ctx.equivalent([p], F32)  # float32 sums in another order than the reference's
