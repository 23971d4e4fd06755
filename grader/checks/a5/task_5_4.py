"""Hidden checks of task 5.4: the stacked and bidirectional layers `RNN`, `LSTM` and `GRU`
(the loop over layers and directions), and gradient clipping (`clip_grad_norm_`,
`clip_grad_value_`).

Each layer, with given weights, is run over generated configurations — one and several
layers, bidirectional, `batch_first`, with and without an initial state, without biases, an
unbatched input, dropout given but the module in evaluation mode, dropout 1 between
layers in training mode — forward and backward
(random upstream gradients on the output, h_n and c_n), against the reference: the output,
h_n (and c_n), and the gradients of the input, of the initial state(s) and of every
parameter. A property check asks of the student's own output that h_n holds each
direction's last step: the forward direction's h at t = T − 1, the backward direction's at
t = 0 (the last input it read). The layers' probes and configurations are in `layers`.

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

from ..base import CheckContext, CheckFailed, StudentError, check
from ..compare import describe, diff_arrays, kind_name
from ..layer_probes import backward_of_sum
from ..probe import Probe, Ref, TensorVal, Tol
from .layers import CONFIGS, REC, SIMPLE, TOL, layer_params, layer_probe, layer_text


CLIP = "minitorch.nn.clip_grad"
UTILS = "minitorch.nn.utils"
CLIP_TOL = Tol(rtol=1e-10, atol=1e-14)
SHAPES = [(2, 3), (4,), (3, 3)]


def _grads(
    ctx: CheckContext, scale: float = 1.0, shapes: Sequence[tuple[int, ...]] = SHAPES
) -> list[Optional[np.ndarray]]:
    return [ctx.rng.standard_normal(s) * scale for s in shapes]


def clip_probe(
    label: str,
    grads: Sequence[Optional[np.ndarray]],
    call: Callable[[Probe, Any], Ref],
    *,
    params: bool = False,
    single: bool = False,
    expect_error: bool = False,
) -> Probe:
    """Tensors (wrapped in Parameters with `params`) whose .grad are `grads` (None: no
    gradient), passed as a list (or alone with `single`) to `call`; returns its result and
    every gradient afterwards."""
    p = Probe(label, {f"g{k}": g for k, g in enumerate(grads) if g is not None}, expect_error=expect_error)
    shapes = [g.shape if g is not None else (2,) for g in grads]
    ts = [p.tensor(np.ones(s), requires_grad=True) for s in shapes]
    backward_of_sum(p, [(t, g) for t, g in zip(ts, grads) if g is not None])
    holders = [p.call("minitorch.Parameter", t) if params else t for t in ts]
    result = call(p, holders[0] if single else holders)
    p.returns(
        result,
        *[p.attr(t, "grad") for t in ts],
        names=["returned value"] + [f"the gradient of tensor {k}" for k in range(len(ts))],
    )
    return p


def _calling(fn: str, *args: Any, **kwargs: Any) -> Callable[[Probe, Any], Ref]:
    """A `call` for `clip_probe`: fn(parameters, *args, **kwargs)."""
    return lambda p, holders: p.call(fn, holders, *args, **kwargs)


@check("5.4", "clip_grad_norm", kind="equivalence")
def clip_grad_norm(ctx: CheckContext) -> None:
    """clip_grad_norm_: the total norm before clipping and the clipped gradients against the
    reference (norms 2, 1, 3, inf; None gradients; Parameters; error_if_nonfinite)."""
    shapes = "tensors of shapes (2, 3), (4,), (3, 3)"
    fn = f"{CLIP}.clip_grad_norm_"
    probes = [
        clip_probe(
            f"clip_grad_norm_({shapes}, max_norm=100.0): no clipping", _grads(ctx), _calling(fn, 100.0)
        ),
        clip_probe(f"clip_grad_norm_({shapes}, max_norm=1.0)", _grads(ctx), _calling(fn, 1.0)),
        clip_probe(
            f"clip_grad_norm_({shapes}, max_norm=0.5, norm_type=inf)",
            _grads(ctx),
            _calling(fn, 0.5, norm_type=float("inf")),
        ),
        clip_probe(
            f"clip_grad_norm_({shapes}, max_norm=0.5, norm_type='inf')",
            _grads(ctx),
            _calling(fn, 0.5, norm_type="inf"),
        ),
        clip_probe(
            f"clip_grad_norm_({shapes}, max_norm=2.0, norm_type=1.0)",
            _grads(ctx),
            _calling(fn, 2.0, norm_type=1.0),
        ),
        clip_probe(
            f"clip_grad_norm_({shapes}, max_norm=1.5, norm_type=3.0)",
            _grads(ctx),
            _calling(fn, 1.5, norm_type=3.0),
        ),
        clip_probe(
            f"clip_grad_norm_({shapes} with gradients of about 1e-3, max_norm=1e-3): mind the 1e-6 in max_norm / (total + 1e-6)",
            _grads(ctx, 1e-3),
            _calling(fn, 1e-3),
        ),
        clip_probe(
            "clip_grad_norm_(one tensor (3, 4), not in a list, max_norm=0.3)",
            _grads(ctx, shapes=[(3, 4)]),
            _calling(fn, 0.3),
            single=True,
        ),
        clip_probe(
            "clip_grad_norm_(tensors (2, 3), (2,), (4,) where the second has no gradient (.grad None), max_norm=0.5)",
            [ctx.rng.standard_normal((2, 3)), None, ctx.rng.standard_normal(4)],
            _calling(fn, 0.5),
        ),
        clip_probe(
            f"clip_grad_norm_(Parameters holding {shapes}, max_norm=0.7)",
            _grads(ctx),
            _calling(fn, 0.7),
            params=True,
        ),
        clip_probe(
            "clip_grad_norm_(one Parameter (2, 2), max_norm=0.2)",
            _grads(ctx, shapes=[(2, 2)]),
            _calling(fn, 0.2),
            params=True,
            single=True,
        ),
        clip_probe(
            f"minitorch.nn.utils.clip_grad_norm_({shapes}, max_norm=0.9)",
            _grads(ctx),
            _calling(f"{UTILS}.clip_grad_norm_", 0.9),
        ),
    ]
    bad = _grads(ctx)
    bad[1][2] = np.inf
    probes.append(
        clip_probe(
            f"clip_grad_norm_({shapes}, one gradient holding inf, max_norm=1.0, error_if_nonfinite=True): must raise",
            bad,
            _calling(fn, 1.0, error_if_nonfinite=True),
            expect_error=True,
        )
    )
    nan = _grads(ctx)
    nan[0][1, 1] = np.nan
    probes.append(
        clip_probe(
            f"clip_grad_norm_({shapes}, one gradient holding nan, max_norm=1.0, error_if_nonfinite=True): must raise",
            nan,
            _calling(fn, 1.0, error_if_nonfinite=True),
            expect_error=True,
        )
    )
    probes.append(
        clip_probe(
            f"clip_grad_norm_({shapes}, every gradient 0, max_norm=1.0): total 0, nothing divided by 0",
            [np.zeros(s) for s in SHAPES],
            _calling(fn, 1.0),
        )
    )
    probes.append(_module_probe(ctx))
    probes.append(_shared_probe())
    ctx.equivalent(probes, CLIP_TOL)
    f32 = [
        clip_probe(
            f"clip_grad_norm_(float32 gradients of shapes (2, 3), (4,), (3, 3), max_norm={m}): a float32 total",
            [g.astype(np.float32) for g in _grads(ctx, 3.0)],
            _calling(fn, m),
        )
        for m in (1.0, 1e3)
    ]
    ctx.equivalent(f32, Tol(rtol=1e-6, atol=1e-7))


def _shared_probe() -> Probe:
    """a, b with (a + b).sum().backward(): the backward of + may hand one gradient tensor to
    both, so clipping in place would scale it twice."""
    p = Probe(
        "clip_grad_norm_([a, b], max_norm=1.0) after (a + b).sum().backward() (a and b may share one gradient tensor)"
    )
    a, b = (
        p.tensor(np.array([1.0, 2.0]), requires_grad=True),
        p.tensor(np.array([3.0, 4.0]), requires_grad=True),
    )
    p.method(p.method(p.op("add", a, b), "sum"), "backward")
    total = p.call(f"{CLIP}.clip_grad_norm_", [a, b], 1.0)
    return p.returns(
        total, p.attr(a, "grad"), p.attr(b, "grad"), names=["returned value", "a.grad", "b.grad"]
    )


def _module_probe(ctx: CheckContext) -> Probe:
    """A Linear(3, 2)'s gradients after a backward pass, clipped through model.parameters()."""
    x, g = ctx.rng.standard_normal((4, 3)), ctx.rng.standard_normal((4, 2))
    p = Probe("clip_grad_norm_(Linear(3, 2).parameters(), max_norm=0.1) after a backward pass", {"x": x})
    model = p.call("minitorch.nn.Linear", 3, 2, backend=p.get("minitorch.SimpleBackend"))
    p.method(
        model,
        "load_state_dict",
        {"weight": ctx.rng.standard_normal((2, 3)), "bias": ctx.rng.standard_normal(2)},
    )
    backward_of_sum(p, [(p.call(model, p.tensor(x)), g)])
    total = p.call(f"{CLIP}.clip_grad_norm_", p.method(model, "parameters"), 0.1)
    params = p.method(model, "named_parameters")
    p.returns(
        total, p.project(params, [1, "value", "grad"]), names=["returned value", "the parameters' gradients"]
    )
    return p


