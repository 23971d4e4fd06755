"""Hidden checks of stage A2: strides and indexing (2.1), broadcasting (2.2) and tensor
operations forward (2.3); the backward (2.4) in `a2_backward`, one check per Function.
What a forward saves in ``ctx`` only its backward can see: 2.3's `forwards_save_for_backward`
runs 2.4's probes, and is charged to 2.3 only when they fail after the reference's backward.

Tensors are built in the child straight from storage, shape and strides (so a permuted,
non-contiguous layout reaches the student's kernels without any student code making it)
and live on the simple backend.
"""

from __future__ import annotations

from itertools import permutations
from typing import Callable, Optional

import numpy as np

from . import a2_backward  # noqa: F401 - registers the checks of 2.4
from .a2_backward import TOL as BACKWARD_TOL, backward_after_forward
from .base import CheckContext, check
from .inputs import I64, layout_text, strides_for, values
from .probe import Probe, Ref, Tol

MT = "minitorch"
TD = "minitorch.tensor_data"
BACKEND = "minitorch.SimpleBackend"

SHAPES = [(1,), (4,), (2, 3), (3, 1), (1, 4), (2, 1, 3), (2, 3, 4), (3, 2, 1, 2)]


def _layouts(ndim: int) -> list[Optional[tuple[int, ...]]]:
    """Row-major, reversed, and (for 3+ dims) one mixed memory order."""
    out: list[Optional[tuple[int, ...]]] = [None]
    if ndim >= 2:
        out.append(tuple(reversed(range(ndim))))
    if ndim >= 3:
        out.append((ndim - 2, 0, ndim - 1, *range(1, ndim - 2)))
    return out


# ---- 2.1 strides and indexing


@check("a2", "strides_from_shape", kind="equivalence")
def strides_from_shape(ctx: CheckContext) -> None:
    """strides_from_shape: the row-major strides of a shape (0-d and size-1 dims included)."""
    probes = []
    for shape in [(1,), (5,), (2, 3), (3, 2), (1, 4, 1), (2, 3, 4), (4, 1, 3, 2), ()]:
        p = Probe(f"strides_from_shape({shape})")
        p.returns(p.call(f"{TD}.strides_from_shape", shape))
        probes.append(p)
    ctx.equivalent(probes)


@check("a2", "index_to_position", kind="equivalence")
def index_to_position(ctx: CheckContext) -> None:
    """index_to_position for row-major, reversed and mixed strides."""
    probes = []
    for shape in SHAPES[1:]:
        for order in _layouts(len(shape)):
            strides = np.array(strides_for(shape, order), dtype=I64)
            for _ in range(3):
                index = np.array([ctx.rng.integers(0, s) for s in shape], dtype=I64)
                p = Probe(f"index_to_position({tuple(int(i) for i in index)}, strides={tuple(int(s) for s in strides)})")
                p.returns(p.call(f"{TD}.index_to_position", index, strides))
                probes.append(p)
    ctx.equivalent(probes)


@check("a2", "to_index", kind="equivalence")
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


@check("a2", "permute", kind="equivalence")
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
                p = Probe(f"TensorData(storage=arange({size}), shape={shape}, strides={strides}).permute(*{order}): shape, strides, values")
                td = p.call(f"{TD}.TensorData", storage, shape, strides)
                out = p.method(td, "permute", *order)
                p.returns(p.attr(out, "shape"), p.attr(out, "strides"), p.method(out, "to_numpy"), names=["shape", "strides", "values"])
                probes.append(p)
    # permuting twice: the second permutation acts on the first's result
    p = Probe("TensorData(arange(24), (2, 3, 4)).permute(2, 0, 1).permute(1, 2, 0): shape, strides")
    td = p.call(f"{TD}.TensorData", np.arange(24, dtype=np.float64), (2, 3, 4))
    out = p.method(p.method(td, "permute", 2, 0, 1), "permute", 1, 2, 0)
    p.returns(p.attr(out, "shape"), p.attr(out, "strides"), names=["shape", "strides"])
    probes.append(p)
    # not a permutation of the dimensions: a dimension twice, too few, too many, out of range
    for shape, order in [((2, 3), (0, 0)), ((2, 3), (1,)), ((2, 3), (0, 1, 2)), ((2, 3), (0, 2)), ((2, 3, 4), (2, 0, 0))]:
        p = Probe(f"TensorData(arange({int(np.prod(shape))}), {shape}).permute(*{order}) (not a permutation: must raise ShapeError)",
                  expect_error=True, error_match="exactly once")
        td = p.call(f"{TD}.TensorData", np.arange(int(np.prod(shape)), dtype=np.float64), shape)
        p.returns(p.method(td, "permute", *order))
        probes.append(p)
    ctx.equivalent(probes)


