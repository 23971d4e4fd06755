"""SST-2: sentence-level binary sentiment (Socher et al., 2013), shipped with the package.

    >>> train = load_sst2("train")
    >>> len(train), train.sentences[0][:40], train.labels[0]
    (6920, 'a stirring , funny and finally transport', 1)

Splits: "train" (6,920 sentences), "dev" (872) and "test" (1,821) — the split of Kim (2014).
Labels: 1 = positive, 0 = negative. Sentences are already lower-cased and tokenised with
spaces. Provenance and terms: `data/sst2/PROVENANCE.md`. Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

DATA_DIR = Path(__file__).parent / "data" / "sst2"
SPLITS = ("train", "dev", "test")
CLASSES = ("negative", "positive")


@dataclass
class TextSplit:
    """One split of a labelled text dataset: parallel lists of sentences and integer labels."""

    name: str
    sentences: list[str]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(zip(self.sentences, self.labels))

    def subset(self, limit: Optional[int]) -> "TextSplit":
        """The first `limit` examples (all when None)."""
        if limit is None:
            return self
        return TextSplit(self.name, self.sentences[:limit], self.labels[:limit])


def load_sst2(split: str = "train") -> TextSplit:
    """Read one split of SST-2 from the package data."""
    if split not in SPLITS:
        raise ValueError(f"load_sst2: split must be one of {SPLITS}, got {split!r}")
    path = DATA_DIR / f"{split}.tsv"
    sentences: list[str] = []
    labels: list[int] = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            text, sep, label = line.rpartition("\t")
            if not sep or label not in ("0", "1"):
                raise ValueError(f"{path}:{number}: expected 'sentence<TAB>0|1', got {line[:60]!r}")
            sentences.append(text)
            labels.append(int(label))
    return TextSplit(split, sentences, labels)