@check("5.4", "clip_grad_value", kind="equivalence")
def clip_grad_value(ctx: CheckContext) -> None:
    """clip_grad_value_: returns None, every gradient clamped to [−clip_value, clip_value],
    None gradients skipped, against the reference."""
    shapes = "tensors of shapes (2, 3), (4,), (3, 3)"
    fn = f"{CLIP}.clip_grad_value_"
    probes = [
        clip_probe(
            f"clip_grad_value_({shapes}, clip_value=10.0): nothing to clip", _grads(ctx), _calling(fn, 10.0)
        ),
        clip_probe(f"clip_grad_value_({shapes}, clip_value=0.5)", _grads(ctx), _calling(fn, 0.5)),
        clip_probe(
            "clip_grad_value_(tensors (3,), (2, 2) where the first has no gradient, clip_value=0.3)",
            [None, ctx.rng.standard_normal((2, 2))],
            _calling(fn, 0.3),
        ),
        clip_probe(
            "clip_grad_value_(one Parameter (3, 2), clip_value=0.4)",
            _grads(ctx, shapes=[(3, 2)]),
            _calling(fn, 0.4),
            params=True,
            single=True,
        ),
        clip_probe(
            f"minitorch.nn.utils.clip_grad_value_(Parameters holding {shapes}, clip_value=0.25)",
            _grads(ctx),
            _calling(f"{UTILS}.clip_grad_value_", 0.25),
            params=True,
        ),
    ]
    ctx.equivalent(probes, CLIP_TOL)


