"""Faster versions of the library's own functions, and how they plug in.

A chain of small operations that is one thing to a user — an LSTM step, LayerNorm,
softmax + cross-entropy, attention — runs faster as one kernel and one graph node than as
ten tensor operations and ten nodes. The reference keeps such faster versions, and its
faster CPU backend, in a package of their own, `minitorch.accel`. The library's code is
the plain version — the code of the tasks — and never names them. A plain function that
may be replaced says so with a decorator on its ``def``:

    @replaceable("layer_norm")
    def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        ... the plain version (a task's code) ...

and a module of `minitorch.accel` registers a faster version under the same name. It takes
the same arguments and returns the same result, or `NotImplemented` for arguments it does
not compute exactly as the plain code would (as Python's ``__add__`` does for operands it
does not handle): then the plain code runs, and raises the plain code's errors.

    @replaces("layer_norm")
    def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        if input.dtype not in (float32, float64):
            return NotImplemented
        ... one kernel ...

A call of the plain function runs the faster version when one is registered, and the
plain one when there is none or it answers `NotImplemented`. A backend's operations class
is replaced the same way (`replacement`). The first call loads `minitorch.accel` — only the copy inside this
package: an editable install of another copy of minitorch cannot lend its own.

Releases: a stage's release (and the grader's tree for it) leaves out the modules of
`minitorch.accel` that would replace that stage's tasks (``reference_only`` in its
manifest), so every call reaches the student's code; from the next stage on they ship.
`plain_only()` forces the plain versions: tests compare the two on the same inputs.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

__all__ = [
    "replaceable",
    "replaces",
    "register",
    "replacement",
    "register_scalar_form",
    "scalar_form",
    "cuda_twin",
    "plain_only",
    "load",
]

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE = __package__ or "minitorch"
_HERE = Path(__file__).resolve().parent


_registry: dict[str, Any] = {}  # name → the faster version
_loaded = False
_cuda_loaded = False
_plain_only = False


def load() -> None:
    """Import `minitorch.accel` (once), whose modules register their faster versions.
    Nothing is registered when it is absent (a release of stages A0–A3 has no `accel/`),
    when its modules are (a release ships those of the earlier stages only), or when it
    belongs to another copy of minitorch."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    name = f"{_PACKAGE}.accel"
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return
    if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(_HERE):
        return
    importlib.import_module(name)  # the one import that points up: plugins, found by name


def register(name: str, faster: Any) -> None:
    """Make `faster` the faster version of the plain code called `name`."""
    _registry[name] = faster


def replaces(name: str) -> Callable[[F], F]:
    """Decorator form of `register`, for the faster version's ``def``."""

    def decorate(fn: F) -> F:
        register(name, fn)
        return fn

    return decorate


def replacement(name: str, default: Any) -> Any:
    """The faster version registered as `name` (loading `minitorch.accel` first), else
    `default`. For objects chosen once, such as a backend's operations class."""
    load()
    return _registry.get(name, default)


def _scalar_name(plain: Callable[..., Any]) -> str:
    return f"scalar:{plain.__module__}.{plain.__qualname__}"


def register_scalar_form(plain: Callable[..., Any], faster: Any) -> None:
    """Make `faster` the form of the scalar function `plain` (e.g. `operators.exp`) that
    faster kernels run instead of it: the same values to within a few ulp, written so that
    a loop calling it runs on SIMD lanes."""
    register(_scalar_name(plain), faster)


def scalar_form(plain: Callable[..., Any]) -> Any:
    """The form of the scalar function `plain` registered by `register_scalar_form` (loading
    `minitorch.accel` first), else `plain` itself."""
    return replacement(_scalar_name(plain), plain)


def cuda_twin(name: str) -> Any:
    """The CUDA twin of the library kernel `name` (registered as "cuda:<name>" by
    `minitorch/accel/cuda_twins.py`), or None where this tree has none. The first call
    imports the twins' modules, which `load` leaves out (they import Numba's CUDA support,
    which a CPU-only run never needs)."""
    global _cuda_loaded
    load()
    if not _cuda_loaded:
        _cuda_loaded = True
        accel = sys.modules.get(f"{_PACKAGE}.accel")  # present only if `load` took it
        if accel is not None and hasattr(accel, "load_cuda_twins"):
            accel.load_cuda_twins()
    return _registry.get(f"cuda:{name}")


def replaceable(name: str) -> Callable[[F], F]:
    """Decorator for a plain function (or method) that a faster version may replace: each
    call runs the version registered as `name`, and the plain body when there is none or
    it returns `NotImplemented`. The plain function stays reachable as ``.plain``."""

    def decorate(plain: F) -> F:
        @functools.wraps(plain)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not _plain_only:
                load()
                faster = _registry.get(name)
                if faster is not None:
                    result = faster(*args, **kwargs)
                    if result is not NotImplemented:
                        return result
            return plain(*args, **kwargs)

        call.plain = plain  # type: ignore[attr-defined]
        call.replaceable_as = name  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return decorate


@contextlib.contextmanager
def plain_only() -> Iterator[None]:
    """Inside this block every replaceable function runs its plain body (the task's code),
    as in a student's tree: tests compare it with the faster version on the same inputs."""
    global _plain_only
    previous = _plain_only
    _plain_only = True
    try:
        yield
    finally:
        _plain_only = previous
