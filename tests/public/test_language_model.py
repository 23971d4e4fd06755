"""Task 5.5: the character language model (sequence_loss, perplexity, train_step, train_chunk,
evaluate, sample), checked without PyTorch: against NumPy (the loss, its gradient, the whole
model written out), against the training step written out by hand with library pieces, by
central differences, and by hand; plus the library pieces around it: the Tiny Shakespeare
dataset (vocabulary, split, random windows) and the `char_lm` example (checkpoint resume,
loss curve). (The project's own suite also compares the model and its training steps with
PyTorch: `test_language_model_torch.py`.)"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import CharVocab, load_tiny_shakespeare, random_batch, split_corpus, stream_chunk
from minitorch.nn.language_model import (
    CharLanguageModel,
    detach_state,
    evaluate,
    perplexity,
    sample,
    sequence_loss,
    train_chunk,
    train_step,
)
from minitorch.nn.losses import cross_entropy
from minitorch.nn.utils import clip_grad_norm_
from minitorch.testing import grad_check

BACKEND = minitorch.FastBackend


def _ids(values) -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values), dtype=minitorch.int64, backend=BACKEND)


def _model(vocab_size: int = 5, cell: str = "lstm", seed: int = 0, **kwargs) -> CharLanguageModel:
    minitorch.manual_seed(seed)
    kwargs = {"embedding_dim": 4, "hidden_size": 6, **kwargs}
    return CharLanguageModel(vocab_size, cell=cell, dtype=minitorch.float64, backend=BACKEND, **kwargs)


# ---------------------------------------------------------------------------------------
# NumPy references: the loss and the model, written out


def numpy_mean_nll(logits: np.ndarray, targets: np.ndarray) -> float:
    """−(1 / BT) Σ_{b,t} log softmax(logits[b, t])[targets[b, t]], with
    log softmax(z)_v = z_v − log Σ_u exp(z_u)."""
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return float(-np.mean(np.take_along_axis(log_probs, targets[..., None], -1)))


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def numpy_cell(cell: str, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of the tanh RNN, LSTM or GRU, in PyTorch's weight layouts (LSTM blocks
    i, f, g, o; GRU blocks r, z, n, the reset gate applied after W_hn h + b_hn).
    Returns (h', c') (c is only used by the LSTM)."""
    H = h.shape[-1]
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if cell == "rnn":
        return np.tanh(gi + gh), c
    if cell == "lstm":
        gates = gi + gh
        i, f = sigmoid(gates[:, :H]), sigmoid(gates[:, H : 2 * H])
        g, o = np.tanh(gates[:, 2 * H : 3 * H]), sigmoid(gates[:, 3 * H :])
        c = f * c + i * g
        return o * np.tanh(c), c
    r, z = sigmoid(gi[:, :H] + gh[:, :H]), sigmoid(gi[:, H : 2 * H] + gh[:, H : 2 * H])
    n = np.tanh(gi[:, 2 * H :] + r * gh[:, 2 * H :])
    return (1 - z) * n + z * h, c


