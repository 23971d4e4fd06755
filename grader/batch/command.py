"""The ``grader batch`` command line: its arguments and their help, read into the
`BatchOptions` of `grader.batch.run.run_batch`.

    grader batch SUBMISSIONS -a a1 -o OUT [--workers N | --scheduler tls://HOST:8786] [--regrade 1.2]
    python -m grader.batch.command SUBMISSIONS -a a1 -o OUT …   # the same, without the rest of grader

`add_parser` registers the command on the parser of ``grader`` (`grader.commands.cli`). The
limits of ``grader run`` (``--timeout``, ``--memory``, ``--nproc``, ``--disk``, ``--sandbox``)
become the batch's `Limits`. The engine's packages (Dask's ``distributed``, and
``cryptography`` for each batch's TLS certificate) are looked for first: without them the
command says how to install them and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from .run import WORKER_GRACE_S, BatchOptions, run_batch
from grader.core.manifest import stage_arg
from grader.sandbox.session import Limits

__all__ = ["add_parser", "main"]

BATCH_HELP = """\
Grade every submission in SUBMISSIONS for one stage, exactly as `grader run` grades one,
in parallel on Dask. SUBMISSIONS holds one folder or zip per student (the name is the
student id), a Gradescope "export submissions" folder (ids from submission_metadata.yml)
or GitHub Classroom clones named ASSIGNMENT-USER (the id is USER).

Each finished submission writes OUT/STUDENT/results.json, junit.xml, feedback.md and
grade.json, then appends its row to OUT/gradebook.csv. Run the same command again after an
interruption: submissions already graded (same hash, same grader version) are skipped,
changed ones are regraded, and the gradebook keeps every earlier row as history (its
`change` column says what each row changed).

After fixing a check of one task, `--regrade TASK` grades that task again for every
student whose row comes from another grader version, keeping the rest of their grade.

Each submission has a wall clock (`--submission-timeout S`; default: one full check budget
per task, one child start and each notebook's budget: 300 s in A0, 1080 s in A3): past it,
its grading and every process it started are killed and its row says `timeout`.

Security: a Dask scheduler runs any code a client sends it. The local cluster takes only
TLS connections with a certificate made for this batch. `--scheduler` needs TLS too
(`--tls-ca-file`, `--tls-cert`, `--tls-key`, or Dask's configuration with
distributed.comm.require-encryption), or `--insecure-scheduler` on a network only the
grader reaches. Student code must not share the grader's network: where the jail has no
private network (the `process` tier, or the `uid` tier in a container that forbids
namespaces) the batch refuses, unless `--allow-shared-network`.

Every failure of one student is that student's row; if every Dask worker is gone for
`--worker-grace` seconds, the batch stops (exit 2) with every finished row written.
"""


def add_parser(subparsers: Any) -> None:
    """Register ``grader batch`` (its arguments and handler) on `subparsers`."""
    p = subparsers.add_parser(
        "batch",
        help="grade a whole class into a resumable gradebook",
        description=BATCH_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("submissions", help="folder of submissions: one folder or zip per student")
    p.add_argument("-a", "--assignment", required=True, type=stage_arg, help="stage id: a0, a1, …")
    p.add_argument(
        "-o", "--out", required=True, help="output folder: OUT/gradebook.csv and OUT/STUDENT/ reports"
    )
    engine = p.add_mutually_exclusive_group()
    engine.add_argument(
        "--workers", type=int, metavar="N", help="local cluster: N worker processes (default: one per core)"
    )
    engine.add_argument(
        "--scheduler", metavar="ADDRESS", help="use the running Dask cluster at ADDRESS (tls://HOST:8786)"
    )
    p.add_argument("--tls-ca-file", metavar="FILE", help="--scheduler: the cluster's CA certificate")
    p.add_argument("--tls-cert", metavar="FILE", help="--scheduler: this client's certificate")
    p.add_argument("--tls-key", metavar="FILE", help="--scheduler: this client's private key")
    p.add_argument(
        "--insecure-scheduler",
        action="store_true",
        help="--scheduler without TLS: whoever reaches the scheduler can run code as the grader "
        "(only on a network that nobody else, student code included, can reach)",
    )
    p.add_argument(
        "--allow-shared-network",
        action="store_true",
        help="grade even where student code shares the grader's network (the process tier, or the uid "
        "tier without namespaces): it can then reach every loopback service of this machine",
    )
    p.add_argument(
        "--submission-timeout",
        type=float,
        metavar="S",
        help="wall-clock seconds per submission (default: derived from the stage's check budgets; 0: none)",
    )
    p.add_argument(
        "--worker-grace",
        type=float,
        metavar="S",
        default=WORKER_GRACE_S,
        help=f"end the batch when no Dask worker is left for S seconds (default {WORKER_GRACE_S:g})",
    )
    p.add_argument(
        "--strip-prefix",
        metavar="PREFIX",
        help="GitHub Classroom: the repositories' ASSIGNMENT- prefix (default: the one all clones share)",
    )
    p.add_argument("--timeout", type=float, metavar="S", help="wall-clock seconds per check (default 60)")
    p.add_argument(
        "--memory", type=int, metavar="MIB", help="address-space limit of each child in MiB (default 4096)"
    )
    p.add_argument(
        "--nproc", type=int, metavar="N", help="processes + threads each jail may hold (default 2048)"
    )
    p.add_argument(
        "--disk", type=int, metavar="MIB", help="what each jail may write in all, in MiB (default 1024)"
    )
    p.add_argument("--no-notebooks", action="store_true", help="skip the stage's notebooks")
    p.add_argument(
        "--regrade",
        metavar="TASK",
        help="after fixing a check of TASK: regrade only TASK for every student not up to date "
        "(same submission); new or changed submissions are graded in full",
    )
    p.add_argument(
        "--sandbox",
        choices=("auto", "require", "bwrap", "uid", "process"),
        default="auto",
        help="isolation of student code, as for grader run",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no line per submission, only the bar and the summary"
    )
    p.set_defaults(func=_batch)


def _batch(args: argparse.Namespace) -> int:
    try:
        import distributed  # noqa: F401 - the engine
        import cryptography  # noqa: F401 - the TLS certificate of each batch (distributed's Security.temporary)
    except ImportError as exc:
        print(
            f"grader batch: {exc.name} is not installed; install the grader's packages with: "
            f'pip install "minitorch-kit[grader]" (or pip install "dask[distributed]" cryptography)',
            file=sys.stderr,
        )
        return 2
    limits = Limits(sandbox=args.sandbox)
    for field_name, value in (
        ("check_timeout", args.timeout),
        ("mem_mb", args.memory),
        ("nproc", args.nproc),
        ("disk_mb", args.disk),
    ):
        if value is not None:
            limits = replace(limits, **{field_name: value})
    options = BatchOptions(
        stage=args.assignment,
        out=Path(args.out),
        scheduler=args.scheduler,
        workers=args.workers,
        limits=limits,
        notebooks=not args.no_notebooks,
        strip_prefix=args.strip_prefix,
        quiet=args.quiet,
        regrade=args.regrade,
        tls_ca_file=args.tls_ca_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        insecure_scheduler=args.insecure_scheduler,
        allow_shared_network=args.allow_shared_network,
        submission_timeout=args.submission_timeout,
        worker_grace=args.worker_grace,
    )
    return run_batch(Path(args.submissions), options)


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m grader.batch.command …``: the same command as ``grader batch …``."""
    parser = argparse.ArgumentParser(prog="grader")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["batch", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
