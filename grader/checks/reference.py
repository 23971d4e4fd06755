"""The reference in the parent: an `Executor` over the kit's own ``minitorch``.

Checks run every probe through it to know what to expect (`CheckContext.reference`),
in this trusted process, from the very same programs the student's child runs. Probes of
the fast and CUDA backends are computed on the simple backend — the same numbers without
compiling anything here — through `REFERENCE_ALIASES`, a data table that the stages'
owners keep up to date when a kernel moves or is renamed.

Nothing here runs student code, and nothing computed here is ever sent to a child.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from .base import GraderBug
from grader.sandbox.child.executor import Executor
from grader.core.manifest import repo_root

__all__ = ["REFERENCE_ALIASES", "REFERENCE_BACKENDS", "reference_executor"]

#: Backends whose probes the parent computes on another backend (same numbers).
REFERENCE_BACKENDS = {"fast": "simple", "cuda": "simple"}

#: Kernels of the fast backends and the simple kernels (same signatures, same numbers)
#: that the parent runs instead to know the expected values.
REFERENCE_ALIASES = {
    "minitorch.FastBackend": "minitorch.SimpleBackend",
    "minitorch.CudaBackend": "minitorch.SimpleBackend",
    "minitorch.fast_ops.tensor_map": "minitorch.tensor_ops.tensor_map",
    "minitorch.fast_ops.tensor_zip": "minitorch.tensor_ops.tensor_zip",
    "minitorch.fast_ops.tensor_reduce": "minitorch.tensor_ops.tensor_reduce",
    "minitorch.fast_ops.tensor_matmul": "minitorch.tensor_ops.tensor_matmul",
}


def reference_executor() -> Executor:
    """An `Executor` over the kit's reference ``minitorch``, imported in this process.

    Raises:
        GraderBug: the ``minitorch`` imported is not the kit's (e.g. another install).
    """
    root = repo_root()
    if "minitorch" not in sys.modules and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mt = importlib.import_module("minitorch")
    where = Path(mt.__file__).resolve()
    if root / "minitorch" not in where.parents:
        raise GraderBug(f"the reference minitorch was imported from {where}, not from the kit at {root}")
    return Executor(mt, None, backend_map=dict(REFERENCE_BACKENDS), aliases=REFERENCE_ALIASES)
