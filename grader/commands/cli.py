"""The `grader` command: `grader run`, `grader check`, `grader release`, `grader example`,
`grader batch`, `grader gradescope`, `grader nbgrader-export`.

    grader run SUBMISSION -a a1 [--task 1.3] [--json results.json] [--junit junit.xml]
               [--fail-under 80] [--whole-tree | --isolate] [--timeout 60]
    grader check [-a a1]
    grader check [-a a2] --public [--task 2.1]
    grader check -a a1 --mutants [--sample 5] [--jobs 2] [--task 1.4]
    grader release a1 -o out/a1 [--force]
    grader example [NAME -o DIR]
    grader batch SUBMISSIONS -a a1 -o OUT [--workers N | --scheduler tcp://HOST:8786] [--regrade 1.2]
    grader gradescope a1 -o autograder.zip
    grader nbgrader-export OUT -a a1 [--db gradebook.db]

This module parses arguments and prints; the work is done by `grader.grading.grade` (run),
`grader.commands.invariants` (check), `grader.mutation.analysis` (check --mutants), `grader.release.starter`,
`grader.release.examples`, `grader.batch.run`, `grader.commands.gradescope` and `grader.batch.nbgrader_export`.

Exit status: 0 when grading completed (whatever the score); a submission refused at
intake (an unreadable zip, no minitorch/) completes too: it scores 0 of the stage's full
points (its results.json and junit.xml are written) and exits 0, since the grade is a fact
about the student's work, not a failure of the grader; 1 when --fail-under is given
and the score is below it (`grader check`: an invariant does not hold; with --mutants: a
mutation verdict fails); 2 when grading itself failed (bad arguments, a broken check, the
reference failing).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional

from grader import GRADER_EXTRA_HINT, missing_dependencies
from grader.core.manifest import stage_arg

RUN_HELP = """\
Grade SUBMISSION (a directory or a zip holding minitorch/) for one stage.

