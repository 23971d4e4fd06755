"""Hole 1: the child reaches the grader's processes, its results and the network.

Every attack here is written into task 1.1 (``central_difference``, which no other task
uses) and then returns a wrong answer, so the honest score of the task is 0: whatever the
attack achieves shows in what it leaves behind (a forged or missing results file, a
stopped or killed grader, a process alive after grading, a secret in the feedback, a
connection to the test's listener), which the test observes from outside.
"""

from __future__ import annotations

from grader.sandbox.tiers import private_network

from .attack import Attack
from .snippets import FORGED, MARKED, ONCE

CD = ("1.1", "central_difference")

# A process that outlives grading and rewrites the results file whenever it does not hold
# the forgery; it gives up after 60 s (so a broken jail does not leave it running forever).
_REWRITER = [
    "import sys, time",
    "results, marker, fake = sys.argv[1], sys.argv[2], sys.argv[3]",
    "end = time.monotonic() + 60",
    "while time.monotonic() < end:",
    "    try:",
    "        with open(results) as fh:",
    "            if marker not in fh.read():",
    "                with open(results, 'w') as out:",
    "                    out.write(fake)",
    "    except OSError:",
    "        pass",
    "    time.sleep(0.05)",
]

GRANDCHILD = (
    ONCE
    + FORGED
    + f"""
import os
code = "\\n".join({_REWRITER!r})
if _once("grandchild"):
    first = os.fork()
    if first == 0:  # setsid + a second fork: out of the child's process group and session
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-S", "-c", code, T["results"], T["marker"], _forged()])
        finally:
            os._exit(0)
    os.waitpid(first, 0)
return 0.0
"""
)

KILL_GRADER = (
    MARKED
    + FORGED
    + r"""
import signal
for pid in _marked():
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
try:
    with open(T["results"], "w") as fh:
        fh.write(_forged())
except OSError:
    pass
return 0.0
"""
)

STOP_GRADER = (
    MARKED
    + r"""
import signal
for pid in _marked():
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
return 0.0
"""
)

# The grader's environment, read from every process the child can see (its parent, pid 1
# of a namespace, the grading process) through /proc/PID/environ and the stack in
# /proc/PID/mem; what is found goes into the exception message, i.e. the feedback.
READ_ENVIRON = (
    MARKED
    + r"""
import re
key = (T["secret_name"] + "=").encode()
found = set()
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
for pid in pids:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            for item in fh.read().split(b"\0"):
                if item.startswith(key):
                    found.add(item[len(key):].decode(errors="replace"))
    except OSError:
        pass
for pid in {os.getppid(), 1, *_marked()}:
    try:
        with open(f"/proc/{pid}/maps") as fh:
            stacks = [line.split()[0] for line in fh if line.rstrip().endswith("[stack]")]
        with open(f"/proc/{pid}/mem", "rb") as mem:
            for span in stacks:
                lo, hi = (int(x, 16) for x in span.split("-"))
                mem.seek(lo)
                for m in re.finditer(re.escape(key) + rb"([0-9A-Za-z_-]+)", mem.read(min(hi - lo, 1 << 24))):
                    found.add(m.group(1).decode())
    except (OSError, ValueError, OverflowError):
        pass
print("environment of the grader:", sorted(found))
raise RuntimeError(f"environment of the grader: {sorted(found)}")
"""
)

# os.replace(tmp, path) cannot replace a directory: the grader's results would be lost.
RESULTS_DIRECTORY = r"""
import os
try:
    if os.path.isfile(T["results"]):
        os.remove(T["results"])
    os.makedirs(os.path.join(T["results"], "not-a-file"), exist_ok=True)
except OSError:
    pass
return 0.0
"""

NETWORK = r"""
import socket
try:
    with socket.create_connection(("127.0.0.1", T["port"]), timeout=2) as conn:
        conn.sendall(T["marker"].encode())
except OSError:
    pass
return 0.0
"""

# Write a passing table straight into the grading process's stdout and stderr.
FORGE_GRADER_OUTPUT = (
    MARKED
    + r"""
fake = f"\n  1.1   Central difference   10 / 10   passed   all checks passed\n  total   100 %   {T['marker']}\n"
for pid in _marked():
    for fd in (1, 2):
        try:
            with open(f"/proc/{pid}/fd/{fd}", "w") as fh:
                fh.write(fake)
        except OSError:
            pass
return 0.0
"""
)

ATTACKS = [
    Attack(
        "grandchild_rewrites_results",
        "1 processes",
        "a setsid + double-fork grandchild outlives grading and rewrites results.json after the grader wrote it",
        "a1",
        {CD: GRANDCHILD},
        linger=2.0,
    ),
    Attack(
        "kill_grader_and_forge",
        "1 processes",
        "SIGKILL the grading process, then write a forged results.json in its place",
        "a1",
        {CD: KILL_GRADER},
    ),
    Attack(
        "stop_grader",
        "1 processes",
        "SIGSTOP the grading process so that grading never finishes",
        "a1",
        {CD: STOP_GRADER},
    ),
    Attack(
        "read_grader_environ",
        "1 processes",
        "read the grader's environment (/proc/PID/environ, /proc/PID/mem) into the feedback",
        "a1",
        {CD: READ_ENVIRON},
    ),
    Attack(
        "results_path_directory",
        "1 processes",
        "make the results path a directory, so that writing the results fails",
        "a1",
        {CD: RESULTS_DIRECTORY},
    ),
    Attack(
        "network_connect",
        "1 processes",
        "open a TCP connection to a port the test listens on",
        "a1",
        {CD: NETWORK},
        gets_through={}
        if private_network()
        else {
            "uid": "namespaces are forbidden here: the uid tier has no network of its own (grader.sandbox.tiers)"
        },
    ),
    Attack(
        "forge_grader_output",
        "1 processes",
        "write a passing table into the grading process's stdout through /proc/PID/fd/1",
        "a1",
        {CD: FORGE_GRADER_OUTPUT},
    ),
]
