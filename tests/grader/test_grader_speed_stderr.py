"""A3's speed checks are not changed by what the student's code prints on standard error.

The question: grader children once ran with `minitorch.compile_notice` on, and the
once-per-out gaming kernels of `tests/grader/test_grader_speed_gaming.py` then passed their speed
check in CI. If a line on stderr (or the thread or timer that prints it) could change what
the check measures, a student could print their way past it. So these kernels print, from
the student's own code:

* on their first call (the earliest student code can run in A3: every fence is the body of
  a kernel, and Numba compiles kernels when they are first called, not at import);
* from a background thread that never stops writing, and from a timer that re-arms itself;
* on every call, the timed calls included.

The child's stdout and stderr go to pipes that the parent empties into a capped buffer
(`grader.sandbox.child_process.OutputDrain`), and the student's processes are stopped while the
reference is timed, so the lines themselves cannot make the student look faster or the
reference slower. Graded: the slow once-per-out kernels must still fail their speed check,
and the reference's kernels with the same printing must still pass it.

What did change the verdict in CI is the load of the machine, with or without printing: on
two busy cores the parallel reference kernels time several times slower than they are
(GNU OpenMP, Numba's threading layer there, spins at every barrier by default, so a kernel
waits for its other thread to be scheduled), while a serial kernel barely slows down; and
a thread in the student's process (this one included) makes a *parallel* kernel of the
student's faster there. So the grader starts its children with ``OMP_WAIT_POLICY=PASSIVE``
(`grader.sandbox.child_process`): threads sleep at barriers, and both effects are gone from the
measurements. Without that policy these tests and the gaming tests fail on a loaded machine.
The check also compares the CPU time both children ran (`grader.checks.timing`), which the
load does not change: a thread that only prints costs the student next to nothing there.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.core.fences import find_fences
from grader.core.manifest import repo_root
from test_grader_speed_gaming import SLOW_REDUCE, _checks, _grade, once_per_out, slow_matmul

pytestmark = [pytest.mark.grader, pytest.mark.slow]

#: Python run once in the child (by the kernel's first call, in Numba's object mode): a
#: first line, a thread that writes a line every 2 ms for as long as the process lives, and
#: a timer that re-arms itself to write a line every 4 ms (often enough that the output the
#: grader keeps shows both). `say` is what every call runs.
NOISE = """
import sys, threading, time

def say(what):
    sys.stderr.write("student stderr: " + what + " " + "." * 100 + "\\n")
    sys.stderr.flush()

def chatter():
    while True:
        say("background thread")
        time.sleep(0.002)

def tick():
    say("timer")
    timer = threading.Timer(0.004, tick)
    timer.daemon = True
    timer.start()

say("first call")
threading.Thread(target=chatter, daemon=True).start()
tick()
"""


def noisy(body: str) -> str:
    """`body`, after a block that starts the printing (once per process) and prints one line
    on every call (Python inside the compiled kernel, through Numba's object mode)."""
    return f"""
with numba.objmode():
    noise = np.__dict__.get("_stderr_noise")
    if noise is None:
        noise = {{}}
        exec({NOISE!r}, noise)
        np.__dict__["_stderr_noise"] = noise
    noise["say"]("kernel call")
{body.strip(chr(10))}
"""


def reference_body(task: str, function: str) -> str:
    """The kit's own body of the fence of `task` in `function` of `minitorch/fast_ops.py`."""
    path = repo_root() / "minitorch" / "fast_ops.py"
    fence = next(
        f
        for f in find_fences(path.read_text(encoding="utf-8"), str(path))
        if (f.task, f.function) == (task, function)
    )
    return textwrap.dedent("".join(fence.body))


MATMUL = ("3.2", "tensor_matmul")
REDUCE = ("3.1", "tensor_reduce._reduce")
SPEED = {"3.2": "fast_matmul_speed", "3.1": "fast_map_zip_reduce_speed"}


def _printed(output: str) -> None:
    """The child did print: the thread's and the timer's lines are in the output the grader
    kept of it. (What it keeps is the tail of the first `Limits.output_cap` bytes, so the
    first call's line may have scrolled out; the thread is started by that first call, and
    every call prints from the same block, before the kernel's own code.)"""
    for what in ("background thread", "timer"):
        assert f"student stderr: {what}" in output, (what, output[-3000:])


@pytest.mark.parametrize(
    "fence, slow",
    [(MATMUL, slow_matmul(4)), (REDUCE, SLOW_REDUCE)],
    ids=["matmul-once-per-out", "reduce-once-per-out"],
)
def test_a_slow_gaming_kernel_that_prints_on_stderr_still_fails_its_speed_check(
    tmp_path: Path, fence: tuple, slow: str
) -> None:
    task = fence[0]
    result = _grade(tmp_path, task, {fence: noisy(once_per_out(slow))})
    checks = _checks(result, task)
    speed = checks[SPEED[task]]
    assert all(c.status == "passed" for name, c in checks.items() if name != speed.name), (
        checks
    )  # the kernel is correct
    assert speed.status == "failed", (speed.message, speed.details)
    assert "slower than the reference (limit 3×)" in speed.message, speed.message
    _printed(result.output)


@pytest.mark.parametrize("fence", [MATMUL, REDUCE], ids=["matmul", "reduce"])
def test_the_reference_kernel_that_prints_as_much_still_passes(tmp_path: Path, fence: tuple) -> None:
    task = fence[0]
    result = _grade(tmp_path, task, {fence: noisy(reference_body(*fence))})
    row = next(r for r in result.tasks if r.id == task)
    assert row.score == row.max_points, row.feedback
    speed = _checks(result, task)[SPEED[task]]
    assert speed.message.startswith("time / reference:"), speed.message
    _printed(result.output)
