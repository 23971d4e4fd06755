"""Hidden checks of task 4.5: The text CNN."""

from __future__ import annotations

import numpy as np

from ..base import CheckContext, check
from ..probe import Probe, Tol


TEXTCNN = {
    "vocab_size": 20,
    "embedding_dim": 6,
    "num_classes": 3,
    "kernel_sizes": (2, 3),
    "num_filters": 4,
    "dropout": 0.5,
    "padding_idx": 0,
}


def _textcnn_state(ctx: CheckContext) -> dict[str, np.ndarray]:
    """Random weights for every parameter, named and shaped as the reference names them."""
    import minitorch  # the reference, imported by the parent

    model = minitorch.nn.TextCNN(**TEXTCNN, backend=minitorch.SimpleBackend)
    state = {}
    for name, value in sorted(model.state_dict().items()):
        arr = np.asarray(value)
        state[name] = ctx.rng.standard_normal(arr.shape) * 0.5
    return state


def _textcnn_probe(ctx: CheckContext, state: dict[str, np.ndarray], tokens: np.ndarray, mode: str) -> Probe:
    """TextCNN with the weights `state` in `mode` on `tokens`, then backward: the logits,
    the parameters' names and gradients."""
    kwargs = dict(TEXTCNN)
    if mode == "train":
        kwargs["dropout"] = 0.0
    p = Probe(
        f"TextCNN({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) in {mode} mode on tokens {tokens.shape}, then backward",
        {"tokens": tokens},
    )
    model = p.call("minitorch.nn.TextCNN", backend=p.get("minitorch.SimpleBackend"), **kwargs)
    p.method(model, "load_state_dict", {k: state[k] for k in sorted(state)})
    p.method(model, "eval" if mode == "eval" else "train")
    logits = p.call(model, p.tensor(tokens))
    g = ctx.rng.standard_normal((tokens.shape[0], TEXTCNN["num_classes"]))
    p.method(logits, "backward", p.tensor(g))
    params = p.method(model, "named_parameters")
    return p.returns(
        logits,
        p.project(params, [0]),
        p.project(params, [1, "value", "grad"]),
        names=["logits", "parameter names", "parameter gradients"],
    )


def _tokens(ctx: CheckContext, shape: tuple[int, int]) -> np.ndarray:
    tokens = ctx.rng.integers(1, TEXTCNN["vocab_size"], size=shape).astype(np.int64)
    tokens[0, shape[1] - 2 :] = 0  # padding
    return tokens


@check("4.5", "textcnn", kind="equivalence")
def textcnn(ctx: CheckContext) -> None:
    """TextCNN with given weights in eval mode: logits and every parameter's gradient,
    against the reference."""
    ctx.equivalent(
        [_textcnn_probe(ctx, _textcnn_state(ctx), _tokens(ctx, (3, 7)), "eval")], Tol(rtol=1e-8, atol=1e-10)
    )


@check("4.5", "textcnn_train", kind="equivalence")
def textcnn_train(ctx: CheckContext) -> None:
    """TextCNN with given weights in training mode (dropout 0): logits and gradients."""
    ctx.equivalent(
        [_textcnn_probe(ctx, _textcnn_state(ctx), _tokens(ctx, (3, 7)), "train")], Tol(rtol=1e-8, atol=1e-10)
    )


@check("4.5", "textcnn_shapes", kind="equivalence")
def textcnn_shapes(ctx: CheckContext) -> None:
    """TextCNN on a batch of one, and on sentences exactly as long as the widest filter."""
    state = _textcnn_state(ctx)
    probes = [
        _textcnn_probe(ctx, state, _tokens(ctx, (1, 6)), "eval"),
        _textcnn_probe(ctx, state, _tokens(ctx, (2, max(TEXTCNN["kernel_sizes"]))), "eval"),
    ]
    ctx.equivalent(probes, Tol(rtol=1e-8, atol=1e-10))
