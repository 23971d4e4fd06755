"""The probes of the stacked and bidirectional recurrent layers `RNN`, `LSTM` and `GRU`
(5.4): a layer with given weights on a generated configuration, forward and one backward,
returning what a check compares with the reference (output, final states, gradients).

    probe = layer_probe(ctx, "LSTM", CONFIGS[3])  # bidirectional, with (h_0, c_0)
    ctx.equivalent([probe], TOL)

`CONFIGS` are the configurations, smallest first; `layer_params` draws the weights, named
and shaped as the reference's layer names them; `layer_text` writes the constructor call
that labels a probe.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext
from ..layer_probes import backward_of_sum
from ..probe import Probe, Tol

__all__ = ["CONFIGS", "REC", "SIMPLE", "TOL", "layer_params", "layer_probe", "layer_text"]


REC = "minitorch.nn.recurrent"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-8, atol=1e-10)

#: (T, B or None for an unbatched input, I, H, num_layers, bidirectional, batch_first, with a state, bias), smallest first
CONFIGS = [
    (1, 1, 1, 1, 1, False, False, False, True),
    (3, 2, 3, 4, 1, False, False, True, True),
    (4, 2, 3, 2, 2, False, False, False, True),
    (3, 1, 2, 3, 1, True, False, True, True),
    (4, 3, 2, 2, 1, True, True, False, True),
    (3, 2, 3, 2, 2, True, True, True, True),
    (2, 2, 2, 3, 3, True, False, True, False),
    (5, None, 2, 2, 2, True, False, True, True),
    (3, None, 3, 2, 1, False, False, False, True),
]


def layer_params(ctx: CheckContext, cls: str, args: tuple, kwargs: dict) -> dict[str, np.ndarray]:
    """Random weights for every parameter, named and shaped as the reference names them."""
    import minitorch  # the reference, imported by the parent

    model = getattr(minitorch.nn.recurrent, cls)(*args, **kwargs, backend=minitorch.SimpleBackend)
    return {
        name: ctx.rng.standard_normal(np.shape(v)) * 0.5 for name, v in sorted(model.state_dict().items())
    }


def layer_text(cls: str, args: tuple, kwargs: dict) -> str:
    return f"{cls}({', '.join([*map(str, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})"


def layer_probe(
    ctx: CheckContext, cls: str, config: tuple, extra: Optional[dict] = None, mode: str = "train"
) -> Probe:
    """The layer with given weights on a generated input (and state): forward, one backward
    through output, h_n (and c_n); returns them, the input's and state's gradients and every
    parameter's."""
    t, b, i, h, layers, bidir, batch_first, with_state, bias = config
    lstm = cls == "LSTM"
    kwargs: dict[str, Any] = {"num_layers": layers}  # the defaults left out of the label
    kwargs.update(
        {
            k: v
            for k, v, default in [
                ("bias", bias, True),
                ("batch_first", batch_first, False),
                ("bidirectional", bidir, False),
            ]
            if v != default
        }
    )
    kwargs.update(extra or {})
    state = layer_params(ctx, cls, (i, h), kwargs)
    d = 2 if bidir else 1
    if b is None:
        xs, ss, os_ = (t, i), (layers * d, h), (t, d * h)
    else:
        xs, ss, os_ = (
            ((b, t, i) if batch_first else (t, b, i)),
            (layers * d, b, h),
            ((b, t, d * h) if batch_first else (t, b, d * h)),
        )
    x = ctx.rng.standard_normal(xs)
    h0 = {k: ctx.rng.standard_normal(ss) for k in (("h0", "c0") if lstm else ("h0",))} if with_state else {}
    label = f"{layer_text(cls, (i, h), kwargs)} in {mode} mode on input {xs}" + (
        f" with {' and '.join(f'{k} {ss}' for k in h0)}" if h0 else " with hx=None"
    )
    p = Probe(label, {"input": x, **h0})
    model = p.call(f"{REC}.{cls}", i, h, backend=p.get(SIMPLE), **kwargs)
    p.method(model, "load_state_dict", state)
    p.method(model, mode)
    xt = p.tensor(x, requires_grad=True)
    st = [p.tensor(v, requires_grad=True) for v in h0.values()]
    if not st:
        out = p.call(model, xt)
    else:
        out = p.call(model, xt, tuple(st) if lstm else st[0])
    output, final = p.op("getitem", out, 0), p.op("getitem", out, 1)
    finals = [p.op("getitem", final, 0), p.op("getitem", final, 1)] if lstm else [final]
    backward_of_sum(
        p, [(output, ctx.rng.standard_normal(os_))] + [(f, ctx.rng.standard_normal(ss)) for f in finals]
    )
    params = p.method(model, "named_parameters")
    p.returns(
        output,
        *finals,
        p.attr(xt, "grad"),
        *[p.attr(s, "grad") for s in st],
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["output"]
        + (["h_n", "c_n"] if lstm else ["h_n"])
        + ["input.grad"]
        + [f"{k}.grad" for k in h0]
        + ["parameter names", "parameter gradients"],
    )
    return p