# ---- 2.2 broadcasting

BROADCAST_PAIRS = [
    ((1,), (3,)), ((3,), (1,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 2)), ((), (2, 3)),
    ((2, 3), ()), ((2, 3), (2, 3)), ((4, 1, 3), (5, 1)), ((5, 1), (4, 1, 3)), ((1, 1, 1), (4,)),
    ((2, 1, 3), (2, 4, 3)), ((6, 1, 1, 2), (3, 1, 1)),
]
INCOMPATIBLE = [((2, 3), (3, 2)), ((4,), (5,)), ((2, 1, 3), (2, 4, 2)), ((3,), (2, 4))]


@check("a2", "shape_broadcast", kind="property")
def shape_broadcast(ctx: CheckContext) -> None:
    """shape_broadcast on compatible shapes, in both argument orders."""
    probes = []
    for a, b in BROADCAST_PAIRS:
        p = Probe(f"shape_broadcast({a}, {b})")
        p.returns(p.call(f"{TD}.shape_broadcast", a, b))
        probes.append(p)
    ctx.equivalent(probes)


@check("a2", "shape_broadcast_incompatible", kind="property")
def shape_broadcast_incompatible(ctx: CheckContext) -> None:
    """shape_broadcast raises ShapeError for shapes that cannot be broadcast (edge case)."""
    probes = []
    for a, b in INCOMPATIBLE:
        p = Probe(f"shape_broadcast({a}, {b}) (incompatible: must raise ShapeError)", expect_error=True)
        p.returns(p.call(f"{TD}.shape_broadcast", a, b))
        probes.append(p)
    ctx.equivalent(probes)


@check("a2", "broadcast_index", kind="equivalence")
def broadcast_index(ctx: CheckContext) -> None:
    """broadcast_index maps an index of the big shape to the index of the smaller operand
    (out_index arrives zeroed: the reference fills its own copy)."""
    probes = []
    for big, small in [((3,), (1,)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 3, 4)), ((2, 3, 4), (2, 1, 4)), ((2, 3, 4), ())]:
        for ordinal in range(int(np.prod(big))):
            index = np.array(np.unravel_index(ordinal, big), dtype=I64)
            p = Probe(f"broadcast_index(big_index={tuple(int(i) for i in index)}, big_shape={big}, shape={small}, out_index) — out_index afterwards")
            out = p.const(np.zeros(len(small), dtype=I64))
            p.call(f"{TD}.broadcast_index", index, np.array(big, dtype=I64), np.array(small, dtype=I64), out)
            p.returns(out)
            probes.append(p)
    ctx.equivalent(probes)


@check("a2", "reduce_to_shape", kind="equivalence")
def reduce_to_shape(ctx: CheckContext) -> None:
    """reduce_to_shape: a gradient summed back over the dimensions broadcasting stretched;
    ShapeError for a gradient with fewer dimensions than the operand."""
    probes = []
    for big, small in [((3,), (1,)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), ()), ((2, 3, 4), (3, 1)), ((4, 2, 3), (1, 2, 1))]:
        g = ctx.rng.standard_normal(big)
        p = Probe(f"reduce_to_shape(grad of shape {big}, {small}): the gradient summed back to the operand's shape", {"grad": g})
        p.returns(p.call(f"{MT}.tensor.reduce_to_shape", p.tensor(g), small))
        probes.append(p)
    # a gradient with fewer dimensions than the operand (a wrong backward): ShapeError
    for big, small in [((3,), (3, 1)), ((3,), (2, 3))]:
        g = ctx.rng.standard_normal(big)
        p = Probe(f"reduce_to_shape(grad of shape {big}, {small}) (fewer dimensions than the operand: must raise ShapeError)",
                  {"grad": g}, expect_error=True)
        p.returns(p.call(f"{MT}.tensor.reduce_to_shape", p.tensor(g), small))
        probes.append(p)
    ctx.equivalent(probes)


# ---- 2.3 forward

MAPS = ["neg_map", "id_map", "sigmoid_map", "relu_map", "exp_map", "log_map", "inv_map", "tanh_map"]
ZIPS = ["add_zip", "mul_zip", "lt_zip", "eq_zip", "relu_back_zip", "log_back_zip", "inv_back_zip"]
REDUCES = ["add_reduce", "mul_reduce", "max_reduce"]
ZIP_SHAPES = [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((3, 1, 2), (4, 1)), ((2, 3, 4), (2, 3, 4))]


