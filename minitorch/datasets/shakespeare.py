"""Tiny Shakespeare for character-level language modelling, shipped with the package.

    >>> corpus = load_tiny_shakespeare()
    >>> len(corpus.vocab), len(corpus.train), len(corpus.val)
    (65, 1003854, 111540)
    >>> corpus.vocab.decode(corpus.train[:14])
    'First Citizen:'
    >>> x, y = random_batch(corpus.train, batch_size=32, seq_len=64, rng=np.random.default_rng(0))
    >>> x.shape, y.shape, x.dtype                       # y[b, t] = x[b, t + 1]
    ((32, 64), (32, 64), dtype('int64'))

A character language model reads characters c_1 … c_t and predicts c_{t+1}. The data is
one long sequence of character ids; a training example is a window of it,

    x = ids[s : s + T],     y = ids[s + 1 : s + T + 1]      (the same window shifted by one)

so every position of the window is a prediction: T targets per window. Windows start at
random offsets s (a fresh draw for every batch), so a model never sees the same batch twice.

The vocabulary is the sorted set of the characters of the whole text (65 for Tiny
Shakespeare), so the ids do not depend on the split. The split is by position: the first
90 % of the characters train, the last 10 % validate (the split of char-rnn and nanoGPT),
so validation text is a contiguous stretch the model never trained on.
Provenance and terms: `data/tinyshakespeare/PROVENANCE.md`. Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

import numpy as np

__all__ = [
    "CharVocab",
    "CharCorpus",
    "load_tiny_shakespeare",
    "split_corpus",
    "random_batch",
    "stream_chunk",
    "stream_chunks_per_pass",
]

DATA_DIR = Path(__file__).parent / "data" / "tinyshakespeare"


@dataclass(frozen=True)
class CharVocab:
    """A character vocabulary: id i ↔ `chars[i]`, the characters in sorted order."""

    chars: tuple[str, ...]

    def __post_init__(self) -> None:
        if any(len(c) != 1 for c in self.chars) or len(set(self.chars)) != len(self.chars):
            raise ValueError("CharVocab: chars must be distinct single characters")
        object.__setattr__(self, "_index", {c: i for i, c in enumerate(self.chars)})

    @classmethod
    def build(cls, text: str) -> "CharVocab":
        """The vocabulary of `text`: its distinct characters, sorted."""
        if not text:
            raise ValueError("CharVocab.build: the text is empty")
        return cls(tuple(sorted(set(text))))

    def __len__(self) -> int:
        return len(self.chars)

    def __contains__(self, ch: object) -> bool:
        return ch in self._index  # type: ignore[attr-defined]

    @property
    def stoi(self) -> dict[str, int]:
        """Character → id."""
        return dict(self._index)  # type: ignore[attr-defined]

    def encode(self, text: str) -> np.ndarray:
        """The ids of the characters of `text`: int64 array [len(text)]."""
        index: dict[str, int] = self._index  # type: ignore[attr-defined]
        try:
            return np.fromiter((index[c] for c in text), dtype=np.int64, count=len(text))
        except KeyError as error:
            raise KeyError(
                f"CharVocab.encode: character {error.args[0]!r} is not in the vocabulary"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text of a sequence of ids (any iterable of ints, e.g. an int64 array [T])."""
        chars, n = self.chars, len(self.chars)
        out = []
        for i in np.asarray(ids, dtype=np.int64).reshape(-1):
            if not 0 <= i < n:
                raise IndexError(f"CharVocab.decode: id {int(i)} is out of range for {n} characters")
            out.append(chars[i])
        return "".join(out)


@dataclass
class CharCorpus:
    """A text encoded as character ids and split by position: `train` then `val`
    (int64 arrays, consecutive in the text)."""

    vocab: CharVocab
    train: np.ndarray
    val: np.ndarray


