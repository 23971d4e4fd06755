"""Datasets that ship with minitorch (nothing is downloaded at run time)."""

from .toy import DATASETS, Graph, circle, diag, simple, spiral, split, xor

__all__ = ["DATASETS", "Graph", "circle", "diag", "simple", "spiral", "split", "xor"]

from .sst2 import TextSplit, load_sst2  # noqa: E402

__all__ += ["TextSplit", "load_sst2"]
