"""What the checks of several A3 tasks share: raw kernel arguments, the race check through
`prange_trace`, the elementwise probes, the CUDA module.
"""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError
from ..feedback import inputs_text
from ..inputs import I64, layout_text, reversed_order, strides_for, values
from ..probe import Probe, Ref


FAST = "minitorch.FastBackend"
CUDA = "minitorch.CudaBackend"


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
            p = Probe(
                f"{name}.{op}(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})",
                {"a": a, "b": b},
            )
            p.returns(
                p.call(
                    f"minitorch.{name}.{op}",
                    p.tensor(a, oa, backend=backend),
                    p.tensor(b, ob, backend=backend),
                )
            )
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
    p.returns(
        p.call(
            f"minitorch.{name}.add_zip", p.tensor(a, (1, 0), backend=backend), p.tensor(b, backend=backend)
        )
    )
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
                "accumulate in a local variable).",
            )
