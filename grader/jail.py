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
  directories, a private ``/tmp``, a fresh ``/proc`` that shows only the jail's processes,
  and a minimal ``/dev``. The kit, the reference, the hidden checks, the results path, the
  user's home and the grader's processes do not exist in that world. The network
  namespace holds only a loopback device. ``--die-with-parent`` ends the jail with the
  grader; killing the jail's PID 1 ends every process in it (the kernel does that for a
  PID namespace), so no grandchild outlives grading.
* ``uid`` — the grader runs as root but bubblewrap cannot run (a container that forbids
  user namespaces): the child runs as an unprivileged uid of its own (``60000 + the
  grader's pid``, so that concurrent graders never share one), which cannot signal or
  inspect the grader, nor read the kit when the kit is not readable by other users (the
  tier refuses to start when it is). Freezing and killing act on every process of that uid,
  found in ``/proc``, until none is left; what it leaves in ``/tmp`` and the like is then
  deleted. Where util-linux may (root, namespaces allowed), its network and IPC are its own
  too (``unshare`` + ``setpriv``). What it does not give: a private view of the host's
  world-readable files, and a private network where namespaces are forbidden.
* ``process`` — a plain child process in its own session; freezing and killing act on its
  process group, which a ``setsid`` escapes. Nothing stops it from reading the kit or
  signalling the grader: a loud warning, and never chosen by ``--sandbox=require``.

`choose_tier` picks the best tier this machine provides (``auto``), fails closed when the
strong jail is required but unavailable (``require``), or checks a named tier.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .jail_host import (
    new_pids_cgroup,
    pids_cgroup_root,
    real_uid,
    remove_files_of,
    scan,
    state_or_gone,
)

__all__ = ["JAIL_UID", "REQUESTS", "TIERS", "Jail", "SandboxUnavailable", "available_tiers", "choose_tier", "tier_reasons"]

TIERS = ("bwrap", "uid", "process")
REQUESTS = ("auto", "require", *TIERS)
#: uid and gid of the student's code inside the bubblewrap jail ("nobody").
JAIL_UID = 65534
#: The kit's own top-level packages: hidden from the jail wherever an import directory holds
#: an installed copy of them.
KIT_PACKAGES = ("minitorch", "grader", "assignments", "solutions")
#: Files of /etc that the dynamic loader and Python may read.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")


class SandboxUnavailable(RuntimeError):
    """The requested isolation tier cannot run on this machine (the message says why)."""


def _import_dirs() -> list[Path]:
    from .sandbox import child_import_paths  # lazily: sandbox imports this module

    return [Path(p) for p in child_import_paths()]


def _runtime_dirs() -> list[Path]:
    """Directories holding the Python runtime and the import path (read-only in the jail)."""
    dirs: list[Path] = []
    for p in [sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent.parent), *_import_dirs()]:
        rp = Path(p).resolve()
        if rp.is_dir() and not any(rp == d or d in rp.parents for d in dirs):
            dirs = [d for d in dirs if rp not in d.parents] + [rp]
    return dirs


def _installed_kit() -> list[Path]:
    """Installed copies of the kit's packages in an import directory (hidden in the jail)."""
    return [d / name for d in _import_dirs() for name in KIT_PACKAGES if (d / name).is_dir()]


def _kit_dirs() -> list[Path]:
    """Where the kit's own packages live on this machine (the checkout or an install)."""
    from .manifest import repo_root

    return [repo_root().resolve(), *(p.resolve() for p in _installed_kit())]


