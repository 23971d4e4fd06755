"""PyTorch code runs unchanged: four models written in plain PyTorch style
(`pytorch_style_models.py`) are built once with PyTorch and once with minitorch in its place,
given the same weights, and take one training step each — forward, loss, backward, gradient
clipping where the model's training script clips, an optimizer step. Loss, every gradient
and every parameter after the step match PyTorch's (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
import pytorch_style_models as models

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _gpt_step(lib, model, data):
    _, loss = model(lib.tensor(data[0]), lib.tensor(data[1]))
    return loss


def _cnn_step(lib, model, data):
    return lib.nn.functional.cross_entropy(model(lib.tensor(data[0])), lib.tensor(data[1]))


def _char_step(lib, model, data):
    out, _ = model(lib.tensor(data[0]), model.init_hidden(data[0].shape[0]))
    return lib.nn.functional.cross_entropy(out, lib.tensor(data[1]).view(-1))


def _word_step(lib, model, data):
    out, _ = model(lib.tensor(data[0]), model.init_hidden(data[0].shape[1]))
    return lib.nn.functional.nll_loss(out, lib.tensor(data[1]).view(-1))


CASES = {
    "gpt": (
        models.build_gpt,
        _gpt_step,
        (RNG.integers(0, 11, (3, 8)), RNG.integers(0, 11, (3, 8))),
        lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
        None,
    ),
    "text_cnn": (
        models.build_textcnn,
        _cnn_step,
        (RNG.integers(0, 20, (4, 7)), RNG.integers(0, 2, 4)),
        lambda lib, ps: lib.optim.Adam(ps, lr=1e-2),
        None,
    ),
    "char_lstm": (
        models.build_char_rnn,
        _char_step,
        (RNG.integers(0, 15, (2, 6)), RNG.integers(0, 15, (2, 6))),
        lambda lib, ps: lib.optim.Adam(ps, lr=1e-2),
        0.5,
    ),
    "word_gru": (
        models.build_word_lm,
        _word_step,
        (RNG.integers(0, 30, (6, 2)), RNG.integers(0, 30, (6, 2))),
        lambda lib, ps: lib.optim.SGD(ps, lr=20.0),
        0.25,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_pytorch_style_model_trains_one_step_as_in_pytorch(name: str) -> None:
    build, step, data, make_optimizer, clip = CASES[name]
    theirs = build(torch)().double()
    ours = build(minitorch)()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    losses, grads = [], []
    for lib, model in ((torch, theirs), (minitorch, ours)):
        model.train() if name == "gpt" else model.eval()  # (dropout: p = 0 in the GPT, off for the others)
        optimizer = make_optimizer(lib, model.parameters())
        optimizer.zero_grad()
        loss = step(lib, model, data)
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        grads.append({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        optimizer.step()
        losses.append(loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-13)
    for n in grads[0]:
        np.testing.assert_allclose(grads[1][n], grads[0][n], rtol=1e-9, atol=1e-13, err_msg=n)
    after = ours.state_dict()
    for n, v in theirs.state_dict().items():
        np.testing.assert_allclose(after[n], v.detach().numpy(), rtol=1e-9, atol=1e-13, err_msg=n)
