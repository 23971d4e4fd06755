"""The probes of the RNN (5.1), LSTM (5.2) and GRU (5.3) cells: functional cell, step on a
precomputed input projection, module; against the reference and central differences.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import CheckContext
from ..layer_probes import backward_of_sum, fwd_bwd_many
from ..probe import F32, Probe, Ref, Tol


SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)

#: cell → (module, functional cell, step, module class, gate blocks, the state is (h, c))
CELLS = {
    "rnn": ("minitorch.nn.rnn", "rnn_cell", "rnn_step", "RNNCell", 1, False),
    "lstm": ("minitorch.nn.lstm", "lstm_cell", "lstm_step", "LSTMCell", 4, True),
    "gru": ("minitorch.nn.gru", "gru_cell", "gru_step", "GRUCell", 3, False),
}

#: (B or None for an unbatched input, I, H, biases: "both" | "none" | "ih"), smallest first
SHAPES = [(1, 1, 1, "both"), (3, 4, 5, "both"), (2, 3, 2, "none"), (2, 2, 3, "ih"), (None, 3, 2, "both")]


def _weights(
    ctx: CheckContext, gates: int, i: int, h: int, biases: str = "both"
) -> dict[str, Optional[np.ndarray]]:
    n = ctx.rng.standard_normal
    return {
        "w_ih": n((gates * h, i)) * 0.6,
        "w_hh": n((gates * h, h)) * 0.6,
        "b_ih": n(gates * h) * 0.5 if biases in ("both", "ih") else None,
        "b_hh": n(gates * h) * 0.5 if biases == "both" else None,
    }


def _state(ctx: CheckContext, lstm: bool, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    if lstm:
        return {"h": ctx.rng.standard_normal(shape), "c": ctx.rng.standard_normal(shape)}
    return {"hx": ctx.rng.standard_normal(shape)}


def _bias_text(arrays: dict[str, Any]) -> str:
    given = [k for k in ("b_ih", "b_hh") if arrays.get(k) is not None]
    return ", ".join(given) if given else "no biases"


def _call_cell(p: Probe, fn: str, lstm: bool, refs: list[Any], kwargs: dict) -> list[Ref]:
    """fn(x, state, w_ih, w_hh, b_ih, b_hh, **kwargs) → its outputs (h', or h' and c')."""
    if lstm:
        x, h, c, *w = refs
        out = p.call(fn, x, (h, c), *w, **kwargs)
        return [p.op("getitem", out, 0), p.op("getitem", out, 1)]
    return [p.call(fn, *refs, **kwargs)]


def _call_step(p: Probe, fn: str, lstm: bool, refs: list[Any], kwargs: dict) -> list[Ref]:
    """fn(x_proj, state, w_hh, b_hh, **kwargs) → its outputs."""
    if lstm:
        xp, h, c, w_hh, b_hh = refs
        out = p.call(fn, xp, (h, c), w_hh, b_hh, **kwargs)
        return [p.op("getitem", out, 0), p.op("getitem", out, 1)]
    return [p.call(fn, *refs, **kwargs)]


def module_probe(
    ctx: CheckContext,
    label: str,
    cls: str,
    lstm: bool,
    x: np.ndarray,
    state: Optional[dict[str, np.ndarray]],
    weights: dict[str, Optional[np.ndarray]],
    **kwargs: Any,
) -> Probe:
    """The cell module with given weights, forward on x (and the state, or None), backward;
    returns the outputs, x's (and the state's) gradients and every parameter's."""
    p = Probe(label, {"input": x, **(state or {})})
    cell = p.call(
        cls,
        x.shape[-1],
        weights["w_hh"].shape[1],
        bias=weights["b_ih"] is not None,
        backend=p.get(SIMPLE),
        **kwargs,
    )
    names = {"weight_ih": "w_ih", "weight_hh": "w_hh", "bias_ih": "b_ih", "bias_hh": "b_hh"}
    p.method(cell, "load_state_dict", {k: weights[v] for k, v in names.items() if weights[v] is not None})
    xt = p.tensor(x, requires_grad=True)
    st = {k: p.tensor(v, requires_grad=True) for k, v in (state or {}).items()}
    if state is None:
        out = p.call(cell, xt)
    else:
        out = p.call(cell, xt, (st["h"], st["c"]) if lstm else st["hx"])
    outs = [p.op("getitem", out, 0), p.op("getitem", out, 1)] if lstm else [out]
    hshape = x.shape[:-1] + (weights["w_hh"].shape[1],)
    backward_of_sum(p, [(o, ctx.rng.standard_normal(hshape)) for o in outs])
    params = p.method(cell, "named_parameters")
    grads = [p.attr(xt, "grad")] + [p.attr(t, "grad") for t in st.values()]
    out_names = ["h'", "c'"] if lstm else ["h'"]
    p.returns(
        *outs,
        *grads,
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=out_names
        + ["input.grad"]
        + [f"{k}.grad" for k in st]
        + ["parameter names", "parameter gradients"],
    )
    return p


#: The entry points of a cell, each its own check for the LSTM and GRU (5.2, 5.3).
PARTS = ("cell", "step", "module")


def cell_probes(
    ctx: CheckContext, cell: str, parts: tuple[str, ...] = PARTS, **kwargs: Any
) -> tuple[list[Probe], list[Probe]]:
    """(float64 probes, float32 probes) of one cell's entry points `parts`: the functional
    cell (and its float32 probe), the step on a precomputed projection, the module."""
    mod, fn, step, cls, gates, lstm = CELLS[cell]
    probes: list[Probe] = []
    f32: list[Probe] = []
    outs = ["h'", "c'"] if lstm else ["h'"]
    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    for b, i, h, biases in SHAPES if "cell" in parts else ():
        xs, hs = ((b, i), (b, h)) if b is not None else ((i,), (h,))
        arrays = {
            "input": ctx.rng.standard_normal(xs),
            **_state(ctx, lstm, hs),
            **_weights(ctx, gates, i, h, biases),
        }
        shapes = ", ".join(
            f"{k} {v.shape}" for k, v in arrays.items() if v is not None and not k.startswith("b_")
        )
        label = f"{fn}({shapes}, {_bias_text(arrays)}{extra})"
        probes.append(
            fwd_bwd_many(
                ctx,
                label,
                arrays,
                lambda p, r: _call_cell(p, f"{mod}.{fn}", lstm, r, kwargs),
                [hs] * len(outs),
                outs,
            )
        )
    if "cell" in parts:  # strided storages: the input and w_hh transposed in memory
        arrays = {
            "input": ctx.rng.standard_normal((3, 2)),
            **_state(ctx, lstm, (3, 4)),
            **_weights(ctx, gates, 2, 4),
        }
        label = f"{fn}(input (3, 2) stored in dimension order (1, 0), state (3, 4), w_hh ({gates * 4}, 4) stored in order (1, 0), b_ih, b_hh{extra})"
        probes.append(
            fwd_bwd_many(
                ctx,
                label,
                arrays,
                lambda p, r: _call_cell(p, f"{mod}.{fn}", lstm, r, kwargs),
                [(3, 4)] * len(outs),
                outs,
                order={"input": (1, 0), "w_hh": (1, 0)},
            )
        )
        arrays = {
            k: (v.astype(np.float32) if v is not None else None)
            for k, v in {
                "input": ctx.rng.standard_normal((2, 3)),
                **_state(ctx, lstm, (2, 2)),
                **_weights(ctx, gates, 3, 2),
            }.items()
        }
        f32.append(
            fwd_bwd_many(
                ctx,
                f"{fn} on float32 tensors (input (2, 3), state (2, 2){extra})",
                arrays,
                lambda p, r: _call_cell(p, f"{mod}.{fn}", lstm, r, kwargs),
                [(2, 2)] * len(outs),
                outs,
            )
        )
    # the step the layers call, on a precomputed x_proj = x W_ihᵀ + b_ih
    for b, h, with_bias in [(2, 3, True), (1, 2, False)] if "step" in parts else ():
        arrays = {
            "x_proj": ctx.rng.standard_normal((b, gates * h)),
            **_state(ctx, lstm, (b, h)),
            "w_hh": ctx.rng.standard_normal((gates * h, h)) * 0.6,
            "b_hh": ctx.rng.standard_normal(gates * h) * 0.5 if with_bias else None,
        }
        label = f"{step}(x_proj ({b}, {gates * h}), state ({b}, {h}), w_hh ({gates * h}, {h}){', b_hh' if with_bias else ''}{extra})"
        probes.append(
            fwd_bwd_many(
                ctx,
                label,
                arrays,
                lambda p, r: _call_step(p, f"{mod}.{step}", lstm, r, kwargs),
                [(b, h)] * len(outs),
                outs,
            )
        )
    # the module, with the zero state (hx=None) and with a given one
    for b, i, h, with_state in (
        [(2, 3, 4, False), (3, 2, 3, True), (None, 2, 2, False)] if "module" in parts else ()
    ):
        x = ctx.rng.standard_normal((b, i) if b else (i,))
        state = _state(ctx, lstm, (b, h) if b else (h,)) if with_state else None
        label = f"{cls}({i}, {h}{extra}) on input {x.shape}" + (
            " with a given state" if with_state else " with hx=None (zeros)"
        )
        probes.append(
            module_probe(ctx, label, f"{mod}.{cls}", lstm, x, state, _weights(ctx, gates, i, h), **kwargs)
        )
    return probes, f32


def _cell_equivalence(ctx: CheckContext, cell: str, parts: tuple[str, ...] = PARTS, **kwargs: Any) -> None:
    probes, f32 = cell_probes(ctx, cell, parts, **kwargs)
    ctx.equivalent(probes, TOL)
    if f32:
        ctx.equivalent(f32, F32)


def _cell_gradcheck(ctx: CheckContext, cell: str, **kwargs: Any) -> None:
    mod, fn, _, _, gates, lstm = CELLS[cell]
    for b, i, h in [(2, 3, 2), (1, 2, 3)]:
        names = ["input"] + (["h", "c"] if lstm else ["hx"]) + ["w_ih", "w_hh", "b_ih", "b_hh"]
        weights = _weights(ctx, gates, i, h)
        arrays = (
            [ctx.rng.standard_normal((b, i))]
            + [ctx.rng.standard_normal((b, h)) for _ in range(2 if lstm else 1)]
            + [weights[k] for k in names[-4:]]
        )

        def build(p: Probe, ts: list[Ref]) -> Ref:
            outs = _call_cell(p, f"{mod}.{fn}", lstm, ts, kwargs)
            return p.call("minitorch.cat", outs, 1) if lstm else outs[0]

        shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(names, arrays))
        what = "h' and c' side by side" if lstm else "h'"
        ctx.gradcheck(
            f"{fn}({shapes}{''.join(f', {k}={v!r}' for k, v in kwargs.items())}) → {what} (inputs x0 … x{len(names) - 1} in this order)",
            build,
            arrays,
        )