Student code runs only in a child process (clean environment, temporary directory,
address-space limit, per-check timeout); the hidden checks and the reference stay in
this process, which compares the numbers the child sends back. The table shows each
task's points, status (passed / failed / error / timeout) and a short message; the
feedback below it has the smallest failing input, expected vs got, your traceback lines
and the task's hint. A task's points are shared among its checks (by the manifest's weights).

One mistake, one charge: a task that loses points with the student's code for every
task is graded again ALONE, in a tree where the stage's other tasks hold the reference
solution, and each check that passes there counts. So a wrong strides_from_shape costs
task 2.1, not 2.2-2.4 too. Only the verdicts of that second run are kept (its tree holds
reference code, which the student's code could print); the feedback comes from the
student's own tree and names the other tasks that fail their own checks. Fences that
share state go together: a Function's forward and backward (1.2/1.3, 2.3/2.4) share
`ctx`, so the student's whole Function class is graded with either task.

--whole-tree grades with the student's code for every task only (a mistake can then cost
the tasks that use it). --isolate grades EVERY task alone and shows what that run says:
it puts the reference code of the stage's other tasks within the child's reach and its
messages, so use it for diagnosis and `grader check`, not for submissions you do not trust.

Only the code between the markers is graded: a file whose code outside them (a helper,
an import) differs from the release gets a note with the tasks of that file.
"""


CHECK_HELP = """\
Without --mutants: for every stage (or -a STAGE), the invariants of the grader — the
reference scores full marks; a fresh release scores zero on its own stage; breaking one
task's fence costs exactly that task's points; the release's earlier code scores full
marks on earlier stages; each task's public tests stand alone (grader/commands/invariants.py).

With --public: only the last one (grader/release/standalone.py). For each task X.Y, `pytest -m
taskX_Y` in the release must pass, with no skipped test and PyTorch hidden, when the fences
through X.Y hold the reference and those after it the stubs; and fail on the stubs alone.

With --mutants (instead of the invariants): the mutation analysis (grader/mutation/analysis.py).
Every fence of the stage is mutated (swapped operators, off-by-one constants, deleted
statements, early returns, no-op bodies, wrong return types …) and the real students'
mistakes of assignments/<stage>/mutants.toml are added; each is graded. It fails when a
surviving mutant fails the task's public tests (a), when a mutant of one task changes
another task's score (b), or when a catalogue mistake survives. A run of a whole stage
rewrites its section of assignments/MUTATION.md (a sampled one, --sample N, says so there:
the stages whose full run takes hours); --task X is for work on one task (it prints, and
writes nothing).
"""


def _run(args: argparse.Namespace) -> int:
    from grader.core.console import make_console
    from grader.grading.grade import grade, refusal
    from grader.sandbox.tiers import SandboxUnavailable
    from grader.grading.report import print_report, write_reports
    from grader.core.results import TaskResult
    from grader.core.safe_text import terminal_text
    from grader.sandbox.session import Limits

    console = make_console()
    sub = Path(args.submission)
    if not sub.exists():
        console.print(terminal_text(f"grader run: {sub} does not exist", style="red"))
        return 2
    limits = Limits(sandbox=args.sandbox)
    if args.timeout:
        limits = replace(limits, check_timeout=args.timeout)
    if args.memory is not None:
        limits = replace(limits, mem_mb=args.memory)
    if args.nproc is not None:
        limits = replace(limits, nproc=args.nproc)
    if args.disk is not None:
        limits = replace(limits, disk_mb=args.disk)
    progress = make_console(stderr=True)

    def show(row: TaskResult) -> None:
        progress.print(f"[dim]  graded {row.id}: {row.status} ({row.seconds:.1f} s)[/dim]")

    try:
        result = grade(
            sub,
            args.assignment,
            task=args.task,
            isolate=args.isolate,
            one_charge=not args.whole_tree,
            limits=limits,
            notebooks=not args.no_notebooks,
            progress=None if args.quiet else show,
        )
    except (ValueError, KeyError, SandboxUnavailable) as exc:  # unknown stage or task, bad manifest, no jail
        console.print(terminal_text(f"grader run: {exc}", style="red"))
        return 2
    except Exception as exc:  # noqa: BLE001 - grading itself failed: say so, exit 2
        console.print(
            terminal_text(f"grader run: grading failed: {type(exc).__name__}: {exc}", style="bold red")
        )
        return 2
    # The files first: a terminal that fails (a closed pipe, an encoding) must not lose the grade.
    unwritten = write_reports(result, args.json, args.junit)  # every child is gone by now
    if reason := refusal(result):  # nothing was graded: one line, not a table of the same message
        console.print(
            terminal_text(f"grader run: {sub}: 0 / {result.max_score:g} points: {reason}", style="bold red")
        )
    else:
        print_report(result, console, feedback=not args.quiet)
    for message in unwritten:
        console.print(terminal_text(f"GRADER ERROR: {message}", style="bold red"))
    if result.grader_errors or unwritten:
        return 2
    if args.fail_under is not None and result.max_score > 0:
        if 100.0 * result.score / result.max_score < args.fail_under:
            console.print(
                f"[red]score {100.0 * result.score / result.max_score:.1f} % is below --fail-under {args.fail_under:g} %[/red]"
            )
            return 1
    return 0


def _check(args: argparse.Namespace) -> int:
    if args.mutants:
        from grader.core.manifest import all_stages, stage_of_task
        from grader.mutation.analysis import main as mutation_main

        try:
            stage = args.assignment or (stage_of_task(args.task) if args.task else None)
            return mutation_main(
                [stage] if stage else all_stages(),
                task=args.task,
                sample=args.sample,
                jobs=args.jobs,
                timeout=args.timeout,
            )
        except (ValueError, KeyError) as exc:  # unknown stage or task, a bad mutants.toml
            print(f"grader check --mutants: {exc}", file=sys.stderr)
            return 2
    if (args.task and not args.public) or args.sample is not None or args.jobs != 1:
        print(
            "grader check: --task goes with --mutants or --public; --sample and --jobs with --mutants",
            file=sys.stderr,
        )
        return 2
    from .invariants import main as check_main
    from grader.core.manifest import stage_of_task

    try:
        stage = args.assignment or (stage_of_task(args.task) if args.task else None)
        return check_main(
            stages=[stage] if stage else None, timeout=args.timeout, public_only=args.public, task=args.task
        )
    except (ValueError, KeyError) as exc:  # unknown stage or task
        print(f"grader check: {exc}", file=sys.stderr)
        return 2


def _release(args: argparse.Namespace) -> int:
    from grader.release.starter import release

    try:
        res = release(args.stage, Path(args.out), force=args.force)
    except Exception as exc:  # noqa: BLE001 - report and fail
        print(f"grader release: {exc}", file=sys.stderr)
        return 2
    print(
        f"released {res.stage} to {res.out_dir}: {len(res.files)} files; stubs for tasks {', '.join(res.stubbed)}"
    )
    return 0


def _example(args: argparse.Namespace) -> int:
    from grader.release.examples import EXAMPLES, ExampleError, write_example

    if args.name is None:
        width = max(len(n) for n in EXAMPLES)
        for name, ex in EXAMPLES.items():
            print(f"{name:<{width}}  ({ex.stage}) {ex.about}")
        print("\nwrite one with: grader example NAME -o DIR, then grade it with: grader run DIR -a STAGE")
        return 0
    out = Path(args.out) if args.out else Path(args.name)
    try:
        files = write_example(args.name, out)
    except ExampleError as exc:
        print(f"grader example: {exc}", file=sys.stderr)
        return 2
    stage = EXAMPLES[args.name].stage
    print(
        f"wrote example {args.name} to {out} ({len(files)} files); grade it with: grader run {out} -a {stage}"
    )
    return 0


class _VersionAction(argparse.Action):
    """`grader --version`: the kit's version and the digest of everything that decides a
    grade (what `grader batch` compares across workers), computed only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            help="print the grader's version (kit version + digest of the grading code) and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: object,
        values: object,
        option_string: Optional[str] = None,
    ) -> None:
        from grader.batch.gradebook import grader_version

        print(f"grader {grader_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader", description="Release, grade and self-check the minitorch assignments."
    )
    parser.add_argument("--version", action=_VersionAction)
    subs = parser.add_subparsers(dest="command", required=True)

    run = subs.add_parser(
        "run",
        help="grade a submission",
        description=RUN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("submission", help="directory or zip with the student's minitorch/")
    run.add_argument("-a", "--assignment", required=True, type=stage_arg, help="stage id: a0, a1, …")
    run.add_argument("--task", help="grade only this task (e.g. 1.3)")
    run.add_argument("--json", metavar="FILE", help="write Gradescope results.json here")
    run.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    run.add_argument(
        "--fail-under",
        type=float,
        metavar="N",
        help="exit 1 when the score is below N percent of the maximum",
    )
    alone = run.add_mutually_exclusive_group()
    alone.add_argument(
        "--whole-tree",
        action="store_true",
        help="grade with the student's code for every task only: no second look alone (see above)",
    )
    alone.add_argument(
        "--isolate",
        action="store_true",
        help="grade every task with the reference for the stage's other tasks, messages shown (a diagnosis; see above)",
    )
    run.add_argument("--timeout", type=float, metavar="S", help="wall-clock seconds per check (default 60)")
    run.add_argument(
        "--memory",
        type=int,
        metavar="MIB",
        help="address-space limit of the child in MiB (default 4096; 0 = none)",
    )
    run.add_argument(
        "--disk",
        type=int,
        metavar="MIB",
        help="what the jail may write in all, in MiB (default 1024; 0 = no cap)",
    )
    run.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help="processes + threads the jail may hold (default 2048; bwrap and uid tiers)",
    )
    run.add_argument("--no-notebooks", action="store_true", help="skip the stage's notebooks")
    run.add_argument(
        "--sandbox",
        choices=("auto", "require", "bwrap", "uid", "process"),
        default="auto",
        help="isolation of student code: the best available (auto, the default), the bubblewrap jail or "
        "refuse to grade (require), or one tier by name; the report says which one graded",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="only the table, no per-task feedback")
    run.set_defaults(func=_run)

    chk = subs.add_parser(
        "check",
        help="prove the grading invariants (or, with --mutants, run the mutation analysis)",
        description=CHECK_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chk.add_argument("-a", "--assignment", type=stage_arg, help="only this stage")
    chk.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds per check (--mutants: default 10)"
    )
    chk.add_argument(
        "--mutants", action="store_true", help="run the mutation analysis instead of the invariants"
    )
    chk.add_argument(
        "--public",
        action="store_true",
        help="only invariant 5: each task's public tests pass with reference code through it and stubs "
        "after it (PyTorch hidden, no skip), and fail with the release's stubs",
    )
    chk.add_argument("--task", help="--mutants / --public: only this task (e.g. 1.4)")
    chk.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="--mutants: N generated mutants per task (fixed seed) + the catalogue",
    )
    chk.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="--mutants: grade J mutants at a time, in worker processes",
    )
    chk.set_defaults(func=_check)

    rel = subs.add_parser("release", help="write a student starter repository for a stage")
    rel.add_argument("stage", type=stage_arg, help="stage id: a0, a1, …")
    rel.add_argument("-o", "--out", required=True, help="output directory")
    rel.add_argument("--force", action="store_true", help="replace an earlier release there")
    rel.set_defaults(func=_release)

    ex = subs.add_parser(
        "example",
        help="write an example submission (no NAME: list them)",
        description="Write an example submission, generated from the reference and a named set of "
        "edits, into a directory; without NAME, list the examples.",
    )
    ex.add_argument("name", nargs="?", help="the example, e.g. a1-two-wrong")
    ex.add_argument("-o", "--out", help="output directory (default: ./NAME)")
    ex.set_defaults(func=_example)

    from grader.batch.command import add_parser as add_batch_parser  # `grader batch`: a whole class, on Dask

    add_batch_parser(subs)
    from .gradescope import add_parser as add_gradescope_parser  # `grader gradescope`: the autograder zip

    add_gradescope_parser(subs)
    from grader.batch.nbgrader_export import (
        add_parser as add_nbgrader_parser,
    )  # `grader nbgrader-export`: into nbgrader's gradebook

    add_nbgrader_parser(subs)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    if (
        missing := missing_dependencies()
    ):  # the kit was installed without its `grader` extra: one line, no traceback
        print(
            f"grader: missing {', '.join(missing)}; install the grader's dependencies "
            f"in the kit's folder with: {GRADER_EXTRA_HINT}",
            file=sys.stderr,
        )
        return 2
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
