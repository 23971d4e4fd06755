"""Compiling with Numba so that compiled code survives the process.

Numba compiles a kernel the first time it runs (seconds for a parallel kernel); with
``cache=True`` it writes the machine code next to the source (``__pycache__``, or
``NUMBA_CACHE_DIR``) and a later process loads it in milliseconds. Two helpers make that
work for minitorch's kernels:

* `njit` — `numba.njit` with ``cache=True`` by default.
* `jit_scalar` — compiles a scalar function (`operators.add` …) with an identity that is
  the same in every process. A kernel factory such as ``tensor_zip(fn)`` builds a kernel
  that *closes over* the compiled `fn`, and Numba keys the cached code of a closure on the
  values it closes over; without a stable identity it would recompile the kernel in every
  process (and pile up files in its cache).

This is infrastructure for every stage from A3 on, not a task.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from typing import Any, Callable

import numba

__all__ = ["njit", "jit_scalar"]


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
    stamp = (fn.__module__, fn.__qualname__, code.co_filename, code.co_firstlineno,
             stat.st_mtime_ns, stat.st_size, tuple(cells))
    digest.update(repr(stamp).encode())
    return digest.hexdigest()


@lru_cache(maxsize=None)
def jit_scalar(fn: Callable) -> Any:
    """`numba.njit(fn)` with a stable identity, so that kernels closing over it cache on disk.

    A jitted function pickles with a random id, new in every process. We give the jitted
    `fn` an id derived from its definition (`_identity`): the same function gets the same
    id in every process, and editing it (or anything in its file) changes the id, so a
    stale kernel is never loaded. Calling it twice with one `fn` returns the same object.
    """
    py_func = getattr(fn, "py_func", fn)  # accept an already-jitted function too
    jitted = numba.njit(py_func)
    token = _identity(py_func)
    set_uuid = getattr(jitted, "_set_uuid", None)
    if token is not None and set_uuid is not None:
        set_uuid(f"minitorch.jit.{token}")
    return jitted
