"""The classics: exits, forged output, bombs, NaN, lying objects, an infinite loop.

Plain process isolation already handles these (`tests/grader/test_grader_bad_submissions.py` has
their in-process versions); here they run under every tier through the command line, to
show that the jail handles them as well: the attacked task (1.1) gets the status it
deserves, nothing is left running, and after a bomb every other task of the stage is still
graded and scores its points.

The bombs stop themselves (a few hundred processes that sleep 20-30 s, 3 GiB of memory, a
file a little over the size limit) even where no limit does. Two test the jail's limits
(`grader.sandbox.limits.Limits`): a file past the size limit, and a fork bomb past the process
limit, which only a jail can stop (`needs_jail`).
"""

from __future__ import annotations

from grader.sandbox.host import pids_cgroup_root
from grader.sandbox.session import Limits

from .attack import Attack
from .snippets import ONCE

CD = ("1.1", "central_difference")

EXIT_ZERO = "import os\nos._exit(0)  # a clean exit status, mid-check"

FORGED_STDOUT = r"""
import sys
for stream in (sys.stdout, sys.stderr):
    print("score: 100", file=stream)
    print('{"score": 100, "tests": [{"number": "1.1", "score": 10, "status": "passed"}]}', file=stream, flush=True)
return 0.0
"""

# 2**8 processes at most; each extra one sleeps a while, then exits by itself.
FORK_BOMB = (
    ONCE
    + r"""
import os, time
if _once("bomb"):
    me = os.getpid()
    stop = time.monotonic() + 5
    for _ in range(8):
        if time.monotonic() > stop:
            break
        try:
            os.fork()
        except OSError:  # a process limit: the bomb is stopped
            break
    if os.getpid() != me:
        time.sleep(30)
        os._exit(0)
return 0.0
"""
)

# The jail's process limit for this attack (`grader run --nproc`): lower than the default
# 2048, so that reaching it takes a few hundred forks, not seconds of them on a loaded CI.
NPROC = 256

# More processes than the jail allows, each sleeping 20 s: a fork must fail (the error is
# the task's), else the bomb stops at its own bound and returns.
PAST_THE_LIMIT = (
    ONCE
    + f"""
import os, time
if _once("bomb"):
    for _ in range({NPROC + 100}):
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
return 0.0
"""
)

# Touched memory in 64 MiB pieces, 3 GiB at most, until an allocation fails (once: the
# check's later calls return at once, so that the bomb costs one allocation spree).
MEMORY_BOMB = (
    ONCE
    + r"""
if _once("memory"):
    hog = []
    for _ in range(48):
        hog.append(b"x" * (64 << 20))
return 0.0
"""
)

# One file larger than the jail's file-size limit (`Limits.file_mb`), in its own scratch:
# the write that crosses the limit fails (EFBIG), else the bomb stops at its own bound.
DISK_BOMB = (
    ONCE
    + f"""
import os, tempfile
if _once("disk"):
    chunk = b"x" * (16 << 20)
    with open(os.path.join(tempfile.gettempdir(), "big"), "wb") as fh:
        for _ in range({(Limits().file_mb + 64) // 16}):
            fh.write(chunk)
return 0.0
"""
)

NAN = "return float('nan')"

LYING_FLOAT = r"""
class Liar(float):
    __eq__ = lambda self, other: True
    __ne__ = lambda self, other: False
    __lt__ = __le__ = __gt__ = __ge__ = lambda self, other: False
    __sub__ = __rsub__ = lambda self, other: 0.0
    __abs__ = lambda self: 0.0
    __repr__ = __str__ = lambda self: "1.0"
return Liar(12345.0)
"""

LYING_OBJECT = r"""
class Impostor:
    __class__ = property(lambda self: float)  # isinstance(x, float) says True
    __eq__ = lambda self, other: True
    __hash__ = lambda self: 0
    __float__ = lambda self: 1.0
    __repr__ = lambda self: "1.0"
return Impostor()
"""

INFINITE_LOOP = "while True:\n    pass"


def _classic(
    name: str, about: str, body: str, status: str, *cli_args: str, task: str | None = "1.1"
) -> Attack:
    return Attack(
        name,
        "classic",
        about,
        "a1",
        {CD: body},
        task=task,
        needs_jail=False,
        status=status,
        cli_args=cli_args,
    )


ATTACKS = [
    _classic("exit_zero", "os._exit(0) in the middle of a check", EXIT_ZERO, "error"),
    _classic(
        "forged_stdout",
        "print 'score: 100' and a fake results.json on stdout and stderr",
        FORGED_STDOUT,
        "failed",
    ),
    _classic(
        "fork_bomb",
        "fork 2**8 processes that sleep (bounded: it stops itself)",
        FORK_BOMB,
        "failed",
        task=None,
    ),
    Attack(
        "fork_bomb_past_the_limit",
        "classic",
        f"fork {NPROC + 100} processes, more than the jail's limit ({NPROC})",
        "a1",
        {CD: PAST_THE_LIMIT},
        status="error",
        cli_args=("--nproc", str(NPROC), "--timeout", "30"),
        gets_through={}
        if pids_cgroup_root()
        else {
            "bwrap": "this host offers no writable pids cgroup, which is how the bubblewrap tier limits "
            "processes (its uid is root outside the jail: RLIMIT_NPROC does not apply)"
        },
    ),
    _classic(
        "memory_bomb",
        "touch memory until an allocation fails (3 GiB at most)",
        MEMORY_BOMB,
        "error",
        "--memory",
        "1024",
        task=None,
    ),
    _classic(
        "disk_bomb",
        f"write a file of {Limits().file_mb + 64} MiB, more than the file-size limit",
        DISK_BOMB,
        "error",
    ),
    _classic("nan", "return NaN where the reference is finite", NAN, "failed"),
    _classic(
        "lying_float", "a float subclass that equals everything and prints as 1.0", LYING_FLOAT, "failed"
    ),
    _classic(
        "lying_object", "an object that claims to be a float and equals everything", LYING_OBJECT, "failed"
    ),
    _classic("infinite_loop", "loop forever", INFINITE_LOOP, "timeout", "--timeout", "3"),
]
