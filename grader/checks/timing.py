"""What a performance check measured, and the rule that judges it under load.

`Run` is one timed round trip (wall time, and the CPU time and run-queue wait the child's
processes had meanwhile, read by the parent from the kernel: `grader.sandbox.cpu_clock`); `Ratios`
is a kernel measured against the reference's, and `Ratios.verdict` the rule
(`grader.checks.a3.speed` says how the batches are built and timed).

Why two ratios: on a busy machine the wall time of a parallel kernel grows far more than a
serial one's (each of its threads must get a core), so a serial kernel doing several times
the reference's work can time within the limit there; the CPU time a kernel runs for is
its work, whatever the load. The wall ratio still judges what CPU time cannot (a kernel
that runs on one core of several), but only on a machine that was not too busy.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUSY", "NEAR", "RANK", "Ratios", "Run"]

#: A timed batch whose child waited for a CPU more than this share of its runnable time
#: (`Run.wait_share`) ran on a machine too busy for its wall time to judge a kernel.
BUSY = 0.2
#: On a busy machine CPU time itself grows with the load (caches and memory bandwidth shared
#: with the other processes: a parallel kernel's more), so a CPU-time ratio above this share of
#: the limit, measured there, is no verdict either: a gaming kernel with 4× the work read 3.84–
#: 4.09 beside two busy loops on a 2-core machine, and once under 3 in a full test run.
NEAR = 2 / 3
#: Verdicts from best to worst (a second measurement is kept when it ranks better).
RANK = {"passed": 0, "withheld": 1, "failed": 2}


@dataclass(frozen=True)
class Run:
    """One timed round trip: its wall time, and the CPU time the child's processes ran and
    waited for a CPU meanwhile (`grader.sandbox.cpu_clock`; zero where not measured)."""

    wall: float
    cpu: float = 0.0
    waited: float = 0.0

    def wait_share(self) -> float:
        """The share of its runnable time the child spent waiting for a CPU: 0 on an idle
        machine; ½ for two threads beside two busy loops on two cores."""
        return self.waited / (self.waited + self.cpu) if self.waited + self.cpu > 0 else 0.0


@dataclass(frozen=True)
class Ratios:
    """A kernel measured: student / reference per call, in wall time and in CPU time.

    Attributes:
        wall: of wall time: what the check is about, but on a busy machine a parallel
            kernel's wall time grows far more than a serial one's (each of its threads must
            get a core), so it is trusted only on a machine that is not busy.
        work: of CPU time (every thread of every process of each child, `grader.sandbox.cpu_clock`):
            the work done per call, which load does not change (NaN: not measured).
        waited: the larger share of their runnable time that the timed batches the ratios
            come from (either side's) spent waiting for a CPU: how busy the machine was.
        student, reference: wall seconds per call; calls: calls per timed batch (1: one
            call, far over the limit).
    """

    wall: float
    work: float
    waited: float
    student: float
    reference: float
    calls: int

    def verdict(self, limit: float) -> str:
        """ "failed", "passed" or "withheld".

        More than `limit` times the reference's CPU time fails on any machine: the
        reference's kernel keeps every core busy, so a kernel doing that much more work
        per call takes more than `limit` times its time even on an idle machine (unless it
        is better parallelised than the reference), and a gaming kernel that repeats its
        work costs that CPU time however busy the machine is.
        Otherwise the wall ratio decides, but a wall ratio over the limit measured while
        either side waited for a CPU more than `BUSY` of the time is no verdict: the
        machine was too busy to judge (``withheld``: see `VerdictWithheld`). Nor, on such a
        machine, is a pass with a CPU-time ratio over `NEAR` of the limit: load inflates CPU
        time too, so that much work may be more than the limit on a quiet machine.
        """
        if self.work > limit:
            return "failed"
        busy = self.waited > BUSY
        if self.wall <= limit:
            return "withheld" if busy and self.work > NEAR * limit else "passed"
        return "withheld" if busy else "failed"
