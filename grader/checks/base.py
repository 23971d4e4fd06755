"""The check registry and what a check can do (parent side only).

A hidden check is a function of a `CheckContext`, registered under the name that a
manifest's ``checks = [...]`` uses::

    @check("0.1", "operators_forward", kind="equivalence")   # task 0.1, in grader/checks/a0/task_0_1.py
    def operators_forward(ctx: CheckContext) -> None:
        ctx.equivalent([...probes...])

It returns normally when the submission passes and raises `CheckFailed` (wrong answer) or
`StudentError` (the student's code raised) otherwise; timeouts and a dying child surface as
exceptions from the transport and are handled by `grader.checks.runner`.

A check reaches the student's code only through its `CheckContext`: `ctx.child(probes)`
runs probes in the student's child, `ctx.reference(probes)` runs them on the reference in
this process, and `ctx.services` (a `Services`) holds the rest — the task being graded,
the limits, the student's session, the reference child (for timing) and a list the check
may fill with its timings. Expected values, tolerances and verdicts stay in the check.

Kinds (all decided in the parent from raw numbers the child sends back):

* equivalence — outputs (and gradients) against the reference on generated inputs;
* gradient — central differences of the student's own forward against its backward,
  with a random upstream gradient (`ctx.gradcheck`: `grader.checks.gradcheck`);
* property — laws that must hold (broadcasting rules, shapes, error on bad input);
* performance — the student's kernel time as a ratio to the reference's (A3).
"""

from __future__ import annotations

import math
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from grader.sandbox.child import protocol
from grader.sandbox.child.executor import Executor
from grader.core.manifest import Task, stage_of_task
from grader.sandbox.session import Limits, ReferenceChild, Session
from .feedback import inputs_text, join_lines as _join, short
from .probe import Answer, Probe, Tol, describe, diff, parse_answer
from .compare import int_zero_note, relative_difference
from .errors import CheckFailed, GraderBug, StudentError
from .gradcheck import gradcheck as _gradcheck

KINDS = ("equivalence", "gradient", "property", "performance")
#: `CheckContext.equivalent` reports the furthest-off of this many first failing probes.
SHOWN_OF = 3


@dataclass(frozen=True)
class Check:
    task: str  #: the task id ("2.4") whose manifest entry lists the check
    stage: str
    name: str
    kind: str
    fn: Callable[["CheckContext"], Optional[str]]
    doc: str
    timeout_scale: float = 1.0


REGISTRY: dict[tuple[str, str], Check] = {}


