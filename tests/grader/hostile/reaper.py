"""Run one grading command as a child subreaper and report what it left behind.

    python reaper.py '{"argv": [...], "cwd": DIR, "env": {...}, "stdout": FILE, "stderr": FILE,
                       "timeout": S, "results": FILE, "linger": S}'

Prints one JSON line: the command's exit status, whether it ever stopped, the results
file's bytes right after it exited and again after `linger` seconds, and the processes
it left behind (their command lines).

Why a separate process: this one becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``),
so every process the grading command starts and orphans — a setsid + double-forked
grandchild included — is re-parented here instead of to init, and can be found and killed
afterwards. No process-name guessing, nothing else on the machine touched: what is left
are exactly the descendants of this process. (A process inside a PID namespace goes to
that namespace's init instead, and dies with it.)

A grading command that is stopped (SIGSTOP by the submission) is continued and the stop
recorded, so a stopped grader costs the test one violation, not a hang; one that runs
past `timeout` is killed.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _state(pid: int) -> str:
    """The one-letter state of /proc/PID/stat ("" when gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def descendants(root: int) -> dict[int, str]:
    """pid → command line of every live descendant of `root` (zombies excluded)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    out: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                out[pid] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
        except OSError:
            continue
        todo += children.get(pid, [])
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode(errors="replace")
    except IsADirectoryError:
        return "<a directory>"
    except OSError:
        return None


def main(spec: dict) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    env = {k: v for k, v in os.environ.items() if k not in spec.get("unset", [])}
    env.update(spec["env"])
    report: dict = {"stopped": False, "timed_out": False}
    with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
        proc = subprocess.Popen(
            spec["argv"], cwd=spec["cwd"], env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        deadline = time.monotonic() + spec["timeout"]
        while proc.poll() is None:
            if _state(proc.pid) == "T":  # stopped by a signal: record it, let it go on
                report["stopped"] = True
                os.kill(proc.pid, signal.SIGCONT)
            if time.monotonic() > deadline:
                report["timed_out"] = True
                proc.kill()
                proc.wait()
                break
            time.sleep(0.02)
    report["rc"] = proc.returncode
    report["results_at_exit"] = _read(spec["results"])
    time.sleep(spec["linger"])
    report["results_later"] = _read(spec["results"])
    left = descendants(os.getpid())
    report["left"] = sorted(left.values())
    for _ in range(100):  # kill what is left (and what it forks meanwhile), reap it all
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        left = descendants(os.getpid())
        if not left:
            break
        time.sleep(0.05)
    return report


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
