"""The SST-2 attention-pooling classifier (`python -m minitorch.examples.sentiment_attention`):
a short training run lowers the loss and fits its subset above chance, padding changes no
prediction, and `--heatmap` prints the attention weights and draws them as a heatmap (the
heatmap itself is tested in test_plots)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import load_sst2
from minitorch.examples import sentiment_attention as sa
from minitorch.examples.sentiment import encode
from minitorch.text import Vocab

pytestmark = pytest.mark.library


def test_training_smoke_loss_decreases_and_beats_chance() -> None:
    """One epoch on 1,000 sentences (40 steps of a small model, float64, deterministic)."""
    result = sa.train(
        epochs=1,
        emb=16,
        hidden=16,
        batch=25,
        limit=1000,
        lr=1e-2,
        dtype="float64",
        quiet=True,
        evaluate=False,
        measure_train_loss=True,
    )
    assert len(result.epochs) == 1 and np.isfinite(result.epochs[0].loss)
    assert result.final_train_loss < result.initial_train_loss - 0.03  # 0.693 → 0.642
    subset = load_sst2("train").subset(1000)
    fitted = sa.accuracy(result.model, encode(subset, result.vocab), subset.labels)
    majority = max(np.mean(subset.labels), 1 - np.mean(subset.labels))
    assert fitted > majority + 0.1, (fitted, majority)  # 0.78 against 0.52


def test_padding_changes_no_prediction() -> None:
    """A sentence alone and in a batch padded to a longer one: the same logits, and its
    attention weights are 0 at the padding and sum to 1."""
    minitorch.manual_seed(0)
    model = sa.AttentionClassifier(20, emb=6, hidden=5, dtype=np.float64)
    model.eval()
    alone = minitorch.tensor([[3, 7, 2]], dtype=minitorch.int64)
    batch = minitorch.tensor([[3, 7, 2, 0, 0, 0], [4, 5, 6, 7, 8, 9]], dtype=minitorch.int64)
    logits1, w1 = model.attend(alone)
    logits2, w2 = model.attend(batch)
    np.testing.assert_allclose(logits2.numpy()[0], logits1.numpy()[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w2.numpy()[0, :3], w1.numpy()[0], rtol=1e-12, atol=1e-14)
    assert np.all(w2.numpy()[0, 3:] == 0.0)
    np.testing.assert_allclose(w2.numpy().sum(-1), 1.0, rtol=1e-12)


def test_heatmap_cli_prints_the_weights_and_writes_the_png(tmp_path: Path, capsys) -> None:
    png = tmp_path / "attention.png"
    sentence = "a gorgeous , witty movie"
    result = sa.main(
        [
            "--epochs",
            "1",
            "--limit",
            "100",
            "--emb",
            "8",
            "--hidden",
            "8",
            "--dtype",
            "float64",
            "--heatmap",
            sentence,
            "--heatmap-png",
            str(png),
        ]
    )
    printed = capsys.readouterr().out
    assert "dev" in printed and "attention" in printed and "gorgeous" in printed
    tokens, weights, probs = sa.attention_weights(result.model, result.vocab, sentence)
    assert tokens == sentence.split() and weights.shape == (5,)
    np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(probs.sum(), 1.0, rtol=1e-12)
    for a in weights:  # the table prints each weight
        assert f"{a:.3f}" in printed
    if importlib.util.find_spec("matplotlib") is None:  # matplotlib is optional: the run says so
        assert "heatmap needs matplotlib" in printed and not png.exists()
        return
    from matplotlib.image import imread

    from minitorch.examples.plots import heatmap

    label = int(np.argmax(probs))
    shown = [t if t in result.vocab else f"{t} (unk)" for t in tokens]
    expected = tmp_path / "expected.png"
    heatmap(
        expected,
        weights[None, :],
        ["attention"],
        shown,
        f"attention - predicted {('negative', 'positive')[label]} (p = {probs[label]:.3f})",
        vmin=0.0,
        vmax=float(weights.max()),
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.name in printed
    np.testing.assert_array_equal(
        imread(png), imread(expected)
    )  # the one-row heatmap of the weights, pixel for pixel


def test_empty_sentence_is_an_error() -> None:
    model = sa.AttentionClassifier(5, emb=4, hidden=4)
    vocab = Vocab.build([["a", "b"]], min_freq=1)
    with pytest.raises(ValueError, match="--heatmap: the sentence has no tokens"):
        sa.attention_weights(model, vocab, "   ")
