"""``python -m bench.grading_time``: what one mistake, one charge costs in grading time.

For each stage, the submissions `grader example` writes for it (the reference solved and
each realistic mistake) and a fresh release (every task a stub) are graded twice, as
`grader run` grades them (one charge: a task that loses points is graded again alone, the
stage's other tasks the reference) and as `grader run --whole-tree` does (the student's
whole tree only: grading as it was before one charge). The ratio is one charge's time over
the whole tree's, per submission and per stage (the sums); the target is at most 1.5.

Every grade runs in the sandbox's child processes as `grader run` does, after one ungraded
warm-up of the stage (Numba's cache filled, the files read once); the two ways are graded
in alternating order so neither always comes first. Times are the fastest of ``--repeat``
runs. The CPU is printed with the table: the figures are only comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.machine import cpu_name
from grader.release.examples import EXAMPLES, write_example
from grader.grading.grade import grade
from grader.core.manifest import all_manifests, repo_root
from grader.release.starter import release
from grader.sandbox.session import Limits

LIMITS = Limits(check_timeout=120, start_timeout=120)


@dataclass
class Timing:
    """One submission graded both ways: seconds and the score each gave."""

    stage: str
    name: str
    whole_tree: float
    one_charge: float
    whole_score: float
    one_score: float

    @property
    def ratio(self) -> float:
        return self.one_charge / self.whole_tree


def timed_grade(submission: Path, stage: str, one_charge: bool) -> tuple[float, float]:
    """(seconds, score) of one grade, notebooks included."""
    start = time.perf_counter()
    result = grade(submission, stage, one_charge=one_charge, limits=LIMITS)
    seconds = time.perf_counter() - start
    if result.grader_errors:
        raise RuntimeError(f"{stage} {submission}: grader errors {result.grader_errors}")
    return seconds, result.score


def submissions(stage: str, root: Path) -> list[tuple[str, Path]]:
    """(name, folder) of the stage's examples and of a fresh release, written under `root`."""
    out = []
    for name, example in EXAMPLES.items():
        if example.stage == stage:
            write_example(name, root / name)
            out.append((name, root / name))
    release(stage, root / "release")
    out.append((f"{stage} release", root / "release"))
    return out


def time_stage(stage: str, repeat: int, root: Path) -> list[Timing]:
    subs = submissions(stage, root)
    timed_grade(subs[0][1], stage, one_charge=True)  # warm-up: the Numba cache, the files
    rows = []
    for i, (name, folder) in enumerate(subs):
        best = {True: (float("inf"), 0.0), False: (float("inf"), 0.0)}
        for r in range(repeat):
            order = (True, False) if (i + r) % 2 == 0 else (False, True)
            for one_charge in order:
                seconds, score = timed_grade(folder, stage, one_charge)
                best[one_charge] = min(best[one_charge], (seconds, score))
        rows.append(Timing(stage, name, best[False][0], best[True][0], best[False][1], best[True][1]))
        print(
            f"  {name}: whole tree {rows[-1].whole_tree:.1f} s ({rows[-1].whole_score:g}), "
            f"one charge {rows[-1].one_charge:.1f} s ({rows[-1].one_score:g})",
            file=sys.stderr,
            flush=True,
        )
    return rows


def table(rows: list[Timing]) -> str:
    lines = [
        "| stage | submission | whole tree s (score) | one charge s (score) | ratio |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.stage} | {r.name} | {r.whole_tree:.1f} ({r.whole_score:g}) | "
            f"{r.one_charge:.1f} ({r.one_score:g}) | {r.ratio:.2f} |"
        )
    for stage in dict.fromkeys(r.stage for r in rows):
        mine = [r for r in rows if r.stage == stage]
        whole, one = sum(r.whole_tree for r in mine), sum(r.one_charge for r in mine)
        lines.append(
            f"| **{stage}** | all {len(mine)} | **{whole:.1f}** | **{one:.1f}** | **{one / whole:.2f}** |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stages",
        default=",".join(sorted(all_manifests(repo_root()))),
        help="comma-separated stages (default: all)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="grade each submission this many times each way"
    )
    args = parser.parse_args(argv)
    rows: list[Timing] = []
    with tempfile.TemporaryDirectory(prefix="grading-time-") as tmp:
        for stage in args.stages.lower().split(","):
            print(f"{stage}:", file=sys.stderr, flush=True)
            rows += time_stage(stage, args.repeat, Path(tmp) / stage)
    print(f"CPU: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; Python {platform.python_version()}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
