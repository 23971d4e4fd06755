"""A grading container that forbids namespaces, simulated on this machine.

Gradescope-like containers run the grader as root but give it no bubblewrap and no
``unshare``/``setpriv`` (or forbid the namespaces they need): the grader then falls back to
the ``uid`` tier without a private network (`grader.sandbox.tiers.private_network` is False). A test
simulates that container by running the grader with ``PATH`` pointing at a folder that
holds every command of this machine's ``PATH`` except those three:

    env = {"PATH": container_path(tmp_path)}       # then run `python -m grader.commands.cli ...`
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.batch.engine import shared_network_reason

__all__ = ["HIDDEN_COMMANDS", "SHARES_NETWORK", "container_path"]

#: Whether this machine's best tier gives student code the grader's network (no bubblewrap
#: and a uid tier without a private network, or only the process tier: a machine without
#: scripts/install-sandbox.sh, or such a container). `grader batch` then refuses without
#: ``--allow-shared-network`` (tests/grader/test_grader_batch_security.py tests that refusal); the
#: tests of the batch's other behaviour grade honest submissions and opt in there, and only there.
SHARES_NETWORK = bool(shared_network_reason("auto"))

#: The commands a namespace-less container lacks (`grader.sandbox.tiers` looks for them on PATH).
HIDDEN_COMMANDS = frozenset({"bwrap", "unshare", "setpriv"})


def container_path(tmp: Path) -> str:
    """A PATH (one folder, made under `tmp`) with links to every command on this process's
    PATH except `HIDDEN_COMMANDS`, the first of each name winning, as a shell finds it."""
    bin_dir = tmp / "container-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = bin_dir / entry.name
            if entry.name in HIDDEN_COMMANDS or link.exists() or link.is_symlink():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(bin_dir)
