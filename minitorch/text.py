"""Text to tensors: a tokenizer, a vocabulary and padded batches.

    tokens = tokenize("It's a gem!")          # ["it's", "a", "gem", "!"]
    vocab = Vocab.build(tokenized_sentences, min_freq=1, max_size=20000)
    ids = vocab.encode(tokens)                # unknown words → vocab.unk_index (1)
    batch = pad_batch([ids, …], min_len=5)    # int64 array [N, L], padded with 0

Conventions (shared by the text models): id 0 is "<pad>" and id 1 is "<unk>"; the other
words follow by decreasing frequency (ties alphabetically), so a vocabulary is the same
on every run.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np

PAD, UNK = "<pad>", "<unk>"

# A word is a run of letters/digits/apostrophes/underscores; every other non-space
# character (punctuation) is a token of its own.
_TOKEN = re.compile(r"[\w']+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lower-case `text` and split it into words and punctuation marks.

    >>> tokenize("A gem -- isn't it?")
    ['a', 'gem', '-', '-', "isn't", 'it', '?']
    """
    return _TOKEN.findall(text.lower())


@dataclass
class Vocab:
    """A bijection between tokens and ids 0 … len − 1 (0 = <pad>, 1 = <unk>)."""

    itos: list[str]
    stoi: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.itos[:2] != [PAD, UNK]:
            raise ValueError(f"Vocab: the first two tokens must be {PAD!r} and {UNK!r}, got {self.itos[:2]}")
        if not self.stoi:
            self.stoi = {t: i for i, t in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("Vocab: tokens must be unique")

    pad_index = 0
    unk_index = 1

    @classmethod
    def build(
        cls, sentences: Iterable[Sequence[str]], min_freq: int = 1, max_size: Optional[int] = None
    ) -> "Vocab":
        """The vocabulary of tokenized `sentences`: the tokens seen at least `min_freq`
        times, most frequent first, at most `max_size` ids in all (the 2 specials included)."""
        if min_freq < 1:
            raise ValueError(f"Vocab.build: min_freq must be ≥ 1, got {min_freq}")
        if max_size is not None and max_size < 2:
            raise ValueError(f"Vocab.build: max_size must be ≥ 2 (room for {PAD} and {UNK}), got {max_size}")
        counts = Counter(tok for sentence in sentences for tok in sentence)
        words = sorted(
            (t for t, c in counts.items() if c >= min_freq and t not in (PAD, UNK)),
            key=lambda t: (-counts[t], t),
        )
        if max_size is not None:
            words = words[: max_size - 2]
        return cls([PAD, UNK] + words)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of `tokens`; tokens not in the vocabulary become <unk>."""
        unk = self.unk_index
        return [self.stoi.get(t, unk) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of `ids` (padding included)."""
        return [self.itos[int(i)] for i in ids]


def pad_batch(
    sequences: Sequence[Sequence[int]],
    pad_index: int = 0,
    min_len: int = 1,
    max_len: Optional[int] = None,
) -> np.ndarray:
    """Stack id sequences into an int64 array [N, L], padding on the right with `pad_index`.

    L is the longest sequence, but at least `min_len` (e.g. the widest convolution filter)
    and, if given, at most `max_len` (longer sequences are cut).
    """
    longest = max((len(s) for s in sequences), default=0)
    length = max(longest, min_len)
    if max_len is not None:
        length = max(min(length, max_len), min_len)
    out = np.full((len(sequences), length), pad_index, dtype=np.int64)
    for i, s in enumerate(sequences):
        s = list(s)[:length]
        out[i, : len(s)] = s
    return out


def batches(
    encoded: Sequence[Sequence[int]],
    labels: Sequence[int],
    batch_size: int,
    shuffle: bool = True,
    rng: Optional[np.random.Generator] = None,
    pad_index: int = 0,
    min_len: int = 1,
    max_len: Optional[int] = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Mini-batches (ids [B, L] int64, labels [B] int64), each padded to its own longest
    sentence (see `pad_batch`); the order is shuffled with `rng` when `shuffle`."""
    if batch_size < 1:
        raise ValueError(f"batches: batch_size must be ≥ 1, got {batch_size}")
    if len(encoded) != len(labels):
        raise ValueError(f"batches: {len(encoded)} sequences but {len(labels)} labels")
    order = np.arange(len(encoded))
    if shuffle:
        (rng if rng is not None else np.random.default_rng()).shuffle(order)
    y = np.asarray(labels, dtype=np.int64)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        yield pad_batch([encoded[i] for i in idx], pad_index, min_len, max_len), y[idx]