def check(task: str, name: str, kind: str, timeout_scale: float = 1.0) -> Callable:
    """Register a check function of task `task` (``"2.4"``) under the name its manifest uses.

    The checks of task X.Y live in ``grader/checks/aX/task_X_Y.py``; the manifest of stage
    aX lists the name under that task (tests/grader/test_grader_stages.py holds the two equal). The
    function may return a string: the message shown when it passes (e.g. measured speed
    ratios).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown check kind {kind!r}")
    stage = stage_of_task(task)

    def register(fn: Callable[["CheckContext"], Optional[str]]) -> Callable[["CheckContext"], Optional[str]]:
        key = (stage, name)
        if key in REGISTRY:
            raise ValueError(f"check {stage}/{name} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        REGISTRY[key] = Check(task, stage, name, kind, fn, doc, timeout_scale)
        return fn

    return register


def seed_of(stage: str, name: str) -> int:
    """A fixed seed per check (same submission → same inputs → same score)."""
    return zlib.crc32(f"{stage}/{name}".encode())


#: One timed kernel of a performance check: (label, student seconds per run, reference
#: seconds per run, ratio, runs per round).
Timing = tuple[str, float, float, float, int]


@dataclass
class Services:
    """What the runner gives a check besides the probe channels (one per check run).

    Attributes:
        limits: the run's limits (a check's budget is ``limits.check_timeout`` scaled).
        task: the task being graded (its ``performance`` thresholds); None outside a task.
        student: the session of the student's child (paused while the reference is timed).
        reference_child: the kit's minitorch in a child of its own (performance checks).
        timings: what a performance check measured, for its verdict and feedback.
    """

    limits: Limits
    task: Optional[Task] = None
    student: Optional[Session] = None
    reference_child: Optional[ReferenceChild] = None
    timings: list[Timing] = field(default_factory=list)


class CheckContext:
    """What a running check talks to.

    Args:
        check: the check being run.
        run_child: sends programs to the child, returns decoded answers (raises on timeout
            or a dead child).
        reference: the reference `Executor` (runs programs in this process).
        services: the task, limits, sessions and timings of this run of the check.
    """

    def __init__(
        self,
        check: Check,
        run_child: Callable[[list[dict]], list[Any]],
        reference: Executor,
        services: Services,
    ):
        self.check = check
        self._run_child = run_child
        self._reference = reference
        self.rng = np.random.default_rng(seed_of(check.stage, check.name))
        self.services = services
        #: notes for a check that passes ("operators.relu(-1.0) returned the int 0 …")
        self.notes: list[str] = []

    # ---- running ------------------------------------------------------------------------

    def child(self, probes: Sequence[Probe]) -> list[Answer]:
        """Run probes in the student's process."""
        programs = [p.program() for p in probes]
        raw = self._run_child(programs)
        if type(raw) is not list or len(raw) != len(programs):
            raise protocol.ProtocolError("malformed answer: wrong number of answers")
        return [parse_answer(r) for r in raw]

    def timed_child(self, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
        """Run probes in the student's process; also return the round trip in seconds."""
        start = time.perf_counter()
        answers = self.child(probes)
        return answers, time.perf_counter() - start

    def timed_reference_child(self, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
        """Run probes in the reference child (the kit's minitorch in its own process, under
        the same limits): the yardstick of performance checks."""
        if self.services.reference_child is None:
            raise GraderBug(f"check {self.check.name} times the reference, but no reference child was given")
        session = self.services.reference_child.get()
        limits = self.services.limits
        programs = [p.program() for p in probes]
        student = self.services.student
        paused = student.pause() if student is not None else False  # it cannot slow the reference down
        try:
            start = time.perf_counter()
            raw = session.batch(programs, time.monotonic() + limits.check_timeout * self.check.timeout_scale)
            seconds = time.perf_counter() - start
        finally:
            if paused:
                student.resume()
        answers = [parse_answer(r) for r in raw]
        for p, a in zip(probes, answers):
            if a.error is not None:
                raise GraderBug(f"the reference child failed on {p.label!r}: {a.error.format()}")
        return answers, seconds

    def reference(self, probes: Sequence[Probe]) -> list[Answer]:
        """Run probes against the reference, in this process, through the same encoding.

        The reference runs a decoded *copy* of each program: a kernel that writes into an
        argument (an `out` buffer, `to_index`'s `out_index`) must not write the answer into
        the arrays that are later sent to the student's child.
        """
        out = []
        for p in probes:
            program = protocol.decode(protocol.encode(p.program())[8:])
            raw = self._reference.run(program)
            out.append(parse_answer(protocol.decode(protocol.encode(raw)[8:])))
        return out

    # ---- the common check shapes ----------------------------------------------------------

    def equivalent(self, probes: Sequence[Probe], tol: Tol = Tol(), strict_bool: bool = True) -> None:
        """Every probe must give what the reference gives (or raise what it raises).

        Probes should be ordered smallest first. The failure reported is, of the first
        `SHOWN_OF` failing probes (the smallest inputs), the one whose output is furthest off
        (`relative_difference`; the first on a tie): the smallest input may be the one where
        the mistake nearly vanishes (LayerNorm over two features, say). Student code that
        raises on a probe is reported at once when no probe before it failed; after a
        failure it ends the search, and the failures found so far are weighed.
        """
        expected = self.reference(probes)
        got = self.child(probes)
        failed: list[tuple[float, CheckFailed]] = []
        for p, e, g in zip(probes, expected, got):
            try:
                compare_answer(p, e, g, tol, strict_bool)
            except StudentError:
                if failed:
                    break
                raise
            except CheckFailed as exc:
                off = (
                    relative_difference(e.values, g.values)
                    if e.error is None and g.error is None
                    else math.inf
                )
                failed.append((off, exc))
                if len(failed) == SHOWN_OF:
                    break
                continue
            if strict_bool and not self.notes and e.error is None:
                note = next((n for x, y in zip(e.values, g.values) if (n := int_zero_note(x, y))), None)
                if note:
                    self.notes.append(f"{p.label} {note}")
        if failed:
            raise max(failed, key=lambda f: f[0])[1]

    #: ``ctx.gradcheck(label, build, arrays, …)``: central differences of the student's
    #: forward against the student's backward (`grader.checks.gradcheck`).
    gradcheck = _gradcheck


def compare_answer(
    p: Probe, expected: Answer, got: Answer, tol: Tol = Tol(), strict_bool: bool = True
) -> None:
    """Raise CheckFailed / StudentError when `got` does not match `expected` for probe `p`.

    Every message says what was expected: the reference's value (or exception) is known
    here, in the parent, and is written into the feedback only.
    """
    inputs = inputs_text(p.inputs)
    if expected.error is not None:
        if not p.expect_error:
            raise GraderBug(f"the reference raised on probe {p.label!r}: {expected.error.format()}")
        wanted = f"an exception of type {expected.error.type} ({expected.error.message})"
        if got.error is None:
            raise CheckFailed(
                f"{p.label}: expected {expected.error.type}, but no error was raised",
                _join(
                    inputs,
                    f"expected: {wanted}",
                    f"got: {describe(got.values[0]) if got.values else 'nothing'}",
                ),
            )
        if got.error.is_a(expected.error.type):
            if p.error_match and not re.search(p.error_match, got.error.message):
                raise CheckFailed(
                    f"{p.label}: the {got.error.type} must say {p.error_match!r}, as the public tests ask",
                    _join(inputs, f"expected: {wanted}", got.error.format()),
                )
            return
        if got.error.is_a("NotImplementedError"):
            raise StudentError(
                p.label,
                got.error,
                _join(inputs, f"expected: {wanted}"),
                expected=f"{expected.error.type} to be raised",
            )
        raise CheckFailed(
            f"{p.label}: expected {expected.error.type}, got {got.error.type}",
            _join(inputs, f"expected: {wanted}", got.error.format()),
        )
    if got.error is not None:
        names = p.output_names if len(p.output_names) > 1 else [""]
        full = "; ".join(
            f"{n} = {describe(e)}" if n else describe(e) for n, e in zip(names, expected.values or [])
        )
        raise StudentError(p.label, got.error, _join(inputs, f"expected: {full}"), expected=short(full, 80))
    for name, e, g in zip(p.output_names, expected.values, got.values):
        d = diff(e, g, tol, strict_bool)
        if d:
            what = f" ({name})" if len(p.output_names) > 1 else ""
            raise CheckFailed(
                f"{p.label}{what}: {d}",
                _join(inputs, f"expected{what}: {describe(e)}", f"got{what}:      {describe(g)}"),
            )


__all__ = [
    "Check",
    "CheckContext",
    "CheckFailed",
    "GraderBug",
    "REGISTRY",
    "Services",
    "StudentError",
    "Timing",
    "check",
    "compare_answer",
    "inputs_text",
    "seed_of",
]
