"""The synthetic date-translation task (library): determinism, disjoint splits, every target
correct (checked with `datetime.strptime`, independently of the generator), vocabularies,
encode/decode round trips and padded batches."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from minitorch.datasets import (
    DATE_FORMATS,
    Seq2SeqVocab,
    TranslationSplit,
    date_translation,
    encode_batch,
    seq2seq_batches,
)
from minitorch.datasets.translation import EOS, PAD, SOS, format_date

pytestmark = pytest.mark.library

#: How Python's own parser reads each format (its %y rule: 69–99 → 19xx, 00–68 → 20xx).
STRPTIME = {
    "long": "%B %d, %Y",
    "short": "%b %d, %Y",
    "day_first": "%d %B %Y",
    "year_first": "%Y %b %d",
    "us_numeric": "%m/%d/%y",
    "eu_numeric": "%d.%m.%Y",
}


def _parse(source: str) -> datetime.date:
    """The one date that `source` denotes under any of the formats (it must parse under exactly one)."""
    dates = set()
    for pattern in STRPTIME.values():
        try:
            dates.add(datetime.datetime.strptime(source, pattern).date())
        except ValueError:
            pass
    assert len(dates) == 1, (source, dates)
    return dates.pop()


@pytest.fixture(scope="module")
def data():
    return date_translation(n_train=3000, n_val=300, n_test=300, seed=1)


def test_every_target_is_the_source_date_in_iso_format(data) -> None:
    assert set(STRPTIME) == set(DATE_FORMATS)
    for split in (data.train, data.val, data.test):
        for source, target in zip(split.sources, split.targets):
            assert target == _parse(source).isoformat()
            assert len(target) == 10 and target[4] == target[7] == "-"
            assert "1969-01-01" <= target <= "2068-12-31"


def test_the_formats_and_their_examples() -> None:
    d = datetime.date(1998, 3, 3)
    for fmt, example in DATE_FORMATS.items():
        assert format_date(d, fmt) == example
        assert _parse(example) == d
    assert format_date(datetime.date(2005, 12, 25), "us_numeric") == "12/25/05"
    assert format_date(datetime.date(2005, 12, 25), "year_first") == "2005 dec 25"
    assert format_date(datetime.date(1969, 9, 30), "long") == "september 30, 1969"
    with pytest.raises(ValueError, match="format_date.*'iso'"):
        format_date(d, "iso")


def test_deterministic_from_the_seed(data) -> None:
    again = date_translation(n_train=3000, n_val=300, n_test=300, seed=1)
    assert again == data
    other = date_translation(n_train=3000, n_val=300, n_test=300, seed=2)
    assert other.train.sources != data.train.sources


def test_splits_do_not_overlap(data) -> None:
    assert (len(data.train), len(data.val), len(data.test)) == (3000, 300, 300)
    dates = [set(split.targets) for split in (data.train, data.val, data.test)]
    assert [len(d) for d in dates] == [3000, 300, 300]  # every date once within a split, too
    assert not (dates[0] & dates[1]) and not (dates[0] & dates[2]) and not (dates[1] & dates[2])
    sources = [set(split.sources) for split in (data.train, data.val, data.test)]
    assert not (sources[0] & sources[1]) and not (sources[0] & sources[2]) and not (sources[1] & sources[2])


def test_all_formats_occur_and_a_subset_can_be_chosen(data) -> None:
    counts = {fmt: 0 for fmt in DATE_FORMATS}
    for source, target in zip(data.train.sources, data.train.targets):
        d = datetime.date.fromisoformat(target)
        matches = [fmt for fmt in DATE_FORMATS if format_date(d, fmt) == source]
        assert matches and (len(matches) == 1 or d.month == 5)  # "may" is its own short form
        counts[matches[-1]] += 1
    assert min(counts.values()) > 3000 / len(DATE_FORMATS) / 2  # drawn uniformly
    only = date_translation(50, 5, 5, seed=0, formats=["us_numeric"])
    assert all("/" in s for s in only.train.sources + only.test.sources)
    with pytest.raises(ValueError, match="date_translation.*'iso'"):
        date_translation(10, 1, 1, formats=["iso"])
    with pytest.raises(ValueError, match="date_translation.*36525"):
        date_translation(36525, 1, 0)
    with pytest.raises(ValueError, match="date_translation"):
        date_translation(-1, 1, 1)


def test_vocabularies_cover_the_task_and_round_trip(data) -> None:
    for vocab in (data.src_vocab, data.tgt_vocab):
        assert vocab.tokens[:3] == (PAD, SOS, EOS)
        assert (vocab.pad_index, vocab.sos_index, vocab.eos_index) == (0, 1, 2)
    assert set(data.tgt_vocab.tokens[3:]) == set("0123456789-")
    assert set("".join(data.train.sources)) <= set(data.src_vocab.tokens[3:])
    for source, target in zip(data.val.sources, data.val.targets):
        ids = data.src_vocab.encode(source)
        assert ids.dtype == np.int64 and ids.shape == (len(source),) and ids.min() >= 3
        assert data.src_vocab.decode(ids) == source
        full = data.tgt_vocab.encode(target, sos=True, eos=True)
        assert full[0] == 1 and full[-1] == 2 and len(full) == len(target) + 2
        assert data.tgt_vocab.decode(full) == target
    v = data.tgt_vocab
    assert v.decode([1, *v.encode("12"), 0, *v.encode("3"), 2, *v.encode("99")]) == "123"  # stops at <eos>
    with pytest.raises(KeyError, match="Seq2SeqVocab.encode.*'X'"):
        v.encode("1X")
    with pytest.raises(ValueError, match="Seq2SeqVocab"):
        Seq2SeqVocab(("a", "b", "c"))
    with pytest.raises(ValueError, match="Seq2SeqVocab"):
        Seq2SeqVocab((PAD, SOS, EOS, "a", "a"))
    assert Seq2SeqVocab.build(["ba", "c"]).tokens == (PAD, SOS, EOS, "a", "b", "c")


def test_encode_batch_pads_and_shifts() -> None:
    src_vocab, tgt_vocab = Seq2SeqVocab.build("abc"), Seq2SeqVocab.build("xyz")
    batch = encode_batch(["ab", "cabc"], ["xyz", "z"], src_vocab, tgt_vocab)
    a, b, c = src_vocab.encode("abc")
    x, y, z = tgt_vocab.encode("xyz")
    np.testing.assert_array_equal(batch.src, [[a, b, 0, 0], [c, a, b, c]])
    np.testing.assert_array_equal(batch.src_lengths, [2, 4])
    np.testing.assert_array_equal(batch.tgt_in, [[1, x, y, z], [1, z, 0, 0]])  # <sos> y_1 …, no <eos>
    np.testing.assert_array_equal(batch.tgt_out, [[x, y, z, 2], [z, 2, 0, 0]])  # y_1 … <eos>
    np.testing.assert_array_equal(batch.tgt_lengths, [4, 2])
    for arr in (batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_out, batch.tgt_lengths):
        assert arr.dtype == np.int64
    assert len(batch) == 2
    with pytest.raises(ValueError, match="encode_batch"):
        encode_batch(["a"], [], src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match="encode_batch.*empty"):
        encode_batch([""], ["x"], src_vocab, tgt_vocab)


def test_batches_cover_the_split_once(data) -> None:
    split = TranslationSplit(data.val.sources[:50], data.val.targets[:50])
    seen = []
    for batch in seq2seq_batches(
        split, data.src_vocab, data.tgt_vocab, 16, shuffle=True, rng=np.random.default_rng(0)
    ):
        assert len(batch) <= 16 and batch.src.shape[1] == batch.src_lengths.max()
        for row, n, out in zip(batch.src, batch.src_lengths, batch.tgt_out):
            assert (row[n:] == 0).all() and (row[:n] != 0).all()
            seen.append((data.src_vocab.decode(row), data.tgt_vocab.decode(out)))
    assert sorted(seen) == sorted(zip(split.sources, split.targets))
    in_order = [
        data.src_vocab.decode(row)
        for b in seq2seq_batches(split, data.src_vocab, data.tgt_vocab, 16)
        for row in b.src
    ]
    assert in_order == list(split.sources)
    with pytest.raises(ValueError, match="seq2seq_batches"):
        next(seq2seq_batches(split, data.src_vocab, data.tgt_vocab, 0))
    with pytest.raises(ValueError, match="TranslationSplit"):
        TranslationSplit(("a",), ())