def numpy_language_model(weights: dict, cell: str, ids: np.ndarray, num_layers: int):
    """The model in NumPy from its state dict: embedding rows → `num_layers` recurrent
    layers over t = 0 … T−1 from zero states → linear decoder.
    Returns (logits [B, T, V], h_n [num_layers, B, H])."""
    x = weights["embedding.weight"][ids]  # [B, T, E]: one row per character id
    B, T = ids.shape
    H = weights["rnn.weight_hh_l0"].shape[1]
    h_n = []
    for layer in range(num_layers):
        w = [weights[f"rnn.{kind}_l{layer}"] for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        h = c = np.zeros((B, H))
        outputs = []
        for t in range(T):
            h, c = numpy_cell(cell, x[:, t], h, c, *w)
            outputs.append(h)
        x = np.stack(outputs, axis=1)  # [B, T, H]: the next layer's input
        h_n.append(h)
    return x @ weights["fc.weight"].T + weights["fc.bias"], np.stack(h_n)


def hand_written_chunk(model: CharLanguageModel, optimizer, x, y, state=None, max_norm=None):
    """What train_chunk does, written out with library pieces and earlier tasks:
    zero_grad → forward from the detached state → mean cross-entropy over the B·T positions
    → backward → clip_grad_norm_ (unless max_norm is None) → step.
    Returns (the loss, the final state, the gradient norm before clipping or None)."""
    optimizer.zero_grad()
    logits, final = model(_ids(x), detach_state(state))
    B, T, V = logits.shape
    loss = cross_entropy(logits.contiguous().view(B * T, V), np.asarray(y).reshape(B * T))
    loss.backward()
    norm = None if max_norm is None else clip_grad_norm_(model.parameters(), max_norm).item()
    optimizer.step()
    return loss.item(), final, norm


# ---------------------------------------------------------------------------------------
# The dataset (library)


@pytest.mark.library
def test_char_vocab_encode_decode_round_trip() -> None:
    vocab = CharVocab.build("to be, or not to be\n")
    assert vocab.chars == tuple(sorted(set("to be, or not to be\n")))
    assert vocab.chars[0] == "\n" and len(vocab) == 9
    ids = vocab.encode("not to be")
    assert ids.dtype == np.int64 and ids.shape == (9,)
    assert vocab.decode(ids) == "not to be"
    assert [vocab.chars[i] for i in ids] == list("not to be")
    assert vocab.decode([]) == "" and len(vocab.encode("")) == 0
    with pytest.raises(KeyError, match="'z'"):
        vocab.encode("zebra")
    with pytest.raises(IndexError, match="out of range"):
        vocab.decode([9])
    with pytest.raises(ValueError, match="empty"):
        CharVocab.build("")


@pytest.mark.library
def test_tiny_shakespeare_vocabulary_and_split() -> None:
    corpus = load_tiny_shakespeare()
    text = (Path(minitorch.datasets.shakespeare.DATA_DIR) / "input.txt").read_text(encoding="utf-8")
    assert len(corpus.vocab) == 65 and list(corpus.vocab.chars) == sorted(set(text))
    assert len(corpus.train) == int(0.9 * len(text)) == 1_003_854 and len(corpus.val) == 111_540
    assert corpus.train.dtype == corpus.val.dtype == np.int64
    assert corpus.vocab.decode(corpus.train[:14]) == "First Citizen:"
    # the split is by position: validation is the contiguous end of the text
    n = len(corpus.train)
    assert corpus.vocab.decode(corpus.val[:200]) == text[n : n + 200]
    assert corpus.vocab.decode(corpus.val[-50:]) == text[-50:]


@pytest.mark.library
def test_split_corpus_fraction_and_errors() -> None:
    corpus = split_corpus("abcdefghij" * 10, val_fraction=0.25)
    assert (len(corpus.train), len(corpus.val)) == (75, 25)
    assert corpus.vocab.decode(np.concatenate([corpus.train, corpus.val])) == "abcdefghij" * 10
    assert len(split_corpus("abc", val_fraction=0.0).val) == 0
    with pytest.raises(ValueError, match="val_fraction"):
        split_corpus("abc", val_fraction=1.0)


@pytest.mark.library
def test_random_batch_windows_are_shifted_by_one() -> None:
    data = np.arange(1000, dtype=np.int64) * 7  # a value tells its position
    x, y = random_batch(data, batch_size=16, seq_len=10, rng=np.random.default_rng(0))
    assert x.shape == y.shape == (16, 10) and x.dtype == y.dtype == np.int64
    starts = x[:, 0] // 7
    np.testing.assert_array_equal(x, data[starts[:, None] + np.arange(10)])  # contiguous windows
    np.testing.assert_array_equal(y, data[starts[:, None] + np.arange(1, 11)])  # shifted by one
    assert starts.min() >= 0 and starts.max() <= 1000 - 11
    assert len(set(starts.tolist())) > 1  # random offsets
    # the generator decides: the same seed gives the same batch
    x2, _ = random_batch(data, 16, 10, np.random.default_rng(0))
    np.testing.assert_array_equal(x, x2)
    # the last possible window is reachable and no window runs off the end
    x, y = random_batch(np.arange(6), batch_size=50, seq_len=5, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(x, np.tile(np.arange(5), (50, 1)))
    with pytest.raises(ValueError, match="do not fit"):
        random_batch(np.arange(5), 1, 5, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------
# Task 5.5: sequence_loss and perplexity


@pytest.mark.task5_5
def test_sequence_loss_is_the_mean_nll_over_all_positions() -> None:
    rng = np.random.default_rng(0)
    logits, targets = rng.standard_normal((2, 3, 5)), rng.integers(0, 5, (2, 3))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean(np.take_along_axis(log_probs, targets[..., None], -1))
    for t in (targets, _ids(targets)):  # integer arrays and int64 tensors
        loss = sequence_loss(minitorch.tensor(logits, backend=BACKEND), t)
        assert loss.shape == ()
        np.testing.assert_allclose(loss.item(), expected, rtol=1e-12)
    # uniform predictions: NLL = ln V, perplexity = V
    uniform = sequence_loss(minitorch.zeros(4, 7, 65, backend=BACKEND), np.zeros((4, 7), dtype=np.int64))
    np.testing.assert_allclose(uniform.item(), math.log(65))
    np.testing.assert_allclose(perplexity(uniform.item()), 65.0)


@pytest.mark.task5_5
def test_sequence_loss_gradient_is_softmax_minus_one_hot() -> None:
    """∂NLL/∂logits[b, t, v] = (softmax(logits[b, t])_v − [v = y[b, t]]) / (B·T)."""
    rng = np.random.default_rng(1)
    logits, targets = rng.standard_normal((3, 4, 6)), rng.integers(0, 6, (3, 4))
    x = minitorch.tensor(logits, requires_grad=True, backend=BACKEND)
    loss = sequence_loss(x, _ids(targets))
    loss.backward()
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    one_hot = np.eye(6)[targets]
    np.testing.assert_allclose(loss.item(), numpy_mean_nll(logits, targets), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), (probs - one_hot) / 12, rtol=1e-10, atol=1e-14)


@pytest.mark.task5_5
def test_sequence_loss_gradient_check() -> None:
    rng = np.random.default_rng(2)
    targets = rng.integers(0, 4, (2, 3))
    grad_check(
        lambda z: sequence_loss(z, targets), minitorch.tensor(rng.standard_normal((2, 3, 4)), backend=BACKEND)
    )


@pytest.mark.task5_5
def test_sequence_loss_rejects_wrong_shapes() -> None:
    logits = minitorch.zeros(2, 3, 5, backend=BACKEND)
    with pytest.raises(minitorch.ShapeError, match=r"sequence_loss.*\(2, 3\)"):
        sequence_loss(logits, np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(minitorch.ShapeError, match="sequence_loss: logits must be 3-D"):
        sequence_loss(minitorch.zeros(6, 5, backend=BACKEND), np.zeros(6, dtype=np.int64))


@pytest.mark.task5_5
def test_perplexity_is_exp_of_the_mean_nll() -> None:
    assert perplexity(0.0) == 1.0
    assert perplexity(math.log(4.85)) == pytest.approx(4.85)
    assert perplexity(1.5) == pytest.approx(math.exp(1.5))
    assert perplexity(1e6) == math.inf


# ---------------------------------------------------------------------------------------
# The model (its forward pass is library code around the student's recurrent layers)


@pytest.mark.task5_5
@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_model_matches_a_numpy_twin(cell: str) -> None:
    """PyTorch's parameter names and shapes for Embedding → nn.{RNN,LSTM,GRU} → Linear; the
    logits and final state of the NumPy model with the same weights; and a carried state
    continues the sequence exactly."""
    model = _model(7, cell, num_layers=2)
    rows = {"rnn": 1, "lstm": 4, "gru": 3}[cell] * 6  # G·H
    shapes = {"embedding.weight": (7, 4), "fc.weight": (7, 6), "fc.bias": (7,)}
    for layer, inputs in ((0, 4), (1, 6)):  # layer 0 reads the embeddings (E = 4), layer 1 reads H = 6
        shapes.update(
            {
                f"rnn.weight_ih_l{layer}": (rows, inputs),
                f"rnn.weight_hh_l{layer}": (rows, 6),
                f"rnn.bias_ih_l{layer}": (rows,),
                f"rnn.bias_hh_l{layer}": (rows,),
            }
        )
    assert {k: v.shape for k, v in model.state_dict().items()} == shapes
    ids = np.random.default_rng(3).integers(0, 7, (2, 5))
    logits, state = model(_ids(ids))
    expected_logits, expected_h = numpy_language_model(model.state_dict(), cell, ids, num_layers=2)
    assert logits.shape == (2, 5, 7)
    np.testing.assert_allclose(logits.numpy(), expected_logits, rtol=1e-9, atol=1e-12)
    h = state[0] if cell == "lstm" else state
    np.testing.assert_allclose(h.numpy(), expected_h, rtol=1e-9, atol=1e-12)
    # two chunks with the state carried = one pass over the whole sequence
    first, state = model(_ids(ids[:, :2]))
    second, _ = model(_ids(ids[:, 2:]), detach_state(state))
    np.testing.assert_allclose(second.numpy(), logits.numpy()[:, 2:], rtol=1e-9, atol=1e-12)


@pytest.mark.task5_5
def test_model_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="cell must be one of"):
        CharLanguageModel(5, cell="transformer")
    with pytest.raises(minitorch.ShapeError, match=r"\[B, T\]"):
        _model()(_ids([1, 2, 3]))


# ---------------------------------------------------------------------------------------
# Task 5.5: train_step


@pytest.mark.task5_5
def test_train_step_matches_a_hand_written_step() -> None:
    """Two steps (Adam, clipping that bites) leave the same parameters as the hand-written
    loop on a twin model; the first loss is the NumPy NLL of the untrained model."""
    model, twin = _model(6), _model(6)  # same seed: same weights
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.01)
    twin_optimizer = minitorch.optim.Adam(twin.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    for step in range(2):
        x, y = rng.integers(0, 6, (3, 5)), rng.integers(0, 6, (3, 5))
        if step == 0:
            first_loss = numpy_mean_nll(numpy_language_model(model.state_dict(), "lstm", x, 1)[0], y)
        loss = train_step(model, optimizer, x, y, max_norm=0.1)
        expected, _, norm = hand_written_chunk(twin, twin_optimizer, x, y, max_norm=0.1)
        assert isinstance(loss, float)
        assert norm > 0.1  # clipping did something
        np.testing.assert_allclose(loss, expected, rtol=1e-10)
        if step == 0:
            np.testing.assert_allclose(loss, first_loss, rtol=1e-10)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, twin.state_dict()[name], rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.task5_5
def test_train_step_moves_against_the_gradient_of_the_loss() -> None:
    """With SGD, lr = 1 and no clipping, one step changes θ by −∇L(θ). For each parameter,
    in a random direction v, ⟨θ_before − θ_after, v⟩ against the central difference
    (L(θ + εv) − L(θ − εv)) / 2ε, where L is the NumPy NLL of the model's logits."""
    model, probe = _model(5, "gru"), _model(5, "gru")
    x, y = np.random.default_rng(7).integers(0, 5, (2, 6)), np.random.default_rng(8).integers(0, 5, (2, 6))
    before = model.state_dict()
    train_step(model, minitorch.optim.SGD(model.parameters(), lr=1.0), x, y, max_norm=None)
    after = model.state_dict()

    def loss_at(weights: dict) -> float:
        probe.load_state_dict(weights)
        with minitorch.no_grad():
            logits, _ = probe(_ids(x))
        return numpy_mean_nll(logits.numpy(), y)

    rng, epsilon = np.random.default_rng(9), 1e-6
    for name, value in before.items():
        v = rng.standard_normal(value.shape)
        up, down = (
            loss_at({**before, name: value + epsilon * v}),
            loss_at({**before, name: value - epsilon * v}),
        )
        expected = (up - down) / (2 * epsilon)
        got = float(np.sum((value - after[name]) * v))
        assert np.isclose(got, expected, rtol=1e-5, atol=1e-8), (
            f"{name}: step {got:.10g}, gradient {expected:.10g}"
        )


@pytest.mark.task5_5
def test_train_chunk_carries_the_state_detached() -> None:
    """Truncated BPTT: three chunks, each from the previous one's final state, detached.
    Same losses, parameters and carried state as the hand-written loop on a twin model; the
    given state gets no gradient (the backward pass stops at the chunk's first step)."""
    model, twin = _model(6), _model(6)
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.5)
    twin_optimizer = minitorch.optim.SGD(twin.parameters(), lr=0.5)
    rng = np.random.default_rng(5)
    state, twin_state = None, None
    for _ in range(3):
        x, y = rng.integers(0, 6, (2, 4)), rng.integers(0, 6, (2, 4))
        if state is not None:
            state = tuple(
                s.detach().requires_grad_() for s in state
            )  # would collect a gradient if not detached
        given = state
        loss, state = train_chunk(model, optimizer, x, y, state, max_norm=None)
        expected, twin_state, _ = hand_written_chunk(twin, twin_optimizer, x, y, twin_state)
        np.testing.assert_allclose(loss, expected, rtol=1e-10)
        assert isinstance(state, tuple) and len(state) == 2  # the LSTM's (h_n, c_n)
        for mine, theirs in zip(state, twin_state):
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-12)
        if given is not None:
            assert all(s.grad is None for s in given), "train_chunk must detach the state it is given"
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, twin.state_dict()[name], rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.library
def test_stream_chunks_continue_each_stream_and_wrap() -> None:
    data = np.arange(50)
    x0, y0 = stream_chunk(data, 3, 4, 0)  # streams of ⌊49 / 3⌋ = 16: starts 0, 16, 32; 4 chunks a pass
    np.testing.assert_array_equal(x0, [[0, 1, 2, 3], [16, 17, 18, 19], [32, 33, 34, 35]])
    np.testing.assert_array_equal(y0, x0 + 1)
    x1, _ = stream_chunk(data, 3, 4, 1)
    np.testing.assert_array_equal(x1[:, 0], x0[:, -1] + 1)  # row b goes on where it stopped
    np.testing.assert_array_equal(stream_chunk(data, 3, 4, 4)[0], x0)  # a new pass
    with pytest.raises(ValueError, match="do not fit"):
        stream_chunk(np.arange(5), 3, 4, 0)


