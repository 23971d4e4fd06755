"""Run one function in a child process, under a wall clock that nothing it starts outlives.

    ran = run_with_wall_clock("grader.batch.worker:grade_here", job, seconds=300, scratch=folder)
    ran.value      # what the function returned (None when it expired or crashed)
    ran.expired    # the clock ran out: the child and every process it started were killed
    ran.failure    # why there is no value: its exit status and the end of its output

Why: ``grader batch`` gives each submission a wall clock (``--submission-timeout``), on top
of the per-check budgets, so that a submission slow on every check cannot hold a worker for
the sum of them (22 minutes in A3). A thread cannot be stopped; a process can, with all
that it started.

How nothing outlives it: the child first makes itself a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``), so every process started under it (the jails of every tier,
their children, a double-forked ``setsid`` escapee) stays its descendant even when
orphaned. On expiry the parent freezes the child (SIGSTOP: it starts nothing new), kills its
descendants round after round until a scan of ``/proc`` finds none, kills the child, then
cleans up after the ``uid`` tier's jails it held (`grader.sandbox.uid.sweep_abandoned`: their
leases died with the child; their files in ``/tmp`` and the like, their IPC objects). The
child's temporary files go into `scratch` (its ``TMPDIR``), which the caller deletes. If the
parent itself dies, the child is told (``PR_SET_PDEATHSIG``) and kills its descendants the
same way before it exits.

Parent and child are the same trusted grader: the call and its value travel as pickles in a
folder only root can read.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import pickle
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

__all__ = ["Ran", "kill_descendants", "run_with_wall_clock"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: Run by ``python -c`` in the child: read the call (the parent's sys.path first), run it.
BOOT = (
    "import pickle, sys\n"
    "with open(sys.argv[1] + '/call.pickle', 'rb') as f:\n"
    "    call = pickle.load(f)\n"
    "sys.path[:] = call['path']\n"
    "from grader.batch.wall_clock import child_main\n"
    "child_main(call, sys.argv[1])\n"
)


@dataclass
class Ran:
    """How a call under the wall clock ended (see the module docstring)."""

    value: Any = None
    expired: bool = False
    failure: str = ""


def run_with_wall_clock(target: str, payload: Any, seconds: float, scratch: Path) -> Ran:
    """Call `target` (``"package.module:function"``) with `payload` in a child process; kill
    it and everything it started after `seconds`. `scratch`: an empty folder of the caller."""
    io = Path(scratch) / "wall-clock"
    io.mkdir(mode=0o700)
    tmp = Path(scratch) / "tmp"
    tmp.mkdir(mode=0o700)
    with open(io / "call.pickle", "wb") as f:
        pickle.dump({"path": list(sys.path), "target": target, "payload": payload}, f)
    with open(io / "output", "wb") as output:
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(io)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=str(io),
            env={**os.environ, "TMPDIR": str(tmp)},
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            _end(proc)
            return Ran(expired=True, failure=f"ran past its wall clock of {seconds:g} s")
    result = io / "result.pickle"
    if code == 0 and result.exists():
        with open(result, "rb") as f:
            return Ran(value=pickle.load(f))
    tail = (io / "output").read_bytes()[-2000:].decode(errors="replace").strip()
    return Ran(
        failure=f"the grading process ended with exit status {code} without a result"
        + (f": {tail}" if tail else "")
    )


def _end(proc: subprocess.Popen) -> None:
    """Freeze the child, kill every process under it, then the child; sweep its jail uids."""
    try:
        os.kill(proc.pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass
    kill_descendants(proc.pid)
    proc.kill()
    proc.wait()
    _sweep_uid_jails()


def kill_descendants(root: int, rounds: int = 500) -> None:
    """SIGKILL every live descendant of `root`, round after round, until a scan finds none
    (a descendant may fork while it is being killed; `root` is a subreaper, so orphans stay
    under it)."""
    for _ in range(rounds):
        found = _descendants(root)
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _descendants(root: int) -> list[int]:
    """The live (not zombie) processes under `root`, from the parent links of ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _sweep_uid_jails() -> None:
    """The ``uid`` tier's jails of a killed grading: their leases are free (the lock died
    with their holder) but record folders; kill what runs as them, remove their litter."""
    from grader.sandbox.uid import sweep_abandoned

    try:
        sweep_abandoned()
    except OSError:  # no lease folder: no uid jail ever ran here
        pass


# --------------------------------------------------------------------------- in the child


def child_main(call: dict[str, Any], io: str) -> None:
    """The child: become a subreaper, die with the parent, run the call, write its value."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGTERM, _parent_gone)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:  # the parent died before the line above
        _parent_gone(signal.SIGTERM, None)
    module, _, name = call["target"].partition(":")
    try:
        value = getattr(importlib.import_module(module), name)(call["payload"])
    except BaseException:  # noqa: BLE001 - reported through the exit status and the output
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
    partial = Path(io) / "result.pickle.part"
    with open(partial, "wb") as f:
        pickle.dump(value, f)
    partial.rename(Path(io) / "result.pickle")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown: nothing left to run


def _parent_gone(signum: int, frame: Optional[Any]) -> None:
    """The worker that started this child is gone (or ended it): end everything under it."""
    kill_descendants(os.getpid())
    os._exit(128 + signum)  # the leases of its uid jails die with it (a later lease of a uid sweeps it)
