"""Hidden checks of task 3.3: CUDA map, zip and reduce."""

from __future__ import annotations

from ..base import CheckContext, check
from ..inputs import values
from ..probe import Probe, Tol
from .common import CUDA, _elementwise_probes


def _cuda_elementwise(ctx: CheckContext, kind: str) -> list[Probe]:
    """The CudaBackend probes of one kind of kernel: "map", "zip" or "reduce"."""
    return [p for p in _elementwise_probes(ctx, "cuda", small=True) if f"_{kind}(" in p.label]


@check("3.3", "cuda_map", kind="equivalence", timeout_scale=4.0)
def cuda_map(ctx: CheckContext) -> None:
    """CudaBackend maps (simulator) on permuted layouts and broadcast into a larger out."""
    ctx.equivalent(_cuda_elementwise(ctx, "map"), Tol(rtol=1e-9, atol=1e-12))


@check("3.3", "cuda_zip", kind="equivalence", timeout_scale=4.0)
def cuda_zip(ctx: CheckContext) -> None:
    """CudaBackend zips (simulator) on permuted and broadcast layouts."""
    ctx.equivalent(_cuda_elementwise(ctx, "zip"), Tol(rtol=1e-9, atol=1e-12))


@check("3.3", "cuda_reduce", kind="equivalence", timeout_scale=4.0)
def cuda_reduce(ctx: CheckContext) -> None:
    """CudaBackend reductions (simulator) over every dimension, and one longer than a block."""
    probes = _cuda_elementwise(ctx, "reduce")
    a = values(ctx.rng, (2, 300))
    p = Probe(
        "CudaBackend.add_reduce(a, dim=1) for a of shape (2, 300) (more than 256 values per output)", {"a": a}
    )
    p.returns(p.call(f"{CUDA}.add_reduce", p.tensor(a, backend="cuda"), 1))
    ctx.equivalent(probes + [p], Tol(rtol=1e-9, atol=1e-12))