@pytest.fixture(scope="module")
def trained():
    """A tiny LSTM trained with train_step for 40 steps on 'abcd' repeated."""
    vocab = CharVocab.build("abcd")
    data = vocab.encode("abcd" * 50)
    model = _model(len(vocab), hidden_size=12)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    losses = [train_step(model, optimizer, *random_batch(data, 4, 8, rng)) for _ in range(40)]
    return model, vocab, data, losses


@pytest.mark.task5_5
def test_train_step_learns_a_repeated_string(trained) -> None:
    model, _, _, losses = trained
    assert all(isinstance(v, float) for v in losses)
    assert losses[0] > 1.0  # about ln 4 ≈ 1.39 at the start
    assert np.mean(losses[-5:]) < 0.3 * losses[0]
    assert model.training


@pytest.mark.task5_5
def test_train_step_clips_the_gradient_norm() -> None:
    model = _model(5)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=1e-3)
    x = np.random.default_rng(5).integers(0, 5, (2, 6))
    train_step(model, optimizer, x, np.roll(x, -1, axis=1), max_norm=1e-3)
    norm = math.sqrt(sum(float(np.sum(p.value.grad.numpy() ** 2)) for p in model.parameters()))
    assert norm == pytest.approx(1e-3, rel=1e-4)  # the gradient the step used was clipped
    # without clipping the gradient keeps its size
    train_step(model, optimizer, x, np.roll(x, -1, axis=1), max_norm=None)
    assert math.sqrt(sum(float(np.sum(p.value.grad.numpy() ** 2)) for p in model.parameters())) > 1e-2


