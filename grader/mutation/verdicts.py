"""The verdicts of a mutation analysis, and what they add up to.

    report.tasks()       # -> [TaskSummary]: one row per task (mutants, killed, score, (a), (b))
    report.failures()    # -> [Verdict]: what fails the run

A `Verdict` is what grading one mutant found: its task's score, the other tasks whose score
moved (b), and for a survivor the outcome of its task's public tests (a) and whether
`mutants.toml` proves it equivalent. A `StageReport` holds the verdicts of one stage with the
problems found on the way; `grader.mutation.analysis` fills it in, `grader.mutation.report`
prints and writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .mutants import Mutant

__all__ = ["StageReport", "TaskSummary", "Verdict"]


@dataclass
class Verdict:
    """What grading one mutant found. `others`: (b) — the other tasks whose score moved;
    `public`: for survivors, the outcome of the task's public tests."""

    mutant: Mutant
    score: float
    max_points: float
    message: str
    others: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    public: str = ""
    public_failed: bool = False
    equivalent: str = ""
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.score < self.max_points


@dataclass
class TaskSummary:
    """One row of the table."""

    stage: str
    task: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    violations_a: int = 0
    violations_b: int = 0
    seconds: float = 0.0

    @property
    def survived(self) -> int:
        return self.mutants - self.killed

    @property
    def score(self) -> float:
        """killed / (mutants − equivalent), in percent (100 when nothing is left)."""
        n = self.mutants - self.equivalent
        return 100.0 * self.killed / n if n else 100.0


@dataclass
class StageReport:
    """The mutation analysis of one stage; `notes` are listed but do not fail the run."""

    stage: str
    scope: str
    verdicts: list[Verdict]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def tasks(self) -> list[TaskSummary]:
        rows: dict[str, TaskSummary] = {}
        for v in self.verdicts:
            row = rows.setdefault(v.mutant.task, TaskSummary(self.stage, v.mutant.task))
            row.mutants += 1
            row.killed += v.killed
            row.equivalent += bool(v.equivalent) and not v.killed
            row.violations_a += not v.killed and v.public_failed
            row.violations_b += bool(v.others)
            row.seconds += v.seconds
        return [rows[t] for t in sorted(rows, key=lambda t: tuple(map(int, t.split("."))))]

    def failures(self) -> list[Verdict]:
        """Verdicts that fail the run: (a), (b), grader errors, surviving mistakes."""
        return [
            v
            for v in self.verdicts
            if v.others or v.errors or (not v.killed and (v.public_failed or v.mutant.operator == "mistake"))
        ]

    @property
    def ok(self) -> bool:
        return not self.problems and not self.failures()
