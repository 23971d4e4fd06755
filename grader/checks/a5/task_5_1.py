"""Hidden checks of task 5.1: the RNN cell (probes shared with 5.2 and 5.3 in `cells`) and
`unroll`, a cell run over a sequence.

The step is an `RNNCell` with given weights (the 5.1 cell: nothing of the other tasks is
needed): outputs [T, B, H] and the final state against the reference, forward and reversed
(outputs in input time order either way), and the gradients of the inputs, the initial state
and the cell's parameters through all T steps; a sequence of 2000 steps must backpropagate
without a RecursionError. A state that is a tuple (the LSTM's (h, c)) is checked against the
student's own `LSTMCell` called step by step in the same process, so that a wrong LSTM cell
(graded in 5.2) cannot cost points here.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..base import CheckContext, CheckFailed, StudentError, check
from ..compare import describe, diff
from ..layer_probes import backward_of_sum
from ..probe import Probe, Ref, Tol
from .cells import _cell_equivalence, _cell_gradcheck


@check("5.1", "rnn_cell", kind="equivalence")
def rnn_cell(ctx: CheckContext) -> None:
    """rnn_cell, rnn_step and RNNCell (tanh and relu): h' and the gradients of the input,
    the state, the weights and the biases, against the reference."""
    _cell_equivalence(ctx, "rnn")
    _cell_equivalence(ctx, "rnn", nonlinearity="relu")


@check("5.1", "rnn_cell_gradcheck", kind="gradient")
def rnn_cell_gradcheck(ctx: CheckContext) -> None:
    """rnn_cell (tanh and relu): backward against central differences of the student's forward."""
    _cell_gradcheck(ctx, "rnn")
    _cell_gradcheck(ctx, "rnn", nonlinearity="relu")


UNROLL = "minitorch.nn.recurrent.unroll"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-8, atol=1e-10)


def _cell(p: Probe, cls: str, i: int, h: int, weights: dict[str, np.ndarray]) -> Ref:
    cell = p.call(cls, i, h, backend=p.get(SIMPLE))
    p.method(cell, "load_state_dict", weights)
    return cell


def _rnn_weights(
    ctx: CheckContext, i: int, h: int, gates: int = 1, scale: float = 0.6
) -> dict[str, np.ndarray]:
    n = ctx.rng.standard_normal
    return {
        "weight_ih": n((gates * h, i)) * scale,
        "weight_hh": n((gates * h, h)) * scale,
        "bias_ih": n(gates * h) * 0.3,
        "bias_hh": n(gates * h) * 0.3,
    }


def unroll_probe(
    ctx: CheckContext, t: int, b: int, i: int, h: int, reverse: bool, scale: float = 0.6
) -> Probe:
    """unroll(RNNCell, inputs [T, B, I], h0 [B, H], reverse) → outputs, final state, gradients."""
    x = ctx.rng.standard_normal((t, b, i))
    h0 = ctx.rng.standard_normal((b, h))
    weights = _rnn_weights(ctx, i, h, scale=scale)
    p = Probe(
        f"unroll(step=RNNCell({i}, {h}), inputs ({t}, {b}, {i}), state ({b}, {h}), reverse={reverse})",
        {"inputs": x, "state": h0},
    )
    cell = _cell(p, "minitorch.nn.rnn.RNNCell", i, h, weights)
    xt, ht = p.tensor(x, requires_grad=True), p.tensor(h0, requires_grad=True)
    out = p.call(UNROLL, cell, xt, ht, reverse=reverse)
    outputs, final = p.op("getitem", out, 0), p.op("getitem", out, 1)
    backward_of_sum(
        p, [(outputs, ctx.rng.standard_normal((t, b, h))), (final, ctx.rng.standard_normal((b, h)))]
    )
    params = p.method(cell, "named_parameters")
    p.returns(
        outputs,
        final,
        p.attr(xt, "grad"),
        p.attr(ht, "grad"),
        p.project(params, [1, "value", "grad"]),
        names=["outputs", "final state", "inputs.grad", "state.grad", "the cell's parameter gradients"],
    )
    return p


