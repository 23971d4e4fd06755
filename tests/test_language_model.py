"""Task 5.5: the character language model (sequence_loss, perplexity, train_step, evaluate,
sample) against PyTorch and by hand; plus the library pieces around it: the Tiny Shakespeare
dataset (vocabulary, split, random windows) and the `char_lm` example (checkpoint resume,
loss curve)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import CharVocab, load_tiny_shakespeare, random_batch, split_corpus, stream_chunk
from minitorch.nn.language_model import (
    CharLanguageModel, detach_state, evaluate, perplexity, sample, sequence_loss, train_chunk, train_step,
)
from minitorch.testing import grad_check

BACKEND = minitorch.FastBackend


def _torch():
    return pytest.importorskip("torch")


def _ids(values) -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values), dtype=minitorch.int64, backend=BACKEND)


def _model(vocab_size: int = 5, cell: str = "lstm", seed: int = 0, **kwargs) -> CharLanguageModel:
    minitorch.manual_seed(seed)
    kwargs = {"embedding_dim": 4, "hidden_size": 6, **kwargs}
    return CharLanguageModel(vocab_size, cell=cell, dtype=minitorch.float64, backend=BACKEND, **kwargs)


def _torch_twin(torch, model: CharLanguageModel, cell: str = "lstm", num_layers: int = 1):
    """A PyTorch model with the same layout and parameter names, loaded with our values."""
    emb, hidden, vocab = model.embedding.embedding_dim, model.fc.in_features, model.vocab_size

    class Twin(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, emb)
            self.rnn = {"rnn": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](
                emb, hidden, num_layers=num_layers, batch_first=True)
            self.fc = torch.nn.Linear(hidden, vocab)

        def forward(self, x, state=None):
            h, state = self.rnn(self.embedding(x), state)
            return self.fc(h), state

    twin = Twin().double()
    twin.load_state_dict({k: torch.tensor(v) for k, v in model.state_dict().items()})
    return twin


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
def test_sequence_loss_matches_torch() -> None:
    torch = _torch()
    rng = np.random.default_rng(1)
    logits, targets = rng.standard_normal((3, 4, 6)), rng.integers(0, 6, (3, 4))
    x = minitorch.tensor(logits, requires_grad=True, backend=BACKEND)
    loss = sequence_loss(x, _ids(targets))
    loss.backward()
    tx = torch.tensor(logits, requires_grad=True)
    t_loss = torch.nn.functional.cross_entropy(tx.reshape(-1, 6), torch.tensor(targets).reshape(-1))
    t_loss.backward()
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.task5_5
def test_sequence_loss_gradient_check() -> None:
    rng = np.random.default_rng(2)
    targets = rng.integers(0, 4, (2, 3))
    grad_check(lambda z: sequence_loss(z, targets), minitorch.tensor(rng.standard_normal((2, 3, 4)), backend=BACKEND))


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
def test_model_matches_a_torch_twin(cell: str) -> None:
    """Same parameter names and shapes as PyTorch's Embedding → nn.{RNN,LSTM,GRU} → Linear;
    same logits and final state, and a carried state continues the sequence exactly."""
    torch = _torch()
    model = _model(7, cell, num_layers=2)
    twin = _torch_twin(torch, model, cell, num_layers=2)
    assert {k: v.shape for k, v in model.state_dict().items()} == {k: tuple(v.shape) for k, v in twin.state_dict().items()}
    ids = np.random.default_rng(3).integers(0, 7, (2, 5))
    logits, state = model(_ids(ids))
    t_logits, t_state = twin(torch.tensor(ids))
    assert logits.shape == (2, 5, 7)
    np.testing.assert_allclose(logits.numpy(), t_logits.detach().numpy(), rtol=1e-9, atol=1e-12)
    h, t_h = (state[0], t_state[0]) if cell == "lstm" else (state, t_state)
    np.testing.assert_allclose(h.numpy(), t_h.detach().numpy(), rtol=1e-9, atol=1e-12)
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
def test_train_step_matches_torch() -> None:
    """Two steps (Adam, clipping that bites) leave the same parameters as PyTorch's loop."""
    torch = _torch()
    model = _model(6)
    twin = _torch_twin(torch, model)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.01)
    t_optimizer = torch.optim.Adam(twin.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    for _ in range(2):
        x, y = rng.integers(0, 6, (3, 5)), rng.integers(0, 6, (3, 5))
        loss = train_step(model, optimizer, x, y, max_norm=0.1)
        t_optimizer.zero_grad()
        t_logits, _ = twin(torch.tensor(x))
        t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 6), torch.tensor(y).reshape(-1))
        t_loss.backward()
        t_norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.1)
        t_optimizer.step()
        assert isinstance(loss, float)
        assert t_norm.item() > 0.1  # clipping did something
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, twin.state_dict()[name].numpy(), rtol=1e-7, atol=1e-10, err_msg=name)


