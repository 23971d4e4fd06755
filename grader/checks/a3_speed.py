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
  with new seeds; the ratio is taken from the best rounds.
  A ratio near the limit is measured once more and the better kept, so that a burst of
  load does not fail a kernel that is fast enough.

Kernels are compiled (and their output checked) in a first call that is not timed.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import numpy as np

from .base import CheckContext, CheckFailed, GraderBug, StudentError, check
from .inputs import I64, strides_for
from .probe import Answer, Probe, Ref, Tol, describe, diff

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
        return [(p.const(np.array(shape, dtype=I64)), p.const(np.array(strides, dtype=I64))) for shape, strides in layouts]

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
    made = [(p.full(math.prod(t.out_shape)), [p.random(s, n) for s, n in zip(call, t.sizes)]) for call in seeds]
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
        raise CheckFailed(f"{t.label}: {len(got.values)} outputs came back from {len(expected.values)} timed calls", FRESH)
    for i, (e, g) in enumerate(zip(expected.values, got.values)):
        where = f"{t.label}: wrong out after timed call {i + 1} of {len(expected.values)} ({when})"
        if t.exact:
            if g != e:
                raise CheckFailed(f"{where}: its values differ from the reference's",
                                  f"{FRESH}; the values must equal the reference's exactly (compared by their SHA-256).")
            continue
        problem = diff(e, g, TIMED_TOL)
        if problem:
            raise CheckFailed(f"{where}: {problem}", f"{FRESH}.\nexpected: {describe(e)}\ngot:      {describe(g)}")


def _reference_per_call(ctx: CheckContext, t: Timed) -> float:
    """The reference's seconds per call, from n calls minus none, n grown until the
    difference stands well above the noise of a round trip."""
    seeds = _seeds(t, 1)[0]
    _, t0 = ctx.timed_reference_child([_repeated(t, seeds, 0)])
    n = 4
    while True:
        _, tn = ctx.timed_reference_child([_repeated(t, seeds, n)])
        if tn - t0 >= RELIABLE_S or n >= 512:
            break
        n *= 4
    return max((tn - t0) / n, 1e-6)


def _measure(ctx: CheckContext, t: Timed, calls: int) -> tuple[float, dict[str, float]]:
    """Seconds per call of both sides over `ROUNDS` interleaved rounds; their ratio."""
    run = {"student": ctx.timed_child, "reference": ctx.timed_reference_child}
    best = {"student": math.inf, "reference": math.inf}
    setup = {"student": math.inf, "reference": math.inf}
    for r in range(ROUNDS):
        timed, spare = _seeds(t, calls), _seeds(t, calls)
        outputs: dict[str, Answer] = {}
        for who in ("student", "reference") if r % 2 == 0 else ("reference", "student"):
            # set-up batch and timed batch in a random order: a child cannot prepare
            # (fault in memory, say) for the timed batch only
            for is_timed in (True, False) if secrets.randbelow(2) else (False, True):
                (answer,), seconds = run[who]([_batch(t, timed if is_timed else spare, run=is_timed)])
                if is_timed:
                    outputs[who], best[who] = answer, min(best[who], seconds)
                elif answer.error is not None:
                    raise StudentError(t.label, answer.error, FRESH)
                else:
                    setup[who] = min(setup[who], seconds)
        _check_outputs(t, outputs["reference"], outputs["student"], f"round {r + 1}")
    slack = SETUP_SLACK * max(best["reference"] - setup["reference"], 0.0)
    setup["student"] = min(setup["student"], setup["reference"] + slack)
    times = {w: max(best[w] - setup[w], 1e-9) / calls for w in best}
    return times["student"] / times["reference"], times


