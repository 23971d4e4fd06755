"""Hidden checks of task 3.2: Parallel matrix multiplication."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, check
from ..inputs import layout_text, strides_for
from ..probe import Probe, Ref, Tol
from .common import _race_free, _raw, _raw_out
from .speed import Timed, _speed, _verdict


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


@check("3.2", "fast_matmul", kind="equivalence", timeout_scale=3.0)
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


@check("3.2", "fast_matmul_race_free", kind="property", timeout_scale=3.0)
def fast_matmul_race_free(ctx: CheckContext) -> None:
    """No two iterations of a prange of tensor_matmul touch the same output cell: a batch,
    a broadcast batch, a long inner dimension."""
    probes = []
    for sa, sb in [((2, 3, 40), (2, 40, 5)), ((1, 4, 33), (3, 33, 2))]:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(f"fast_ops.tensor_matmul: a {sa} @ b {sb}, traced", {"a": a, "b": b})
        out, *out_layout = _raw_out(p, (max(sa[0], sb[0]), sa[1], sb[2]))
        p.returns(
            p.prange_trace(
                p.get("minitorch.fast_ops.tensor_matmul"), 0, out, *out_layout, *_raw(a, None), *_raw(b, None)
            )
        )
        probes.append(p)
    _race_free(ctx, probes)


MATMUL = (8, 96, 96)
TASK_3_2 = Timed(
    "matmul",
    f"fast_ops.tensor_matmul on {list(MATMUL)} @ {list(MATMUL)}",
    None,
    ((MATMUL, strides_for(MATMUL)), (MATMUL, strides_for(MATMUL))),
    MATMUL,
)


@check("3.2", "fast_matmul_speed", kind="performance", timeout_scale=4.0)
def fast_matmul_speed(ctx: CheckContext) -> str:
    """fast_ops.tensor_matmul (the kernel of task 3.2, called directly) on [8, 96, 96] @
    [8, 96, 96], fresh for every call: time as a ratio to the reference's kernel of the
    task, timed in the same run."""
    return _verdict(ctx, [(TASK_3_2, _speed(ctx, TASK_3_2))])
