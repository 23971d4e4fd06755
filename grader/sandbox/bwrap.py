"""The bubblewrap tier's command line, and the folders of the Python runtime it mounts.

Plain helpers of `grader.sandbox.jail` (its module docstring says what the jail holds and why).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .import_paths import child_import_paths

__all__ = [
    "ETC_FILES",
    "JAIL_UID",
    "KIT_PACKAGES",
    "bwrap_args",
    "import_dirs",
    "installed_kit",
    "probe_bwrap",
    "runtime_dirs",
]

#: uid and gid of the student's code inside the bubblewrap jail ("nobody").
JAIL_UID = 65534
#: The kit's own top-level packages: hidden from the jail wherever an import directory holds
#: an installed copy of them.
KIT_PACKAGES = ("minitorch", "grader", "assignments", "solutions")
#: Files of /etc that the dynamic loader and Python may read.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")


def import_dirs() -> list[Path]:
    return [Path(p) for p in child_import_paths()]


def runtime_dirs() -> list[Path]:
    """Directories holding the Python runtime and the import path (read-only in the jail)."""
    dirs: list[Path] = []
    for p in [sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent.parent), *import_dirs()]:
        rp = Path(p).resolve()
        if rp.is_dir() and not any(rp == d or d in rp.parents for d in dirs):
            dirs = [d for d in dirs if rp not in d.parents] + [rp]
    return dirs


def installed_kit() -> list[Path]:
    """Installed copies of the kit's packages in an import directory (hidden in the jail)."""
    return [d / name for d in import_dirs() for name in KIT_PACKAGES if (d / name).is_dir()]


@functools.cache
def _bwrap_sizes() -> bool:
    """Does this bubblewrap take ``--size`` (0.5 and later) to cap a tmpfs?"""
    try:
        return (
            "--size"
            in subprocess.run(
                ["bwrap", "--help"], capture_output=True, text=True, timeout=10, check=False
            ).stdout
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _tmpfs(dest: str, size: int) -> list[str]:
    """A private tmpfs at `dest`, of at most `size` bytes where bubblewrap can cap it (else
    the disk watcher alone bounds it): an uncapped tmpfs may take half the host's RAM."""
    return ["--size", str(size), "--tmpfs", dest] if size > 0 and _bwrap_sizes() else ["--tmpfs", dest]


def bwrap_args(
    tree: Path,
    ro: Sequence[Path],
    rw: Sequence[Path],
    info_fd: int,
    tmpfs: Sequence[Path] = (),
    size: int = 0,
) -> list[str]:
    args = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(JAIL_UID),
        "--gid",
        str(JAIL_UID),
        "--hostname",
        "jail",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--info-fd",
        str(info_fd),
    ]
    for sysdir in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        args += ["--ro-bind-try", sysdir, sysdir]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", *_tmpfs("/dev/shm", size), *_tmpfs("/tmp", size)]
    for d in runtime_dirs():
        args += ["--ro-bind", str(d), str(d)]
    for d in installed_kit():  # an installed copy of the reference or the checks
        args += ["--tmpfs", str(d)]
    for d in rw:
        args += _tmpfs(str(d), size) if d in tmpfs else ["--bind", str(d), str(d)]
    for d in [*ro, tree]:
        args += ["--ro-bind", str(d), str(d)]
    args += ["--chdir", str(tree)]
    return args


def probe_bwrap() -> str:
    """'' when bubblewrap can start Python in a jail here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (scripts/install-sandbox.sh installs it)"
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    r, w = os.pipe()
    try:
        cmd = [
            *bwrap_args(tmp, [], [], w),
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import os; os.getuid() == {JAIL_UID} or exit(3)",
        ]
        out = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, pass_fds=(w,), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    finally:
        os.close(r)
        os.close(w)
    if out.returncode != 0:
        return f"bubblewrap cannot create a jail here (exit {out.returncode}: {out.stderr.decode(errors='replace').strip()[:200]})"
    return ""
