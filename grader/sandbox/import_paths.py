"""Where the child may import third-party packages from: the parent's installation only.

Used by the sandbox (the child's ``sys.path``) and by the bubblewrap tier (the directories
mounted read-only into the jail).
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.core.manifest import repo_root

__all__ = ["child_import_paths"]


def child_import_paths() -> list[str]:
    """Third-party directories the child may import from (NumPy, Numba, nbgrader …).

    The entries of the parent's ``sys.path`` that belong to the Python installation: inside
    ``sys.prefix`` / ``sys.base_prefix`` (the standard library, a virtual environment) or
    named ``site-packages`` / ``dist-packages``. Never the current directory, a script's
    directory (``/tmp`` for ``python /tmp/x.py``), ``PYTHONPATH`` additions, the checkout
    or a directory that holds the kit's ``minitorch`` or ``grader`` (an editable install);
    a ``site-packages`` that holds an installed copy of the kit stays (the child tree comes
    first, and the jail hides that copy).
    """
    root = repo_root().resolve()
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    out = []
    for p in sys.path:
        if not p:
            continue
        rp = Path(p).resolve()
        if rp == root or not rp.is_dir():
            continue
        installed = rp.name in ("site-packages", "dist-packages") or any(
            rp == q or q in rp.parents for q in prefixes
        )
        if not installed:
            continue
        if ((rp / "minitorch").is_dir() or (rp / "grader").is_dir()) and not (rp / "numpy").is_dir():
            continue
        if str(rp) not in out:
            out.append(str(rp))
    return out
