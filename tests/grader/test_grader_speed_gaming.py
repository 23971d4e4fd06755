"""A3's speed checks measure the student's kernel doing its work on every timed call.

Two kinds of test:

* The measurement itself (`grader.checks.a3.speed`), driven through a context whose
  "children" run the probes in this process on the kit's kernels and report modelled times
  (so nothing depends on the machine's speed): every timed call gets inputs of its own and
  an `out` of its own (never the values of another call, nor those of a set-up batch),
  every timed output is compared with the reference's, and a child that stalls while it
  is not computing gains at most a quarter of a ratio.
* Graded submissions that game a speed check that repeats one call on the same inputs into
  the same `out`: a slow kernel that remembers its answers, and a slow kernel that does
  the work only when `out` does not hold an answer yet. Both fail the speed check and pass
  the task's equivalence check. The reference scores full marks on both speed checks.

The gaming kernels are slow because they are serial and repeat their work (8× the
reference and more on an idle two-core machine). On a busy machine a parallel kernel (the
reference's) slows down far more than a serial one, so the wall-time ratio alone once let
the 4×-work matmul pass beside two busy loops (2.17×, limit 3×); the check also compares
the CPU time of both children (`grader.checks.timing`), and withholds a wall-time failure
measured on a machine too busy to judge, and a pass there whose CPU time comes near the
limit (load inflates CPU time too). Modelled: a kernel doing 4× the work fails however the
wall times look; a wall-time failure on a busy machine is withheld (an error with a grader
error, no points), on a quiet one it fails; 2.5× the work passes on a quiet machine and is
withheld on a busy one. Graded beside two busy loops (as many as the project's machines
have cores, as `grader batch` makes): no gaming kernel passes (failed, or withheld), and
the reference passes (or is withheld, never failed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minitorch
from grader.checks import get_check
from grader.checks.a3 import speed as a3_speed
from grader.checks.a3.speed import ROUNDS, SETUP_SLACK, Timed, _speed
from grader.checks.a3.task_3_1 import TASK_3_1
from grader.checks.a3.task_3_2 import TASK_3_2
from grader.checks.base import REGISTRY, Check, CheckContext, CheckFailed, Services
from grader.checks.runner import VerdictWithheld, run_check, task_score
from grader.sandbox.cpu_clock import Usage
from grader.checks.probe import Answer, ArrayVal, Probe, parse_answer
from grader.release.examples import write_submission
from grader.sandbox.child.executor import Executor
from grader.grading.grade import grade
from grader.grading.one_charge import ALONE
from grader.core.manifest import load_manifest
from grader.core.results import GradeResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader


# --------------------------------------------------------------------------- the measurement


def _is_kernel_call(steps: list, op: str, a: dict) -> bool:
    """A call whose first argument is an output storage made by the probe: a kernel's."""
    first = (a.get("args") or [None])[0]
    return (
        op in ("call", "repeat")
        and isinstance(first, dict)
        and "$" in first
        and steps[first["$"]][0] == "full"
    )


def _kernel_calls(program: dict) -> int:
    """How many times a program calls a kernel."""
    steps = program["steps"]
    return sum(a["n"] if op == "repeat" else 1 for op, a in steps if _is_kernel_call(steps, op, a))