# ---------------------------------------------------------------------------------------
# Task 5.5: evaluate


class _Recorder(minitorch.Module):
    """Wraps a model and keeps every input batch it is called with."""

    def __init__(self, model: CharLanguageModel) -> None:
        super().__init__()
        self.model = model
        self.seen: list[np.ndarray] = []

    @property
    def backend(self):
        return self.model.backend

    def forward(self, x, state=None):
        self.seen.append(x.numpy())
        return self.model(x, state)


@pytest.mark.task5_5
@pytest.mark.parametrize("n, seq_len, batch_size", [(50, 8, 3), (49, 8, 6), (5, 8, 2)])
def test_evaluate_scores_every_position_of_the_split_once(n: int, seq_len: int, batch_size: int) -> None:
    model = _model(5)
    data = np.random.default_rng(6).integers(0, 5, n)
    recorder = _Recorder(model)
    mean_nll = evaluate(recorder, data, seq_len, batch_size)  # type: ignore[arg-type]
    # the inputs, window after window, are the split without its last character: every
    # one of the n − 1 targets is predicted exactly once
    inputs = np.concatenate([x.reshape(-1) for x in recorder.seen])
    np.testing.assert_array_equal(inputs, data[:-1])
    assert all(x.shape[0] <= batch_size and x.shape[1] <= seq_len for x in recorder.seen)
    # the value: the total NLL of the windows (each from a zero state) / (n − 1)
    total = 0.0
    for s in range(0, n - 1, seq_len):
        x, y = data[s : min(s + seq_len, n - 1)], data[s + 1 : min(s + seq_len, n - 1) + 1]
        logits, _ = model(_ids(x[None]))
        total += sequence_loss(logits, y[None]).item() * len(y)
    np.testing.assert_allclose(mean_nll, total / (n - 1), rtol=1e-10)
    assert model.training  # the mode is restored


