"""The Gradescope autograder zip of a stage: the kit, pinned requirements, setup.sh, run_autograder.

    build_bundle("a1", Path("autograder.zip"))      # `grader gradescope a1 -o autograder.zip`

The zip's root holds the kit (`KIT_DIRS`, `KIT_FILES`: the grader, the stage manifests, the
reference ``minitorch/``, the solution notebooks; caches, links and hidden files left out),
``requirements.txt`` (what grading imports, `GRADING_DISTRIBUTIONS`, and everything they
need, pinned to the exact versions installed here: `pinned_requirements`), ``setup.sh``
and ``run_autograder`` (`SETUP_SH`, `RUN_AUTOGRADER`, with the stage written in). The
same kit gives the same zip (sorted entries, fixed timestamps), written atomically. What
Gradescope does with it, and what the scripts run, is `grader.commands.gradescope`.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from grader.core.manifest import load_manifest, repo_root

__all__ = ["GRADING_DISTRIBUTIONS", "BundleResult", "build_bundle", "pinned_requirements"]

#: The kit's folders and files that grading reads (walked, caches and hidden files left out).
KIT_DIRS = ("grader", "minitorch", "assignments", "solutions")
KIT_FILES = ("pyproject.toml", "scripts/install-sandbox.sh")
SKIP_SUFFIXES = (".pyc", ".pyo", ".nbi", ".nbc")
#: What grading imports: the library (numpy, numba, safetensors: every dependency of the
#: kit's pyproject, as a test checks), the report (rich), the notebook parts (nbformat reads
#: them, IPython runs the student's cells). nbgrader, mutmut and Dask serve `grader release`,
#: `grader check --mutants` and `grader batch`, never `grader run`.
GRADING_DISTRIBUTIONS = ("numpy", "numba", "safetensors", "rich", "nbformat", "ipython")
#: Environment variables of run_autograder (tests point them at a temporary /autograder).
ROOT_VAR = "MINITORCH_AUTOGRADER_ROOT"  # default /autograder
PYTHON_VAR = "MINITORCH_AUTOGRADER_PYTHON"  # default /autograder/venv/bin/python
#: The zip's timestamps (fixed: the same kit gives the same bundle).
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the image
# (written by `grader gradescope {stage}`): Python >= 3.{minor} (the pins of requirements.txt
# were resolved on Python {python}), a virtual environment /autograder/venv with those pins,
# the jail (bubblewrap; the uid tier: the kit o-rwx), then the reference graded once.
set -euo pipefail
cd "$(dirname "$0")"
STAGE="{stage}"
NEED_MINOR={minor}
VENV=/autograder/venv
export DEBIAN_FRONTEND=noninteractive
apt_install() {{ apt-get install -y -q "$@" >/dev/null || {{ apt-get update -q >/dev/null && apt-get install -y -q "$@" >/dev/null; }}; }}
new_enough() {{ command -v "$1" >/dev/null && "$1" -c "import sys; sys.exit(sys.version_info < (3, $NEED_MINOR))"; }}

PY=python3
new_enough "$PY" || apt_install python3 python3-venv || true
new_enough "$PY" || {{ PY="python3.$NEED_MINOR"; apt_install "$PY" "$PY-venv" || true; }}
new_enough "$PY" || {{ echo "setup.sh: Python >= 3.$NEED_MINOR is needed (requirements.txt); choose a newer base image (Ubuntu 24.04)" >&2; exit 1; }}
"$PY" -m venv "$VENV" 2>/dev/null || {{ apt_install "$PY-venv" && "$PY" -m venv "$VENV"; }}
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
chmod -R o+rX "$VENV" && chmod o+x /autograder  # the uid tier's child runs this Python
PATH="$VENV/bin:$PATH" bash scripts/install-sandbox.sh --uid-tier
"$VENV/bin/python" -m grader.commands.gradescope selftest "$STAGE"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for each submission (written by `grader gradescope {stage}`): it
# grades $ROOT/submission for {stage} as `grader run` does and writes $ROOT/results/results.json.
# It always leaves a results.json, and exits 0 when it did.
ROOT="${{{root_var}:-/autograder}}"
PYTHON="${{{python_var}:-/autograder/venv/bin/python}}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results" && chmod 700 "$ROOT/results"  # root only: the jail's uid cannot read or write results
rm -f "$RESULTS"
chmod o-rwx "$ROOT/source"  # the kit, the reference and the hidden checks: not for other uids
unset MINITORCH_KIT_ROOT PYTHONPATH
(cd "$ROOT/source" && "$PYTHON" -m grader.commands.gradescope grade "{stage}" --root "$ROOT")
status=$?
if [ ! -s "$RESULTS" ]; then  # Python could not even start
    message="The autograder failed (exit status $status) before it could grade this submission."
    message="$message This is not a grade of your work: tell the course staff."
    printf '{{"score": 0.0, "output": "%s", "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}}\n' \
        "$message" > "$RESULTS" || exit 1
fi
exit 0
"""