def _layers(ctx: CheckContext, cls: str, extra: Optional[dict] = None) -> None:
    probes = [layer_probe(ctx, cls, c, extra) for c in CONFIGS]
    probes.append(
        layer_probe(
            ctx, cls, (3, 2, 2, 3, 2, True, False, True, True), {"dropout": 0.5, **(extra or {})}, mode="eval"
        )
    )
    # training mode with p = 1: layer 1 reads zeros (deterministic), layer 0 is untouched
    probes.append(
        layer_probe(ctx, cls, (3, 2, 2, 2, 2, False, False, True, True), {"dropout": 1.0, **(extra or {})})
    )
    ctx.equivalent(probes, TOL)


@check("5.4", "rnn_layers", kind="equivalence")
def rnn_layers(ctx: CheckContext) -> None:
    """RNN (tanh and relu) over layers, directions, batch_first, with and without h_0:
    output, h_n and all gradients against the reference."""
    _layers(ctx, "RNN")
    ctx.equivalent(
        [layer_probe(ctx, "RNN", c, {"nonlinearity": "relu"}) for c in (CONFIGS[2], CONFIGS[5])], TOL
    )


@check("5.4", "lstm_layers", kind="equivalence")
def lstm_layers(ctx: CheckContext) -> None:
    """LSTM over layers, directions, batch_first, with and without (h_0, c_0): output, h_n,
    c_n and all gradients against the reference."""
    _layers(ctx, "LSTM")


