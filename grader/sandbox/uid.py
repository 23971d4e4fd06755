"""The ``uid`` tier's host side: a uid of its own for every jail, the jail's folders opened
to that uid alone, and the kit kept out of its reach.

    lease = UidLease.acquire()             # a uid no other live jail of this machine holds
    grant = Grant.give(lease.uid, tree, ro, rw)
    ...                                    # the jail runs as lease.uid
    grant.revoke(); lease.release()        # after its processes and litter are gone

Why a uid per jail, not per grader process (issue 26, finding 2): a Dask worker grades
many students in sequence, and two graders run side by side on one machine. Files are
protected from another student only by being unreadable to *its* uid: with one uid per
jail and every folder of the jail readable by that uid alone (root-owned with the uid's
own gid, or owned by the uid, never a permission bit for others), a submission that looks
for a concurrent grading's tree finds nothing it may open.

Plain helpers of `grader.sandbox.jail`, which decides when to use them.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .host import ipc_objects_of, real_uid, remove_files_of, scan, world_writable_dirs

__all__ = ["Grant", "UidLease", "kit_exposure", "sweep_abandoned", "uid_pool"]

#: Where the leases live: root's own, so that no jail uid can take or fake one (a folder
#: under /tmp could be made first by a student and its locks held to steal a uid).
LEASE_DIRS = (Path("/run/minitorch-grader/uids"), Path("/var/lib/minitorch-grader/uids"))
#: The pool of jail uids (and gids of the same numbers) on a host that maps every uid.
POOL_BASE, POOL_SIZE = 1_600_000_000, 65536


def uid_pool() -> range:
    """The uids jails take turns on: far above any account and subordinate-uid range where
    this (user namespace of a) machine maps them, else the top of what it maps below
    ``nobody`` (a container mapping 65536 uids)."""
    extents = []
    try:
        for line in Path("/proc/self/uid_map").read_text().splitlines():
            inside, _, count = (int(x) for x in line.split())
            extents.append((inside, inside + count))
    except (OSError, ValueError):
        extents = [(0, 1 << 32)]
    if any(lo <= POOL_BASE and POOL_BASE + POOL_SIZE <= hi for lo, hi in extents):
        return range(POOL_BASE, POOL_BASE + POOL_SIZE)
    lo, hi = max(extents, key=lambda e: e[1])
    hi = min(hi, 65534) if lo < 65534 else hi
    return range(max(lo + 1, hi - 4096), hi)


def _lease_dir() -> Path:
    """The first lease folder root can make (0700, root's), checked not to be a link."""
    for d in LEASE_DIRS:
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = d.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o077:
                return d
        except OSError:
            continue
    raise OSError("no folder for the jail uids' leases (/run/minitorch-grader or /var/lib/minitorch-grader)")


@dataclass
class UidLease:
    """One uid held by one jail: an exclusive ``flock`` on the uid's lease file.

    The kernel drops the lock when the holder's process dies, so a crashed grader never
    keeps a uid forever; what it may have left is what `_leftovers` checks before a uid
    is taken again: a live process of the uid, a System V object of it, or a folder the
    lease recorded as the crashed jail's that still exists (its files). Any of them and
    the uid is passed over.
    """

    uid: int
    fd: int
    path: Path

    @classmethod
    def acquire(cls) -> UidLease:
        """A uid no live jail of this machine holds and nothing of an earlier jail's owns."""
        pool, where = uid_pool(), _lease_dir()
        start = zlib.crc32(f"{os.getpid()}-{os.urandom(4).hex()}".encode()) % len(pool)
        for i in range(len(pool)):
            uid = pool[(start + i) % len(pool)]
            lease = cls._try(uid, where / str(uid))
            if lease is not None:
                return lease
        raise OSError(f"every jail uid of {pool.start}..{pool.stop - 1} is in use")

    @classmethod
    def _try_raw(cls, uid: int, path: Path) -> UidLease | None:
        """The uid's lease file, locked, or None while another holds it."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        return cls(uid, fd, path)

    @classmethod
    def _try(cls, uid: int, path: Path) -> UidLease | None:
        lease = cls._try_raw(uid, path)
        if lease is None:
            return None
        if lease._leftovers():
            os.close(lease.fd)  # the lock goes with it: another grader will check again
            return None
        return lease

    def _record(self) -> list[str]:
        os.lseek(self.fd, 0, os.SEEK_SET)
        try:
            return list(json.loads(os.read(self.fd, 1 << 16).decode() or "[]"))
        except ValueError:
            return []

    def _leftovers(self) -> bool:
        """Does anything of an earlier jail of this uid survive (see the class docstring)?"""
        if self._record():
            if any(os.path.lexists(p) for p in self._record()):
                return True
            remove_files_of(self.uid, world_writable_dirs())  # a crashed grader's litter
        return bool(scan(lambda pid: real_uid(pid) == self.uid) or ipc_objects_of(self.uid))

    def hold(self, paths: Sequence[Path]) -> None:
        """Write down the folders this uid is given (kept if the grader crashes)."""
        data = json.dumps([str(p) for p in paths]).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)
        os.fsync(self.fd)

    def release(self) -> None:
        """Give the uid back (its processes, litter and grants are gone)."""
        os.ftruncate(self.fd, 0)
        os.close(self.fd)


@dataclass
class Grant:
    """The jail's folders opened to its uid alone, and how to close them again.

    * its tree and read-only folders: root-owned, group = the uid's own gid, 0750 / 0640 —
      readable by that uid, by nobody else (they were 755/644: finding 2);
    * its writable folders: owned by the uid, 0700;
    * the folders between them and their nearest common ancestor (the grading's scratch,
      where the extracted submission also lies): root-owned, the uid's gid, 0710 — the uid
      may pass through, no other may (they were o+x);
    * above that, folders the uid cannot pass through get o+x (traverse, not list): what
      lies under them is protected by its own modes, as the checks above make sure.
    """

    uid: int
    closed: list[tuple[Path, int]] = field(default_factory=list)  # (folder, its mode before)

    @classmethod
    def give(cls, uid: int, tree: Path, ro: Sequence[Path], rw: Sequence[Path]) -> Grant:
        grant = cls(uid)
        for d in [*ro, tree]:
            grant._own_tree(d)
        for d in rw:
            for p in [d, *d.rglob("*")]:
                os.chown(p, uid, uid, follow_symlinks=False)
            os.chmod(d, 0o700)
        grant._open_the_way([*ro, tree, *rw])
        return grant

    def _own_tree(self, top: Path) -> None:
        for p in [top, *top.rglob("*")]:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            os.chown(p, 0, self.uid)
            os.chmod(p, 0o750 if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR else 0o640)
        self.closed.append((top, 0o750))

    def _open_the_way(self, dirs: Sequence[Path]) -> None:
        resolved = [d.resolve() for d in dirs]
        common = Path(os.path.commonpath([str(d.parent) for d in resolved]))
        between = {q for d in resolved for q in d.parents if q == common or common in q.parents}
        for p in sorted(between, key=lambda q: len(q.parts)):
            st = p.stat()
            if st.st_uid == 0 and not st.st_mode & (stat.S_IWOTH | stat.S_ISVTX) and p != Path("/"):
                os.chown(p, 0, self.uid)
                os.chmod(p, (st.st_mode & 0o700) | 0o010)
                self.closed.append((p, st.st_mode & 0o700))
            elif not st.st_mode & stat.S_IXOTH:
                os.chmod(p, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
        for p in common.parents:  # above the grading's own folders: traverse only
            st = p.stat()
            if p != Path("/") and not st.st_mode & stat.S_IXOTH:
                os.chmod(p, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)

    def revoke(self, rw: Sequence[Path]) -> None:
        """Close the jail's folders to the uid (its processes are gone): the top of each
        back to root alone, so that whoever gets this uid next reaches none of it. The next
        jail over the same tree gives them again, to its own uid."""
        for d in rw:
            try:
                os.chown(d, 0, 0, follow_symlinks=False)
            except OSError:
                pass
        for p, mode in self.closed:
            try:
                os.chown(p, 0, 0, follow_symlinks=False)
                os.chmod(p, mode)
            except OSError:
                pass


# -- finding 12: every copy of the kit the child's Python could import ---------------------

#: Run as an unprivileged uid with the child's import folders: every place a copy of the
#: kit may be found from them (the folders themselves, paths in ``.pth`` files, editable
#: finders, egg-links, ``direct_url.json``) and the kit folders the grader knows, each
#: tried by opening a file of the kit. Prints [[path, how it was found], ...] of those it
#: could read.
_PROBE = r"""
import glob, json, os, re, sys
args = json.loads(sys.argv[1])
marks = ("minitorch/autodiff.py", "grader/sandbox/jail.py", "grader/checks/__init__.py", "autodiff.py", "sandbox/jail.py", "checks/__init__.py")
where = [(k, "the kit") for k in args["kits"]]
for d in args["paths"]:
    where += [(os.path.join(d, n), "installed in " + d) for n in args["packages"]]
    for f in glob.glob(os.path.join(d, "*.pth")) + glob.glob(os.path.join(d, "__editable__*.py")) + glob.glob(os.path.join(d, "*.egg-link")) + glob.glob(os.path.join(d, "*.dist-info", "direct_url.json")):
        try:
            text = open(f, errors="replace").read()
        except OSError:
            continue
        lines = [line.strip() for line in text.splitlines()] if f.endswith((".pth", ".egg-link")) else []
        found = [os.path.join(d, line) for line in lines if line and not line.startswith(("#", "import ", "import\t"))]
        found += re.findall(r"['\"](?:file://)?(/[^'\"\n]+)['\"]", text)
        where += [(p, "named by " + f) for p in found]
readable, seen = [], set()
for path, how in where:
    for base in (path, os.path.dirname(path.rstrip("/"))):
        if base in seen or base in ("", "/"):
            continue
        seen.add(base)
        name = os.path.basename(base.rstrip("/"))
        for m in {"minitorch": marks[3:4], "grader": marks[4:]}.get(name, marks[:3]):
            try:
                open(os.path.join(base, m)).close()
            except OSError:
                continue
            readable.append([os.path.join(base, m), how])
            break
print(json.dumps(readable))
"""


def kit_exposure(
    uid: int, import_dirs: Sequence[str], kits: Sequence[Path], packages: Sequence[str]
) -> list[str]:
    """What a child of the ``uid`` tier could read of the kit: "FILE (how it is found)" for
    every copy it can open, found by a probe that runs as `uid` with the child's import
    folders (the ground truth: permission bits of one checkout miss an editable install
    of another clone, a venv's ``.pth``, an installed copy — finding 12).

    Raises OSError when Python cannot start as that uid at all.
    """
    args = json.dumps(
        {"paths": list(import_dirs), "kits": [str(k) for k in kits], "packages": list(packages)}
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE, args],
        user=uid,
        group=uid,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=False,
    )
    if out.returncode != 0:
        raise OSError(f"exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return [f"{path} ({how})" for path, how in json.loads(out.stdout)]


def sweep_abandoned() -> list[int]:
    """Clean up after jails whose grader died holding them (a wall clock killed it): for
    every lease no live process holds that still records folders, kill the uid's processes,
    remove its System V objects and its files in the world-writable folders, and forget
    the folders that are gone. The uids swept."""
    from .host import remove_ipc_of

    try:
        where = _lease_dir()
    except OSError:
        return []
    swept = []
    for path in where.iterdir():
        if not path.name.isdigit():
            continue
        lease = UidLease._try_raw(int(path.name), path)
        if lease is None:
            continue
        try:
            if lease._record():
                for pid in scan(lambda pid: real_uid(pid) == lease.uid):
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                remove_ipc_of(lease.uid)
                remove_files_of(lease.uid, world_writable_dirs())
                swept.append(lease.uid)
                if not any(os.path.lexists(p) for p in lease._record()):
                    os.ftruncate(lease.fd, 0)
        finally:
            os.close(lease.fd)
    return swept