@pytest.mark.task5_5
def test_evaluate_runs_without_gradients_in_eval_mode(trained) -> None:
    model, _, data, _ = trained
    model.dropout.p = 0.5  # dropout on would make evaluation random
    try:
        first = evaluate(model, data, 8, 4)
        assert evaluate(model, data, 8, 4) == first
    finally:
        model.dropout.p = 0.0
    assert first < 0.5 and model.training
    # no_grad: evaluation leaves the gradients of the last training step as they were
    grads = [None if p.value.grad is None else p.value.grad.numpy().copy() for p in model.parameters()]
    evaluate(model, data, 8, 4)
    for before, p in zip(grads, model.parameters()):
        after = p.value.grad
        assert (before is None and after is None) or np.array_equal(before, after.numpy())
    with pytest.raises(ValueError, match="evaluate: need at least 2"):
        evaluate(model, data[:1], 8, 4)


# ---------------------------------------------------------------------------------------
# Task 5.5: sample


@pytest.mark.task5_5
def test_sample_is_reproducible_and_uses_the_vocabulary() -> None:
    vocab = CharVocab.build("abcdefgh")
    model = _model(len(vocab), hidden_size=8)
    text = sample(model, vocab, "abc", 40, temperature=1.0, seed=3)
    assert isinstance(text, str) and len(text) == 40 and set(text) <= set(vocab.chars)
    assert sample(model, vocab, "abc", 40, temperature=1.0, seed=3) == text  # same seed, same text
    assert sample(model, vocab, "abc", 40, temperature=1.0, seed=4) != text  # (8^40 possible texts)
    assert len(set(text)) > 2  # an untrained model at temperature 1 is not stuck on one character
    assert sample(model, vocab, "abc", 0) == ""
    assert model.training  # the mode is restored


