"""`grader gradescope STAGE -o autograder.zip`: the bundle Gradescope's autograder runs.

    build_bundle("a1", Path("autograder.zip"))      # `grader gradescope a1 -o autograder.zip`
    grade_submission("a1", Path("/autograder"))     # what run_autograder runs for each submission

Data flow:

1. **Build** (the instructor's machine, here; `grader.commands.autograder_bundle`):
   `build_bundle` writes one zip whose root holds the kit (`KIT_DIRS`, `KIT_FILES`: the
   grader, the stage manifests, the reference ``minitorch/``, the solution notebooks;
   caches left out), ``requirements.txt`` (what grading imports, `GRADING_DISTRIBUTIONS`,
   and everything they need, pinned to the exact versions installed here:
   `pinned_requirements`), ``setup.sh`` and ``run_autograder`` (`SETUP_SH`,
   `RUN_AUTOGRADER`, with the stage written in).
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
import sys
import traceback
from pathlib import Path
from typing import Any

from grader.core.gradescope_settings import OUTPUT_FORMAT
from grader.core.manifest import repo_root, stage_arg
from .autograder_bundle import build_bundle

__all__ = ["add_parser", "grade_submission", "jail_tier", "submission_path"]

#: The environment variable of run_autograder that names the jail tier to grade in.
SANDBOX_VAR = "MINITORCH_AUTOGRADER_SANDBOX"  # default auto
#: Tiers `jail_tier` accepts: the best available, or a jail by name; never "process".
JAIL_REQUESTS = ("auto", "bwrap", "uid")

UNFINISHED = (
    "Grading started but did not finish: the autograder was stopped, most likely by the time limit. "
    "This is not a grade of your work: resubmit, or tell the course staff."
)


# ------------------------------------------------------------------------------ grading


def jail_tier(request: str = "auto") -> str:
    """The jail tier that grades here: `request` ("auto": the best), never "process".

    Raises:
        SandboxUnavailable: no jail here, or `request` names one this machine lacks.
    """
    from grader.sandbox.tiers import SandboxUnavailable, choose_tier, tier_reasons

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
        from grader.sandbox.tiers import SandboxUnavailable

        try:
            return selftest(args.stage)
        except SandboxUnavailable as exc:
            print(f"self-test of {args.stage}: {exc}", file=sys.stderr)
            return 1
    grade_submission(args.stage, Path(args.root), os.environ.get(SANDBOX_VAR, "auto"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
