"""Each Function's backward probes: 2.4 checks each alone; 2.3's
`forwards_save_for_backward` runs them all to see what the forwards save.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..base import CheckContext
from ..inputs import layout_text
from ..probe import Probe, Tol


FUNCTIONS = "minitorch.tensor_functions"
TOL = Tol(rtol=1e-8, atol=1e-10)

UNARY_SHAPES = [(3,), (2, 3), (2, 3, 2)]
BROADCAST_SHAPES = [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((3, 1, 2), (4, 1))]
MATMUL_SHAPES = [((2, 3), (3, 4)), ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2))]
PERMUTE_ORDERS = [(2, 0, 1), (1, 2, 0), (0, 2, 1)]


def _reversed(ndim: int) -> tuple[int, ...]:
    return tuple(reversed(range(ndim)))


def _backward_probe(
    ctx: CheckContext,
    function: str,
    arrays: list[np.ndarray],
    orders: list,
    out_shape: tuple[int, ...],
    extra: tuple = (),
) -> Probe:
    """``out = <function>.apply(*tensors, *extra); out.backward(g)``; returns the gradients."""
    names = "ab"[: len(arrays)]
    shapes = ", ".join(f"{n} {a.shape} ({layout_text(o)})" for n, a, o in zip(names, arrays, orders))
    tail = "".join(f", {x!r}" for x in extra)
    p = Probe(
        f"{function}.apply({', '.join(names)}{tail}).backward(g) for {shapes}", dict(zip(names, arrays))
    )
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
