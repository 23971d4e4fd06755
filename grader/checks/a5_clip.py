"""Hidden checks of stage A5, task 5.4: gradient clipping (`clip_grad_norm_`,
`clip_grad_value_`).

The gradients are put in place by a real backward pass (L = Σ_k sum(t_k ⊙ g_k) gives
t_k.grad = g_k); tensors that take no part keep `.grad` None and must be skipped. Each call
is compared with the reference: the returned total norm (a 0-d tensor, before clipping) and
every clipped gradient, for norms 2, 1, 3 and inf, with and without clipping, gradients so
small that the 1e−6 in max_norm / (total + 1e−6) shows, all-zero gradients, float32, a single
tensor, `Parameter`s, a module's `parameters()`, two tensors sharing one gradient tensor
(clipping must not write in place), the `minitorch.nn.utils` names, and a non-finite norm
(inf, nan) with `error_if_nonfinite=True` (a RuntimeError).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .base import CheckContext, check
from .layer_probes import backward_of_sum
from .probe import Probe, Ref, Tol

CLIP = "minitorch.nn.clip_grad"
UTILS = "minitorch.nn.utils"
TOL = Tol(rtol=1e-10, atol=1e-14)
SHAPES = [(2, 3), (4,), (3, 3)]


def _grads(ctx: CheckContext, scale: float = 1.0, shapes: Sequence[tuple[int, ...]] = SHAPES) -> list[Optional[np.ndarray]]:
    return [ctx.rng.standard_normal(s) * scale for s in shapes]


def clip_probe(label: str, grads: Sequence[Optional[np.ndarray]], call: Callable[[Probe, Any], Ref], *, params: bool = False,
               single: bool = False, expect_error: bool = False) -> Probe:
    """Tensors (wrapped in Parameters with `params`) whose .grad are `grads` (None: no
    gradient), passed as a list (or alone with `single`) to `call`; returns its result and
    every gradient afterwards."""
    p = Probe(label, {f"g{k}": g for k, g in enumerate(grads) if g is not None}, expect_error=expect_error)
    shapes = [g.shape if g is not None else (2,) for g in grads]
    ts = [p.tensor(np.ones(s), requires_grad=True) for s in shapes]
    backward_of_sum(p, [(t, g) for t, g in zip(ts, grads) if g is not None])
    holders = [p.call("minitorch.Parameter", t) if params else t for t in ts]
    result = call(p, holders[0] if single else holders)
    p.returns(result, *[p.attr(t, "grad") for t in ts], names=["returned value"] + [f"the gradient of tensor {k}" for k in range(len(ts))])
    return p


def _calling(fn: str, *args: Any, **kwargs: Any) -> Callable[[Probe, Any], Ref]:
    """A `call` for `clip_probe`: fn(parameters, *args, **kwargs)."""
    return lambda p, holders: p.call(fn, holders, *args, **kwargs)


@check("a5", "clip_grad_norm", kind="equivalence")
def clip_grad_norm(ctx: CheckContext) -> None:
    """clip_grad_norm_: the total norm before clipping and the clipped gradients against the
    reference (norms 2, 1, 3, inf; None gradients; Parameters; error_if_nonfinite)."""
    shapes = "tensors of shapes (2, 3), (4,), (3, 3)"
    fn = f"{CLIP}.clip_grad_norm_"
    probes = [
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=100.0): no clipping", _grads(ctx), _calling(fn, 100.0)),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=1.0)", _grads(ctx), _calling(fn, 1.0)),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=0.5, norm_type=inf)", _grads(ctx), _calling(fn, 0.5, norm_type=float("inf"))),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=0.5, norm_type='inf')", _grads(ctx), _calling(fn, 0.5, norm_type="inf")),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=2.0, norm_type=1.0)", _grads(ctx), _calling(fn, 2.0, norm_type=1.0)),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=1.5, norm_type=3.0)", _grads(ctx), _calling(fn, 1.5, norm_type=3.0)),
        clip_probe(f"clip_grad_norm_({shapes} with gradients of about 1e-3, max_norm=1e-3): mind the 1e-6 in max_norm / (total + 1e-6)",
                   _grads(ctx, 1e-3), _calling(fn, 1e-3)),
        clip_probe("clip_grad_norm_(one tensor (3, 4), not in a list, max_norm=0.3)", _grads(ctx, shapes=[(3, 4)]), _calling(fn, 0.3), single=True),
        clip_probe("clip_grad_norm_(tensors (2, 3), (2,), (4,) where the second has no gradient (.grad None), max_norm=0.5)",
                   [ctx.rng.standard_normal((2, 3)), None, ctx.rng.standard_normal(4)], _calling(fn, 0.5)),
        clip_probe(f"clip_grad_norm_(Parameters holding {shapes}, max_norm=0.7)", _grads(ctx), _calling(fn, 0.7), params=True),
        clip_probe("clip_grad_norm_(one Parameter (2, 2), max_norm=0.2)", _grads(ctx, shapes=[(2, 2)]), _calling(fn, 0.2), params=True, single=True),
        clip_probe(f"minitorch.nn.utils.clip_grad_norm_({shapes}, max_norm=0.9)", _grads(ctx), _calling(f"{UTILS}.clip_grad_norm_", 0.9)),
    ]
    bad = _grads(ctx)
    bad[1][2] = np.inf
    probes.append(clip_probe(f"clip_grad_norm_({shapes}, one gradient holding inf, max_norm=1.0, error_if_nonfinite=True): must raise",
                             bad, _calling(fn, 1.0, error_if_nonfinite=True), expect_error=True))
    nan = _grads(ctx)
    nan[0][1, 1] = np.nan
    probes.append(clip_probe(f"clip_grad_norm_({shapes}, one gradient holding nan, max_norm=1.0, error_if_nonfinite=True): must raise",
                             nan, _calling(fn, 1.0, error_if_nonfinite=True), expect_error=True))
    probes.append(clip_probe(f"clip_grad_norm_({shapes}, every gradient 0, max_norm=1.0): total 0, nothing divided by 0",
                             [np.zeros(s) for s in SHAPES], _calling(fn, 1.0)))
    probes.append(_module_probe(ctx))
    probes.append(_shared_probe())
    ctx.equivalent(probes, TOL)
    f32 = [clip_probe(f"clip_grad_norm_(float32 gradients of shapes (2, 3), (4,), (3, 3), max_norm={m}): a float32 total",
                      [g.astype(np.float32) for g in _grads(ctx, 3.0)], _calling(fn, m)) for m in (1.0, 1e3)]
    ctx.equivalent(f32, Tol(rtol=1e-6, atol=1e-7))


def _shared_probe() -> Probe:
    """a, b with (a + b).sum().backward(): the backward of + may hand one gradient tensor to
    both, so clipping in place would scale it twice."""
    p = Probe("clip_grad_norm_([a, b], max_norm=1.0) after (a + b).sum().backward() (a and b may share one gradient tensor)")
    a, b = p.tensor(np.array([1.0, 2.0]), requires_grad=True), p.tensor(np.array([3.0, 4.0]), requires_grad=True)
    p.method(p.method(p.op("add", a, b), "sum"), "backward")
    total = p.call(f"{CLIP}.clip_grad_norm_", [a, b], 1.0)
    return p.returns(total, p.attr(a, "grad"), p.attr(b, "grad"), names=["returned value", "a.grad", "b.grad"])


def _module_probe(ctx: CheckContext) -> Probe:
    """A Linear(3, 2)'s gradients after a backward pass, clipped through model.parameters()."""
    x, g = ctx.rng.standard_normal((4, 3)), ctx.rng.standard_normal((4, 2))
    p = Probe("clip_grad_norm_(Linear(3, 2).parameters(), max_norm=0.1) after a backward pass", {"x": x})
    model = p.call("minitorch.nn.Linear", 3, 2, backend=p.get("minitorch.SimpleBackend"))
    p.method(model, "load_state_dict", {"weight": ctx.rng.standard_normal((2, 3)), "bias": ctx.rng.standard_normal(2)})
    backward_of_sum(p, [(p.call(model, p.tensor(x)), g)])
    total = p.call(f"{CLIP}.clip_grad_norm_", p.method(model, "parameters"), 0.1)
    params = p.method(model, "named_parameters")
    p.returns(total, p.project(params, [1, "value", "grad"]), names=["returned value", "the parameters' gradients"])
    return p


