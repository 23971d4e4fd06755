"""Hidden checks of task 2.2: Broadcasting."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, check
from ..inputs import I64
from ..probe import Probe
from .common import TD


MT = "minitorch"

BROADCAST_PAIRS = [
    ((1,), (3,)),
    ((3,), (1,)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 2)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((2, 3), (2, 3)),
    ((4, 1, 3), (5, 1)),
    ((5, 1), (4, 1, 3)),
    ((1, 1, 1), (4,)),
    ((2, 1, 3), (2, 4, 3)),
    ((6, 1, 1, 2), (3, 1, 1)),
]
INCOMPATIBLE = [((2, 3), (3, 2)), ((4,), (5,)), ((2, 1, 3), (2, 4, 2)), ((3,), (2, 4))]


@check("2.2", "shape_broadcast", kind="property")
def shape_broadcast(ctx: CheckContext) -> None:
    """shape_broadcast on compatible shapes, in both argument orders."""
    probes = []
    for a, b in BROADCAST_PAIRS:
        p = Probe(f"shape_broadcast({a}, {b})")
        p.returns(p.call(f"{TD}.shape_broadcast", a, b))
        probes.append(p)
    ctx.equivalent(probes)


@check("2.2", "shape_broadcast_incompatible", kind="property")
def shape_broadcast_incompatible(ctx: CheckContext) -> None:
    """shape_broadcast raises ShapeError for shapes that cannot be broadcast (edge case)."""
    probes = []
    for a, b in INCOMPATIBLE:
        p = Probe(f"shape_broadcast({a}, {b}) (incompatible: must raise ShapeError)", expect_error=True)
        p.returns(p.call(f"{TD}.shape_broadcast", a, b))
        probes.append(p)
    ctx.equivalent(probes)


@check("2.2", "broadcast_index", kind="equivalence")
def broadcast_index(ctx: CheckContext) -> None:
    """broadcast_index maps an index of the big shape to the index of the smaller operand
    (out_index arrives zeroed: the reference fills its own copy)."""
    probes = []
    for big, small in [
        ((3,), (1,)),
        ((2, 3), (3,)),
        ((2, 3), (2, 1)),
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (1, 3, 4)),
        ((2, 3, 4), (2, 1, 4)),
        ((2, 3, 4), ()),
    ]:
        for ordinal in range(int(np.prod(big))):
            index = np.array(np.unravel_index(ordinal, big), dtype=I64)
            p = Probe(
                f"broadcast_index(big_index={tuple(int(i) for i in index)}, big_shape={big}, shape={small}, out_index) — out_index afterwards"
            )
            out = p.const(np.zeros(len(small), dtype=I64))
            p.call(f"{TD}.broadcast_index", index, np.array(big, dtype=I64), np.array(small, dtype=I64), out)
            p.returns(out)
            probes.append(p)
    ctx.equivalent(probes)


@check("2.2", "reduce_to_shape", kind="equivalence")
def reduce_to_shape(ctx: CheckContext) -> None:
    """reduce_to_shape: a gradient summed back over the dimensions broadcasting stretched;
    ShapeError for a gradient with fewer dimensions than the operand."""
    probes = []
    for big, small in [
        ((3,), (1,)),
        ((2, 3), (3,)),
        ((2, 3), (2, 1)),
        ((2, 3), ()),
        ((2, 3, 4), (3, 1)),
        ((4, 2, 3), (1, 2, 1)),
    ]:
        g = ctx.rng.standard_normal(big)
        p = Probe(
            f"reduce_to_shape(grad of shape {big}, {small}): the gradient summed back to the operand's shape",
            {"grad": g},
        )
        p.returns(p.call(f"{MT}.tensor.reduce_to_shape", p.tensor(g), small))
        probes.append(p)
    # a gradient with fewer dimensions than the operand (a wrong backward): ShapeError
    for big, small in [((3,), (3, 1)), ((3,), (2, 3))]:
        g = ctx.rng.standard_normal(big)
        p = Probe(
            f"reduce_to_shape(grad of shape {big}, {small}) (fewer dimensions than the operand: must raise ShapeError)",
            {"grad": g},
            expect_error=True,
        )
        p.returns(p.call(f"{MT}.tensor.reduce_to_shape", p.tensor(g), small))
        probes.append(p)
    ctx.equivalent(probes)
