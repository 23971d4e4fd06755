"""Datasets that ship with minitorch (nothing is downloaded at run time)."""

from .shakespeare import (
    CharCorpus,
    CharVocab,
    load_tiny_shakespeare,
    random_batch,
    split_corpus,
    stream_chunk,
    stream_chunks_per_pass,
)
from .sst2 import TextSplit, load_sst2
from .toy import DATASETS, Graph, circle, diag, simple, spiral, split, xor
from .translation import (
    DATE_FORMATS,
    Seq2SeqBatch,
    Seq2SeqVocab,
    TranslationData,
    TranslationSplit,
    date_translation,
    encode_batch,
    seq2seq_batches,
)

__all__ = [
    "DATASETS",
    "Graph",
    "circle",
    "diag",
    "simple",
    "spiral",
    "split",
    "xor",
    "TextSplit",
    "load_sst2",
    "CharVocab",
    "CharCorpus",
    "load_tiny_shakespeare",
    "split_corpus",
    "random_batch",
    "stream_chunk",
    "stream_chunks_per_pass",
    "DATE_FORMATS",
    "Seq2SeqVocab",
    "TranslationSplit",
    "TranslationData",
    "Seq2SeqBatch",
    "date_translation",
    "encode_batch",
    "seq2seq_batches",
]