@pytest.mark.task5_5
def test_train_chunk_carries_the_state_detached_like_torch() -> None:
    """Truncated BPTT: three chunks, each from the previous one's final state, detached.
    Same losses, parameters and carried state as PyTorch's loop; the given state gets no
    gradient (the backward pass stops at the chunk's first step)."""
    torch = _torch()
    model = _model(6)
    twin = _torch_twin(torch, model)
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.5)
    t_optimizer = torch.optim.SGD(twin.parameters(), lr=0.5)
    rng = np.random.default_rng(5)
    state, t_state = None, None
    for _ in range(3):
        x, y = rng.integers(0, 6, (2, 4)), rng.integers(0, 6, (2, 4))
        if state is not None:
            state = tuple(s.detach().requires_grad_() for s in state)  # would collect a gradient if not detached
        given = state
        loss, state = train_chunk(model, optimizer, x, y, state, max_norm=None)
        t_optimizer.zero_grad()
        t_logits, t_state = twin(torch.tensor(x), None if t_state is None else tuple(s.detach() for s in t_state))
        t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 6), torch.tensor(y).reshape(-1))
        t_loss.backward()
        t_optimizer.step()
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
        for mine, theirs in zip(state, t_state):
            np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
        if given is not None:
            assert all(s.grad is None for s in given), "train_chunk must detach the state it is given"
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, twin.state_dict()[name].numpy(), rtol=1e-7, atol=1e-10, err_msg=name)


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
    args = ["--steps", str(steps), "--eval-every", "3", "--cell", "lstm", "--embedding", "4", "--hidden", "8",
            "--seq-len", "8", "--batch-size", "4", "--eval-batch-size", "16", "--dropout", "0.3", "--lr", "0.01",
            "--dtype", "float64", "--text", str(text), "--prompt", "to ", "--sample-length", "30", "--seed", "1",
            "--checkpoint", str(tmp_path / checkpoint)]
    return args + (["--out", out] if out else [])


@pytest.mark.library
@pytest.mark.parametrize("mode", [[], ["--tbptt"]], ids=["random-windows", "tbptt"])
def test_example_resumed_from_a_checkpoint_matches_an_uninterrupted_run(tmp_path: Path, mode: list[str]) -> None:
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
    assert (int(step), float(train), float(val)) == (3, pytest.approx(result.train_losses[2], abs=1e-6),
                                                     pytest.approx(result.evals[0].val_loss, abs=1e-6))
    assert lines[2].endswith(",")  # no validation loss at step 2
    assert (out / "sample.txt").read_text() == "to " + result.sample
    assert result.final is not None and result.final.perplexity == pytest.approx(math.exp(result.final.val_loss))


@pytest.mark.library
def test_example_refuses_a_prompt_outside_the_vocabulary(tmp_path: Path) -> None:
    from minitorch.examples import char_lm

    with pytest.raises(SystemExit, match=r"unknown characters: \['Z'\]"):
        char_lm.main(_example_args(tmp_path, 1, "c.npz") + ["--prompt", "Zo"])
    assert not (tmp_path / "c.npz").exists()
