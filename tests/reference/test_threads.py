"""`minitorch.threads`: the busy cores read from the kernel's CPU counters, the free cores
counted from them, and `share_the_cpu` setting the wait policy and Numba's threads (in a fresh
interpreter each, since both can be set only once per process). Timings are never asserted:
`python -m bench.busy_machine` measures what the settings buy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch import threads
from minitorch.threads import settings_for as threads_settings

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parents[2]
LINUX = sys.platform.startswith("linux")


def counters(*readings: tuple[int, int]):
    """A stand-in for `_cpu_times` that returns `readings` one after the other."""
    queue = list(readings)
    return lambda: queue.pop(0)


@pytest.mark.parametrize(
    "total, idle, cpus, busy", [(200, 200, 2, 0.0), (200, 100, 2, 1.0), (400, 100, 4, 3.0), (200, 0, 2, 2.0)]
)
def test_busy_cores_are_the_cpus_times_the_share_of_ticks_not_idle(
    monkeypatch: pytest.MonkeyPatch, total: int, idle: int, cpus: int, busy: float
) -> None:
    monkeypatch.setattr(threads, "_cpu_times", counters((1000, 500), (1000 + total, 500 + idle)))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert threads.busy_cores(interval=0.0) == pytest.approx(busy)


@pytest.mark.parametrize(
    "busy, usable, cpus, free",
    [
        (0.0, 2, 2, 2),
        (1.0, 2, 2, 1),
        (0.4, 2, 2, 2),
        (0.6, 2, 2, 1),
        (2.0, 2, 2, 1),
        (3.0, 2, 8, 2),
        (6.0, 8, 8, 2),
    ],
)
def test_free_cores_are_the_usable_ones_less_the_busy_ones_and_at_least_one(
    monkeypatch: pytest.MonkeyPatch, busy: float, usable: int, cpus: int, free: int
) -> None:
    monkeypatch.setattr(threads, "busy_cores", lambda interval=0.1: busy)
    monkeypatch.setattr(threads, "_usable_cores", lambda: usable)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert threads.free_cores() == free


def test_without_the_kernels_counters_every_usable_core_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_cpu_times", lambda: None)
    monkeypatch.setattr(threads, "_usable_cores", lambda: 3)
    assert threads.busy_cores(interval=0.0) is None
    assert threads.free_cores() == 3


@pytest.mark.skipif(not LINUX, reason="/proc/stat is Linux's")
def test_a_busy_loop_beside_is_counted_as_a_busy_core() -> None:
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = threads.busy_cores(interval=0.5)
    finally:
        loop.kill()
        loop.wait()
    assert busy is not None and 0.5 <= busy <= (os.cpu_count() or 1), busy


SHARE = """
import json, os, sys
import numba
from minitorch.threads import share_the_cpu
count = share_the_cpu(*[int(a) for a in sys.argv[1:]])
print(json.dumps({"count": count, "numba": numba.get_num_threads(), "pool": numba.config.NUMBA_NUM_THREADS,
                  "wait": os.environ.get("OMP_WAIT_POLICY")}))
"""


def share(*args: int, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "MINITORCH_SHARE_CPU")}
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", SHARE, *map(str, args)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "free, usable, pool, threads, expected",
    [
        (2, 2, 2, None, (2, False)),  # idle: all threads, OpenMP's spinning wait
        (8, 8, 4, None, (4, False)),  # never more than Numba's pool
        (1, 2, 2, None, (1, True)),  # one core busy: one thread, passive
        (3, 8, 8, None, (3, True)),
        (1, 2, 2, 2, (2, True)),  # a count asked for is kept; the wait still follows the load
        (2, 2, 2, 1, (1, False)),
        (2, 2, 2, 0, (1, False)),  # at least one
    ],
)
def test_an_idle_machine_keeps_all_threads_spinning_and_a_busy_one_shares(
    free: int, usable: int, pool: int, threads: int | None, expected: tuple[int, bool]
) -> None:
    assert threads_settings(free, usable, pool, threads) == expected


@pytest.mark.skipif(not LINUX, reason="/proc/stat is Linux's")
def test_beside_a_busy_loop_share_the_cpu_waits_passively_with_fewer_threads_than_cores() -> None:
    cores = len(os.sched_getaffinity(0))
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = share(NUMBA_NUM_THREADS=str(cores))
    finally:
        loop.kill()
        loop.wait()
    assert out["wait"] == "PASSIVE"
    assert out["count"] == out["numba"] and 1 <= out["count"] <= max(1, cores - 1), out


def test_share_the_cpu_takes_a_count_and_keeps_it_within_the_pool() -> None:
    assert share(1, NUMBA_NUM_THREADS="2")["numba"] == 1
    assert share(5, NUMBA_NUM_THREADS="2")["numba"] == 2


def test_a_wait_policy_already_set_is_kept_and_the_switch_turns_everything_off() -> None:
    assert share(1, NUMBA_NUM_THREADS="2", OMP_WAIT_POLICY="ACTIVE")["wait"] == "ACTIVE"
    off = share(1, NUMBA_NUM_THREADS="2", MINITORCH_SHARE_CPU="0")
    assert off["wait"] is None and off["numba"] == 2  # not the 1 asked for: nothing was set


def test_importing_minitorch_sets_no_wait_policy() -> None:
    environ = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, minitorch, minitorch.threads; print(os.environ.get('OMP_WAIT_POLICY'))",
        ],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == "None"
