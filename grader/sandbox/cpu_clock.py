"""CPU time and run-queue wait of other processes, read by the parent from the kernel.

    before = usage(pids)
    ...                                    # the processes run a timed batch
    spent = usage(pids) - before           # Usage(cpu=…, waited=…), in seconds

Used by the performance checks (`grader.checks.a3.speed`) to time what a child *did*, not
only how long the round trip took: on a busy machine the wall time of a call grows with the
load (a parallel kernel's far more than a serial one's, since each of its threads must get a
core), while the CPU time a kernel runs for is the work it does. Nothing here asks the
measured process anything: the numbers come from the kernel (Linux).

* ``cpu``: the CPU time of each process — every thread, exited ones included (the process's
  CPU-time clock, ``clock_gettime`` of ``CPUCLOCK_SCHED``, nanoseconds) — plus that of the
  children it waited for (``cutime`` + ``cstime`` of ``/proc/PID/stat``, clock ticks), so
  work moved into a helper process that has exited and been reaped still counts.
* ``waited``: how long the live threads were ready to run but waited for a CPU (the second
  field of ``/proc/PID/task/TID/schedstat``, the scheduler's run-queue delay): the load the
  processes met. NaN where the kernel keeps no such statistics.

A process that ends between two readings takes its CPU time out of the sum (unless a member
reaps it); the performance checks read the reference's and a jail's processes, which live
for the whole check.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Usage", "usage"]

_TICK = 1.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """Seconds of CPU time run and of run-queue wait, summed over processes."""

    cpu: float = 0.0
    waited: float = 0.0

    def __sub__(self, other: "Usage") -> "Usage":
        return Usage(self.cpu - other.cpu, self.waited - other.waited)

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.cpu + other.cpu, self.waited + other.waited)


def _process_cpu(pid: int) -> float:
    """CPU seconds of every thread of `pid` (exited threads too) and of its reaped children."""
    own = time.clock_gettime((~pid << 3) | 2)  # the process's CPUCLOCK_SCHED clock
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return own + (int(fields[13]) + int(fields[14])) * _TICK  # cutime, cstime (fields 16, 17)


def _threads_waited(pid: int) -> float:
    """Run-queue seconds of the live threads of `pid` (NaN without schedstat)."""
    total = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[1]) * 1e-9
        except FileNotFoundError:
            if not os.path.exists("/proc/self/schedstat"):
                return math.nan
        except (OSError, ValueError, IndexError):
            continue
    return total


def usage(pids: Iterable[int]) -> Usage:
    """The `Usage` of the processes `pids` so far (a process that is gone counts nothing)."""
    cpu = waited = 0.0
    for pid in pids:
        try:
            cpu += _process_cpu(pid)
        except (OSError, ValueError, IndexError):
            continue
        waited += _threads_waited(pid)
    return Usage(cpu, waited)
