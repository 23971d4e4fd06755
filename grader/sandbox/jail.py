"""The jail: how every process that runs student code is started, frozen and ended.

    jail = Jail(choose_tier("auto"), tree, rw_dirs, ro_dirs)
    proc = jail.popen([python, child.py, args], env, pass_fds)   # a subprocess.Popen
    jail.stop(); jail.cont()                                      # freeze / thaw ALL of it
    jail.kill()                                                   # nothing of it survives

"Nothing the child does can raise a score" holds only while the child cannot leave its
process. Three tiers, strongest first; every report says which one graded it:

* ``bwrap`` — bubblewrap (an audited, setuid-free sandbox tool; Debian package
  ``bubblewrap``). The child gets new user, PID, network, IPC, UTS and mount namespaces;
  inside, it is uid/gid 65534 with no capabilities and cannot create further user
  namespaces. Its filesystem holds only: the system's ``/usr`` (and ``/lib*``, ``/bin``)
  read-only, a few files of ``/etc``, the Python runtime and the third-party import
  directories read-only (with any installed copy of the kit's own packages hidden under an
  empty tmpfs), its tree read-only, its runtime copy read-only, its own writable scratch
  directories, a private ``/tmp``, ``/dev/shm`` and home (tmpfs of a capped size), a fresh
  ``/proc`` that shows only the jail's processes, and a minimal ``/dev``. The kit, the reference, the hidden checks, the results path, the
  user's home and the grader's processes do not exist in that world. The network
  namespace holds only a loopback device. ``--die-with-parent`` ends the jail with the
  grader; killing the jail's PID 1 ends every process in it (the kernel does that for a
  PID namespace), so no grandchild outlives grading.
* ``uid`` — the grader runs as root but bubblewrap cannot run (a container that forbids
  user namespaces): every jail runs as an unprivileged uid of its own, leased for it alone
  (`grader.sandbox.uid.UidLease`: no two live jails of a machine share one, and a uid is not
  taken again while anything of it survives), which cannot signal or inspect the grader.
  The jail's folders are readable by that uid alone (`grader.sandbox.uid.Grant`), so neither
  a concurrent grading nor the next one reaches them; the tier refuses to start while any
  copy of the kit the child's Python could find is readable by an unprivileged uid
  (`grader.sandbox.uid.kit_exposure`, a probe run as one). Freezing and killing act on every
  process of that uid, found in ``/proc``, until none is left; then its System V IPC
  objects and what it left in every world-writable folder of the host are deleted. Where
  util-linux may (root, namespaces allowed), its network and IPC are its own too
  (``unshare`` + ``setpriv``). What it does not give: a private view of the host's
  world-readable files, and a private network where namespaces are forbidden.

In both jail tiers a watcher (`grader.sandbox.disk`) sums what the jail has written and kills
it past ``disk_mb``: the child is charged with it, with a message that says so.
* ``process`` — a plain child process in its own session; freezing and killing act on its
  process group, which a ``setsid`` escapes. Nothing stops it from reading the kit or
  signalling the grader: a loud warning, and never chosen by ``--sandbox=require``.

Which tier a jail gets is `grader.sandbox.tiers.choose_tier`'s answer: the best this machine
provides (``auto``), the strong jail or nothing (``require``), or a named tier.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from .bwrap import JAIL_UID, bwrap_args
from .disk import DiskUse, DiskWatcher, Overrun
from .host import (
    new_pids_cgroup,
    real_uid,
    remove_files_of,
    remove_ipc_of,
    scan,
    start_finding_world_writable,
    state_or_gone,
    world_writable_dirs,
)
from .tiers import TIERS, private_network
from .uid import Grant, UidLease

__all__ = ["JAIL_UID", "Jail"]


class Jail:
    """Start, freeze, thaw and kill the processes of one child, in one tier."""

    def __init__(
        self,
        tier: str,
        tree: Path,
        rw: Sequence[Path] = (),
        ro: Sequence[Path] = (),
        nproc: int = 2048,
        disk_mb: int = 0,
        tmpfs: Sequence[Path] = (),
    ):
        """`rw`: its writable folders, of which `tmpfs` are private tmpfs under bubblewrap;
        `disk_mb`: the most it may write in all (0: no cap)."""
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}")
        self.tier, self.tree, self.rw, self.ro = (
            tier,
            Path(tree),
            [Path(p) for p in rw],
            [Path(p) for p in ro],
        )
        self.nproc, self.disk = nproc, disk_mb << 20
        self.tmpfs = [Path(p) for p in tmpfs]
        self.cgroup: Path | None = None  # bwrap: the pids cgroup that caps its processes
        self.proc: subprocess.Popen | None = None
        self.init_pid: int | None = None  # bwrap: the jail's PID 1, as the host sees it
        self.pid_ns: str | None = None
        self.uid: int | None = None  # uid: leased when it starts, given back when it is killed
        self.lease: UidLease | None = None
        self.grant: Grant | None = None
        self.watcher: DiskWatcher | None = None

    def popen(self, argv: list[str], env: dict[str, str], pass_fds: Sequence[int], **kw) -> subprocess.Popen:
        """Start `argv` in the jail (stdin is /dev/null; stdout/stderr as `kw` says)."""
        common = dict(env=env, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        if self.tier == "bwrap":
            r, w = os.pipe()
            self.cgroup = new_pids_cgroup(self.nproc)
            # Inside the jail uid 65534 is root outside, which RLIMIT_NPROC never limits: the
            # process count is capped by a pids cgroup that bwrap enters before it starts.
            enter = (
                ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.cgroup)]
                if self.cgroup
                else []
            )
            try:
                self.proc = subprocess.Popen(
                    [*enter, *bwrap_args(self.tree, self.ro, self.rw, w, self.tmpfs, self.disk), *argv],
                    pass_fds=(*pass_fds, w),
                    **common,
                )
            except BaseException:
                os.close(r)
                if self.cgroup is not None:
                    self.cgroup.rmdir()
                raise
            finally:
                os.close(w)
            self._read_info(r)
            self._watch()
        elif self.tier == "uid":
            self._open_to_uid()
            try:
                if private_network():  # util-linux: new network + IPC namespaces as root, then the uid
                    drop = [f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"]
                    self.proc = subprocess.Popen(
                        ["unshare", "--net", "--ipc", "--", "setpriv", *drop, "--", *argv],
                        cwd=str(self.tree),
                        pass_fds=tuple(pass_fds),
                        umask=0o077,
                        **common,
                    )
                else:
                    self.proc = subprocess.Popen(
                        argv,
                        cwd=str(self.tree),
                        pass_fds=tuple(pass_fds),
                        user=self.uid,
                        group=self.uid,
                        extra_groups=[],
                        umask=0o077,
                        **common,
                    )
            except BaseException:
                self._clean_uid()  # nothing started: the uid goes back at once
                raise
            self._watch()
        else:
            self.proc = subprocess.Popen(argv, cwd=str(self.tree), pass_fds=tuple(pass_fds), **common)
        return self.proc

    def _read_info(self, r: int) -> None:
        """bwrap writes {"child-pid": N} once the jail's PID 1 exists."""
        with os.fdopen(r, "rb") as f:
            data = f.read(4096)
        try:
            self.init_pid = int(json.loads(data.decode())["child-pid"])
            self.pid_ns = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        except (ValueError, KeyError, OSError):
            self.init_pid = self.pid_ns = None  # bwrap failed: its exit status says why

    def _open_to_uid(self) -> None:
        """uid tier: a uid of this jail's own, its folders readable by that uid alone."""
        start_finding_world_writable()  # needed when it is killed: search meanwhile
        self.lease = UidLease.acquire()
        self.uid = self.lease.uid
        self.lease.hold([*self.rw, *self.ro, self.tree])
        self.grant = Grant.give(self.uid, self.tree, self.ro, self.rw)

    def _watch(self) -> None:
        """Start the disk watcher (`grader.sandbox.disk`) when the jail has a cap."""
        if self.disk <= 0:
            return
        if self.tier == "bwrap":
            root = f"/proc/{self.init_pid}/root"
            mounts = ["/tmp", "/dev/shm", *map(str, self.tmpfs)]
            use = DiskUse(
                rw=[str(d) for d in self.rw if d not in self.tmpfs],
                members=self.members,
                tmpfs=lambda: [root + m for m in mounts] if self.init_pid else [],
            )
        else:
            use = DiskUse(
                rw=[str(d) for d in self.rw],
                shared=world_writable_dirs(wait=False),
                uid=self.uid,
                members=self.members,
            )
        self.watcher = DiskWatcher(self.disk, use, lambda: self._signal_all(signal.SIGKILL))
        self.watcher.start()

    # -- every process of the jail -------------------------------------------------------

    def members(self) -> list[int]:
        """The host pids of every live process of this jail."""
        if self.tier == "bwrap":
            return scan(
                lambda pid: self.pid_ns is not None and os.readlink(f"/proc/{pid}/ns/pid") == self.pid_ns
            )
        if self.tier == "uid":
            return scan(lambda pid: real_uid(pid) == self.uid)
        if self.proc is None:
            return []
        try:
            pgid = os.getpgid(self.proc.pid)
        except ProcessLookupError:
            return []
        return scan(lambda pid: os.getpgid(pid) == pgid)

    def _signal_all(self, sig: int, rounds: int = 50) -> None:
        """Send `sig` to every member, again and again until a scan finds no new one."""
        done: set[int] = set()
        for _ in range(rounds):
            fresh = [p for p in self.members() if p not in done]
            if not fresh:
                return
            for pid in fresh:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
                done.add(pid)

    def stop(self, settle_s: float = 2.0) -> bool:
        """Freeze every process of the jail (SIGSTOP); True if there was one.

        A signal is delivered when its process next runs, so this waits (up to `settle_s`)
        until every member reports the stopped state before it returns.
        """
        if self.proc is None or self.proc.poll() is not None:
            return False
        self._signal_all(signal.SIGSTOP)
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline:
            running = [p for p in self.members() if state_or_gone(p) not in ("T", "t", "")]
            if not running:
                break
            for pid in running:  # new since the last round, or not yet stopped
                try:
                    os.kill(pid, signal.SIGSTOP)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.001)
        return True

    def cont(self) -> None:
        """Thaw every process of the jail (SIGCONT)."""
        self._signal_all(signal.SIGCONT)

    def kill(self) -> int | None:
        """Kill every process of the jail and wait for the child; its exit status (an
        `Overrun` saying why, when the disk watcher killed it)."""
        if self.proc is None:
            return None
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher.check()  # what it wrote since the last look counts too
        code = self._kill()
        if self.watcher is not None and self.watcher.overrun:
            return Overrun(-signal.SIGKILL if code is None else code, self.watcher.overrun)
        return code

    def _kill(self) -> int | None:
        if self.tier == "bwrap" and self.proc.poll() is None:
            try:  # a child that just died: let bwrap report how, before we kill it
                self.proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.returncode is not None and self.tier == "bwrap":
            # bwrap exits with its child's status, 128 + N for "killed by signal N"
            exited = self.proc.returncode
            code: int | None = -(exited - 128) if exited > 128 else exited
            self._kill_members()
            return code
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._signal_all(signal.SIGKILL)
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self._kill_members()
        return code

    def _kill_members(self) -> None:
        """Until none is left (a PID namespace dies with its init; a uid has no such end)."""
        if self.tier == "bwrap" and self.init_pid is not None:
            try:  # the kernel then ends every process of the PID namespace
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self.tier != "process" and self.members() and time.monotonic() < deadline:
            self._signal_all(signal.SIGKILL)
            time.sleep(0.02)
        if self.tier == "uid" and self.lease is not None:
            self._clean_uid()
        if self.cgroup is not None:
            try:
                self.cgroup.rmdir()
            except OSError:
                pass  # still holding a dying process: the kernel frees it with the last one

    def _clean_uid(self) -> None:
        """uid tier, its processes killed: remove its IPC objects and its files in every
        world-writable folder, close its folders to it, and give the uid back — unless a
        process of it survived, in which case the uid stays leased (`UidLease`)."""
        assert self.lease is not None and self.uid is not None
        if self.grant is not None:
            self.grant.revoke(self.rw)
        if self.members():
            return
        remove_ipc_of(self.uid)
        remove_files_of(self.uid, world_writable_dirs())
        self.lease.release()
        self.lease = None
