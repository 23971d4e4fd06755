"""The host's side of a jail: its processes found in ``/proc``, a pids cgroup that caps
their number, and the files a jail uid left in world-writable places.

Plain helpers of `grader.jail`, which decides when to use them.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["SHARED_DIRS", "new_pids_cgroup", "pids_cgroup_root", "real_uid", "remove_files_of", "scan", "state", "state_or_gone"]


def pids_cgroup_root() -> Path | None:
    """A pids cgroup directory this process may create groups in (cgroup v2 or v1), or None."""
    for root, controllers in ((Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cgroup.controllers")),
                              (Path("/sys/fs/cgroup/pids"), None)):
        if controllers is not None and (not controllers.is_file() or "pids" not in controllers.read_text().split()):
            continue
        if (root / "cgroup.procs").is_file() and os.access(root, os.W_OK):
            return root
    return None


def new_pids_cgroup(nproc: int) -> Path | None:
    """A fresh cgroup allowing at most `nproc` processes and threads, or None where there is none."""
    root = pids_cgroup_root()
    if root is None or nproc <= 0:
        return None
    group = root / f"minitorch-grader-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(nproc))
    except OSError:
        return None
    return group


#: World-writable places where a process of the ``uid`` tier can leave files behind.
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def remove_files_of(uid: int, roots: Sequence[str] = SHARED_DIRS) -> None:
    """Delete what `uid` created in the world-writable directories (its processes are gone).

    A uid can only create entries in directories it may write: its own (removed whole) and
    world-writable ones, so the walk descends only into those.
    """
    todo = [Path(r) for r in roots if os.path.isdir(r)]
    while todo:
        d = todo.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
                if st.st_uid == uid:
                    if e.is_dir(follow_symlinks=False):
                        shutil.rmtree(e.path, ignore_errors=True)
                    else:
                        os.unlink(e.path)
                elif e.is_dir(follow_symlinks=False) and st.st_mode & stat.S_IWOTH:
                    todo.append(Path(e.path))
            except OSError:
                continue


def scan(member: Callable[[int], bool]) -> list[int]:
    """The live (not zombie) processes, other than this one, for which `member(pid)` holds."""
    me = os.getpid()
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != me:
            try:
                if member(int(entry.name)) and state(int(entry.name)) != "Z":
                    out.append(int(entry.name))
            except (OSError, ValueError):
                continue
    return out


def state(pid: int) -> str:
    """The one-letter state of `pid` (R running, S sleeping, T stopped, Z zombie …)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def state_or_gone(pid: int) -> str:
    try:
        return state(pid)
    except OSError:
        return ""


def real_uid(pid: int) -> int:
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])
    return -1