@pytest.mark.task5_5
def test_sample_continues_a_learned_pattern(trained) -> None:
    model, vocab, _, _ = trained
    assert sample(model, vocab, "ab", 10, temperature=0) == "cdabcdabcd"  # greedy: argmax
    assert sample(model, vocab, "abcdab", 10, temperature=0.5, seed=1) == "cdabcdabcd"


@pytest.mark.task5_5
@pytest.mark.parametrize("temperature", [0.5, 3.0])
def test_sample_draws_from_softmax_of_logits_over_temperature(temperature: float) -> None:
    """One step: the draw is rng.choice(V, p=softmax(logits / τ)) with default_rng(seed)."""
    vocab = CharVocab.build("abcdef")
    model = _model(len(vocab))
    state = model.state_dict()
    model.load_state_dict({**state, "fc.weight": 8 * state["fc.weight"]})  # peaked: τ matters
    logits, _ = model(_ids(vocab.encode("fab")[None]))
    z = logits.numpy()[0, -1] / temperature
    p = np.exp(z - z.max())
    for seed in range(20):
        expected = vocab.chars[np.random.default_rng(seed).choice(len(vocab), p=p / p.sum())]
        assert sample(model, vocab, "fab", 1, temperature=temperature, seed=seed) == expected, seed


@pytest.mark.task5_5
def test_sample_rejects_bad_arguments() -> None:
    vocab = CharVocab.build("abc")
    model = _model(3)
    with pytest.raises(ValueError, match="prompt"):
        sample(model, vocab, "", 5)
    with pytest.raises(ValueError, match="temperature"):
        sample(model, vocab, "a", 5, temperature=-1.0)
    with pytest.raises(KeyError, match="'z'"):
        sample(model, vocab, "z", 5)


