"""Hidden checks of task 3.4: CUDA matrix multiplication."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, check
from ..inputs import layout_text
from ..probe import F32, Probe, Tol
from .common import CUDA


def _cuda_matmul_probes(ctx: CheckContext, cases: list) -> list[Probe]:
    probes = []
    for sa, oa, sb, ob in cases:
        a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
        p = Probe(
            f"CudaBackend.matrix_multiply(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})",
            {"a": a, "b": b},
        )
        p.returns(
            p.call(
                f"{CUDA}.matrix_multiply", p.tensor(a, oa, backend="cuda"), p.tensor(b, ob, backend="cuda")
            )
        )
        probes.append(p)
    return probes


@check("3.4", "cuda_matmul", kind="equivalence", timeout_scale=4.0)
def cuda_matmul(ctx: CheckContext) -> None:
    """CudaBackend.matrix_multiply (simulator), one matrix: sizes smaller than a tile and
    sizes that are not multiples of it."""
    cases = [((1, 2, 3), None, (1, 3, 4), None), ((1, 17, 19), None, (1, 19, 18), None)]
    ctx.equivalent(_cuda_matmul_probes(ctx, cases), Tol(rtol=1e-9, atol=1e-12))


@check("3.4", "cuda_matmul_batches", kind="equivalence", timeout_scale=4.0)
def cuda_matmul_batches(ctx: CheckContext) -> None:
    """CudaBackend.matrix_multiply (simulator): batches, a broadcast batch, permuted layouts."""
    cases = [((2, 5, 17), (0, 2, 1), (2, 17, 3), None), ((1, 18, 4), None, (2, 4, 3), (0, 2, 1))]
    ctx.equivalent(_cuda_matmul_probes(ctx, cases), Tol(rtol=1e-9, atol=1e-12))


@check("3.4", "cuda_matmul_float32", kind="equivalence", timeout_scale=4.0)
def cuda_matmul_float32(ctx: CheckContext) -> None:
    """a @ b on CudaBackend for float32 tensors: float32 out (its sums in another order than
    the reference's, so to float32's tolerance)."""
    a, b = (
        ctx.rng.standard_normal((3, 4)).astype(np.float32),
        ctx.rng.standard_normal((4, 2)).astype(np.float32),
    )
    p = Probe("a @ b on CudaBackend for float32 a (3, 4), b (4, 2)", {"a": a, "b": b})
    p.returns(p.op("matmul", p.tensor(a, backend="cuda"), p.tensor(b, backend="cuda")))
    ctx.equivalent([p], F32)
