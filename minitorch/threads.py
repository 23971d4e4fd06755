"""Parallel kernels on a shared machine: how many threads, and how they wait.

A `prange` loop is cut into pieces, one per Numba thread (``numba.get_num_threads()``; the
pool is OpenMP's on Linux, ``numba.threading_layer()`` says which), and the loop is done
only when its last piece is. On an idle machine every thread has a core of its own. On a
busy one — a second training run, a test suite, a browser on a two-core laptop — the
operating system can leave one of the threads off every core for a whole time slice
(milliseconds), and the loop waits for it. A training step runs hundreds of loops.

How a finished thread waits for the next loop decides what that costs. GNU OpenMP's threads
*spin* (by default 300,000 turns of a loop) before they sleep, so that the next loop starts
sooner; ``OMP_WAIT_POLICY=PASSIVE`` makes them sleep at once. Measured with
``python -m bench.busy_machine``, two or three runs of each (AMD EPYC, 2 cores; median step
in ms, idle and beside two busy loops):

    char LSTM   spinning (2 threads)  idle 24–27   busy 66, 68, 4,460
                passive (2 threads)   idle 47–63   busy 47–48
                one thread            idle 41–46   busy 51–58
    tiny GPT    spinning (2 threads)  idle 14–18   busy 39, 1,796, 1,791
                passive (2 threads)   idle 23–33   busy 26–50
                one thread            idle 21–25   busy 30–48

Spinning is the fastest on an idle machine and a lottery on a busy one: a spinning thread
holds the core that the late thread needs. So `share_the_cpu()` looks at the machine once,
when a program starts (`settings_for`):

* every usable core free: nothing changes (all threads, spinning);
* some core busy (`busy_cores`, from ``/proc/stat`` on Linux, over a tenth of a second):
  ``OMP_WAIT_POLICY=PASSIVE``, unless the environment already sets a policy, and as many
  threads as cores are free (at least one, at most ``NUMBA_NUM_THREADS``).

Fewer threads is the polite choice, not the fastest one for this program: Linux shares the
cores evenly among the threads that want to run, so beside two busy loops on two cores one
thread gets a third of the machine and two threads get half. The char LSTM took 47 ms with
two passive threads and 62–76 ms with `share_the_cpu`'s one; the tiny GPT 26–50 ms and 25 ms.
The other programs — a classmate's run on a shared machine, the grader — keep their cores.

OpenMP reads the wait policy once, when it loads — at the first parallel loop of Numba, at
``import torch`` for PyTorch — so call it before either. (A program that also runs PyTorch
should import torch before Numba's first parallel loop: started first, Numba's pool loads
the system's OpenMP and PyTorch's steps ran up to 100× slower on it; see
`minitorch.examples.gpt`.)

It is opt-in, as `minitorch.allocator.tune_malloc` is: importing minitorch changes nothing.
The examples' `main` calls it first, and so can a training script of your own;
``MINITORCH_SHARE_CPU=0`` turns it off. The machine is looked at once: one that becomes busy
later is not seen.
"""

from __future__ import annotations

import math
import os
import time
from typing import Optional

__all__ = ["busy_cores", "free_cores", "settings_for", "share_the_cpu"]


def _cpu_times() -> Optional[tuple[int, int]]:
    """(all time, idle time) of every CPU since boot, in ticks; None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is already inside user)
    ticks = [int(v) for v in fields[1:9]]
    return sum(ticks), ticks[3] + ticks[4]


def busy_cores(interval: float = 0.1) -> Optional[float]:
    """How many cores, summed over the machine, were busy during the next `interval` seconds.

    busy = all CPUs × (1 − idle ticks ÷ all ticks), both counted over the interval while this
    process sleeps, so that it does not count itself. None where the kernel does not say
    (not Linux).
    """
    before = _cpu_times()
    if before is None:
        return None
    time.sleep(interval)
    after = _cpu_times()
    if after is None:
        return None
    total, idle = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return 0.0
    return (os.cpu_count() or 1) * (1.0 - idle / total)


def _usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def free_cores(interval: float = 0.1) -> int:
    """The usable cores that nothing else kept busy over `interval` seconds (at least 1).

    Busy cores are rounded to the nearest whole one: a core busy 40 % of the time is still
    mostly free. Where the load cannot be read, every usable core counts as free.
    """
    usable = _usable_cores()
    busy = busy_cores(interval)
    if busy is None:
        return usable
    everywhere = os.cpu_count() or usable
    return max(1, min(usable, everywhere - math.floor(busy + 0.5)))


def settings_for(free: int, usable: int, pool: int, threads: Optional[int] = None) -> tuple[int, bool]:
    """(threads, whether to wait passively) for a machine where `free` of this process's
    `usable` cores are free; `pool` is Numba's pool size (``NUMBA_NUM_THREADS``), `threads` a
    count asked for instead of `free`.

    An idle machine keeps OpenMP's default, spinning: it is the fastest there (a passive
    wait made the char-LSTM step 2× slower on an idle 2-core machine). A busy one waits
    passively and uses the free cores only.
    """
    busy = free < usable
    wanted = (free if busy else usable) if threads is None else threads
    return max(1, min(int(wanted), pool)), busy


def share_the_cpu(threads: Optional[int] = None) -> int:
    """Look at the machine once and set Numba's threads and OpenMP's wait policy for it
    (`settings_for`): on a busy machine ``OMP_WAIT_POLICY=PASSIVE`` (unless the environment
    sets a policy) and as many threads as cores are free.

    Args:
        threads: use this many threads instead of counting the free cores (still at most
            ``NUMBA_NUM_THREADS``, the size of Numba's pool).

    Returns:
        the number of threads Numba's parallel loops use from now on (PyTorch code can pass it
        to ``torch.set_num_threads``).
    """
    import numba  # here, not at the top: reading this module must not start Numba

    if os.environ.get("MINITORCH_SHARE_CPU", "1") == "0":
        return numba.get_num_threads()
    pool = numba.config.NUMBA_NUM_THREADS
    count, passive = settings_for(free_cores(), _usable_cores(), pool, threads)
    if not passive and count == pool:
        return count  # nothing to change: Numba's pool is not even started here
    if passive:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before Numba's pool starts (below)
    numba.set_num_threads(count)
    return count
