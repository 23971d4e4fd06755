"""Task 4.5: Kim's text CNN against its definition written in NumPy (parameter names and
shapes as PyTorch's twin, logits) and central differences (gradients), a quick training
smoke test and saliency; plus the library pieces it rests on: SST-2, the tokenizer,
vocabulary and batching (`cat` is tested in test_joining; the bar chart in test_plots)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import load_sst2
from minitorch.examples import sentiment
from minitorch.nn import functional as F
from minitorch.nn.textcnn import TextCNN, saliency
from minitorch.testing import grad_check
from minitorch.text import Vocab, batches, pad_batch, tokenize

V, E, FILTERS, CLASSES = 30, 6, 4, 3


def _tokens(rng, n=4, length=9) -> np.ndarray:
    ids = rng.integers(1, V, (n, length))
    ids[0, 6:] = 0  # a padded sentence
    return ids


@pytest.mark.task4_5
def test_parameter_names_and_shapes_are_those_of_pytorch() -> None:
    """The names and shapes a PyTorch Kim CNN (embedding, convs, fc) has, so that its
    state_dict loads: Conv1d weights [F, E, width], Linear weight [classes, 3·F]."""
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    expected = {"embedding.weight": (V, E), "fc.weight": (CLASSES, 3 * FILTERS), "fc.bias": (CLASSES,)}
    for i, width in enumerate((3, 4, 5)):
        expected[f"convs.{i}.weight"] = (FILTERS, E, width)
        expected[f"convs.{i}.bias"] = (FILTERS,)
    assert {k: v.shape for k, v in model.state_dict().items()} == expected


def _random_state(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A state_dict of random weights (the <pad> row 0 of the embedding zero, as PyTorch's)."""
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    state = {k: rng.standard_normal(v.shape) * 0.5 for k, v in model.state_dict().items()}
    state["embedding.weight"][0] = 0.0
    return state


def _kim_numpy(state: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """The text CNN in evaluation mode (no dropout), by its definition: look up the token
    vectors, then for each width k: c[n, f, l] = b[f] + Σ_(e, j) W[f, e, j] x[n, l + j, e],
    keep max_l relu(c) per filter, concatenate the widths and apply the linear layer."""
    x = state["embedding.weight"][ids]  # [N, L, E]
    length = x.shape[1]
    features = []
    for i, k in enumerate((3, 4, 5)):
        w, b = state[f"convs.{i}.weight"], state[f"convs.{i}.bias"]
        windows = np.stack(
            [x[:, l : l + k, :] for l in range(length - k + 1)], axis=1
        )  # [N, L − k + 1, k, E]
        c = np.einsum("nlje,fej->nfl", windows, w) + b[None, :, None]
        features.append(np.maximum(c, 0).max(axis=2))
    h = np.concatenate(features, axis=1)  # [N, 3·F]
    return h @ state["fc.weight"].T + state["fc.bias"]


@pytest.mark.task4_5
def test_logits_match_the_definition() -> None:
    """Load a state_dict, then compare the logits (eval mode) with the NumPy definition."""
    rng = np.random.default_rng(0)
    state = _random_state(rng)
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    model.load_state_dict(state)
    model.eval()
    ids = _tokens(rng)
    logits = model(minitorch.tensor(ids, dtype=minitorch.int64))
    assert logits.shape == (4, CLASSES)
    np.testing.assert_allclose(logits.numpy(), _kim_numpy(state, ids), rtol=1e-10, atol=1e-12)


@pytest.mark.task4_5
def test_gradients_of_the_loss_by_central_differences() -> None:
    """∂loss/∂embedded (what saliency uses) and ∂loss/∂(every conv and linear parameter),
    against central differences of the loss, in evaluation mode."""
    rng = np.random.default_rng(0)
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    model.load_state_dict(_random_state(rng))
    model.eval()
    ids, target = (
        _tokens(rng, n=2, length=6),
        minitorch.tensor(rng.integers(0, CLASSES, 2), dtype=minitorch.int64),
    )
    embedded = model.embedding(minitorch.tensor(ids, dtype=minitorch.int64)).detach()
    params = dict(model.named_parameters())
    names = [name for name in params if name != "embedding.weight"]  # the lookup is detached above

    def loss(embedded: minitorch.Tensor, *values: minitorch.Tensor) -> minitorch.Tensor:
        """The loss as a function of the embedded sentences and the parameters' values."""
        for name, value in zip(names, values):
            params[name].update(value)
        return F.cross_entropy(model.forward_embedded(embedded), target)

    grad_check(loss, embedded, *[params[name].value for name in names])


@pytest.mark.task4_5
def test_dropout_only_in_training_and_short_input_error() -> None:
    minitorch.manual_seed(0)
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS, dropout=0.5)
    tokens = minitorch.tensor(_tokens(np.random.default_rng(1)), dtype=minitorch.int64)
    model.eval()
    a, b = model(tokens).numpy(), model(tokens).numpy()
    np.testing.assert_array_equal(a, b)
    model.train()
    assert not np.allclose(model(tokens).numpy(), model(tokens).numpy())
    with pytest.raises(minitorch.ShapeError, match="at least the widest filter"):
        model(minitorch.tensor([[1, 2, 3]], dtype=minitorch.int64))


