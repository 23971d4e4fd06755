"""Datasets that ship with minitorch (nothing is downloaded at run time)."""

from .sst2 import TextSplit, load_sst2
from .toy import DATASETS, Graph, circle, diag, simple, spiral, split, xor

__all__ = ["DATASETS", "Graph", "circle", "diag", "simple", "spiral", "split", "xor", "TextSplit", "load_sst2"]