def split_corpus(text: str, val_fraction: float = 0.1, vocab: Optional[CharVocab] = None) -> CharCorpus:
    """Encode `text` and split it: the first ⌊(1 − val_fraction)·N⌋ characters train, the rest
    validate. The vocabulary (by default) is built from the whole text."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"split_corpus: val_fraction must be in [0, 1), got {val_fraction}")
    vocab = vocab or CharVocab.build(text)
    ids = vocab.encode(text)
    n_train = int(len(ids) * (1.0 - val_fraction))
    return CharCorpus(vocab, ids[:n_train], ids[n_train:])


def load_tiny_shakespeare(val_fraction: float = 0.1, path: Union[str, Path, None] = None) -> CharCorpus:
    """Tiny Shakespeare (1,115,394 characters, 65 distinct), split 90 / 10 by position.

    `path` reads another plain-text file the same way (for experiments on your own text).
    """
    path = Path(path) if path is not None else DATA_DIR / "input.txt"
    return split_corpus(path.read_text(encoding="utf-8"), val_fraction)


def random_batch(
    data: np.ndarray, batch_size: int, seq_len: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A batch of `batch_size` windows of `seq_len` characters at random offsets of `data`.

    Returns (x, y), int64 arrays [batch_size, seq_len] with y[b, t] = x[b, t + 1]: window b
    starts at s_b ~ U{0, …, N − seq_len − 1} (drawn from `rng`), x[b] = data[s_b : s_b + T],
    y[b] = data[s_b + 1 : s_b + T + 1].
    """
    data = np.asarray(data)
    if data.ndim != 1:
        raise ValueError(f"random_batch: data must be a 1-D array of ids, got shape {data.shape}")
    if batch_size <= 0 or seq_len <= 0:
        raise ValueError(
            f"random_batch: batch_size and seq_len must be positive, got {batch_size}, {seq_len}"
        )
    if len(data) < seq_len + 1:
        raise ValueError(
            f"random_batch: windows of {seq_len} + 1 characters do not fit in {len(data)} characters"
        )
    starts = rng.integers(0, len(data) - seq_len, size=batch_size)
    offsets = starts[:, None] + np.arange(seq_len + 1)[None, :]  # [B, T + 1]
    window = data[offsets].astype(np.int64, copy=False)
    return np.ascontiguousarray(window[:, :-1]), np.ascontiguousarray(window[:, 1:])


def stream_chunk(
    data: np.ndarray, batch_size: int, seq_len: int, index: int
) -> tuple[np.ndarray, np.ndarray]:
    """Chunk number `index` of `batch_size` parallel streams (for truncated BPTT).

    `data` (N ids) is cut into B streams of L = ⌊(N − 1) / B⌋ consecutive characters,
    stream b starting at b·L. Chunk k takes the next T = seq_len characters of every stream:
    x[b] = data[b·L + kT : b·L + kT + T] and y[b] = x[b] shifted by one, so row b of chunk
    k + 1 continues row b of chunk k — the state after chunk k is the right context for it.
    After the last whole chunk of a pass (⌊L / T⌋ chunks) the streams start again (k wraps;
    `index % chunks == 0` marks a new pass, where the state should start from zeros).
    """
    data = np.asarray(data)
    if data.ndim != 1:
        raise ValueError(f"stream_chunk: data must be a 1-D array of ids, got shape {data.shape}")
    if batch_size <= 0 or seq_len <= 0:
        raise ValueError(
            f"stream_chunk: batch_size and seq_len must be positive, got {batch_size}, {seq_len}"
        )
    length = (len(data) - 1) // batch_size
    chunks = length // seq_len
    if chunks == 0:
        raise ValueError(
            f"stream_chunk: {batch_size} streams of {seq_len} + 1 characters do not fit in {len(data)} characters"
        )
    k = index % chunks
    offsets = (np.arange(batch_size) * length + k * seq_len)[:, None] + np.arange(seq_len + 1)[None, :]
    window = data[offsets].astype(np.int64, copy=False)
    return np.ascontiguousarray(window[:, :-1]), np.ascontiguousarray(window[:, 1:])


def stream_chunks_per_pass(data: np.ndarray, batch_size: int, seq_len: int) -> int:
    """How many chunks `stream_chunk` takes before the streams start again."""
    return ((len(data) - 1) // batch_size) // seq_len