@check("5.4", "gru_layers", kind="equivalence")
def gru_layers(ctx: CheckContext) -> None:
    """GRU over layers, directions, batch_first, with and without h_0: output, h_n and all
    gradients against the reference."""
    _layers(ctx, "GRU")


@check("5.4", "recurrent_h_n", kind="property")
def recurrent_h_n(ctx: CheckContext) -> None:
    """h_n holds each direction's final state: per layer the forward direction's h at the last
    time step and the backward direction's at the first (the student's own output)."""
    for cls in ("RNN", "GRU", "LSTM"):
        for t, b, layers, batch_first in [(4, 2, 2, False), (3, 3, 1, True)]:
            i, h = 2, 3
            kwargs = {"num_layers": layers, "bidirectional": True, "batch_first": batch_first}
            label = f"{layer_text(cls, (i, h), kwargs)} on input {(b, t, i) if batch_first else (t, b, i)}"
            x = ctx.rng.standard_normal((b, t, i) if batch_first else (t, b, i))
            p = Probe(label, {"input": x})
            model = p.call(f"{REC}.{cls}", i, h, backend=p.get(SIMPLE), **kwargs)
            p.method(model, "load_state_dict", layer_params(ctx, cls, (i, h), kwargs))
            out = p.call(model, p.tensor(x))
            p.returns(p.op("getitem", out, 0), p.op("getitem", out, 1))
            (a,) = ctx.child([p])
            if a.error is not None:
                raise StudentError(label, a.error)
            output, final = a.values
            finals = final if cls == "LSTM" else (final,)
            if not isinstance(output, TensorVal) or output.array.shape != (
                (b, t, 2 * h) if batch_first else (t, b, 2 * h)
            ):
                raise CheckFailed(
                    f"{label}: output should be a tensor of shape {(b, t, 2 * h) if batch_first else (t, b, 2 * h)}, got {describe(output)[:100]}"
                )
            out_tm = output.array.transpose(1, 0, 2) if batch_first else output.array  # [T, B, 2H]
            if cls == "LSTM" and (not isinstance(final, (tuple, list)) or len(final) != 2):
                raise CheckFailed(
                    f"{label}: the LSTM returns (output, (h_n, c_n)), got {kind_name(final)} as the second item"
                )
            for name, f in zip(("h_n", "c_n"), finals):
                if not isinstance(f, TensorVal) or f.array.shape != (2 * layers, b, h):
                    raise CheckFailed(
                        f"{label}: {name} should be a tensor of shape {(2 * layers, b, h)} ([num_layers·2, B, H]), got {describe(f)[:100]}"
                    )
            h_n = finals[0].array
            top = 2 * (layers - 1)
            for k, step, cols, what in [
                (
                    top,
                    t - 1,
                    slice(0, h),
                    "the forward direction's output at the last step, output[T−1, :, :H]",
                ),
                (
                    top + 1,
                    0,
                    slice(h, 2 * h),
                    "the backward direction's output at the first step, output[0, :, H:] (its last step read x[0])",
                ),
            ]:
                d = diff_arrays(out_tm[step, :, cols], h_n[k], TOL)
                if d:
                    raise CheckFailed(
                        f"{label}: h_n[{k}] (last layer, {'forward' if k == top else 'backward'}) must equal {what}: {d}"
                    )
