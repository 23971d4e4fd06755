"""Compiling with Numba so that compiled code survives the process.

Numba compiles a kernel the first time it runs (seconds for a parallel kernel); with
``cache=True`` it writes the machine code next to the source (``__pycache__``, or
``NUMBA_CACHE_DIR``) and a later process loads it in milliseconds. Two helpers make that
work for minitorch's kernels:

* `njit` — `numba.njit` with ``cache=True`` by default.
* `serial_twin` / `serial_and_parallel` — a parallel kernel and its one-thread twin, cached
  apart (see `serial_twin`).
* `jit_scalar` — compiles a scalar function (`operators.add` …) with an identity that is
  the same in every process. A kernel factory such as ``tensor_zip(fn)`` builds a kernel
  that *closes over* the compiled `fn`, and Numba keys the cached code of a closure on the
  values it closes over; without a stable identity it would recompile the kernel in every
  process (and pile up files in its cache).
* `stable_identity` — that identity for a function jitted elsewhere (the matmul's
  micro-kernels, which the tiled matmul closes over).

* `Vectorised` — LLVM's SLP vectorizer (off by default in Numba) for minitorch's own
  kernels: it packs independent scalar operations, such as the accumulators of a register
  tile, into vector instructions (≈ 8× on the tiled matmul). Numba reads its settings from
  the environment at the start of every compilation, so the variable is set for the
  compilation of a function of this package and restored after it: other Numba code in the
  process compiles as it would without minitorch. ``NUMBA_SLP_VECTORIZE`` set by the user
  is left alone.

This is infrastructure for every stage from A3 on, not a task. Importing it registers two
listeners of Numba's compilations: the vectorizer setting and the notice that Numba is
compiling (`minitorch.compile_notice`).
"""

from __future__ import annotations

import hashlib
import os
import types
from functools import lru_cache
from typing import Any, Callable

import numba
from numba.core import event

from . import compile_notice

__all__ = ["njit", "jit_scalar", "stable_identity", "serial_twin", "serial_and_parallel", "Vectorised"]

_PACKAGE = (__package__ or "minitorch").partition(".")[0]
SLP = "NUMBA_SLP_VECTORIZE"


class Vectorised(event.Listener):
    """Sets ``NUMBA_SLP_VECTORIZE=1`` while Numba compiles a function of this package (one
    whose ``__module__`` is minitorch or below it), unless the user has set it; restores
    the environment when that compilation ends."""

    def __init__(self) -> None:
        self._set_here: list[bool] = []  # one entry per compilation running (they nest)

    @staticmethod
    def ours(data: Any) -> bool:
        dispatcher = data.get("dispatcher") if isinstance(data, dict) else None
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
        return module == _PACKAGE or module.startswith(_PACKAGE + ".")

    def on_start(self, ev: Any) -> None:
        set_here = SLP not in os.environ and self.ours(ev.data)
        self._set_here.append(set_here)
        if set_here:
            os.environ[SLP] = "1"

    def on_end(self, ev: Any) -> None:
        if self._set_here and self._set_here.pop():
            os.environ.pop(SLP, None)


_vectorised: Vectorised | None = None


def _install() -> None:
    global _vectorised
    if _vectorised is None:
        _vectorised = Vectorised()
        event.register("numba:compile", _vectorised)
    compile_notice.install()


_install()


def njit(fn: Callable | None = None, **options: Any) -> Any:
    """`numba.njit` with the project's defaults (on-disk cache); usable bare or with options:
    ``@njit``, ``@njit(parallel=True)``, ``njit(fn, inline="always")``."""
    options.setdefault("cache", True)
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)


