"""The reference's speed, kept apart from the textbook: modules that replace plain code of
the library with faster code computing the same thing (a backend, single-kernel versions
of layers). Each registers itself with `minitorch.fast_paths` when imported; importing this
package imports every module in it, so a release that leaves some out simply runs the
plain code there. Nothing outside this package imports its modules: `fast_paths.load`
finds the package, by name, on first use.

The CUDA twins (`cuda_*.py`) are the exception: they import Numba's CUDA support and the
CUDA backend (~40 ms), which a CPU-only run never needs, so `load_cuda_twins` imports them
when the CUDA backend first asks for one (`fast_paths.cuda_twin`).
"""

import importlib
import pkgutil

_MODULES = sorted(info.name for info in pkgutil.iter_modules(__path__))


def load_cuda_twins() -> None:
    """Import the `cuda_*` modules of this package (each registers its twins)."""
    for module in _MODULES:
        if module.startswith("cuda_"):
            importlib.import_module(f"{__name__}.{module}")


for _module in _MODULES:
    if not _module.startswith("cuda_"):
        importlib.import_module(f"{__name__}.{_module}")
