"""Hidden checks of stage A5, task 5.5: the character language model's functions.

A tiny `CharLanguageModel` (V = 7 characters, Elman cells) with given weights, on the
simple backend, is run through the student's functions and the reference's:
`sequence_loss` (value and gradient of the logits, targets as tensors and arrays),
`perplexity` (overflow → inf),
`evaluate` (every target of the split scored once, in windows from a zero state, in
evaluation mode — dropout off — with the mode restored), `train_step` (the loss it
returns and every parameter after one and two steps of SGD and of Adam, with and without
clipping, the model left in training mode) and `sample` (the same text for the same seed
as the reference: draws are `default_rng(seed).choice(V, p=softmax(logits / τ))`; greedy
at τ = 0; nothing for length 0; the same text twice; the mode restored).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import CheckContext, check
from ..probe import Probe, Ref, Tol


LM = "minitorch.nn.language_model"
SIMPLE = "minitorch.SimpleBackend"
TOL = Tol(rtol=1e-9, atol=1e-11)
CHARS = "abcdefg"
V = len(CHARS)


def _weights(ctx: CheckContext, kwargs: dict) -> dict[str, np.ndarray]:
    """Random values for every parameter, named and shaped as the reference names them."""
    import minitorch  # the reference, imported by the parent
    from minitorch.nn.language_model import CharLanguageModel

    model = CharLanguageModel(V, **kwargs, backend=minitorch.SimpleBackend)
    return {
        name: ctx.rng.standard_normal(np.shape(v)) * 0.7 for name, v in sorted(model.state_dict().items())
    }


def _model(ctx: CheckContext, p: Probe, **kwargs: Any) -> tuple[Ref, str]:
    """A CharLanguageModel(V, embedding_dim=3, hidden_size=4, cell="rnn", …) with given
    weights; (model, label). The Elman cell: a wrong LSTM or GRU cell (5.2, 5.3) costs
    nothing here (the functions of 5.5 do not depend on the cell)."""
    kwargs = {"embedding_dim": 3, "hidden_size": 4, "cell": "rnn", **kwargs}
    model = p.call(f"{LM}.CharLanguageModel", V, backend=p.get(SIMPLE), **kwargs)
    p.method(model, "load_state_dict", _weights(ctx, kwargs))
    return model, f"CharLanguageModel({V}, {', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


def _ids(ctx: CheckContext, *shape: int) -> np.ndarray:
    return ctx.rng.integers(0, V, size=shape).astype(np.int64)


@check("5.5", "lm_loss", kind="equivalence")
def lm_loss(ctx: CheckContext) -> None:
    """sequence_loss (value and ∂/∂logits), perplexity and evaluate against the reference."""
    probes = []
    for b, t, v, as_tensor in [(1, 1, 3, True), (2, 4, 5, True), (3, 2, 7, False), (2, 3, 4, True)]:
        logits = ctx.rng.standard_normal((b, t, v)) * (30.0 if v == 4 else 2.0)
        targets = ctx.rng.integers(0, v, size=(b, t)).astype(np.int64)
        big = ", logits of about ±100 (must not overflow)" if v == 4 else ""
        p = Probe(
            f"sequence_loss(logits ({b}, {t}, {v}), targets ({b}, {t}) as {'an int64 tensor' if as_tensor else 'a NumPy array'}{big}), then backward",
            {"logits": logits, "targets": targets},
        )
        lt = p.tensor(logits, requires_grad=True)
        loss = p.call(f"{LM}.sequence_loss", lt, p.tensor(targets) if as_tensor else p.const(targets))
        p.method(loss, "backward")
        probes.append(p.returns(loss, p.attr(lt, "grad"), names=["loss", "logits.grad"]))
    for nll in [0.0, math.log(V), 1.7, 2000.0]:
        p = Probe(f"perplexity({nll!r})" + (" (exp overflows: inf)" if nll > 700 else ""))
        probes.append(p.returns(p.call(f"{LM}.perplexity", nll)))
    for n, seq_len, batch, kwargs in [
        (2, 4, 2, {}),
        (23, 4, 2, {}),
        (22, 5, 3, {"embedding_dim": 2}),
        (9, 30, 2, {}),
        (17, 3, 4, {"num_layers": 2, "dropout": 0.5}),
    ]:
        data = _ids(ctx, n)
        p = Probe("", {"data": data})
        model, text = _model(ctx, p, **kwargs)
        p.label = f"evaluate({text} in training mode, data of {n} ids, seq_len={seq_len}, batch_size={batch}), then model.training"
        p.returns(
            p.call(f"{LM}.evaluate", model, data, seq_len, batch),
            p.attr(model, "training"),
            names=["mean NLL", "model.training afterwards"],
        )
        probes.append(p)
    ctx.equivalent(probes, TOL)


@check("5.5", "lm_train_step", kind="equivalence")
def lm_train_step(ctx: CheckContext) -> None:
    """train_step: the losses it returns and every parameter after two steps (SGD with and
    without momentum, Adam; clipping that bites and none), against the reference."""
    probes = []
    cases = [
        ("SGD", {"lr": 0.5}, 1.0, {}),
        ("SGD", {"lr": 0.3, "momentum": 0.9}, 0.05, {"hidden_size": 3}),
        ("Adam", {"lr": 0.01}, None, {}),
        ("Adam", {"lr": 0.02}, 0.1, {"num_layers": 2}),
    ]
    for opt, opt_kwargs, max_norm, kwargs in cases:
        batches = [(_ids(ctx, 2, 5), _ids(ctx, 2, 5)) for _ in range(2)]
        p = Probe("", {f"{n}{k}": a for k, (x, y) in enumerate(batches) for n, a in (("x", x), ("y", y))})
        model, text = _model(ctx, p, **kwargs)
        optimizer = p.call(f"minitorch.optim.{opt}", p.method(model, "parameters"), **opt_kwargs)
        p.method(model, "eval")  # train_step must switch to training mode
        losses = []
        for k, (x, y) in enumerate(batches):
            xs, ys = (p.tensor(x), p.tensor(y)) if k == 0 else (x, y)
            losses.append(p.call(f"{LM}.train_step", model, optimizer, xs, ys, max_norm=max_norm))
        opts = ", ".join(f"{a}={b!r}" for a, b in opt_kwargs.items())
        p.label = (
            f"two train_step calls on {text} with {opt}({opts}), max_norm={max_norm!r}, "
            "x and y (2, 5) (int64 tensors, then arrays); then the parameters and model.training"
        )
        p.returns(
            *losses,
            p.method(model, "state_dict"),
            p.attr(model, "training"),
            names=["loss of step 1", "loss of step 2", "the parameters after step 2", "model.training"],
        )
        probes.append(p)
    # loose enough for a clip_grad_norm_ (5.4) that forgets its 1e−6; far too tight for a
    # missing or wrong clipping, or a wrong step
    ctx.equivalent(probes, Tol(rtol=1e-6, atol=1e-6))


@check("5.5", "lm_train_chunk", kind="equivalence")
def lm_train_chunk(ctx: CheckContext) -> None:
    """train_chunk (truncated BPTT): three chunks, each from the previous chunk's final
    state — losses, final states and parameters against the reference. A state used
    without `detach_state` lets the backward pass run into the earlier chunks' graphs,
    which adds stale gradients: the parameters then differ."""
    probes = []
    # the Elman cell only (see `_model`): a wrong LSTM or GRU cell must not cost 5.5 too
    for max_norm, kwargs in [(None, {}), (0.5, {"num_layers": 2}), (1.0, {"hidden_size": 3})]:
        batches = [(_ids(ctx, 2, 4), _ids(ctx, 2, 4)) for _ in range(3)]
        p = Probe("", {f"{n}{k}": a for k, (x, y) in enumerate(batches) for n, a in (("x", x), ("y", y))})
        model, text = _model(ctx, p, **kwargs)
        optimizer = p.call("minitorch.optim.SGD", p.method(model, "parameters"), lr=0.4)
        state, outs = None, []
        for k, (x, y) in enumerate(batches):
            out = p.call(f"{LM}.train_chunk", model, optimizer, x, y, state, max_norm=max_norm)
            state = p.op("getitem", out, 1)
            outs += [p.op("getitem", out, 0), state]
        p.label = (
            f"three train_chunk calls on {text}, SGD(lr=0.4), max_norm={max_norm!r}, x and y (2, 4), "
            "each from the state the previous call returned"
        )
        p.returns(
            *outs,
            p.method(model, "state_dict"),
            names=[f"{what} of chunk {k + 1}" for k in range(3) for what in ("loss", "final state")]
            + ["the parameters after chunk 3"],
        )
        probes.append(p)
    ctx.equivalent(probes, Tol(rtol=1e-6, atol=1e-6))


@check("5.5", "lm_sample", kind="equivalence")
def lm_sample(ctx: CheckContext) -> None:
    """sample: the same text as the reference for the same seed (draws from
    softmax(logits / temperature) with default_rng(seed)), greedy at temperature 0, '' for
    length 0, repeatable, the model's mode restored."""
    probes = []
    for prompt, length, temperature, seed, kwargs in [
        ("a", 0, 1.0, 0, {}),
        ("ab", 1, 1.0, 3, {}),
        ("cab", 12, 1.0, 5, {}),
        ("gfa", 10, 0.0, 0, {}),
        ("b", 15, 0.5, 11, {"hidden_size": 5}),
        ("dd", 15, 2.0, 2, {"num_layers": 2}),
    ]:
        p = Probe("")
        model, text = _model(ctx, p, **kwargs)
        vocab = p.call("minitorch.datasets.CharVocab.build", CHARS)
        call = [f"{LM}.sample", model, vocab, prompt, length]
        first = p.call(*call, temperature=temperature, seed=seed)
        again = p.call(*call, temperature=temperature, seed=seed)
        p.label = f"sample({text}, vocab {CHARS!r}, prompt {prompt!r}, length={length}, temperature={temperature}, seed={seed}), twice; then model.training"
        p.returns(
            first,
            again,
            p.attr(model, "training"),
            names=["text", "the text of a second call with the same seed", "model.training"],
        )
        probes.append(p)
    ctx.equivalent(probes)
