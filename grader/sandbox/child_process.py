"""One child process, seen from the parent: started in its jail, spoken to, killed.

A `Child` is ``python -I -S _grader_child.py`` (`grader/sandbox/child/main.py`) started inside a jail
(`grader.sandbox.jail`: bubblewrap, or an unprivileged uid, or — declared loudly — a plain process;
``Limits.sandbox`` chooses) with a clean environment, cwd = its tree (a temporary directory
holding ``minitorch/`` as built by `grader.trees.child_tree.build_child_tree`: the student's fenced
bodies for this stage, the reference for earlier stages, stubs for later ones) and
``sys.path`` = that tree + the standard library + the installed third-party packages
(never the kit's own directory). It checks that ``minitorch.__file__`` lies in its tree,
applies its resource limits (address space, CPU time, file size, processes) and talks to
the parent only over an inherited socket (length-prefixed JSON + raw array bytes;
`grader.sandbox.child.protocol`). Its stdout/stderr go to pipes that an `OutputDrain` empties into a
capped buffer, never parsed. It may write only its own ``home``, ``tmp``, ``work`` and
Numba cache directories.

What the child can see: its tree, the probe programs (inputs and the calls to make), the
copies of `grader/sandbox/child/main.py`, `grader/sandbox/child/executor.py` and `grader/sandbox/child/protocol.py` that run it, and,
in the ``bwrap`` tier, nothing else but the system's libraries and the Python runtime (in
the ``uid`` tier: what the host lets any user read; the kit must not be readable). The
sandbox never holds expected values, tolerances, verdicts, the hidden checks or the output
paths, so it cannot pass them on: it moves programs in and raw answers out.

A child that cannot import the submission raises `ChildStartFailed`; `exit_text` says how a
child ended, in words for the student.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

from .answers import ErrorInfo, parse_error
from .child import protocol
from .import_paths import child_import_paths
from .jail import Jail
from .limits import Limits
from .tiers import choose_tier

__all__ = ["Child", "ChildStartFailed", "OutputDrain", "exit_text"]

HERE = Path(__file__).resolve().parent
#: runtime name (``_grader_<name>.py``) → file of `grader/sandbox/child/`
CHILD_FILES = {
    "child": "main.py",
    "executor": "executor.py",
    "prange_trace": "prange_trace.py",
    "protocol": "protocol.py",
}


class ChildStartFailed(Exception):
    """The child could not import the submission (or died/hung doing it)."""

    def __init__(self, status: str, message: str, error: Optional[ErrorInfo] = None, details: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.error = error
        self.details = details


class OutputDrain(threading.Thread):
    """Read a pipe to its end, keeping the first `cap` bytes and counting the rest."""

    def __init__(self, pipe: Any, cap: int):
        super().__init__(daemon=True)
        self.pipe, self.cap = pipe, cap
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        s = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            s += f"\n… ({self.total - len(self.kept)} more bytes dropped)"
        return s


class Child:
    """One child process running `grader/sandbox/child/main.py` over a tree."""

    def __init__(
        self,
        tree: Path,
        scratch: Path,
        limits: Limits,
        name: str = "child",
        own_cache: bool = True,
        tier: Optional[str] = None,
    ):
        self.tree, self.scratch, self.limits, self.name = tree, scratch, limits, name
        self.own_cache = own_cache
        self.tier = tier or choose_tier(limits.sandbox)
        self.jail: Optional[Jail] = None
        self.proc: Optional[subprocess.Popen] = None
        self.sock: Optional[socket.socket] = None
        self.drains: list[OutputDrain] = []
        self.hello: dict = {}

    def _runtime(self) -> Path:
        rt = self.scratch / "runtime"
        if not rt.is_dir():
            rt.mkdir(parents=True)
            # stdlib-only: they run next to student code (`child/`: main.py is the child's program)
            for name, source in CHILD_FILES.items():
                shutil.copyfile(HERE / "child" / source, rt / f"_grader_{name}.py")
        return rt

    def writable_dirs(self) -> list[Path]:
        """The only directories the child may write (its home, tmp, Numba cache, work)."""
        names = ["home", "tmp", "work"] + (["numba-cache"] if self.own_cache else [])
        dirs = [self.scratch / n for n in names]
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        return dirs

    def _env(self) -> dict[str, str]:
        home = self.scratch / "home"
        tmp = self.scratch / "tmp"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(self.tree),  # for processes the child starts (a notebook kernel)
            "PYTHONDONTWRITEBYTECODE": "1",
            "NUMBA_ENABLE_CUDASIM": os.environ.get("NUMBA_ENABLE_CUDASIM", "1"),
            "MPLBACKEND": "Agg",
            # minitorch.compile_notice: nobody reads a child's stderr live
            "MINITORCH_COMPILE_NOTICE": "0",
            # Numba's parallel kernels run on GNU OpenMP here, whose threads by default spin
            # at every barrier: on a busy machine (a class graded on every core, CI) a parallel
            # call then mostly waits for its other thread to get a core, so the reference's
            # time in the A3 speed checks grew 5-20x while a serial gaming kernel's did not,
            # and any thread the student starts (even one that only sleeps) changed the
            # measurement. Passive waiting (sleep at barriers) makes the timings of both
            # children depend on the work, not on the load (tests/grader/test_grader_speed_stderr.py).
            "OMP_WAIT_POLICY": "PASSIVE",
        }
        if self.own_cache:  # a submission's compiled kernels stay in its own scratch
            env["NUMBA_CACHE_DIR"] = str(self.scratch / "numba-cache")
        for key, value in os.environ.items():
            if (
                key.startswith(("NUMBA_", "OMP_", "MKL_", "OPENBLAS_"))
                and key not in env
                and key != "NUMBA_CACHE_DIR"
            ):
                env[key] = value
        return env

    def start(self) -> dict:
        """Start the process and wait for its hello (raises ChildStartFailed)."""
        runtime = self._runtime()
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        args = {
            "fd": child_sock.fileno(),
            "tree": str(self.tree),
            "runtime": str(runtime),
            "paths": child_import_paths(),
            "mem_mb": self.limits.mem_mb,
            "cpu_s": self.limits.cpu_s,
            "file_mb": self.limits.file_mb,
            "nproc": self.limits.nproc if self.tier == "uid" else 0,
        }
        # home and tmp are private, capped tmpfs under bubblewrap (nothing of them is kept)
        self.jail = Jail(
            self.tier,
            self.tree,
            rw=self.writable_dirs(),
            ro=[runtime],
            nproc=self.limits.nproc,
            disk_mb=self.limits.disk_mb,
            tmpfs=[self.scratch / "home", self.scratch / "tmp"],
        )
        try:
            self.proc = self.jail.popen(
                [sys.executable, "-I", "-S", str(runtime / "_grader_child.py"), json.dumps(args)],
                env=self._env(),
                pass_fds=(child_sock.fileno(),),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            child_sock.close()
        self.sock = parent_sock
        self.drains = [
            OutputDrain(self.proc.stdout, self.limits.output_cap),
            OutputDrain(self.proc.stderr, self.limits.output_cap),
        ]
        for d in self.drains:
            d.start()
        deadline = time.monotonic() + self.limits.start_timeout
        try:
            msg = protocol.recv(self.sock, deadline)
        except protocol.ChannelTimeout:
            self.kill()
            raise ChildStartFailed(
                "timeout",
                f"importing your code took longer than {self.limits.start_timeout:.0f} s",
                details=self.output_tail(),
            ) from None
        except protocol.ChannelClosed:
            code = self.kill()
            raise ChildStartFailed(
                "error",
                f"the grading process ended while importing your code ({exit_text(code)})",
                details=self.output_tail(),
            ) from None
        except protocol.ProtocolError as exc:  # a frame the student's import code wrote itself
            self.kill()
            raise ChildStartFailed(
                "error",
                f"the grading process sent a malformed greeting while importing your code ({exc})",
                details=self.output_tail(),
            ) from None
        hello = msg.get("hello") if type(msg) is dict else None
        if type(hello) is not dict:
            self.kill()
            raise ChildStartFailed("error", "the grading process sent a malformed greeting")
        if "error" in hello:
            self.kill()
            try:
                err = parse_error(hello["error"])
            except protocol.ProtocolError as exc:
                raise ChildStartFailed(
                    "error", f"the grading process sent a malformed greeting ({exc})"
                ) from None
            raise ChildStartFailed(
                "error",
                f"your code does not import: {err.type}: {err.message.splitlines()[0] if err.message else ''}",
                err,
                err.format(),
            )
        self.hello = hello
        return hello

    def request(self, message: dict, deadline: float) -> Any:
        """Send one command and wait for its reply (protocol exceptions propagate)."""
        assert self.sock is not None
        protocol.send(self.sock, message, deadline)
        return protocol.recv(self.sock, deadline)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> Optional[int]:
        """Kill the child and every process of its jail; return its exit status."""
        code = self.jail.kill() if self.jail is not None else None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        for d in self.drains:
            d.join(timeout=2)
        return code

    def close(self) -> None:
        """Ask the child to exit, then make sure it and its group are gone."""
        if self.sock is not None and self.alive():
            try:
                protocol.send(self.sock, {"cmd": "exit"}, time.monotonic() + 2)
                self.proc.wait(timeout=2)  # type: ignore[union-attr]
            except (protocol.ProtocolError, subprocess.TimeoutExpired, OSError):
                pass
        self.kill()

    def output_tail(self, limit: int = 2000) -> str:
        """What the child printed (stdout then stderr), capped."""
        parts = []
        for label, d in zip(("stdout", "stderr"), self.drains):
            text = d.text().strip()
            if text:
                parts.append(f"[{self.name} {label}]\n{text[-limit:]}")
        return "\n".join(parts)


def exit_text(code: Optional[int]) -> str:
    if getattr(code, "reason", ""):  # killed by the jail for a limit (`grader.sandbox.disk.Overrun`)
        return code.reason  # type: ignore[union-attr]
    if code is None:
        return "it did not exit"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