@check("5.1", "unroll", kind="equivalence")
def unroll(ctx: CheckContext) -> None:
    """unroll with an RNNCell step, forward and reverse: outputs in input time order, the
    final state, and the gradients of the inputs, the initial state and the cell's
    parameters, against the reference; with an (h, c) state, against the student's own
    LSTMCell called step by step."""
    probes = [
        unroll_probe(ctx, t, b, i, h, rev)
        for t, b, i, h, rev in [
            (1, 1, 1, 1, False),
            (1, 2, 3, 2, True),
            (4, 2, 3, 4, False),
            (5, 3, 2, 3, True),
            (7, 1, 2, 2, True),
        ]
    ]
    ctx.equivalent(probes, TOL)
    for t, rev in [(3, False), (4, True)]:
        _tuple_state(ctx, t, rev)


def _lstm_probe(
    label: str,
    arrays: dict[str, np.ndarray],
    weights: dict[str, np.ndarray],
    grads: list[np.ndarray],
    reverse: bool,
    manual: bool,
) -> Probe:
    """unroll(LSTMCell, …) — or, with `manual`, the same loop written out in the probe."""
    x, h0, c0 = arrays["inputs"], arrays["h0"], arrays["c0"]
    t, b, i = x.shape
    p = Probe(label, arrays)
    cell = _cell(p, "minitorch.nn.lstm.LSTMCell", i, h0.shape[1], weights)
    xt, ht, ct = (p.tensor(a, requires_grad=True) for a in (x, h0, c0))
    if manual:
        state: Optional[Ref] = None
        hs: dict[int, Ref] = {}
        for s in reversed(range(t)) if reverse else range(t):
            state = p.call(cell, p.op("getitem", xt, s), (ht, ct) if state is None else state)
            hs[s] = p.op("getitem", state, 0)
        outputs = p.call("minitorch.stack", [hs[s] for s in range(t)], 0)
    else:
        out = p.call(UNROLL, cell, xt, (ht, ct), reverse=reverse)
        outputs, state = p.op("getitem", out, 0), p.op("getitem", out, 1)
    h_n, c_n = p.op("getitem", state, 0), p.op("getitem", state, 1)
    backward_of_sum(p, list(zip([outputs, h_n, c_n], grads)))
    p.returns(
        outputs,
        h_n,
        c_n,
        p.attr(xt, "grad"),
        p.attr(ht, "grad"),
        p.attr(ct, "grad"),
        names=["outputs", "final h", "final c", "inputs.grad", "h0.grad", "c0.grad"],
    )
    return p


def _tuple_state(ctx: CheckContext, t: int, reverse: bool) -> None:
    b, i, h = 2, 3, 2
    arrays = {
        "inputs": ctx.rng.standard_normal((t, b, i)),
        "h0": ctx.rng.standard_normal((b, h)),
        "c0": ctx.rng.standard_normal((b, h)),
    }
    weights = _rnn_weights(ctx, i, h, gates=4)
    grads = [
        ctx.rng.standard_normal((t, b, h)),
        ctx.rng.standard_normal((b, h)),
        ctx.rng.standard_normal((b, h)),
    ]
    label = f"unroll(step=LSTMCell({i}, {h}), inputs ({t}, {b}, {i}), state (h0, c0) each ({b}, {h}), reverse={reverse})"
    mine, loop = ctx.child(
        [_lstm_probe(label, arrays, weights, grads, reverse, manual) for manual in (False, True)]
    )
    if loop.error is not None:
        return  # the LSTM cell itself raises (task 5.2): nothing to compare unroll with here
    probe = _lstm_probe(label, arrays, weights, grads, reverse, False)
    if mine.error is not None:
        raise StudentError(label, mine.error)
    for name, got, want in zip(probe.output_names, mine.values, loop.values):
        d = diff(want, got, TOL)
        if d:
            raise CheckFailed(
                f"{label} ({name}) differs from calling the same LSTMCell step by step: {d}",
                f"step by step: {describe(want)}\nunroll:       {describe(got)}",
            )


@check("5.1", "unroll_long", kind="equivalence", timeout_scale=2.0)
def unroll_long(ctx: CheckContext) -> None:
    """unroll over 2000 steps (backpropagation through time must not hit Python's recursion
    limit): outputs, final state and gradients against the reference."""
    ctx.equivalent([unroll_probe(ctx, 2000, 1, 2, 2, False, scale=0.4)], TOL)
