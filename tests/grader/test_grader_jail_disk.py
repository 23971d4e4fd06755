"""The disk watcher's own cost stays bounded (`grader.sandbox.disk.COST_RATIO`): it runs beside
the student's kernels, timed ones included, so a jail holding many files must not make it
take a core. Modelled with a fake clock: no wall-clock threshold."""

from __future__ import annotations

import pytest

from grader.sandbox import disk as jail_disk
from grader.sandbox.disk import COST_RATIO, DiskUse, DiskWatcher

pytestmark = pytest.mark.grader


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def _watched(look_seconds: list[float], monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of a watcher whose looks take `look_seconds` (in order) on a fake clock."""
    clock = _Clock()
    monkeypatch.setattr(jail_disk.time, "monotonic", clock.monotonic)
    looks = iter(look_seconds)

    class SlowUse(DiskUse):
        def total(self) -> int:
            clock.now += next(looks)
            return 0

    watcher = DiskWatcher(cap=1 << 30, use=SlowUse(), kill=lambda: None, period=0.2)
    waits: list[float] = []

    def wait(seconds: float) -> bool:  # the halt event: record the wait, stop after the last look
        waits.append(seconds)
        return len(waits) > len(look_seconds)

    monkeypatch.setattr(watcher._halt, "wait", wait)
    watcher.run()
    return waits


def test_a_quick_look_keeps_the_period(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _watched([0.001, 0.002, 0.0], monkeypatch) == [0.2, 0.2, 0.2, 0.2]


def test_a_slow_look_stretches_the_wait_so_watching_costs_at_most_a_twentieth_of_a_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _watched([0.5, 0.05, 1.0], monkeypatch)
    assert waits == [
        0.2,
        pytest.approx(COST_RATIO * 0.5),
        pytest.approx(COST_RATIO * 0.05),
        pytest.approx(COST_RATIO * 1.0),
    ]
    assert COST_RATIO * 0.05 > 0.2  # the middle wait was stretched too
    for look, after in zip([0.5, 0.05, 1.0], waits[1:]):
        assert look / (look + after) <= 1 / 20 + 1e-12