def _backend_op(p: Probe, name: str) -> Ref:
    return p.get(f"{BACKEND}.{name}")


@check("a2", "map_kernel", kind="equivalence")
def map_kernel(ctx: CheckContext) -> None:
    """The simple backend's maps on contiguous and permuted layouts, and into a broadcast
    `out`."""
    probes = []
    for shape in [(1,), (4,), (2, 3), (2, 3, 4)]:
        for order in _layouts(len(shape)):
            for name in MAPS:
                positive = name in ("log_map", "inv_map")
                a = values(ctx.rng, shape, positive)
                p = Probe(f"SimpleBackend.{name}(a) for a of shape {shape}, {layout_text(order)}", {"a": a})
                p.returns(p.call(_backend_op(p, name), p.tensor(a, order)))
                probes.append(p)
    for small, big in [((1,), (3,)), ((3,), (2, 3)), ((2, 1), (2, 3)), ((4, 1), (3, 4, 2))]:
        a = values(ctx.rng, small)
        p = Probe(f"SimpleBackend.neg_map(a, out) for a of shape {small} broadcast into out of shape {big}", {"a": a})
        out = p.tensor(np.zeros(big))
        p.call(_backend_op(p, "neg_map"), p.tensor(a), out)
        p.returns(out)
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a2", "zip_kernel", kind="equivalence")
def zip_kernel(ctx: CheckContext) -> None:
    """The simple backend's zips with broadcasting, contiguous and permuted layouts."""
    probes = []
    for sa, sb in ZIP_SHAPES:
        for oa, ob in [(None, None), (_layouts(len(sa))[-1], _layouts(len(sb))[-1])]:
            for name in ZIPS:
                positive = name in ("log_back_zip", "inv_back_zip")
                a, b = values(ctx.rng, sa, positive), values(ctx.rng, sb)
                p = Probe(f"SimpleBackend.{name}(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})", {"a": a, "b": b})
                p.returns(p.call(_backend_op(p, name), p.tensor(a, oa), p.tensor(b, ob)))
                probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a2", "reduce_kernel", kind="equivalence")
def reduce_kernel(ctx: CheckContext) -> None:
    """The simple backend's reductions along every dimension, contiguous and permuted."""
    probes = []
    for shape in [(4,), (2, 3), (3, 1), (2, 3, 4)]:
        for order in _layouts(len(shape))[:2]:
            for dim in range(len(shape)):
                for name in REDUCES:
                    a = values(ctx.rng, shape)
                    p = Probe(f"SimpleBackend.{name}(a, dim={dim}) for a of shape {shape}, {layout_text(order)}", {"a": a})
                    p.returns(p.call(_backend_op(p, name), p.tensor(a, order), dim))
                    probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("a2", "matmul_kernel", kind="equivalence")
def matmul_kernel(ctx: CheckContext) -> None:
    """The simple backend's batched matrix_multiply, with broadcast batch dimensions and
    permuted layouts."""
    probes = []
    for sa, sb in [((1, 1, 1), (1, 1, 1)), ((1, 2, 3), (1, 3, 2)), ((2, 2, 3), (2, 3, 4)), ((1, 3, 2), (4, 2, 3)), ((3, 2, 4), (1, 4, 2))]:
        for oa, ob in [(None, None), ((0, 2, 1), (0, 2, 1)), ((2, 1, 0), None)]:
            a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
            p = Probe(f"SimpleBackend.matrix_multiply(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})", {"a": a, "b": b})
            p.returns(p.call(p.get(f"{BACKEND}.matrix_multiply"), p.tensor(a, oa), p.tensor(b, ob)))
            probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


