"""Hidden checks of task 2.1: Strides and indexing."""

from __future__ import annotations

from itertools import permutations

import numpy as np

from ..base import CheckContext, check
from ..inputs import I64, strides_for
from ..probe import Probe
from .common import TD, _layouts


SHAPES = [(1,), (4,), (2, 3), (3, 1), (1, 4), (2, 1, 3), (2, 3, 4), (3, 2, 1, 2)]


@check("2.1", "strides_from_shape", kind="equivalence")
def strides_from_shape(ctx: CheckContext) -> None:
    """strides_from_shape: the row-major strides of a shape (0-d and size-1 dims included)."""
    probes = []
    for shape in [(1,), (5,), (2, 3), (3, 2), (1, 4, 1), (2, 3, 4), (4, 1, 3, 2), ()]:
        p = Probe(f"strides_from_shape({shape})")
        p.returns(p.call(f"{TD}.strides_from_shape", shape))
        probes.append(p)
    ctx.equivalent(probes)


@check("2.1", "index_to_position", kind="equivalence")
def index_to_position(ctx: CheckContext) -> None:
    """index_to_position for row-major, reversed and mixed strides."""
    probes = []
    for shape in SHAPES[1:]:
        for order in _layouts(len(shape)):
            strides = np.array(strides_for(shape, order), dtype=I64)
            for _ in range(3):
                index = np.array([ctx.rng.integers(0, s) for s in shape], dtype=I64)
                p = Probe(
                    f"index_to_position({tuple(int(i) for i in index)}, strides={tuple(int(s) for s in strides)})"
                )
                p.returns(p.call(f"{TD}.index_to_position", index, strides))
                probes.append(p)
    ctx.equivalent(probes)


@check("2.1", "to_index", kind="equivalence")
def to_index(ctx: CheckContext) -> None:
    """to_index writes the index of every ordinal into out_index (which arrives zeroed: the
    reference fills its own copy)."""
    probes = []
    for shape in [(4,), (2, 3), (3, 1), (2, 1, 3), (2, 3, 4), (3, 2, 1, 2)]:
        size = int(np.prod(shape))
        for ordinal in range(size):
            p = Probe(f"to_index({ordinal}, shape={shape}, out_index) — out_index afterwards")
            out = p.const(np.zeros(len(shape), dtype=I64))
            p.call(f"{TD}.to_index", ordinal, np.array(shape, dtype=I64), out)
            p.returns(out)
            probes.append(p)
    ctx.equivalent(probes)


@check("2.1", "permute", kind="equivalence")
def permute(ctx: CheckContext) -> None:
    """TensorData.permute: shape, strides and the values it reads; ShapeError for an order
    that is not a permutation of the dimensions."""
    probes = []
    for shape in [(2, 3), (3, 1), (2, 3, 4), (2, 1, 3), (3, 2, 1, 2)]:
        size = int(np.prod(shape))
        for order in list(permutations(range(len(shape))))[:6]:
            for layout in (None, tuple(reversed(range(len(shape))))):
                strides = strides_for(shape, layout)
                storage = np.arange(size, dtype=np.float64)
                p = Probe(
                    f"TensorData(storage=arange({size}), shape={shape}, strides={strides}).permute(*{order}): shape, strides, values"
                )
                td = p.call(f"{TD}.TensorData", storage, shape, strides)
                out = p.method(td, "permute", *order)
                p.returns(
                    p.attr(out, "shape"),
                    p.attr(out, "strides"),
                    p.method(out, "to_numpy"),
                    names=["shape", "strides", "values"],
                )
                probes.append(p)
    # permuting twice: the second permutation acts on the first's result
    p = Probe("TensorData(arange(24), (2, 3, 4)).permute(2, 0, 1).permute(1, 2, 0): shape, strides")
    td = p.call(f"{TD}.TensorData", np.arange(24, dtype=np.float64), (2, 3, 4))
    out = p.method(p.method(td, "permute", 2, 0, 1), "permute", 1, 2, 0)
    p.returns(p.attr(out, "shape"), p.attr(out, "strides"), names=["shape", "strides"])
    probes.append(p)
    # not a permutation of the dimensions: a dimension twice, too few, too many, out of range
    for shape, order in [
        ((2, 3), (0, 0)),
        ((2, 3), (1,)),
        ((2, 3), (0, 1, 2)),
        ((2, 3), (0, 2)),
        ((2, 3, 4), (2, 0, 0)),
    ]:
        p = Probe(
            f"TensorData(arange({int(np.prod(shape))}), {shape}).permute(*{order}) (not a permutation: must raise ShapeError)",
            expect_error=True,
            error_match="exactly once",
        )
        td = p.call(f"{TD}.TensorData", np.arange(int(np.prod(shape)), dtype=np.float64), shape)
        p.returns(p.method(td, "permute", *order))
        probes.append(p)
    ctx.equivalent(probes)
