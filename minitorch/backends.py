"""The three backends, and which one new tensors use by default.

* `SimpleBackend` — pure Python loops (`tensor_ops`): readable, slow.
* `FastBackend` — Numba-parallel CPU kernels (`fast_ops`): the default.
* `CudaBackend` — Numba CUDA kernels (`cuda_ops`); imported on first use.

Choose per tensor (`minitorch.tensor(x, backend=minitorch.SimpleBackend)`) or globally
(`minitorch.set_default_backend(...)`, or the environment variable
`MINITORCH_BACKEND=simple|fast|cuda`). A student release of stages A0–A3, whose fast
kernels are still stubs, defaults to the simple backend (its `minitorch/_release.py` says so).
"""

from __future__ import annotations

import os

from . import fast_paths
from .tensor_ops import SimpleOps, TensorBackend, TensorOps


def _fast_ops() -> type[TensorOps]:
    """`FastOps`, or the faster class registered in its place (`fast_paths`), if any."""
    from .fast_ops import FastOps

    return fast_paths.replacement("FastOps", FastOps)


def _cuda_ops() -> type[TensorOps]:
    from .cuda_ops import CudaOps

    return CudaOps


SimpleBackend = TensorBackend(SimpleOps, "simple")
FastBackend = TensorBackend(_fast_ops, "fast")
CudaBackend = TensorBackend(_cuda_ops, "cuda")

BACKENDS = {"simple": SimpleBackend, "fast": FastBackend, "cuda": CudaBackend}


def backend_by_name(name: str) -> TensorBackend:
    """The backend called `name` ("simple", "fast" or "cuda")."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {sorted(BACKENDS)}")
    return BACKENDS[name]


def _initial_default() -> TensorBackend:
    name = os.environ.get("MINITORCH_BACKEND")
    if name is None:
        try:
            from ._release import DEFAULT_BACKEND as name  # type: ignore[import-not-found]
        except ImportError:
            name = "fast"
    return backend_by_name(name)


_default = _initial_default()


def get_default_backend() -> TensorBackend:
    """The backend new tensors use when none is given."""
    return _default


def set_default_backend(backend: TensorBackend | str) -> None:
    """Make `backend` (an object or its name) the default for new tensors."""
    global _default
    if isinstance(backend, str):
        backend = backend_by_name(backend)
    if not isinstance(backend, TensorBackend):
        raise TypeError(
            f"set_default_backend expects a TensorBackend or a name, got {type(backend).__name__}"
        )
    _default = backend