# ---------------------------------------------------------------------------------------
# The example (library)


def _example_args(tmp_path: Path, steps: int, checkpoint: str, out: str | None = None) -> list[str]:
    text = tmp_path / "text.txt"
    if not text.exists():
        text.write_text("to be, or not to be: that is the question.\n" * 40)
    args = [
        "--steps",
        str(steps),
        "--eval-every",
        "3",
        "--cell",
        "lstm",
        "--embedding",
        "4",
        "--hidden",
        "8",
        "--seq-len",
        "8",
        "--batch-size",
        "4",
        "--eval-batch-size",
        "16",
        "--dropout",
        "0.3",
        "--lr",
        "0.01",
        "--dtype",
        "float64",
        "--text",
        str(text),
        "--prompt",
        "to ",
        "--sample-length",
        "30",
        "--seed",
        "1",
        "--checkpoint",
        str(tmp_path / checkpoint),
    ]
    return args + (["--out", out] if out else [])


@pytest.mark.library
@pytest.mark.parametrize("mode", [[], ["--tbptt"]], ids=["random-windows", "tbptt"])
def test_example_resumed_from_a_checkpoint_matches_an_uninterrupted_run(
    tmp_path: Path, mode: list[str]
) -> None:
    from minitorch.examples import char_lm

    whole = char_lm.main(_example_args(tmp_path, 8, "whole.npz") + mode)
    first = char_lm.main(_example_args(tmp_path, 3, "parts.npz") + mode)
    assert first.resumed_from == 0 and [e.step for e in first.evals] == [3]
    rest = char_lm.main(_example_args(tmp_path, 8, "parts.npz") + mode)
    assert rest.resumed_from == 3
    assert [e.step for e in whole.evals] == [e.step for e in rest.evals] == [3, 6, 8]
    assert rest.train_losses == whole.train_losses  # same batches, same dropout masks
    assert [e.val_loss for e in rest.evals] == [e.val_loss for e in whole.evals]
    for name, value in whole.model.state_dict().items():
        np.testing.assert_array_equal(rest.model.state_dict()[name], value, err_msg=name)
    assert rest.sample == whole.sample and len(whole.sample) == 30
    # a checkpoint of another model is refused
    with pytest.raises(SystemExit, match="another model"):
        char_lm.main(_example_args(tmp_path, 9, "parts.npz") + ["--hidden", "9"])


@pytest.mark.library
def test_example_writes_the_loss_curve_and_the_sample(tmp_path: Path) -> None:
    from minitorch.examples import char_lm

    out = tmp_path / "out"
    result = char_lm.main(_example_args(tmp_path, 4, "c.npz", str(out)))
    lines = (out / "loss_curve.csv").read_text().splitlines()
    assert lines[0] == "step,train_loss,val_loss" and len(lines) == 5
    step, train, val = lines[3].split(",")
    assert (int(step), float(train), float(val)) == (
        3,
        pytest.approx(result.train_losses[2], abs=1e-6),
        pytest.approx(result.evals[0].val_loss, abs=1e-6),
    )
    assert lines[2].endswith(",")  # no validation loss at step 2
    assert (out / "sample.txt").read_text() == "to " + result.sample
    assert result.final is not None and result.final.perplexity == pytest.approx(
        math.exp(result.final.val_loss)
    )


@pytest.mark.library
def test_example_refuses_a_prompt_outside_the_vocabulary(tmp_path: Path) -> None:
    from minitorch.examples import char_lm

    with pytest.raises(SystemExit, match=r"unknown characters: \['Z'\]"):
        char_lm.main(_example_args(tmp_path, 1, "c.npz") + ["--prompt", "Zo"])
    assert not (tmp_path / "c.npz").exists()