@dataclass(frozen=True)
class BundleResult:
    """What `build_bundle` wrote: the zip, its entries (sorted) and the pins."""

    path: Path
    names: list[str]
    pins: list[str]


def _canonical(name: str) -> str:
    """A distribution's name as pip compares it ("Jupyter_Core" → "jupyter-core")."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_requirements(roots: tuple[str, ...] = GRADING_DISTRIBUTIONS) -> list[str]:
    """``name==version`` for each of `roots` and everything they require (their markers
    evaluated for this Python, extras left out), as installed here; sorted by name.

    Raises:
        ValueError: one of them is not installed here (the message names it).
    """
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    wanted = [*roots, *(["tomli"] if sys.version_info < (3, 11) else [])]  # the manifests are TOML
    pins: dict[str, str] = {}
    while wanted:
        name = _canonical(wanted.pop())
        if name in pins:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            raise ValueError(
                f"{name} is not installed here, so it cannot be pinned: install the kit's grader extra"
            ) from None
        pins[name] = dist.version
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                wanted.append(req.name)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def _kit_files(root: Path) -> list[tuple[str, Path]]:
    """(name in the zip, file) for every file of the kit, sorted; no cache, link or dot-file."""
    out = [(rel, root / rel) for rel in KIT_FILES]
    for top in KIT_DIRS:
        if not (root / top).is_dir():
            raise ValueError(f"{root / top} is missing: build the bundle from the kit's checkout")
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root)
            hidden = any(
                part.startswith(".") or part == "__pycache__" or part.endswith(".egg-info")
                for part in rel.parts
            )
            if path.is_file() and not path.is_symlink() and not hidden and path.suffix not in SKIP_SUFFIXES:
                out.append((rel.as_posix(), path))
    return sorted(out)


def _zip_entry(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool) -> None:
    """One file in the zip, with Unix permissions (755 or 644) that unzip restores."""
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.create_system = 3  # Unix: the high 16 bits of external_attr are the file's mode
    info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build_bundle(stage: str, out_zip: Path | str) -> BundleResult:
    """Write the Gradescope autograder zip of `stage` to `out_zip` (atomically).

    Raises:
        ValueError: an unknown stage, or a grading dependency not installed here.
    """
    manifest = load_manifest(stage)
    root = repo_root()
    pins = pinned_requirements()
    python = ".".join(map(str, sys.version_info[:3]))
    requirements = (
        f"# grader gradescope {stage}: what grading imports, pinned as installed on Python {python}\n"
        + "".join(f"{pin}\n" for pin in pins)
    )
    fill = {
        "stage": manifest.id,
        "minor": sys.version_info[1],
        "python": python,
        "root_var": ROOT_VAR,
        "python_var": PYTHON_VAR,
    }
    extra = {
        "requirements.txt": (requirements, False),
        "setup.sh": (SETUP_SH.format(**fill), True),
        "run_autograder": (RUN_AUTOGRADER.format(**fill), True),
    }
    out_zip = Path(out_zip)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out_zip.name}.", suffix=".tmp", dir=out_zip.parent)
    names = []
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w") as zf:
            for name, (text, executable) in extra.items():
                _zip_entry(zf, name, text.encode("utf-8"), executable)
                names.append(name)
            for name, path in _kit_files(root):
                _zip_entry(zf, name, path.read_bytes(), bool(path.stat().st_mode & 0o111))
                names.append(name)
        os.replace(tmp, out_zip)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return BundleResult(out_zip, sorted(names), pins)