@pytest.mark.task4_5
def test_training_smoke_loss_decreases() -> None:
    """One epoch on 1,000 sentences (40 steps, a small model): the training loss goes down
    (from ln 2 ≈ 0.69 to about 0.65 with these settings; it is deterministic)."""
    result = sentiment.train(
        epochs=1,
        emb=32,
        batch=25,
        limit=1000,
        filters=16,
        lr=1e-2,
        dtype="float64",
        quiet=True,
        evaluate=False,
        measure_train_loss=True,
    )
    assert len(result.epochs) == 1 and np.isfinite(result.epochs[0].loss)
    assert result.final_train_loss < result.initial_train_loss - 0.02


@pytest.mark.task4_5
def test_saliency_cli_prints_and_writes_png(tmp_path: Path, capsys) -> None:
    png = tmp_path / "saliency.png"
    sentiment.main(
        [
            "--epochs",
            "1",
            "--limit",
            "100",
            "--emb",
            "8",
            "--filters",
            "8",
            "--dtype",
            "float64",
            "--saliency",
            "a gorgeous , witty movie",
            "--saliency-png",
            str(png),
        ]
    )
    printed = capsys.readouterr().out
    assert "dev" in printed and "saliency" in printed and "gorgeous" in printed
    if importlib.util.find_spec("matplotlib") is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.name in printed
    else:  # matplotlib is optional (a starter repository does not install it): the run says so
        assert "bar_chart needs matplotlib" in printed and not png.exists()


@pytest.mark.task4_5
def test_saliency_is_the_gradient_norm_per_token() -> None:
    minitorch.manual_seed(3)
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    model.train()
    tokens = minitorch.tensor([[3, 7, 7, 2, 0, 0]], dtype=minitorch.int64)
    importance, probs = saliency(model, tokens, target=1)
    assert model.training  # the mode is restored
    assert importance.shape == (6,) and probs.shape == (CLASSES,)
    np.testing.assert_allclose(probs.sum(), 1.0)
    # by hand: gradient of the loss with respect to the embedded sentence
    model.eval()
    embedded = model.embedding(tokens).detach().requires_grad_(True)
    F.cross_entropy(model.forward_embedded(embedded), minitorch.tensor([1], dtype=minitorch.int64)).backward()
    assert embedded.grad is not None
    np.testing.assert_allclose(importance, np.linalg.norm(embedded.grad.numpy()[0], axis=1), rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Library pieces: SST-2, text utilities


@pytest.mark.library
def test_sst2_ships_with_the_package() -> None:
    sizes = {"train": 6920, "dev": 872, "test": 1821}
    for split, size in sizes.items():
        data = load_sst2(split)
        assert len(data) == size and set(data.labels) == {0, 1}
        assert all(s and "\t" not in s for s in data.sentences)
    with pytest.raises(ValueError, match="split must be one of"):
        load_sst2("validation")


@pytest.mark.library
def test_tokenize_and_vocabulary() -> None:
    assert tokenize("A gem -- isn't it?") == ["a", "gem", "-", "-", "isn't", "it", "?"]
    sentences = [tokenize("b a b c"), tokenize("c b d")]
    vocab = Vocab.build(sentences)
    assert vocab.itos == ["<pad>", "<unk>", "b", "c", "a", "d"]  # by count, then alphabetically
    assert vocab.encode(["c", "zebra"]) == [3, 1] and vocab.decode([2, 0]) == ["b", "<pad>"]
    assert Vocab.build(sentences, min_freq=2).itos == ["<pad>", "<unk>", "b", "c"]
    assert Vocab.build(sentences, max_size=3).itos == ["<pad>", "<unk>", "b"]
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(sentences, min_freq=0)


@pytest.mark.library
def test_padding_and_batches() -> None:
    assert pad_batch([[4, 5], [6]], min_len=3).tolist() == [[4, 5, 0], [6, 0, 0]]
    assert pad_batch([[1, 2, 3, 4, 5, 6]], min_len=3, max_len=4).tolist() == [[1, 2, 3, 4]]
    assert pad_batch([[1, 2]], min_len=5, max_len=4).shape == (1, 5)  # min_len wins: filters need it
    seqs = [[i + 1] * (i % 4 + 1) for i in range(10)]
    labels = list(range(10))
    got = list(batches(seqs, labels, 4, rng=np.random.default_rng(0), min_len=2))
    assert [ids.shape[0] for ids, _ in got] == [4, 4, 2]
    seen = np.concatenate([y for _, y in got])
    assert sorted(seen.tolist()) == labels
    for ids, y in got:
        assert ids.dtype == np.int64 and ids.shape[1] >= 2
        for row, label in zip(ids, y):
            assert row[0] == label + 1  # rows stay paired with their labels
    again = list(batches(seqs, labels, 4, rng=np.random.default_rng(0), min_len=2))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(got, again))
