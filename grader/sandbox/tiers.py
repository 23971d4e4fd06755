"""The tiers of the jail (`grader.sandbox.jail`): which ones this machine provides, and which
one a ``--sandbox`` request gets.

    choose_tier("auto")      # the strongest tier this machine provides
    choose_tier("require")   # "bwrap", or SandboxUnavailable: never grade without it
    choose_tier("uid")       # that tier, or SandboxUnavailable saying why not

Each tier is probed once per process (`tier_reasons`: '' where it runs, else why not):
``bwrap`` where bubblewrap can build a jail (`grader.sandbox.bwrap.probe_bwrap`); ``uid``
where the grader runs as root, a uid can be leased and no copy of the kit is readable by it
(`grader.sandbox.uid.kit_exposure`); ``process`` always. `private_network` says whether the
``uid`` tier's child gets network and IPC namespaces of its own; `describe` is the line a
report prints for a tier. `choose_tier` picks the best tier this machine provides
(``auto``), fails closed when the strong jail is required but unavailable (``require``), or
checks a named tier.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .bwrap import KIT_PACKAGES, import_dirs, installed_kit, probe_bwrap
from .host import pids_cgroup_root
from .uid import UidLease, kit_exposure

__all__ = [
    "REQUESTS",
    "TIERS",
    "SandboxUnavailable",
    "available_tiers",
    "choose_tier",
    "describe",
    "private_network",
    "tier_reasons",
]

TIERS = ("bwrap", "uid", "process")
REQUESTS = ("auto", "require", *TIERS)


class SandboxUnavailable(RuntimeError):
    """The requested isolation tier cannot run on this machine (the message says why)."""


def _kit_dirs() -> list[Path]:
    """Where the kit's own packages live on this machine (the checkout or an install)."""
    from grader.core.manifest import repo_root

    return [repo_root().resolve(), *(p.resolve() for p in installed_kit())]


def _probe_uid() -> str:
    if os.geteuid() != 0:
        return "the grader is not running as root (an unprivileged uid needs root to switch to)"
    try:
        lease = UidLease.acquire()
    except OSError as exc:
        return f"no uid for the jail: {exc}"
    try:
        readable = kit_exposure(lease.uid, [str(d) for d in import_dirs()], _kit_dirs(), KIT_PACKAGES)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return f"Python cannot start as an unprivileged uid (is {sys.base_prefix} readable by other users?): {exc}"
    finally:
        lease.release()
    if readable:
        return (
            f"the kit is readable by other users: {'; '.join(readable)}: `chmod o-rwx` it "
            "(scripts/install-sandbox.sh --uid-tier) for this tier"
        )
    return ""


@functools.cache
def private_network() -> bool:
    """Can the ``uid`` tier give its child network and IPC namespaces of its own (root, and
    util-linux's ``unshare`` and ``setpriv``; a container may forbid new namespaces)?"""
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")):
        return False
    try:
        return (
            subprocess.run(
                [
                    "unshare",
                    "--net",
                    "--ipc",
                    "--",
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--",
                    "true",
                ],
                capture_output=True,
                timeout=10,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def tier_reasons() -> dict[str, str]:
    """For each tier, '' when this machine provides it, else why not (probed once)."""
    return {"bwrap": probe_bwrap(), "uid": _probe_uid(), "process": ""}


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
        "uid": "unprivileged uid of its own, whole-uid kill, "
        + ("private network" if private_network() else "NO private network")
        + " (no private /tmp: what it leaves there is removed)",
        "process": "process isolation only: student code could read the kit and signal the grader",
    }[tier]
