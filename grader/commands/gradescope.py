"""`grader gradescope STAGE -o autograder.zip`: the bundle Gradescope's autograder runs.

    build_bundle("a1", Path("autograder.zip"))      # `grader gradescope a1 -o autograder.zip`

Data flow:

1. **Build** (the instructor's machine, here): `build_bundle` writes one zip whose root holds
   the kit (`KIT_DIRS`, `KIT_FILES`: the grader, the stage manifests, the reference
   ``minitorch/``, the solution notebooks; caches left out), ``requirements.txt`` (what
   grading imports, `GRADING_DISTRIBUTIONS`, and everything they need, pinned to the exact
   versions installed here: `pinned_requirements`), ``setup.sh`` and ``run_autograder``
   (`SETUP_SH`, `RUN_AUTOGRADER`, with the stage written in).
2. **Image** (Gradescope, once, as root): the zip is unpacked into ``/autograder/source``
   and ``setup.sh`` runs there: a Python at least as new as the one the pins were
   resolved on, a virtual environment ``/autograder/venv`` with the pins, the jail
   (``scripts/install-sandbox.sh --uid-tier``: bubblewrap, and the kit made ``o-rwx``), then
   ``python -m grader.commands.gradescope selftest STAGE``: the reference must score full
   marks, or the image fails to build (never a student's submission).
3. **Each submission**: ``/autograder/run_autograder`` runs
   ``python -m grader.commands.gradescope grade STAGE --root /autograder`` (`grade_submission`):
   a placeholder results.json first (a run stopped by the time limit still leaves a
   result), the jail tier (`jail_tier`), the submission (`submission_path`: a folder
   holding ``minitorch/``, or one zip inside it), `grader.grading.grade` exactly as
   ``grader run`` grades, `grader.grading.report.gradescope` into ``results/results.json``. Any
   failure writes a results.json with score 0 saying the autograder failed; if even
   Python cannot start, ``run_autograder`` writes that file itself.

Out of the student's reach: student code runs only in the grader's jail, and never in the
``process`` tier here (`jail_tier` refuses it; a plain process could read the kit). In the
``bwrap`` tier the kit does not exist in the jail's world (only the runtime, the venv and
the child's tree are mounted); in the ``uid`` tier the child is another uid and the kit is
``o-rwx`` (``run_autograder`` makes it so before every run, and the tier refuses to start
otherwise). The kit is not pip-installed: an installed copy in site-packages would be
readable by every uid.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import tempfile
import traceback
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.core.gradescope_settings import OUTPUT_FORMAT
from grader.core.manifest import load_manifest, repo_root, stage_arg

__all__ = [
    "GRADING_DISTRIBUTIONS",
    "BundleResult",
    "add_parser",
    "build_bundle",
    "grade_submission",
    "jail_tier",
    "pinned_requirements",
    "submission_path",
]

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
SANDBOX_VAR = "MINITORCH_AUTOGRADER_SANDBOX"  # default auto
#: Tiers `jail_tier` accepts: the best available, or a jail by name; never "process".
JAIL_REQUESTS = ("auto", "bwrap", "uid")
#: The zip's timestamps (fixed: the same kit gives the same bundle).
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

UNFINISHED = (
    "Grading started but did not finish: the autograder was stopped, most likely by the time limit. "
    "This is not a grade of your work: resubmit, or tell the course staff."
)

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


# ------------------------------------------------------------------------------ building


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


# ------------------------------------------------------------------------------ grading


def jail_tier(request: str = "auto") -> str:
    """The jail tier that grades here: `request` ("auto": the best), never "process".

    Raises:
        SandboxUnavailable: no jail here, or `request` names one this machine lacks.
    """
    from grader.sandbox.jail import SandboxUnavailable, choose_tier, tier_reasons

    if request not in JAIL_REQUESTS:
        raise SandboxUnavailable(
            f"{SANDBOX_VAR}={request!r}: the Gradescope autograder grades only in a jail "
            f"({', '.join(JAIL_REQUESTS)})"
        )
    tier = choose_tier(request)
    if tier == "process":
        why = "; ".join(f"{t}: {reason}" for t, reason in tier_reasons().items() if reason)
        raise SandboxUnavailable(
            f"no jail for student code on this machine ({why}); refusing to grade without one"
        )
    return tier


def submission_path(folder: Path) -> Path:
    """What to grade in Gradescope's submission folder: the folder itself when it holds the
    package (``minitorch/`` at any depth the intake looks), else the one zip in it (a
    student who uploaded their repository as a zip), else the folder (graded as empty)."""
    from grader.trees.intake import find_package

    folder = Path(folder)
    package = find_package(folder)
    zips = sorted(
        p for p in folder.glob("*") if p.suffix.lower() == ".zip" and p.is_file() and not p.is_symlink()
    )
    if (package is None or package == folder) and len(zips) == 1:
        return zips[0]
    return folder


def failure_results(message: str) -> dict[str, Any]:
    """A results.json for a submission the autograder could not grade: score 0 and why (as
    plain text, at once; stdout, which holds the traceback, for the staff only)."""
    return {
        "score": 0.0,
        "output": message,
        "output_format": OUTPUT_FORMAT,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from grader.grading.report import write_atomic

    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def grade_submission(stage: str, root: Path, request: str = "auto") -> None:
    """Grade ``root/submission`` for `stage` and write ``root/results/results.json``;
    whatever happens, a results.json is written (score 0 when grading itself failed)."""
    results = Path(root) / "results" / "results.json"
    _write_json(results, failure_results(UNFINISHED))
    try:
        from grader.core.console import make_console
        from grader.grading.grade import grade
        from grader.grading.report import gradescope, print_report
        from grader.sandbox.session import Limits

        result = grade(
            submission_path(Path(root) / "submission"), stage, limits=Limits(sandbox=jail_tier(request))
        )
        _write_json(results, gradescope(result))
    except Exception as exc:  # noqa: BLE001 - never lose a result: say that grading failed
        traceback.print_exc()
        message = f"{type(exc).__name__}: {exc}"[:1000]
        _write_json(
            results,
            failure_results(
                f"The autograder failed before it could grade this submission ({message}). "
                "This is not a grade of your work: tell the course staff."
            ),
        )
        return
    print_report(
        result, make_console()
    )  # the instructor's view (Gradescope's stdout), once the result is safe


def selftest(stage: str) -> int:
    """Grade the kit's own reference as a submission, in a jail; 0 when it scores full marks."""
    from grader.core.console import make_console
    from grader.grading.grade import grade
    from grader.grading.report import print_report
    from grader.sandbox.session import Limits

    result = grade(repo_root(), stage, limits=Limits(sandbox=jail_tier()))
    print_report(result, make_console(), feedback=True)
    full = result.score == result.max_score and not result.grader_errors
    print(
        f"self-test of {stage}: the reference scores {result.score:g} / {result.max_score:g}"
        + ("" if full else " — the bundle cannot grade here")
    )
    return 0 if full else 1


