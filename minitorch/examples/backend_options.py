"""The examples' `--backend` and `--device` options: which tensor backend trains the model.

    --backend fast|simple|cuda   minitorch's own name for it (default: fast)
    --device cpu|cuda            PyTorch's: `cuda` is the CUDA backend, `cpu` the --backend
                                 given (fast by default)

`--device cuda` needs a GPU, or Numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`, slow: for
trying a few steps of a tiny model); without either the example stops with a message.
"""

from __future__ import annotations

import argparse

import minitorch

__all__ = ["add_backend_options", "chosen_backend"]


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """Add `--backend` and `--device` to an example's parser (read them with `chosen_backend`)."""
    parser.add_argument(
        "--backend",
        choices=sorted(minitorch.backends.BACKENDS),
        default=None,
        help="tensor backend (default fast)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default=None,
        help="as in PyTorch: cuda trains on the CUDA backend (a GPU, or NUMBA_ENABLE_CUDASIM=1)",
    )


def chosen_backend(parser: argparse.ArgumentParser, args: argparse.Namespace, default: str = "fast") -> str:
    """The backend name that `args.backend` and `args.device` ask for; a parser error when
    they contradict each other or when cuda is asked for where it cannot run."""
    backend, dev = args.backend, args.device
    if dev == "cuda" and backend not in (None, "cuda"):
        parser.error(f"--device cuda runs on the cuda backend, not --backend {backend}")
    if dev == "cpu" and backend == "cuda":
        parser.error("--device cpu and --backend cuda contradict each other")
    name = "cuda" if dev == "cuda" else backend or default
    if name == "cuda" and not minitorch.cuda.is_available():
        parser.error("no CUDA GPU is available (set NUMBA_ENABLE_CUDASIM=1 to run on Numba's simulator)")
    return name
