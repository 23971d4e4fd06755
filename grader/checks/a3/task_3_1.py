"""Hidden checks of task 3.1: Parallel map, zip and reduce."""

from __future__ import annotations

from ..base import CheckContext, check
from ..inputs import layout_text, strides_for, values
from ..probe import Probe, Ref, Tol
from .common import _elementwise_probes, _race_free, _raw, _raw_out
from .speed import Timed, _speed, _verdict


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


@check("3.1", "fast_map_zip_reduce", kind="equivalence", timeout_scale=3.0)
def fast_map_zip_reduce(ctx: CheckContext) -> None:
    """FastBackend map / zip / reduce on permuted, broadcast and row-major layouts, and the
    kernels of `fast_ops` called directly, against the reference."""
    probes = _elementwise_probes(ctx, "fast", small=False) + _fast_kernel_probes(ctx)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("3.1", "fast_kernels_race_free", kind="property", timeout_scale=3.0)
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
    p.returns(
        p.prange_trace(_kernel(p, "tensor_zip", "mul"), 0, out, *out_layout, *_raw(a, None), *_raw(b, None))
    )
    probes.append(p)
    a = values(ctx.rng, (5, 6, 70))
    for dim in range(3):
        shape = tuple(1 if d == dim else s for d, s in enumerate(a.shape))
        p = Probe(
            f"fast_ops.tensor_reduce(add) over dim {dim} of a (5, 6, 70) stored {layout_text((2, 0, 1))}, traced",
            {"a": a},
        )
        out, *out_layout = _raw_out(p, shape)
        p.returns(
            p.prange_trace(_kernel(p, "tensor_reduce", "add"), 0, out, *out_layout, *_raw(a, (2, 0, 1)), dim)
        )
        probes.append(p)
    _race_free(ctx, probes)


ELEMENTWISE = (64, 1250, 5)
ORDER = (2, 1, 0)
PERMUTED = (ELEMENTWISE, strides_for(ELEMENTWISE, ORDER))
ON = f"on a {ELEMENTWISE} tensor stored in order {ORDER}"
BIAS = (1250, 1)
REDUCED = (ELEMENTWISE[0], 1, ELEMENTWISE[2])
TASK_3_1 = [
    Timed(
        "map", f"fast_ops.tensor_map(neg) {ON}", ("tensor_map", "neg"), (PERMUTED,), ELEMENTWISE, exact=True
    ),
    Timed(
        "zip",
        f"fast_ops.tensor_zip(mul) with b {BIAS} {ON}",
        ("tensor_zip", "mul"),
        (PERMUTED, (BIAS, strides_for(BIAS))),
        ELEMENTWISE,
        exact=True,
    ),
    Timed(
        "reduce",
        f"fast_ops.tensor_reduce(add) over dim 1 {ON}",
        ("tensor_reduce", "add"),
        (PERMUTED,),
        REDUCED,
        (1,),
    ),
]


@check("3.1", "fast_map_zip_reduce_speed", kind="performance", timeout_scale=4.0)
def fast_map_zip_reduce_speed(ctx: CheckContext) -> str:
    """The kernels of task 3.1 — fast_ops.tensor_map(neg), tensor_zip(mul),
    tensor_reduce(add), called directly — on permuted and broadcast inputs of 400k
    elements, fresh for every call: time as a ratio to the reference's kernels of the task,
    timed in the same run."""
    return _verdict(ctx, [(t, _speed(ctx, t)) for t in TASK_3_1])