# ------------------------------------------------------------------------------ commands


def _gradescope(args: argparse.Namespace) -> int:
    try:
        res = build_bundle(args.stage, Path(args.out))
    except (
        ValueError,
        KeyError,
        OSError,
    ) as exc:  # unknown stage, bad manifest, a pin missing, unwritable path
        print(f"grader gradescope: {exc}", file=sys.stderr)
        return 2
    size = res.path.stat().st_size / (1024 * 1024)
    print(
        f"wrote {res.path} ({size:.1f} MiB, {len(res.names)} files, {len(res.pins)} pinned packages for "
        f"Python >= 3.{sys.version_info[1]}): upload it as the autograder of {args.stage} on Gradescope"
    )
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``grader gradescope`` (its arguments and handler) on `subparsers`."""
    p = subparsers.add_parser(
        "gradescope",
        help="write the Gradescope autograder zip of a stage",
        description="Write the zip to upload as a Gradescope programming assignment's autograder: "
        "setup.sh, run_autograder, the pinned requirements and the kit (hidden checks "
        "and reference included, out of student code's reach while it runs).",
    )
    p.add_argument("stage", type=stage_arg, help="stage id: a0, a1, …")
    p.add_argument("-o", "--out", required=True, help="the zip to write (e.g. autograder.zip)")
    p.set_defaults(func=_gradescope)


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.commands.gradescope grade|selftest STAGE``: what the bundle's scripts run."""
    parser = argparse.ArgumentParser(prog="python -m grader.commands.gradescope")
    subs = parser.add_subparsers(dest="command", required=True)
    run = subs.add_parser(
        "grade", help="grade ROOT/submission into ROOT/results/results.json (run_autograder)"
    )
    run.add_argument("stage", type=stage_arg)
    run.add_argument("--root", default="/autograder")
    check = subs.add_parser("selftest", help="the reference must score full marks (setup.sh)")
    check.add_argument("stage", type=stage_arg)
    args = parser.parse_args(argv)
    if args.command == "selftest":
        from grader.sandbox.jail import SandboxUnavailable

        try:
            return selftest(args.stage)
        except SandboxUnavailable as exc:
            print(f"self-test of {args.stage}: {exc}", file=sys.stderr)
            return 1
    grade_submission(args.stage, Path(args.root), os.environ.get(SANDBOX_VAR, "auto"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
