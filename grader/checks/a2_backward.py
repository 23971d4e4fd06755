"""Hidden checks of task 2.4 (tensor backward): one check per Function's backward, and
gradient checks of composite expressions.

Each ``backward_<function>`` check calls ``minitorch.tensor_functions.<Function>.apply``
itself — no operator or method of `Tensor` in between, so no other Function's backward
runs — then ``out.backward(g)`` with a random upstream gradient g, and compares the
input gradients with the reference's: on several shapes, a permuted (non-contiguous)
layout and, for Add and Mul, broadcast operands. So one wrong backward costs its own
share of 2.4 and nothing else (before, one check held all thirteen: any one wrong
backward zeroed the task).

``tensor_gradcheck`` then differentiates composite expressions numerically (central
differences of the student's own forward) against their backward.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .base import CheckContext, check
from .inputs import layout_text
from .probe import Probe, Ref, Tol

FUNCTIONS = "minitorch.tensor_functions"
TOL = Tol(rtol=1e-8, atol=1e-10)

UNARY_SHAPES = [(3,), (2, 3), (2, 3, 2)]
BROADCAST_SHAPES = [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((3, 1, 2), (4, 1))]
MATMUL_SHAPES = [((2, 3), (3, 4)), ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2))]
PERMUTE_ORDERS = [(2, 0, 1), (1, 2, 0), (0, 2, 1)]


def _reversed(ndim: int) -> tuple[int, ...]:
    return tuple(reversed(range(ndim)))


def _backward_probe(ctx: CheckContext, function: str, arrays: list[np.ndarray], orders: list, out_shape: tuple[int, ...],
                    extra: tuple = ()) -> Probe:
    """``out = <function>.apply(*tensors, *extra); out.backward(g)``; returns the gradients."""
    names = "ab"[: len(arrays)]
    shapes = ", ".join(f"{n} {a.shape} ({layout_text(o)})" for n, a, o in zip(names, arrays, orders))
    tail = "".join(f", {x!r}" for x in extra)
    p = Probe(f"{function}.apply({', '.join(names)}{tail}).backward(g) for {shapes}", dict(zip(names, arrays)))
    tensors = [p.tensor(a, o, requires_grad=True) for a, o in zip(arrays, orders)]
    out = p.call(p.get(f"{FUNCTIONS}.{function}.apply"), *tensors, *extra)
    g = ctx.rng.standard_normal(out_shape)
    p.inputs["upstream gradient g"] = g
    p.method(out, "backward", p.tensor(g))
    return p.returns(*(p.attr(t, "grad") for t in tensors), names=[f"{n}.grad" for n in names])


def _unary(positive: bool = False) -> Callable[[CheckContext, str], list[Probe]]:
    def probes(ctx: CheckContext, function: str) -> list[Probe]:
        out = []
        for shape in UNARY_SHAPES:
            for order in (None, _reversed(len(shape))):
                a = ctx.rng.uniform(0.5, 2.0, shape) if positive else ctx.rng.standard_normal(shape) + 0.01
                out.append(_backward_probe(ctx, function, [a], [order], shape))
        return out
    return probes


def _broadcast(ctx: CheckContext, function: str) -> list[Probe]:
    out = []
    for sa, sb in BROADCAST_SHAPES:
        for oa in (None, _reversed(len(sa))):
            a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
            out.append(_backward_probe(ctx, function, [a, b], [oa, None], np.broadcast_shapes(sa, sb)))
    return out


def _pow(ctx: CheckContext, function: str) -> list[Probe]:
    out = []
    for shape in UNARY_SHAPES:
        for exponent in (3.0, 0.5, -1.5):
            a = ctx.rng.uniform(0.5, 2.0, shape)
            out.append(_backward_probe(ctx, function, [a], [_reversed(len(shape))], shape, (exponent,)))
    return out


def _sum(ctx: CheckContext, function: str) -> list[Probe]:
    out = []
    for shape in [(3,), (2, 3), (2, 3, 4)]:
        for dim in range(len(shape)):
            a = ctx.rng.standard_normal(shape)
            kept = tuple(1 if d == dim else s for d, s in enumerate(shape))
            out.append(_backward_probe(ctx, function, [a], [_reversed(len(shape))], kept, (dim,)))
    return out


def _permute(ctx: CheckContext, function: str) -> list[Probe]:
    out = []
    for order in PERMUTE_ORDERS:
        a = ctx.rng.standard_normal((2, 3, 4))
        out.append(_backward_probe(ctx, function, [a], [None], np.transpose(a, order).shape, (order,)))
    return out


def _matmul(ctx: CheckContext, function: str) -> list[Probe]:
    out = []
    for sa, sb in MATMUL_SHAPES:
        for oa in (None, _reversed(len(sa))):
            a, b = ctx.rng.standard_normal(sa), ctx.rng.standard_normal(sb)
            out.append(_backward_probe(ctx, function, [a, b], [oa, None], np.matmul(a, b).shape))
    return out


#: check name → (Function, its probes), in the order of tensor_functions.py
BACKWARDS: dict[str, tuple[str, Callable[[CheckContext, str], list[Probe]]]] = {
    "backward_neg": ("Neg", _unary()),
    "backward_inv": ("Inv", _unary(positive=True)),
    "backward_add": ("Add", _broadcast),
    "backward_mul": ("Mul", _broadcast),
    "backward_sigmoid": ("Sigmoid", _unary()),
    "backward_relu": ("ReLU", _unary()),
    "backward_tanh": ("Tanh", _unary()),
    "backward_log": ("Log", _unary(positive=True)),
    "backward_exp": ("Exp", _unary()),
    "backward_pow": ("Pow", _pow),
    "backward_sum": ("Sum", _sum),
    "backward_permute": ("Permute", _permute),
    "backward_matmul": ("MatMul", _matmul),
}


def backward_after_forward(ctx: CheckContext) -> list[Probe]:
    """Every Function's probes above: each backward run after its forward (task 2.3's
    `forwards_save_for_backward` reads them as a check of what the forwards save)."""
    return [probe for function, make in BACKWARDS.values() for probe in make(ctx, function)]


def _register(name: str, function: str, make: Callable[[CheckContext, str], list[Probe]]) -> None:
    def run(ctx: CheckContext) -> None:
        ctx.equivalent(make(ctx, function), TOL)

    run.__doc__ = (f"{function}.backward alone: {function}.apply(...).backward(g) with a random g, "
                   "against the reference's gradients (several shapes, a permuted layout).")
    check("a2", name, kind="equivalence")(run)


for _name, (_function, _make) in BACKWARDS.items():
    _register(_name, _function, _make)


Build = Callable[[Probe, list[Ref]], Ref]
GRADCHECK: list[tuple[str, Build, list[tuple[int, ...]], bool]] = [
    ("(a * b).sum(1)", lambda p, t: p.method(p.op("mul", t[0], t[1]), "sum", 1), [(2, 3), (2, 3)], False),
    ("(a @ b).sigmoid() * c", lambda p, t: p.op("mul", p.method(p.op("matmul", t[0], t[1]), "sigmoid"), t[2]), [(2, 3), (3, 2), (2,)], False),
    ("(a * a + 1.0).log() - a.exp() / (b + 3.0)", lambda p, t: p.op("sub", p.method(p.op("add", p.op("mul", t[0], t[0]), 1.0), "log"), p.op("truediv", p.method(t[0], "exp"), p.op("add", t[1], 3.0))), [(3, 2), (2,)], False),
    ("a.permute(1, 0) * b", lambda p, t: p.op("mul", p.method(t[0], "permute", 1, 0), t[1]), [(2, 3), (3, 1)], False),
    ("(a.tanh() * b).mean(0) + a.sum(0)", lambda p, t: p.op("add", p.method(p.op("mul", p.method(t[0], "tanh"), t[1]), "mean", 0), p.method(t[0], "sum", 0)), [(3, 2), (1, 2)], False),
    ("(a - b).relu() ** 2 + (a < b) * a", lambda p, t: p.op("add", p.op("pow", p.method(p.op("sub", t[0], t[1]), "relu"), 2), p.op("mul", p.op("lt", t[0], t[1]), t[0])), [(2, 2), (2, 2)], False),
    ("1.0 / a + a ** 3", lambda p, t: p.op("add", p.op("truediv", 1.0, t[0]), p.op("pow", t[0], 3)), [(2, 2)], True),
]


@check("a2", "tensor_gradcheck", kind="gradient")
def tensor_gradcheck(ctx: CheckContext) -> None:
    """Composite tensor expressions: backward against central differences of the
    student's own forward, with a random upstream gradient."""
    for label, build, shapes, positive in GRADCHECK:
        arrays = [ctx.rng.uniform(0.5, 1.5, s) if positive else ctx.rng.standard_normal(s) for s in shapes]
        if "relu" in label:  # keep away from the kink at a == b
            arrays[1] = arrays[0] + np.where(ctx.rng.random(shapes[1]) < 0.5, -0.5, 0.5)
        ctx.gradcheck(label, build, arrays, names=list("abc")[: len(arrays)])