#: (label, arity, build, positive inputs)
Build = Callable[[Probe, list[Ref]], Ref]
UNARY_FNS: list[tuple[str, Build, bool]] = [
    ("-a", lambda p, t: p.op("neg", t[0]), False),
    ("a.sigmoid()", lambda p, t: p.method(t[0], "sigmoid"), False),
    ("a.relu()", lambda p, t: p.method(t[0], "relu"), False),
    ("a.exp()", lambda p, t: p.method(t[0], "exp"), False),
    ("a.log()", lambda p, t: p.method(t[0], "log"), True),
    ("a.tanh()", lambda p, t: p.method(t[0], "tanh"), False),
    ("1.0 / a", lambda p, t: p.op("truediv", 1.0, t[0]), True),
    ("a ** 3", lambda p, t: p.op("pow", t[0], 3), False),
    ("a.sum(0)", lambda p, t: p.method(t[0], "sum", 0), False),
    ("a.sum(-1, keepdim=True)", lambda p, t: p.method(t[0], "sum", -1, keepdim=True), False),
    ("a.sum()", lambda p, t: p.method(t[0], "sum"), False),
    ("a.mean(0)", lambda p, t: p.method(t[0], "mean", 0), False),
    ("a.T * 2.0", lambda p, t: p.op("mul", p.attr(t[0], "T"), 2.0), False),
]
BINARY_FNS: list[tuple[str, Build, bool]] = [
    ("a + b", lambda p, t: p.op("add", t[0], t[1]), False),
    ("a - b", lambda p, t: p.op("sub", t[0], t[1]), False),
    ("a * b", lambda p, t: p.op("mul", t[0], t[1]), False),
    ("a / b", lambda p, t: p.op("truediv", t[0], t[1]), True),
    ("a < b", lambda p, t: p.op("lt", t[0], t[1]), False),
    ("a == b", lambda p, t: p.op("eq", t[0], t[1]), False),
    ("a > b", lambda p, t: p.op("gt", t[0], t[1]), False),
]
UNARY_SHAPES = [(3,), (2, 3), (2, 3, 2)]


def _unary_probes(ctx: CheckContext) -> list[Probe]:
    probes = []
    for label, build, positive in UNARY_FNS:
        for shape in UNARY_SHAPES:
            for order in _layouts(len(shape))[:2]:
                a = values(ctx.rng, shape, positive)
                p = Probe(f"{label} for a of shape {shape}, {layout_text(order)}", {"a": a})
                probes.append(p.returns(build(p, [p.tensor(a, order)])))
    return probes


def _binary_probes(ctx: CheckContext) -> list[Probe]:
    probes = []
    for label, build, positive in BINARY_FNS:
        for sa, sb in ZIP_SHAPES:
            for oa, ob in [(None, None), (_layouts(len(sa))[-1], None)]:
                a, b = values(ctx.rng, sa), values(ctx.rng, sb, positive)
                p = Probe(f"{label} for a {sa} ({layout_text(oa)}), b {sb}", {"a": a, "b": b})
                probes.append(p.returns(build(p, [p.tensor(a, oa), p.tensor(b, ob)])))
    return probes


MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2))]


def _matmul_probes(ctx: CheckContext) -> list[Probe]:
    probes = []
    for sa, sb in MATMUL_SHAPES:
        for oa in (None, _layouts(len(sa))[-1]):
            a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
            p = Probe(f"a @ b for a {sa} ({layout_text(oa)}), b {sb}", {"a": a, "b": b})
            probes.append(p.returns(p.op("matmul", p.tensor(a, oa), p.tensor(b))))
    return probes


PERMUTE_ORDERS = [(2, 0, 1), (1, 2, 0), (0, 2, 1)]


def _permute_probes(ctx: CheckContext) -> list[Probe]:
    """Tensor.permute with 3-axis orders whose inverse differs from the order itself (an
    inverse permutation gives a different shape), read back through a contiguous copy."""
    probes = []
    for order in PERMUTE_ORDERS:
        a = ctx.rng.standard_normal((2, 3, 4))
        p = Probe(f"a.permute{order} * 1.0 for a of shape (2, 3, 4)", {"a": a})
        probes.append(p.returns(p.op("mul", p.method(p.tensor(a), "permute", *order), 1.0)))
    return probes


@check("a2", "forwards_save_for_backward", kind="equivalence")
def forwards_save_for_backward(ctx: CheckContext) -> None:
    """Each Function's forward saves in ``ctx`` what its backward needs: the gradients of
    every Function's apply(...).backward(g), as 2.4's checks take them, against the reference.
    Beside the student's own backward (2.4) a wrong backward fails this too; the default
    grade runs it again after the reference's backward (`grader.one_charge`), so that only
    a forward that saves too little or the wrong value is charged for it."""
    ctx.equivalent(backward_after_forward(ctx), BACKWARD_TOL)


@check("a2", "tensor_forward", kind="equivalence")
def tensor_forward(ctx: CheckContext) -> None:
    """Tensor operations (Functions' forward) against the reference: values, shape, dtype
    (float32 stays float32)."""
    probes = _unary_probes(ctx) + _binary_probes(ctx) + _matmul_probes(ctx) + _permute_probes(ctx)
    for label, build, positive in [UNARY_FNS[1], UNARY_FNS[4], BINARY_FNS[2]]:
        arrays = [values(ctx.rng, (2, 3), positive, np.float32) for _ in range(2 if label == "a * b" else 1)]
        p = Probe(f"{label} on float32 tensors of shape (2, 3)", dict(zip("ab", arrays)))
        p.returns(build(p, [p.tensor(x) for x in arrays]))
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))
