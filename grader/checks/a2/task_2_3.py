"""Hidden checks of task 2.3: Tensor operations (forward)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..base import CheckContext, check
from ..inputs import layout_text, values
from ..probe import Probe, Ref, Tol
from .backward_probes import BACKWARDS, TOL as BACKWARD_TOL
from .common import _layouts


BACKEND = "minitorch.SimpleBackend"

MAPS = ["neg_map", "id_map", "sigmoid_map", "relu_map", "exp_map", "log_map", "inv_map", "tanh_map"]
ZIPS = ["add_zip", "mul_zip", "lt_zip", "eq_zip", "relu_back_zip", "log_back_zip", "inv_back_zip"]
REDUCES = ["add_reduce", "mul_reduce", "max_reduce"]
ZIP_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((2, 1), (1, 3)),
    ((3, 1, 2), (4, 1)),
    ((2, 3, 4), (2, 3, 4)),
]


def _backend_op(p: Probe, name: str) -> Ref:
    return p.get(f"{BACKEND}.{name}")


@check("2.3", "map_kernel", kind="equivalence")
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
        p = Probe(
            f"SimpleBackend.neg_map(a, out) for a of shape {small} broadcast into out of shape {big}",
            {"a": a},
        )
        out = p.tensor(np.zeros(big))
        p.call(_backend_op(p, "neg_map"), p.tensor(a), out)
        p.returns(out)
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("2.3", "zip_kernel", kind="equivalence")
def zip_kernel(ctx: CheckContext) -> None:
    """The simple backend's zips with broadcasting, contiguous and permuted layouts."""
    probes = []
    for sa, sb in ZIP_SHAPES:
        for oa, ob in [(None, None), (_layouts(len(sa))[-1], _layouts(len(sb))[-1])]:
            for name in ZIPS:
                positive = name in ("log_back_zip", "inv_back_zip")
                a, b = values(ctx.rng, sa, positive), values(ctx.rng, sb)
                p = Probe(
                    f"SimpleBackend.{name}(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})",
                    {"a": a, "b": b},
                )
                p.returns(p.call(_backend_op(p, name), p.tensor(a, oa), p.tensor(b, ob)))
                probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("2.3", "reduce_kernel", kind="equivalence")
def reduce_kernel(ctx: CheckContext) -> None:
    """The simple backend's reductions along every dimension, contiguous and permuted."""
    probes = []
    for shape in [(4,), (2, 3), (3, 1), (2, 3, 4)]:
        for order in _layouts(len(shape))[:2]:
            for dim in range(len(shape)):
                for name in REDUCES:
                    a = values(ctx.rng, shape)
                    p = Probe(
                        f"SimpleBackend.{name}(a, dim={dim}) for a of shape {shape}, {layout_text(order)}",
                        {"a": a},
                    )
                    p.returns(p.call(_backend_op(p, name), p.tensor(a, order), dim))
                    probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-9, atol=1e-12))


@check("2.3", "matmul_kernel", kind="equivalence")
def matmul_kernel(ctx: CheckContext) -> None:
    """The simple backend's batched matrix_multiply, with broadcast batch dimensions and
    permuted layouts."""
    probes = []
    for sa, sb in [
        ((1, 1, 1), (1, 1, 1)),
        ((1, 2, 3), (1, 3, 2)),
        ((2, 2, 3), (2, 3, 4)),
        ((1, 3, 2), (4, 2, 3)),
        ((3, 2, 4), (1, 4, 2)),
    ]:
        for oa, ob in [(None, None), ((0, 2, 1), (0, 2, 1)), ((2, 1, 0), None)]:
            a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
            p = Probe(
                f"SimpleBackend.matrix_multiply(a, b) for a {sa} ({layout_text(oa)}), b {sb} ({layout_text(ob)})",
                {"a": a, "b": b},
            )
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


MATMUL_SHAPES = [
    ((2, 3), (3, 4)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((2, 2, 3), (3, 4)),
    ((2, 1, 2, 3), (4, 3, 2)),
]


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


@check("2.3", "forwards_save_for_backward", kind="equivalence")
def forwards_save_for_backward(ctx: CheckContext) -> None:
    """Each Function's forward saves in ``ctx`` what its backward needs: the gradients of
    every Function's apply(...).backward(g), as 2.4's checks take them, against the reference.
    Beside the student's own backward (2.4) a wrong backward fails this too; the default
    grade runs it again after the reference's backward (`grader.grading.one_charge`), so that only
    a forward that saves too little or the wrong value is charged for it."""
    ctx.equivalent(backward_after_forward(ctx), BACKWARD_TOL)


@check("2.3", "tensor_forward", kind="equivalence")
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


def backward_after_forward(ctx: CheckContext) -> list[Probe]:
    """Every Function's probes above: each backward run after its forward (task 2.3's
    `forwards_save_for_backward` reads them as a check of what the forwards save)."""
    return [probe for function, make in BACKWARDS.values() for probe in make(ctx, function)]