class Modelled(CheckContext):
    """A check context whose two "children" run probes here, on the kit's kernels, and
    report modelled round trips: 50 ms of set-up (`slower` more on the student's side)
    plus `per_call` seconds per kernel call.

    `corrupt(program, answer)` may change what the student's side answers; `stall` seconds
    are added to the student's batches that call no kernel (the set-up being measured).
    With `cpu` (CPU seconds per kernel call of each side) the children also report CPU
    time (20 ms per batch of set-up, plus `cpu` per call; `_usage` must be `self.usage`),
    having waited for a CPU `busy` of their runnable time.
    """

    def __init__(
        self,
        check: str,
        task: str,
        per_call: dict[str, float],
        corrupt: Callable | None = None,
        stall: float = 0.0,
        slower: float = 0.0,
        cpu: dict[str, float] | None = None,
        busy: float = 0.0,
    ):
        chk = get_check("a3", check)
        services = Services(
            limits=Limits(),
            task=next(t for t in load_manifest("a3").tasks if t.id == task),
            student=SimpleNamespace(side="student"),  # type: ignore[arg-type]
            reference_child=SimpleNamespace(get=lambda: SimpleNamespace(side="reference")),
        )  # type: ignore[arg-type]
        super().__init__(chk, lambda programs: [], Executor(minitorch), services)
        self.per_call, self.corrupt, self.stall, self.slower = per_call, corrupt, stall, slower
        self.cpu, self.busy = cpu, busy
        self.used = {"student": Usage(), "reference": Usage()}
        self.programs: dict[str, list[dict]] = {"student": [], "reference": []}

    def usage(self, session: SimpleNamespace) -> Usage:
        return self.used[session.side]

    def _run(self, who: str, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
        answers: list[Answer] = []
        seconds = 0.0
        for p in probes:
            program = p.program()
            self.programs[who].append(program)
            answer = parse_answer(self._reference.run(program))
            calls = _kernel_calls(program)
            if who == "student" and self.corrupt is not None:
                answer = self.corrupt(program, answer)
            answers.append(answer)
            seconds += 0.05 + calls * self.per_call[who]
            if self.cpu is not None:
                cpu = 0.02 + calls * self.cpu[who]
                self.used[who] += Usage(cpu, cpu * self.busy / (1 - self.busy))
            if who == "student":
                seconds += self.slower + (self.stall if calls == 0 else 0.0)
        return answers, seconds

    def timed_child(self, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
        return self._run("student", probes)

    def timed_reference_child(self, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
        return self._run("reference", probes)


def _seeds(program: dict) -> list[int]:
    return [a["seed"] for op, a in program["steps"] if op == "random"]


@pytest.mark.parametrize(
    "timed, check, task",
    [(TASK_3_2, "fast_matmul_speed", "3.2")] + [(t, "fast_map_zip_reduce_speed", "3.1") for t in TASK_3_1],
    ids=["matmul", "map", "zip", "reduce"],
)
def test_every_timed_call_has_inputs_and_an_out_of_its_own(timed: Timed, check: str, task: str) -> None:
    ctx = Modelled(check, task, {"student": 0.004, "reference": 0.002})
    assert _speed(ctx, timed).wall == pytest.approx(2.0)
    batches = [
        p
        for p in ctx.programs["student"]
        if _kernel_calls(p) and not any(op == "repeat" for op, _ in p["steps"])
    ]
    assert len(batches) == 1 + 1 + ROUNDS  # the untimed first call, a call judged alone, the rounds
    seen: set[int] = set()
    for program in batches:
        steps = program["steps"]
        calls = [a for op, a in steps if op == "call" and _is_kernel_call(steps, op, a)]
        outs = [a["args"][0]["$"] for a in calls]
        assert len(set(outs)) == len(calls)  # a new out for every call …
        assert all(
            steps[o][0] == "full" and steps[o][1]["fill"] == 0.0 for o in outs
        )  # … made zero-filled in the child
        returned = [steps[r][1]["obj"]["$"] if steps[r][0] == "digest" else r for r in program["returns"]]
        assert sorted(returned) == sorted(outs)  # … and every one comes back (map, zip: its SHA-256)
        assert all(steps[r][0] == "digest" for r in program["returns"]) == timed.exact
        inputs = [a["args"][3 + 3 * j]["$"] for a in calls for j in range(len(timed.inputs))]
        assert len(set(inputs)) == len(calls) * len(timed.inputs)  # a new input for every call
        assert all(steps[i][0] == "random" for i in inputs)
        seeds = _seeds(program)
        assert not seen & set(seeds) and len(set(seeds)) == len(seeds)  # never the same values twice
        seen |= set(seeds)
    setup = {s for p in ctx.programs["student"] if not _kernel_calls(p) for s in _seeds(p)}
    assert not setup & seen  # a set-up batch never shows the values of a timed one
    # the reference ran the very same timed calls (its outputs are what the student's are compared with)
    reference_seeds = {s for p in ctx.programs["reference"] for s in _seeds(p)}
    assert all(set(_seeds(p)) <= reference_seeds for p in batches[:1] + batches[-ROUNDS:])


@pytest.mark.parametrize(
    "timed, check, task",
    [(TASK_3_2, "fast_matmul_speed", "3.2"), (TASK_3_1[0], "fast_map_zip_reduce_speed", "3.1")],
    ids=["matmul", "map"],
)
def test_a_wrong_out_after_any_timed_call_fails(timed: Timed, check: str, task: str) -> None:
    timed_batches = []

    def corrupt(program: dict, answer: Answer) -> Answer:
        if _kernel_calls(program) > 1 and not any(op == "repeat" for op, _ in program["steps"]):
            timed_batches.append(program)
            if len(timed_batches) == 3:  # the third round: the second call's out is left as it came
                second = answer.values[1]
                answer.values[1] = (
                    ArrayVal(np.zeros_like(second.array), second.type)
                    if isinstance(second, ArrayVal)
                    else "0" * 64
                )
        return answer

    ctx = Modelled(check, task, {"student": 0.002, "reference": 0.002}, corrupt=corrupt)
    with pytest.raises(CheckFailed) as failed:
        _speed(ctx, timed)
    assert "wrong out after timed call 2 of" in failed.value.message and "round 3" in failed.value.message
    assert "fresh random values" in failed.value.details


def test_a_child_slow_only_while_not_computing_gains_little() -> None:
    """The set-up subtracted from the student's time is at most the reference child's plus
    a quarter of the reference's kernel time: a child that stalls in the batches without
    kernel calls gains at most 0.25 of a ratio (here 4.0, measured as 3.75), and a child
    whose set-up is a little slower than the reference child's loses nothing."""
    ctx = Modelled("fast_matmul_speed", "3.2", {"student": 0.008, "reference": 0.002}, stall=1.0)
    assert _speed(ctx, TASK_3_2).wall == pytest.approx(4.0 - SETUP_SLACK)
    honest = Modelled("fast_matmul_speed", "3.2", {"student": 0.008, "reference": 0.002}, slower=0.005)
    assert _speed(honest, TASK_3_2).wall == pytest.approx(4.0)


def test_a_kernel_doing_4x_the_work_fails_however_fast_it_times_on_a_busy_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beside two busy loops the wall times say 2× (the reference's parallel kernel waited
    for cores); the CPU times say 4× the work per call: failed, not withheld, not passed.
    The student's CPU time in its set-up batches is bounded as its wall time is."""
    ctx = Modelled(
        "fast_matmul_speed",
        "3.2",
        {"student": 0.004, "reference": 0.002},
        stall=1.0,
        cpu={"student": 0.008, "reference": 0.002},
        busy=0.5,
    )
    monkeypatch.setattr(a3_speed, "_usage", ctx.usage)
    ratios = _speed(ctx, TASK_3_2)
    assert (
        ratios.wall < 3
        and ratios.work == pytest.approx(4.0, abs=SETUP_SLACK)
        and ratios.waited == pytest.approx(0.5)
    )
    with pytest.raises(CheckFailed) as failed:
        ctx.check.fn(ctx)
    assert "slower than the reference (limit 3×) in CPU time per call" in failed.value.message
    assert "CPU time ratio" in failed.value.details


@pytest.mark.parametrize("busy", [0.0, 0.5], ids=["quiet", "busy"])
def test_a_wall_time_over_the_limit_fails_on_a_quiet_machine_and_is_withheld_on_a_busy_one(
    monkeypatch: pytest.MonkeyPatch, busy: float
) -> None:
    """The same work as the reference (its CPU time), four times its wall time: a kernel
    that runs on fewer cores (failed), or a machine too busy to tell (withheld)."""
    ctx = Modelled(
        "fast_matmul_speed",
        "3.2",
        {"student": 0.008, "reference": 0.002},
        cpu={"student": 0.002, "reference": 0.002},
        busy=busy,
    )
    monkeypatch.setattr(a3_speed, "_usage", ctx.usage)
    with pytest.raises(VerdictWithheld if busy else CheckFailed) as raised:
        ctx.check.fn(ctx)
    if busy:
        assert "too busy to judge" in raised.value.reason and "on a quiet machine" in raised.value.reason
        assert "ms per run" in raised.value.details
    else:
        assert "matmul is 4.0× slower than the reference (limit 3×)" in raised.value.message  # type: ignore[union-attr]


@pytest.mark.parametrize("busy", [0.0, 0.5], ids=["quiet", "busy"])
def test_a_cpu_time_near_the_limit_passes_on_a_quiet_machine_and_is_withheld_on_a_busy_one(
    monkeypatch: pytest.MonkeyPatch, busy: float
) -> None:
    """2.5× the reference's CPU time and wall time (limit 3×): a pass where the machine was
    quiet; where it was busy the CPU time may itself be inflated by the load (a 4×-work
    kernel once read under 3× there), so no verdict."""
    ctx = Modelled(
        "fast_matmul_speed",
        "3.2",
        {"student": 0.005, "reference": 0.002},
        cpu={"student": 0.005, "reference": 0.002},
        busy=busy,
    )
    monkeypatch.setattr(a3_speed, "_usage", ctx.usage)
    if not busy:
        assert ctx.check.fn(ctx).startswith("time / reference: matmul 2.")
        return
    with pytest.raises(VerdictWithheld) as raised:
        ctx.check.fn(ctx)
    assert (
        "did 2." in raised.value.reason and "the work (CPU time) of the reference" in raised.value.reason
    ), raised.value.reason


def test_a_withheld_verdict_scores_nothing_and_is_a_grader_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither points nor a silent zero: the check is an error with a grader error (so
    `grader run` exits 2 and `grader batch` records ``grader-error``) that tells the staff
    to grade it again; the student reads that it was not judged."""

    def withheld(ctx: CheckContext) -> str:
        raise VerdictWithheld(
            "the machine was too busy to judge; grade task 3.2 again on a quiet machine", "figures"
        )

    monkeypatch.setitem(
        REGISTRY,
        ("a3", "withheld_for_test"),
        Check("3.1", "a3", "withheld_for_test", "performance", withheld, ""),
    )
    task = next(t for t in load_manifest("a3").tasks if t.id == "3.2")
    session = SimpleNamespace(ensure=lambda: None)
    result = run_check(
        "withheld_for_test", "a3", Executor(minitorch), Services(limits=Limits(), task=task, student=session)
    )  # type: ignore[arg-type]
    assert (result.status, result.message, result.details) == ("error", VerdictWithheld.message, "figures")
    assert (
        result.grader_error
        == "a3/withheld_for_test: verdict withheld: the machine was too busy to judge; grade task 3.2 again on a quiet machine"
    )
    assert task_score(task, [result]) == 0


# --------------------------------------------------------------------------- graded gaming submissions


def slow_matmul(times: int) -> str:
    """tensor_matmul, slowly: serial, and every product computed `times` times."""
    return f"""
for _ in range({times}):
    for n in range(out_shape[0]):
        for i in range(out_shape[1]):
            for j in range(out_shape[2]):
                acc = 0.0
                for k in range(a_shape[2]):
                    acc += a_storage[n * a_batch_stride + i * a_strides[1] + k * a_strides[2]] * b_storage[n * b_batch_stride + k * b_strides[1] + j * b_strides[2]]
                out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
"""


#: _reduce, slowly: serial, with the index arithmetic done for every input element.
SLOW_REDUCE = """
a_index = np.empty(len(a_shape), np.int64)
for ordinal in range(a_storage.size):
    to_index(ordinal, a_shape, a_index)
    a_pos = index_to_position(a_index, a_strides)
    a_index[reduce_dim] = 0
    out_pos = index_to_position(a_index, out_strides)
    out[out_pos] = fn(out[out_pos], a_storage[a_pos])
"""

#: _reduce, very slowly: serial, an index array allocated for every input element, and
#: every fold done four times.
VERY_SLOW_REDUCE = """
out_index = np.empty(len(out_shape), np.int64)
for ordinal in range(out.size):
    to_index(ordinal, out_shape, out_index)
    out_pos = index_to_position(out_index, out_strides)
    start = out[out_pos]
    for _ in range(4):
        acc = start
        for r in range(a_shape[reduce_dim]):
            a_index = out_index.copy()
            a_index[reduce_dim] = r
            acc = fn(acc, a_storage[index_to_position(a_index, a_strides)])
    out[out_pos] = acc
"""


def _indent(body: str, prefix: str) -> str:
    return "".join(
        prefix + line if line.strip() else line for line in body.strip("\n").splitlines(keepends=True)
    )


def remembering(slow: str, key: str) -> str:
    """`slow`, run only for inputs not seen before: answers remembered in a dict by `key`
    (Python inside the compiled kernel, through Numba's object mode)."""
    return f"""
with numba.objmode(seen="int64"):
    remembered = np.__dict__.setdefault("_remembered", {{}})
    np.__dict__["_key"] = {key}
    seen = int(np.__dict__["_key"] in remembered)
    if seen:
        out[:] = remembered[np.__dict__["_key"]]
if seen == 0:
{_indent(slow, "    ")}
    with numba.objmode():
        np.__dict__["_remembered"][np.__dict__["_key"]] = out.copy()
"""


def once_per_out(slow: str) -> str:
    """`slow`, skipped when `out` still holds the answer this kernel last wrote into that
    buffer (a repeated call into the same `out`)."""
    return f"""
with numba.objmode(done="int64"):
    last = np.__dict__.setdefault("_last_out", {{}}).get(out.ctypes.data)
    done = int(last is not None and last.shape == out.shape and bool((last == out).all()))
if done == 1:
    return
{slow.strip(chr(10))}
with numba.objmode():
    np.__dict__["_last_out"][out.ctypes.data] = out.copy()
"""


MATMUL_KEY = "(a_storage[:64].tobytes(), b_storage[:64].tobytes())"
REDUCE_KEY = "(a_storage[:64].tobytes(), out[:8].tobytes(), reduce_dim)"  # out: the start value


def _grade(tmp_path: Path, task: str, edits: dict) -> GradeResult:
    sub = write_submission(tmp_path / "submission", "a3", edits)
    result = grade(sub, "a3", task=task, limits=Limits(check_timeout=60), notebooks=False)
    assert not result.grader_errors, result.grader_errors
    return result


def _checks(result: GradeResult, task: str) -> dict:
    row = next(r for r in result.tasks if r.id == task)
    return {c.name: c for c in row.checks}


GAMING = [
    ("3.2", ("3.2", "tensor_matmul"), remembering(slow_matmul(40), MATMUL_KEY), "fast_matmul_speed"),
    ("3.2", ("3.2", "tensor_matmul"), once_per_out(slow_matmul(4)), "fast_matmul_speed"),
    (
        "3.1",
        ("3.1", "tensor_reduce._reduce"),
        remembering(VERY_SLOW_REDUCE, REDUCE_KEY),
        "fast_map_zip_reduce_speed",
    ),
    ("3.1", ("3.1", "tensor_reduce._reduce"), once_per_out(SLOW_REDUCE), "fast_map_zip_reduce_speed"),
]
GAMING_IDS = ["matmul-remembering", "matmul-once-per-out", "reduce-remembering", "reduce-once-per-out"]


@pytest.fixture
def two_busy_loops() -> Iterator[None]:
    """Two processes spinning beside the grading for as long as the test runs: as many as
    the project's machines have cores (what `grader batch`, one worker per core, makes)."""
    with _busy_loops(2):
        yield


@contextmanager
def _busy_loops(n: int) -> Iterator[list[subprocess.Popen]]:
    """`n` processes spinning until the block ends (then killed and reaped)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def _fails_its_speed_check(tmp_path: Path, task: str, fence: tuple, body: str, speed: str) -> None:
    checks = _checks(_grade(tmp_path, task, {fence: body}), task)
    assert all(c.status == "passed" for name, c in checks.items() if name != speed), (
        checks
    )  # the kernel is correct
    assert checks[speed].status == "failed", (checks[speed].message, checks[speed].details)
    assert "slower than the reference (limit 3×)" in checks[speed].message, checks[speed].message
    assert "ms per run" in checks[speed].details


def _never_passes_its_speed_check(tmp_path: Path, task: str, fence: tuple, body: str, speed: str) -> None:
    """Graded on a busy machine: failed, or withheld (no points, and a grader error that asks
    for grading again on a quiet machine); never passed."""
    result = grade(
        write_submission(tmp_path / "submission", "a3", {fence: body}),
        "a3",
        task=task,
        limits=Limits(check_timeout=60),
        notebooks=False,
    )
    checks = _checks(result, task)
    assert all(c.status == "passed" for name, c in checks.items() if name != speed), (
        checks
    )  # the kernel is correct
    c = checks[speed]
    if c.status == "failed":
        assert "slower than the reference (limit 3×)" in c.message and not result.grader_errors, (
            c.message,
            result.grader_errors,
        )
    else:
        assert (c.status, c.message) == ("error", VerdictWithheld.message), (c.status, c.message, c.details)
        assert result.grader_errors == [c.grader_error] and "verdict withheld" in c.grader_error


@pytest.mark.slow
@pytest.mark.parametrize("task, fence, body, speed", GAMING, ids=GAMING_IDS)
def test_a_slow_kernel_that_games_repeated_calls_fails_its_speed_check(
    tmp_path: Path, task: str, fence: tuple, body: str, speed: str
) -> None:
    _fails_its_speed_check(tmp_path, task, fence, body, speed)


@pytest.mark.slow
@pytest.mark.parametrize("task, fence, body, speed", GAMING, ids=GAMING_IDS)
def test_beside_two_busy_loops_a_gaming_kernel_never_passes_its_speed_check(
    tmp_path: Path, two_busy_loops: None, task: str, fence: tuple, body: str, speed: str
) -> None:
    """The issue's case: the once-per-out matmul (4× the work) passed at 2.17× here."""
    _never_passes_its_speed_check(tmp_path, task, fence, body, speed)


@pytest.fixture
def load_on_the_reference_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Busy loops, eight per core, that run only while the reference child is timed and are
    stopped (SIGSTOP) while the student's child is: load that comes and goes, as in
    `grader batch` when another worker's grading starts or ends between the two sides'
    batches. The reference's wall time grows several-fold; the student's does not."""
    with _busy_loops(8 * len(os.sched_getaffinity(0))) as loops:
        for loop in loops:
            os.kill(loop.pid, signal.SIGSTOP)
        timed_reference_child = CheckContext.timed_reference_child

        def loaded(self: CheckContext, probes: Sequence[Probe]) -> tuple[list[Answer], float]:
            for loop in loops:
                os.kill(loop.pid, signal.SIGCONT)
            try:
                return timed_reference_child(self, probes)
            finally:
                for loop in loops:
                    os.kill(loop.pid, signal.SIGSTOP)

        monkeypatch.setattr(CheckContext, "timed_reference_child", loaded)
        yield


@pytest.mark.slow
def test_load_on_the_reference_only_does_not_let_a_gaming_kernel_pass(
    tmp_path: Path, load_on_the_reference_only: None
) -> None:
    """The once-per-out matmul (4× the work) timed against a reference slowed by load:
    judged by wall time alone (the code before issue 26's finding 11) it passed on a 2-core
    machine, at 2.52× against the limit of 3×. The CPU time per call does not grow with the
    load, so the 4× work still shows (4.1× there)."""
    _never_passes_its_speed_check(tmp_path, *GAMING[1])


@pytest.mark.slow
@pytest.mark.parametrize("task", ["3.1", "3.2"])
def test_the_reference_passes_its_speed_checks(tmp_path: Path, task: str) -> None:
    result = _grade(tmp_path, task, {})
    row = next(r for r in result.tasks if r.id == task)
    assert row.score == row.max_points, row.feedback
    speed = next(c for c in row.checks if c.kind == "performance")
    assert speed.message.startswith("time / reference:"), speed.message


@pytest.mark.slow
@pytest.mark.parametrize("task", ["3.1", "3.2"])
def test_beside_two_busy_loops_the_reference_passes_or_is_withheld(
    tmp_path: Path, two_busy_loops: None, task: str
) -> None:
    """Never failed for the load: passed, or (a machine too busy to judge) withheld — or
    withheld in the whole tree and passed when graded alone (one charge), without blaming
    another task for it."""
    result = grade(
        write_submission(tmp_path / "submission", "a3", {}),
        "a3",
        task=task,
        limits=Limits(check_timeout=60),
        notebooks=False,
    )
    checks = _checks(result, task)
    speed = next(c for c in checks.values() if c.kind == "performance")
    assert all(c.status == "passed" for c in checks.values() if c is not speed), checks
    if speed.status == "passed":
        judged_alone = (
            f"passes {ALONE}; with your own code for every task it could not be judged (not your fault)"
        )
        assert speed.message.startswith("time / reference:") or speed.message == judged_alone, speed.message
        assert not result.grader_errors, result.grader_errors
        assert "another task" not in next(r for r in result.tasks if r.id == task).feedback
    else:
        assert (speed.status, speed.message) == ("error", VerdictWithheld.message), (
            speed.message,
            speed.details,
        )
        assert result.grader_errors == [speed.grader_error] and "verdict withheld" in speed.grader_error
