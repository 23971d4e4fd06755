"""Performance checks of stage A3: the student's kernels of tasks 3.1 and 3.2 timed against
the reference's kernels of the same tasks.

Both sides call the task's kernels of `fast_ops` directly (`tensor_map(neg)`, …,
`tensor_matmul`; never the reference's tuned loops), each in a child of its own under the
same limits and through the same channel: the student's child, and a child running the
kit's minitorch (`CheckContext.timed_reference_child`, which stops every process of the
student while the reference runs, so the student cannot slow it down). The parent times
round trips; nothing a child says about time is used.

The measurement is built so that only doing the work, on every call, makes a kernel fast:

* **Fresh inputs for every timed call.** A timed batch is one probe that makes k input
  storages of random values and k zero-filled outputs, then calls the kernel once on
  each. The values are drawn in the child from seeds that the parent takes from the
  operating system's entropy when it builds the batch, so no submission can know them
  earlier (a fixed seed, as the other checks use, could be precomputed). A kernel that
  remembers answers, or skips the work when `out` already holds one, works on every call.
* **Every timed output is checked.** The batch returns every output, and the parent
  compares each with the reference child's output for the same seeds (the reference runs
  the same batch in the same round). The outputs of `map(neg)` and `zip(mul)` must equal
  the reference's to the bit (one correctly rounded operation per element), so for them
  the child returns the SHA-256 of each output instead of 3 MB of values: no shortcut
  gives that digest without the values themselves. A sum or a random projection would
  not do: computed in the child (the student's process), it can be had more cheaply than
  the outputs (w·(AB) = (wA)B for a matrix product).
* **Set-up is not counted.** The same batch without the kernel calls (same sizes, other
  seeds) measures making the inputs and moving the outputs, and is subtracted. A child
  could stall in that batch to have more subtracted, so the student's set-up counts at
  most as the reference child's plus a quarter of the reference's kernel time
  (`SETUP_SLACK`): stalling gains at most 0.25 of a ratio, and an honest child whose
  set-up is a little slower than the reference's (another process, another jail) loses
  nothing.
* **Interleaved rounds.** Each round runs the student's batches and the reference's
  (which goes first alternates; each side's set-up and timed batches in a random order)
  with new seeds; the ratio is taken from the best rounds. A verdict other than a pass
  near the limit is measured once more and the better kept.
* **Load.** On a busy machine (``grader batch`` runs one worker per core) the wall time of
  a parallel kernel grows far more than a serial one's, as each of its threads waits for a
  core: beside two busy loops on two cores a serial kernel doing 4× the work once timed
  2.2× the reference, under the limit of 3×. So the parent also reads, from the kernel,
  the CPU time every process of each child ran during each batch (`grader.sandbox.cpu_clock`;
  both children run on the same CPUs, never at once): a kernel that does k× the work
  costs k× the CPU time however busy the machine, and its set-up is subtracted as for the
  wall time. `Ratios.verdict`: a CPU-time ratio over the limit fails; else the wall ratio
  judges, but a wall ratio over the limit measured while a timed batch waited for a CPU
  more than `BUSY` of its time (the scheduler's run-queue delay) is no verdict: the check
  is withheld (`VerdictWithheld`: no points, a grader error telling the staff to grade it
  again on a quiet machine), since an honest kernel can time slow there.

Kernels are compiled (and their output checked) in a first call that is not timed.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import numpy as np

from grader.sandbox.cpu_clock import Usage, usage
from ..base import CheckContext, CheckFailed, GraderBug, StudentError
from ..inputs import I64, strides_for
from ..probe import Answer, Probe, Ref, Tol, describe, diff
from ..runner import VerdictWithheld
from ..timing import BUSY, RANK, Ratios, Run


#: A difference of round trips at least this long (seconds) is taken as a measurement;
#: shorter ones are within the noise of a round trip.
RELIABLE_S = 0.025
#: Rounds of a measurement (each: the student's batches and the reference's).
ROUNDS = 5
#: Kernel time of the reference in one timed batch (seconds) that k is sized for …
TARGET_S = 0.05
#: … unless the batch's inputs and outputs would exceed this many bytes (they are made in
#: both children) …
BATCH_BYTES = 64 * 2**20
#: … or the outputs returned (values, not digests) this many.
RETURN_BYTES = 16 * 2**20
MIN_CALLS = 3
#: How much longer than the reference child's the student's set-up may count, as a
#: fraction of the reference's kernel time (see the module docstring).
SETUP_SLACK = 0.25
#: Timed outputs only have to show that the work was done (a skipped or remembered call
#: is wrong by the size of the values); a kernel that sums in another order passes.
TIMED_TOL = Tol(rtol=1e-7, atol=1e-9)
FRESH = (
    "every timed call gets inputs of fresh random values in [0, 1) and its own out filled "
    "with zeros; out must hold the right answer after every call"
)

Layout = tuple[tuple[int, ...], tuple[int, ...]]  # (shape, strides) of a storage


@dataclass(frozen=True)
class Timed:
    """One kernel of `fast_ops` called on raw storages: what is timed and how to call it.

    Attributes:
        name: the kernel's name in the verdict ("map").
        label: the call, as shown to the student.
        factory: ("tensor_map", "neg") for ``fast_ops.tensor_map(operators.neg)``; None for
            ``fast_ops.tensor_matmul`` itself.
        inputs: (shape, strides) of each input storage (its size is the shape's product).
        out_shape: the shape of `out` (row-major).
        extra: arguments after the storages (the reduced dimension).
        exact: outputs must equal the reference's to the bit: the child returns their
            SHA-256 (see the module docstring); otherwise the values, compared with
            `TIMED_TOL` (a sum may be taken in another order).
    """

    name: str
    label: str
    factory: tuple[str, str] | None
    inputs: tuple[Layout, ...]
    out_shape: tuple[int, ...]
    extra: tuple[int, ...] = ()
    exact: bool = False

    @property
    def sizes(self) -> list[int]:
        return [math.prod(shape) for shape, _ in self.inputs]

    def most_calls(self) -> int:
        """The most calls a batch may make within `BATCH_BYTES` and `RETURN_BYTES`."""
        out = 8 * math.prod(self.out_shape)
        made = BATCH_BYTES // (8 * sum(self.sizes) + out)
        return made if self.exact else min(made, RETURN_BYTES // out)

    def kernel(self, p: Probe) -> Ref:
        if self.factory is None:
            return p.get("minitorch.fast_ops.tensor_matmul")
        factory, fn = self.factory
        return p.call(f"minitorch.fast_ops.{factory}", p.get(f"minitorch.operators.{fn}"))

    def layouts(self, p: Probe) -> list[tuple[Ref, Ref]]:
        """(shape, strides) registers of `out` and of each input, made once per probe."""
        layouts = [(self.out_shape, strides_for(self.out_shape)), *self.inputs]
        return [
            (p.const(np.array(shape, dtype=I64)), p.const(np.array(strides, dtype=I64)))
            for shape, strides in layouts
        ]

    def args(self, layouts: list[tuple[Ref, Ref]], out: Ref, storages: list[Ref]) -> list:
        """(out, out_shape, out_strides, storage, shape, strides, …, *extra)."""
        args: list = []
        for storage, (shape, strides) in zip([out, *storages], layouts):
            args += [storage, shape, strides]
        return args + list(self.extra)


def _seeds(t: Timed, calls: int) -> list[list[int]]:
    """Fresh seeds, one per input of each call, from the operating system's entropy."""
    return [[secrets.randbits(63) for _ in t.inputs] for _ in range(calls)]


def _batch(t: Timed, seeds: list[list[int]], run: bool = True) -> Probe:
    """One call per entry of `seeds`, each on its own new inputs and zero-filled `out`, all
    made before the first call; returns every `out` (or its digest). With `run` False: the
    same inputs and outputs, no call (the set-up that is subtracted)."""
    p = Probe(t.label)
    kernel, layouts = t.kernel(p), t.layouts(p)
    made = [
        (p.full(math.prod(t.out_shape)), [p.random(s, n) for s, n in zip(call, t.sizes)]) for call in seeds
    ]
    if run:
        for out, storages in made:
            p.call(kernel, *t.args(layouts, out, storages))
    return p.returns(*(p.digest(out) if t.exact else out for out, _ in made))


def _repeated(t: Timed, seeds: list[int], n: int) -> Probe:
    """The kernel run `n` times on one input set (timing the trusted reference only)."""
    p = Probe(t.label)
    kernel, layouts = t.kernel(p), t.layouts(p)
    out = p.full(math.prod(t.out_shape))
    storages = [p.random(s, size) for s, size in zip(seeds, t.sizes)]
    p.repeat(n, kernel, *t.args(layouts, out, storages))
    return p.returns()


def _check_outputs(t: Timed, expected: Answer, got: Answer, when: str) -> None:
    """Every `out` of a batch against the reference's for the same seeds."""
    if got.error is not None:
        raise StudentError(t.label, got.error, FRESH)
    if len(got.values) != len(expected.values):
        raise CheckFailed(
            f"{t.label}: {len(got.values)} outputs came back from {len(expected.values)} timed calls", FRESH
        )
    for i, (e, g) in enumerate(zip(expected.values, got.values)):
        where = f"{t.label}: wrong out after timed call {i + 1} of {len(expected.values)} ({when})"
        if t.exact:
            if g != e:
                raise CheckFailed(
                    f"{where}: its values differ from the reference's",
                    f"{FRESH}; the values must equal the reference's exactly (compared by their SHA-256).",
                )
            continue
        problem = diff(e, g, TIMED_TOL)
        if problem:
            raise CheckFailed(
                f"{where}: {problem}", f"{FRESH}.\nexpected: {describe(e)}\ngot:      {describe(g)}"
            )


def _usage(session: object) -> Usage:
    """CPU time and run-queue wait so far of every process of a session's child (its jail's
    members, read from the kernel: nothing the child says)."""
    jail = getattr(getattr(session, "child", None), "jail", None)
    return usage(jail.members()) if jail is not None else Usage()


def _run(ctx: CheckContext, who: str, probes: list[Probe]) -> tuple[list[Answer], Run]:
    """Run `probes` in the student's child or the reference's, timed: wall and CPU."""
    if who == "student":
        session, timed = ctx.services.student, ctx.timed_child
    else:
        ref = ctx.services.reference_child
        session, timed = (ref.get() if ref is not None else None), ctx.timed_reference_child
    before = _usage(session)
    answers, wall = timed(probes)
    spent = _usage(session) - before
    return answers, Run(wall, max(spent.cpu, 0.0), max(spent.waited, 0.0))


def _reference_per_call(ctx: CheckContext, t: Timed) -> Run:
    """The reference's seconds per call (wall and CPU), from n calls minus none, n grown
    until the difference stands well above the noise of a round trip."""
    seeds = _seeds(t, 1)[0]
    _, r0 = _run(ctx, "reference", [_repeated(t, seeds, 0)])
    n = 4
    while True:
        _, rn = _run(ctx, "reference", [_repeated(t, seeds, n)])
        if rn.wall - r0.wall >= RELIABLE_S or n >= 512:
            break
        n *= 4
    return Run(
        max((rn.wall - r0.wall) / n, 1e-6),
        max((rn.cpu - r0.cpu) / n, 0.0),
        max((rn.waited - r0.waited) / n, 0.0),
    )


def _per_call(timed: Run, setup: Run, calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per call of a timed batch, its set-up subtracted."""
    return max(timed.wall - setup.wall, 1e-9) / calls, max(timed.cpu - setup.cpu, 1e-9) / calls


def _measure(ctx: CheckContext, t: Timed, calls: int) -> Ratios:
    """Both sides over `ROUNDS` interleaved rounds: the best (shortest) timed batch of each
    side, the set-up's fastest subtracted (in wall and in CPU time alike)."""
    best: dict[str, Run] = {}  # the shortest wall time and the least CPU time of a side's timed batches
    setup: dict[str, Run] = {}
    waits: dict[str, float] = {}  # the wait share of each side's timed batch of shortest wall time
    for r in range(ROUNDS):
        timed, spare = _seeds(t, calls), _seeds(t, calls)
        outputs: dict[str, Answer] = {}
        for who in ("student", "reference") if r % 2 == 0 else ("reference", "student"):
            # set-up batch and timed batch in a random order: a child cannot prepare
            # (fault in memory, say) for the timed batch only
            for is_timed in (True, False) if secrets.randbelow(2) else (False, True):
                (answer,), run = _run(ctx, who, [_batch(t, timed if is_timed else spare, run=is_timed)])
                if is_timed:
                    outputs[who], old = answer, best.get(who, run)
                    if run.wall <= old.wall:
                        waits[who] = run.wait_share()
                    best[who] = Run(min(old.wall, run.wall), min(old.cpu, run.cpu))
                elif answer.error is not None:
                    raise StudentError(t.label, answer.error, FRESH)
                else:
                    old = setup.get(who, run)
                    setup[who] = Run(min(old.wall, run.wall), min(old.cpu, run.cpu))
        _check_outputs(t, outputs["reference"], outputs["student"], f"round {r + 1}")
    ref_wall, ref_cpu = _per_call(best["reference"], setup["reference"], 1)
    s = setup["student"]  # counted at most as the reference's plus SETUP_SLACK of its kernel time
    setup["student"] = Run(
        min(s.wall, setup["reference"].wall + SETUP_SLACK * ref_wall),
        min(s.cpu, setup["reference"].cpu + SETUP_SLACK * ref_cpu),
    )
    (sw, sc), (rw, rc) = (_per_call(best[w], setup[w], calls) for w in ("student", "reference"))
    measured = best["student"].cpu > 0 and best["reference"].cpu > 0
    return Ratios(sw / rw, sc / rc if measured else math.nan, max(waits.values()), sw, rw, calls)


def _once(ctx: CheckContext, t: Timed, per_call: Run, limit: float) -> Ratios | None:
    """A kernel far slower than the limit is judged on one call: `calls` calls (sized for
    the reference) could take minutes and end as a timeout instead of a verdict. Only a
    call long enough to be measured alone, and a failure, qualifies; else None."""
    _, s0 = _run(ctx, "student", [_batch(t, _seeds(t, 1), run=False)])
    (one,), s1 = _run(ctx, "student", [_batch(t, _seeds(t, 1))])
    if one.error is not None:
        raise StudentError(t.label, one.error, FRESH)
    wall, cpu = _per_call(s1, s0, 1)
    work = cpu / per_call.cpu if s1.cpu > 0 and per_call.cpu > 0 else math.nan
    once = Ratios(
        wall / per_call.wall, work, max(s1.wait_share(), per_call.wait_share()), wall, per_call.wall, 1
    )
    if s1.wall - s0.wall >= RELIABLE_S and once.wall > 2 * limit and once.verdict(limit) == "failed":
        return once
    return None


def _speed(ctx: CheckContext, t: Timed) -> Ratios:
    """Kernel `t` measured against the reference's (`Ratios`)."""
    limit = _threshold(ctx)
    seeds = _seeds(t, 1)
    (mine,), _ = ctx.timed_child([_batch(t, seeds)])  # compiles: not timed
    (ref,), _ = ctx.timed_reference_child([_batch(t, seeds)])
    _check_outputs(t, ref, mine, "the first call, before timing")
    per_call = _reference_per_call(ctx, t)
    calls = int(max(MIN_CALLS, min(math.ceil(TARGET_S / per_call.wall), t.most_calls())))
    ratios = _once(ctx, t, per_call, limit) or _measure(ctx, t, calls)
    if (
        ratios.calls > 1
        and ratios.verdict(limit) != "passed"
        and (ratios.wall < 2 * limit or ratios.work < 2 * limit)
    ):
        again = _measure(ctx, t, calls)  # near the limit, or a busy machine: once more, the better kept
        ratios = min(ratios, again, key=lambda r: (RANK[r.verdict(limit)], r.wall))
    ctx.services.timings.append((t.label, ratios.student, ratios.reference, ratios.wall, ratios.calls))
    return ratios


def _threshold(ctx: CheckContext) -> float:
    perf = getattr(ctx.services.task, "performance", None)
    if perf is None:
        raise GraderBug(f"check {ctx.check.name} needs [tasks.performance] max_ratio in the manifest")
    return float(perf.max_ratio)


def _figures(label: str, r: Ratios) -> str:
    how = (
        f"best of {ROUNDS} rounds of {r.calls} calls, each on fresh inputs"
        if r.calls > 1
        else "one call: far over the limit"
    )
    return (
        f"{label}: yours {r.student * 1e3:.2f} ms, reference {r.reference * 1e3:.2f} ms per run (ratio {r.wall:.2f}, "
        f"{how}); CPU time ratio {r.work:.2f}; waited for a CPU {100 * r.waited:.0f} % of the time"
    )


def _verdict(ctx: CheckContext, results: list[tuple[Timed, Ratios]]) -> str:
    """A failure stands over a withheld verdict; a withheld one over a pass."""
    limit = _threshold(ctx)
    shown = ", ".join(f"{t.name} {r.wall:.2f}×" for t, r in results)
    details = "\n".join(_figures(t.label, r) for t, r in results)
    verdicts = [(t, r, r.verdict(limit)) for t, r in results]
    for t, r, v in verdicts:
        if v == "failed" and r.work > limit:
            raise CheckFailed(
                f"{t.name} is {r.work:.1f}× slower than the reference (limit {limit:g}×) in CPU time per call "
                f"(the work it does, whatever the load); all: {shown}",
                details,
            )
        if v == "failed":
            raise CheckFailed(
                f"{t.name} is {r.wall:.1f}× slower than the reference (limit {limit:g}×); all: {shown}",
                details,
            )
    withheld = [(t, r) for t, r, v in verdicts if v == "withheld"]
    if withheld:
        t, r = withheld[0]
        what = f"timed {r.wall:.1f}×" if r.wall > limit else f"did {r.work:.1f}× the work (CPU time) of"
        raise VerdictWithheld(
            f"{t.name} {what} the reference (limit {limit:g}×) while the machine was too busy "
            f"to judge (a timed batch waited for a CPU {100 * r.waited:.0f} % of the time, over "
            f"{100 * BUSY:.0f} %); grade task {ctx.services.task.id if ctx.services.task else '?'} again "
            "on a quiet machine",
            details,
        )
    return f"time / reference: {shown} (limit {limit:g}×)"