@check("a5", "clip_grad_value", kind="equivalence")
def clip_grad_value(ctx: CheckContext) -> None:
    """clip_grad_value_: returns None, every gradient clamped to [−clip_value, clip_value],
    None gradients skipped, against the reference."""
    shapes = "tensors of shapes (2, 3), (4,), (3, 3)"
    fn = f"{CLIP}.clip_grad_value_"
    probes = [
        clip_probe(f"clip_grad_value_({shapes}, clip_value=10.0): nothing to clip", _grads(ctx), _calling(fn, 10.0)),
        clip_probe(f"clip_grad_value_({shapes}, clip_value=0.5)", _grads(ctx), _calling(fn, 0.5)),
        clip_probe("clip_grad_value_(tensors (3,), (2, 2) where the first has no gradient, clip_value=0.3)",
                   [None, ctx.rng.standard_normal((2, 2))], _calling(fn, 0.3)),
        clip_probe("clip_grad_value_(one Parameter (3, 2), clip_value=0.4)", _grads(ctx, shapes=[(3, 2)]), _calling(fn, 0.4), params=True, single=True),
        clip_probe(f"minitorch.nn.utils.clip_grad_value_(Parameters holding {shapes}, clip_value=0.25)", _grads(ctx), _calling(f"{UTILS}.clip_grad_value_", 0.25), params=True),
    ]
    ctx.equivalent(probes, TOL)
