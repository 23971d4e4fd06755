"""A total cap on what a jail writes: its bytes summed while it runs, the jail killed past it.

    watcher = DiskWatcher(cap, DiskUse(rw=..., shared=..., uid=..., tmpfs=..., members=...), kill)
    watcher.start(); ...; watcher.stop()
    watcher.overrun   # '' or why the jail was killed (charged to the submission)

Why (issue 26, finding 6): ``RLIMIT_FSIZE`` caps one file, not how many. Under bubblewrap
``/tmp`` and ``/dev/shm`` were tmpfs of half the host's RAM (2.5 GiB held by one child
limited to 1 GiB of address space: tmpfs pages are not the process's), and in both tiers
the child's home is on the host's disk (1.3 GiB written). Bubblewrap's tmpfs get a size
(`grader.sandbox.jail`); this watcher adds the total over every place the jail can write: its
writable folders, its tmpfs (bubblewrap: seen through ``/proc/PID/root`` of the jail's
init), in the ``uid`` tier what its uid owns in the host's world-writable folders, and
files it deleted but holds open (invisible to a walk, still on the disk). Every entry
costs at least one page, so a million empty files count too. Between two looks the
child writes at most a period's worth (and no more than ``RLIMIT_FSIZE`` per file); the
period is 0.2 s, longer when a look itself takes long (`COST_RATIO`), so that watching
never takes more than a twentieth of a core from the kernels it runs beside.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["DiskUse", "DiskWatcher", "Overrun"]

#: What one entry costs at least (an empty file still takes an inode and a page of tmpfs).
ENTRY = 4096


class Overrun(int):
    """An exit status of a jail killed for a limit, carrying the reason (`exit_text` says it)."""

    reason: str

    def __new__(cls, code: int, reason: str) -> Overrun:
        obj = super().__new__(cls, code)
        obj.reason = reason
        return obj


def _cost(st: os.stat_result) -> int:
    return max(st.st_blocks * 512, ENTRY)


@dataclass
class DiskUse:
    """Where a jail can write, and how to add it up (see the module docstring).

    Attributes:
        rw: its writable folders on the host (everything in them counts).
        shared: world-writable host folders (what `uid` owns in them counts).
        uid: the jail's uid on the host (``uid`` tier; None under bubblewrap).
        tmpfs: its private tmpfs mounts as the host reaches them (used blocks and inodes).
        members: the host pids of the jail's processes (their deleted, open files).
    """

    rw: Sequence[str] = ()
    shared: Sequence[str] = ()
    uid: int | None = None
    tmpfs: Callable[[], Sequence[str]] = lambda: ()
    members: Callable[[], Sequence[int]] = lambda: ()
    _seen: set = field(default_factory=set)

    def total(self) -> int:
        self._seen = set()
        total = sum(self._walk(d, everything=True) for d in self.rw)
        if self.uid is not None:
            total += sum(self._walk(d, everything=False) for d in self.shared)
        devs = set()
        for mount in self.tmpfs():
            try:
                v, st = os.statvfs(mount), os.stat(mount)
            except OSError:
                continue
            devs.add(st.st_dev)
            total += (v.f_blocks - v.f_bfree) * v.f_frsize + (v.f_files - v.f_ffree) * ENTRY
        return total + self._deleted_open(devs)

    def _walk(self, top: str, everything: bool) -> int:
        """Bytes under `top`: all of them (`everything`), else only the jail uid's entries,
        descending into the world-writable folders of others."""
        total, todo = 0, [(top, everything)]
        while todo:
            d, mine = todo.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                owned = mine or st.st_uid == self.uid
                if owned and (st.st_dev, st.st_ino) not in self._seen:
                    self._seen.add((st.st_dev, st.st_ino))
                    total += _cost(st)
                if stat.S_ISDIR(st.st_mode) and (owned or st.st_mode & stat.S_IWOTH):
                    todo.append((e.path, owned))
        return total

    def _deleted_open(self, tmpfs_devs: set) -> int:
        """Files a jail process holds open after deleting them (not on a tmpfs counted whole)."""
        total = 0
        for pid in self.members():
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)
                if (
                    stat.S_ISREG(st.st_mode)
                    and st.st_nlink == 0
                    and st.st_dev not in tmpfs_devs
                    and key not in self._seen
                ):
                    self._seen.add(key)
                    total += _cost(st)
        return total


#: The watcher waits at least this many times as long as its last look took, so that it
#: costs at most 1/(1 + COST_RATIO) of one core (5 %) however much the jail holds: a look
#: walks folders and /proc, and it runs beside the student's kernels, timed ones included.
COST_RATIO = 19


class DiskWatcher(threading.Thread):
    """Looks at `use` every `period` seconds (longer when a look is slow: `COST_RATIO`);
    past `cap` bytes it calls `kill` once and records why in `overrun`."""

    def __init__(self, cap: int, use: DiskUse, kill: Callable[[], None], period: float = 0.2):
        super().__init__(daemon=True, name="jail-disk")
        self.cap, self.use, self.kill, self.period = cap, use, kill, period
        self.overrun = ""
        self._halt = threading.Event()

    def run(self) -> None:
        wait = self.period
        while not self._halt.wait(wait):
            began = time.monotonic()
            self.check()
            wait = max(self.period, COST_RATIO * (time.monotonic() - began))

    def check(self) -> bool:
        """Kill the jail if it is over the cap now; True if it was."""
        used = self.use.total()
        if used <= self.cap or self.overrun:
            return bool(self.overrun)
        self.overrun = (
            f"killed: your code wrote more than the disk limit of {self.cap >> 20} MiB "
            f"(files in its home, temporary folders and the like; --disk)"
        )
        self._halt.set()
        self.kill()
        return True

    def stop(self) -> None:
        self._halt.set()
