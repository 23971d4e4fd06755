"""A one-line notice when Numba compiles for long, so that a first run is never a silent wait.

The first use of the fast backend on a machine compiles its kernels: 10–30 seconds in
which nothing else happens. Later processes load the machine code from Numba's on-disk
cache (`minitorch.jit`) and compile nothing. So the notice is printed, once per process, on
standard error, when the time spent compiling in this process passes `DELAY` seconds
while a compilation is still running:

    minitorch: compiling Numba kernels (the first run on this machine; later runs load them from the cache) …

How: Numba announces each real compilation (a cache miss, never a cache load) as a
``numba:compile`` event (`numba.core.event`). A listener adds up the time spent in them
and, while one runs, a timer fires when the total would pass `DELAY`.

``MINITORCH_COMPILE_NOTICE=0`` turns it off; ``MINITORCH_COMPILE_NOTICE_AFTER=S`` sets
`DELAY` (the tests use 0).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from numba.core import event

__all__ = ["CompileNotice", "install", "MESSAGE", "DELAY"]

MESSAGE = "minitorch: compiling Numba kernels (the first run on this machine; later runs load them from the cache) …"

#: Seconds of compilation before the notice is printed.
DELAY = 2.0


class CompileNotice(event.Listener):
    """Counts seconds spent compiling and prints `MESSAGE` once when they pass `delay`."""

    def __init__(self, delay: float = DELAY, stream: TextIO | None = None) -> None:
        self.delay = delay
        self.stream = stream
        self.shown = False
        self.compiled = 0.0  # seconds of finished top-level compilations
        self._depth = 0  # a kernel compiles the functions it calls: only the outermost counts
        self._started = 0.0
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def on_start(self, event: Any) -> None:
        with self._lock:
            self._depth += 1
            if self._depth > 1 or self.shown:
                return
            self._started = time.perf_counter()
            wait = self.delay - self.compiled
            if wait <= 0:
                self._show()
                return
            self._timer = threading.Timer(wait, self._on_timer)
            self._timer.daemon = True
            self._timer.start()

    def on_end(self, event: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth > 0:
                return
            self.compiled += time.perf_counter() - self._started
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _on_timer(self) -> None:
        with self._lock:
            if self._depth > 0 and not self.shown:
                self._show()

    def _show(self) -> None:
        self.shown = True
        stream = self.stream or sys.stderr
        print(MESSAGE, file=stream, flush=True)


_installed: CompileNotice | None = None


def install() -> CompileNotice | None:
    """Register the notice with Numba (once per process); None when turned off."""
    global _installed
    if _installed is None and os.environ.get("MINITORCH_COMPILE_NOTICE", "1") != "0":
        delay = float(os.environ.get("MINITORCH_COMPILE_NOTICE_AFTER", DELAY))
        _installed = CompileNotice(delay)
        event.register("numba:compile", _installed)
    return _installed