def _identity(fn: Callable) -> str | None:
    """A digest of what defines `fn`: module, name, code and its source file's stamp.

    None when `fn` has no source file (typed at a prompt, made by `exec`): such a function has
    no identity that survives the process, so kernels using it are never reused from disk.
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        stat = os.stat(code.co_filename)
    except OSError:
        return None
    digest = hashlib.sha256()

    def add_code(c: Any) -> None:
        digest.update(c.co_code)
        digest.update(repr(c.co_names).encode())
        for const in c.co_consts:
            if hasattr(const, "co_code"):
                add_code(const)
            else:
                digest.update(repr(const).encode())

    add_code(code)
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(repr(cell.cell_contents))
        except ValueError:  # an empty cell
            cells.append("<empty>")
    stamp = (
        fn.__module__,
        fn.__qualname__,
        code.co_filename,
        code.co_firstlineno,
        stat.st_mtime_ns,
        stat.st_size,
        tuple(cells),
    )
    digest.update(repr(stamp).encode())
    return digest.hexdigest()


@lru_cache(maxsize=None)
def jit_scalar(fn: Callable) -> Any:
    """`numba.njit(fn)` with a stable identity, so that kernels closing over it cache on disk.

    A jitted function pickles with a random id, new in every process. We give the jitted
    `fn` an id derived from its definition (`_identity`): the same function gets the same
    id in every process, and editing it (or anything in its file) changes the id, so a
    stale kernel is never loaded. Calling it twice with one `fn` returns the same object.
    An already-jitted `fn` keeps its ``inline`` option: ``inline="always"`` has Numba put its
    body into each loop that calls it, rather than leaving that to LLVM's inlining heuristics
    (a loop that still calls a function cannot be vectorised).
    """
    py_func = getattr(fn, "py_func", fn)  # accept an already-jitted function too
    inline = getattr(fn, "targetoptions", {}).get("inline", "never")
    return stable_identity(numba.njit(py_func, inline=inline))


def stable_identity(jitted: Any) -> Any:
    """Give the Numba dispatcher `jitted` the id of its definition (`_identity`) and return it.

    A kernel that *closes over* a jitted function is cached on disk under a digest of what it
    closes over, and a dispatcher pickles with its id, random and new in every process unless
    set here. Safe to call more than once on one dispatcher; a dispatcher whose id was already
    drawn (or whose function has no source file) keeps its own, and its kernels recompile in
    every process — slower, never wrong.
    """
    if getattr(jitted, "_minitorch_stable", False):
        return jitted
    token = _identity(jitted.py_func)
    set_uuid = getattr(jitted, "_set_uuid", None)
    if token is not None and set_uuid is not None:
        try:
            set_uuid(f"minitorch.jit.{token}")
        except AssertionError:  # its id was drawn already (it has been pickled)
            return jitted
        jitted._minitorch_stable = True
    return jitted


def _renamed(fn: Callable, suffix: str) -> Callable:
    """A copy of `fn` (same code, globals and closure) whose name ends in `suffix`."""
    code = fn.__code__.replace(co_name=fn.__name__ + suffix, co_qualname=fn.__qualname__ + suffix)
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def serial_twin(kernel: Any) -> Any:
    """The parallel Numba `kernel` compiled again without `parallel=True`: its `prange` loops
    become plain loops. Made once per kernel, on first use, and kept on the kernel.

    Why: a parallel kernel pays for entering Numba's thread pool on every call, even with
    one thread — about 10 µs, five times the whole loop over 10⁴ elements — so small calls
    run the twin (about 2 µs).

    The trick: the twin is compiled from a *copy* of the kernel's Python function whose name
    ends in ``_serial``. Numba's on-disk cache files a compiled function under its name and
    line, not under its options, so two compilations of one function (parallel and serial)
    would share one cache entry and one of them would silently run the other's code
    (numba issue #6845).
    """
    twin = getattr(kernel, "_minitorch_serial", None)
    if twin is None:
        options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
        copy = _renamed(kernel.py_func, "_serial")
        try:
            twin = njit(copy, **options)
        except RuntimeError:  # no file to cache it next to (a kernel typed at a prompt)
            twin = njit(copy, **{**options, "cache": False})
        kernel._minitorch_serial = twin
    return twin


def serial_and_parallel(fn: Callable, **options: Any) -> tuple[Any, Any]:
    """(serial, parallel): `fn` compiled with `parallel=True` and its `serial_twin`, for a
    kernel that picks one per call by the size of its work."""
    parallel = njit(fn, parallel=True, **options)
    return serial_twin(parallel), parallel