def _bwrap_args(tree: Path, ro: Sequence[Path], rw: Sequence[Path], info_fd: int) -> list[str]:
    args = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(JAIL_UID), "--gid", str(JAIL_UID),
            "--hostname", "jail", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--info-fd", str(info_fd)]
    for sysdir in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        args += ["--ro-bind-try", sysdir, sysdir]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp"]
    for d in _runtime_dirs():
        args += ["--ro-bind", str(d), str(d)]
    for d in _installed_kit():  # an installed copy of the reference or the checks
        args += ["--tmpfs", str(d)]
    for d in rw:
        args += ["--bind", str(d), str(d)]
    for d in [*ro, tree]:
        args += ["--ro-bind", str(d), str(d)]
    args += ["--chdir", str(tree)]
    return args


def _probe_bwrap() -> str:
    """'' when bubblewrap can start Python in a jail here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (scripts/install-sandbox.sh installs it)"
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    r, w = os.pipe()
    try:
        cmd = [*_bwrap_args(tmp, [], [], w), sys.executable, "-I", "-S", "-c", f"import os; os.getuid() == {JAIL_UID} or exit(3)"]
        out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, pass_fds=(w,), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    finally:
        os.close(r)
        os.close(w)
    if out.returncode != 0:
        return f"bubblewrap cannot create a jail here (exit {out.returncode}: {out.stderr.decode(errors='replace').strip()[:200]})"
    return ""


def _readable_by_others(path: Path) -> bool:
    """Can a user other than the owner (and not in its group) reach `path`?"""
    for p in [path, *path.parents]:
        try:
            mode = p.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return bool(path.stat().st_mode & stat.S_IROTH)


def _probe_uid() -> str:
    if os.geteuid() != 0:
        return "the grader is not running as root (an unprivileged uid needs root to switch to)"
    open_kit = [str(d) for d in _kit_dirs() if _readable_by_others(d)]
    if open_kit:
        return f"the kit is readable by other users ({', '.join(open_kit)}): `chmod o-rwx` it for this tier"
    try:
        out = subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], user=jail_uid_here(), group=jail_uid_here(),
                             extra_groups=[], capture_output=True, timeout=30, cwd="/", check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Python cannot start as an unprivileged uid: {exc}"
    if out.returncode != 0:
        return f"Python cannot start as an unprivileged uid (is {sys.base_prefix} readable by other users?)"
    return ""


@functools.cache
def private_network() -> bool:
    """Can the ``uid`` tier give its child network and IPC namespaces of its own (root, and
    util-linux's ``unshare`` and ``setpriv``; a container may forbid new namespaces)?"""
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")):
        return False
    try:
        return subprocess.run(["unshare", "--net", "--ipc", "--", "setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups", "--", "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def jail_uid_here() -> int:
    """The uid of this grader's children in the ``uid`` tier: one per grader process."""
    return 60000 + os.getpid()


@functools.cache
def tier_reasons() -> dict[str, str]:
    """For each tier, '' when this machine provides it, else why not (probed once)."""
    return {"bwrap": _probe_bwrap(), "uid": _probe_uid(), "process": ""}


def available_tiers() -> list[str]:
    """The tiers this machine provides, strongest first (always ending with "process")."""
    return [t for t in TIERS if not tier_reasons()[t]]


def choose_tier(request: str = "auto") -> str:
    """The tier for `request` ("auto", "require" or a tier's name); raises SandboxUnavailable."""
    if request not in REQUESTS:
        raise ValueError(f"unknown sandbox {request!r} (choose from {', '.join(REQUESTS)})")
    reasons = tier_reasons()
    if request == "auto":
        return available_tiers()[0]
    wanted = "bwrap" if request == "require" else request
    if reasons[wanted]:
        raise SandboxUnavailable(f"--sandbox={request}: {reasons[wanted]}; refusing to grade without it")
    return wanted


def describe(tier: str) -> str:
    """One line for reports."""
    return {
        "bwrap": "bubblewrap jail (own PID/network/mount namespaces, uid 65534, read-only tree"
                 + (", process limit)" if pids_cgroup_root() else "; no process limit: no writable pids cgroup)"),
        "uid": "unprivileged uid of its own, whole-uid kill, " + ("private network" if private_network() else "NO private network")
               + " (no private /tmp: what it leaves there is removed)",
        "process": "process isolation only: student code could read the kit and signal the grader",
    }[tier]


class Jail:
    """Start, freeze, thaw and kill the processes of one child, in one tier."""

    def __init__(self, tier: str, tree: Path, rw: Sequence[Path] = (), ro: Sequence[Path] = (), nproc: int = 2048):
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}")
        self.tier, self.tree, self.rw, self.ro = tier, Path(tree), [Path(p) for p in rw], [Path(p) for p in ro]
        self.nproc = nproc
        self.cgroup: Path | None = None  # bwrap: the pids cgroup that caps its processes
        self.proc: subprocess.Popen | None = None
        self.init_pid: int | None = None  # bwrap: the jail's PID 1, as the host sees it
        self.pid_ns: str | None = None
        self.uid = jail_uid_here() if tier == "uid" else None

    def popen(self, argv: list[str], env: dict[str, str], pass_fds: Sequence[int], **kw) -> subprocess.Popen:
        """Start `argv` in the jail (stdin is /dev/null; stdout/stderr as `kw` says)."""
        common = dict(env=env, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        if self.tier == "bwrap":
            r, w = os.pipe()
            self.cgroup = new_pids_cgroup(self.nproc)
            # Inside the jail uid 65534 is root outside, which RLIMIT_NPROC never limits: the
            # process count is capped by a pids cgroup that bwrap enters before it starts.
            enter = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.cgroup)] if self.cgroup else []
            try:
                self.proc = subprocess.Popen([*enter, *_bwrap_args(self.tree, self.ro, self.rw, w), *argv],
                                             pass_fds=(*pass_fds, w), **common)
            except BaseException:
                os.close(r)
                if self.cgroup is not None:
                    self.cgroup.rmdir()
                raise
            finally:
                os.close(w)
            self._read_info(r)
        elif self.tier == "uid":
            self._open_to_uid()
            if private_network():  # util-linux: new network + IPC namespaces as root, then the uid
                drop = [f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"]
                self.proc = subprocess.Popen(["unshare", "--net", "--ipc", "--", "setpriv", *drop, "--", *argv],
                                             cwd=str(self.tree), pass_fds=tuple(pass_fds), umask=0o077, **common)
            else:
                self.proc = subprocess.Popen(argv, cwd=str(self.tree), pass_fds=tuple(pass_fds), user=self.uid,
                                             group=self.uid, extra_groups=[], umask=0o077, **common)
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
        """uid tier: the tree and runtime readable, the scratch dirs owned by the jail uid."""
        for d in [*self.ro, self.tree]:
            for p in [d, *(q for q in d.rglob("*"))]:
                os.chmod(p, 0o755 if p.is_dir() else 0o644)
        for d in self.rw:
            for p in [d, *d.rglob("*")]:
                os.chown(p, self.uid, self.uid, follow_symlinks=False)
        for d in {*(p.parent for p in [*self.rw, *self.ro, self.tree])}:
            for p in [d, *d.parents]:  # let the uid traverse (not list) the way down
                if p != Path("/") and not p.stat().st_mode & stat.S_IXOTH:
                    os.chmod(p, p.stat().st_mode | stat.S_IXOTH)

    # -- every process of the jail -------------------------------------------------------

    def members(self) -> list[int]:
        """The host pids of every live process of this jail."""
        if self.tier == "bwrap":
            return scan(lambda pid: self.pid_ns is not None and os.readlink(f"/proc/{pid}/ns/pid") == self.pid_ns)
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
        """Kill every process of the jail and wait for the child; its exit status."""
        if self.proc is None:
            return None
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
        if self.tier == "uid":
            remove_files_of(self.uid)
        if self.cgroup is not None:
            try:
                self.cgroup.rmdir()
            except OSError:
                pass  # still holding a dying process: the kernel frees it with the last one
