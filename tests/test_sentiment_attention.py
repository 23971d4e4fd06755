"""The SST-2 attention-pooling classifier (`python -m minitorch.examples.sentiment_attention`):
a short training run lowers the loss and fits its subset above chance, padding changes no
prediction, and `--heatmap` prints the attention weights and draws them as a valid PNG."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import load_sst2
from minitorch.examples import sentiment_attention as sa
from minitorch.examples.png import heatmap_image
from minitorch.examples.sentiment import encode
from minitorch.text import Vocab

pytestmark = pytest.mark.library


def _read_png(path: Path) -> np.ndarray:
    """Decode an 8-bit RGB PNG without filters (what `write_png` writes), checking every CRC."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in chunk {kind!r}"
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, color) == (8, 2) and b"IEND" in chunks
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, 1 + 3 * width)
    assert np.all(rows[:, 0] == 0)
    return rows[:, 1:].reshape(height, width, 3)


def test_training_smoke_loss_decreases_and_beats_chance() -> None:
    """One epoch on 1,000 sentences (40 steps of a small model, float64, deterministic)."""
    result = sa.train(epochs=1, emb=16, hidden=16, batch=25, limit=1000, lr=1e-2, dtype="float64",
                      quiet=True, evaluate=False, measure_train_loss=True)
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
    result = sa.main(["--epochs", "1", "--limit", "100", "--emb", "8", "--hidden", "8", "--dtype", "float64",
                      "--heatmap", sentence, "--heatmap-png", str(png)])
    printed = capsys.readouterr().out
    assert "dev" in printed and "attention" in printed and "gorgeous" in printed and str(png.name) in printed
    tokens, weights, probs = sa.attention_weights(result.model, result.vocab, sentence)
    assert tokens == sentence.split() and weights.shape == (5,)
    np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(probs.sum(), 1.0, rtol=1e-12)
    for a in weights:  # the table prints each weight
        assert f"{a:.3f}" in printed
    image = _read_png(png)
    label = int(np.argmax(probs))
    shown = [t if t in result.vocab else f"{t} (unk)" for t in tokens]
    expected = heatmap_image(weights[None, :], ["attention"], shown,
                             f"attention - predicted {('negative', 'positive')[label]} (p = {probs[label]:.3f})",
                             vmin=0.0, vmax=float(weights.max()))
    np.testing.assert_array_equal(image, expected)


def test_empty_sentence_is_an_error() -> None:
    model = sa.AttentionClassifier(5, emb=4, hidden=4)
    vocab = Vocab.build([["a", "b"]], min_freq=1)
    with pytest.raises(ValueError, match="--heatmap: the sentence has no tokens"):
        sa.attention_weights(model, vocab, "   ")