def _speed(ctx: CheckContext, t: Timed) -> float:
    """The ratio student / reference of the seconds per call of kernel `t`."""
    limit = _threshold(ctx)
    seeds = _seeds(t, 1)
    (mine,), _ = ctx.timed_child([_batch(t, seeds)])  # compiles: not timed
    (ref,), _ = ctx.timed_reference_child([_batch(t, seeds)])
    _check_outputs(t, ref, mine, "the first call, before timing")
    per_call = _reference_per_call(ctx, t)
    calls = int(max(MIN_CALLS, min(math.ceil(TARGET_S / per_call), t.most_calls())))

    # A kernel far slower than the limit is judged on one call: `calls` calls (sized for
    # the reference) could take minutes and end as a timeout instead of a verdict. Only a
    # call long enough to be measured alone qualifies (and this can only fail a kernel).
    _, s0 = ctx.timed_child([_batch(t, _seeds(t, 1), run=False)])
    (one,), s1 = ctx.timed_child([_batch(t, _seeds(t, 1))])
    if one.error is not None:
        raise StudentError(t.label, one.error, FRESH)
    once = max(s1 - s0, 1e-9) / per_call
    if s1 - s0 >= RELIABLE_S and once > 2 * limit:
        ctx.services.timings.append((t.label, s1 - s0, per_call, once, 1))
        return once

    ratio, times = _measure(ctx, t, calls)
    if limit < ratio < 2 * limit:  # near the limit: once more
        again, times2 = _measure(ctx, t, calls)
        if again < ratio:
            ratio, times = again, times2
    ctx.services.timings.append((t.label, times["student"], times["reference"], ratio, calls))
    return ratio


def _threshold(ctx: CheckContext) -> float:
    perf = getattr(ctx.services.task, "performance", None)
    if perf is None:
        raise GraderBug(f"check {ctx.check.name} needs [tasks.performance] max_ratio in the manifest")
    return float(perf.max_ratio)


def _verdict(ctx: CheckContext, results: list[tuple[str, float]]) -> str:
    limit = _threshold(ctx)
    shown = ", ".join(f"{name} {r:.2f}×" for name, r in results)
    for name, ratio in results:
        if ratio > limit:
            timings = "\n".join(
                f"{lab}: yours {s * 1e3:.2f} ms, reference {r * 1e3:.2f} ms per run (ratio {q:.2f}, "
                + (f"best of {ROUNDS} rounds of {n} calls, each on fresh inputs)" if n > 1 else "one call: far over the limit)")
                for lab, s, r, q, n in ctx.services.timings
            )
            raise CheckFailed(f"{name} is {ratio:.1f}× slower than the reference (limit {limit:g}×); all: {shown}", timings)
    return f"time / reference: {shown} (limit {limit:g}×)"


# ---------------------------------------------------------------------------- the checks

ELEMENTWISE = (64, 1250, 5)
ORDER = (2, 1, 0)
PERMUTED = (ELEMENTWISE, strides_for(ELEMENTWISE, ORDER))
ON = f"on a {ELEMENTWISE} tensor stored in order {ORDER}"
BIAS = (1250, 1)
REDUCED = (ELEMENTWISE[0], 1, ELEMENTWISE[2])
TASK_3_1 = [
    Timed("map", f"fast_ops.tensor_map(neg) {ON}", ("tensor_map", "neg"), (PERMUTED,), ELEMENTWISE, exact=True),
    Timed("zip", f"fast_ops.tensor_zip(mul) with b {BIAS} {ON}", ("tensor_zip", "mul"),
          (PERMUTED, (BIAS, strides_for(BIAS))), ELEMENTWISE, exact=True),
    Timed("reduce", f"fast_ops.tensor_reduce(add) over dim 1 {ON}", ("tensor_reduce", "add"), (PERMUTED,), REDUCED, (1,)),
]
MATMUL = (8, 96, 96)
TASK_3_2 = Timed("matmul", f"fast_ops.tensor_matmul on {list(MATMUL)} @ {list(MATMUL)}", None,
                 ((MATMUL, strides_for(MATMUL)), (MATMUL, strides_for(MATMUL))), MATMUL)


@check("a3", "fast_map_zip_reduce_speed", kind="performance", timeout_scale=4.0)
def fast_map_zip_reduce_speed(ctx: CheckContext) -> str:
    """The kernels of task 3.1 — fast_ops.tensor_map(neg), tensor_zip(mul),
    tensor_reduce(add), called directly — on permuted and broadcast inputs of 400k
    elements, fresh for every call: time as a ratio to the reference's kernels of the task,
    timed in the same run."""
    return _verdict(ctx, [(t.name, _speed(ctx, t)) for t in TASK_3_1])


@check("a3", "fast_matmul_speed", kind="performance", timeout_scale=4.0)
def fast_matmul_speed(ctx: CheckContext) -> str:
    """fast_ops.tensor_matmul (the kernel of task 3.2, called directly) on [8, 96, 96] @
    [8, 96, 96], fresh for every call: time as a ratio to the reference's kernel of the
    task, timed in the same run."""
    return _verdict(ctx, [(TASK_3_2.name, _speed(ctx, TASK_3_2))])
