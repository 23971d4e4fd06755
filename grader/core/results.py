"""Results of a grading run: what the checks found, as plain data.

The layers above the sandbox produce these records and the report renders them:

* `Problem` — something wrong with the submitted files (a missing file, a damaged or
  missing fence, an unreadable zip), with the tasks, file and line it concerns, so the
  grader can show each problem with the tasks it costs without re-reading its text;
* `CheckResult` — one hidden check of a task;
* `TaskResult` — one row of the report (a task or a notebook part);
* `GradeResult` — a whole run.

This module holds data only: it imports nothing of the grader, decides no score and runs
nothing (scores are decided by `grader.checks.runner` and `grader.notebooks.grading`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Optional

__all__ = ["STATUSES", "CheckResult", "GradeResult", "Problem", "TaskResult"]

#: Statuses a task or check can have.
STATUSES = ("passed", "failed", "error", "timeout")


@dataclass(frozen=True)
class Problem:
    """A problem with the submitted files, shown to the student.

    Attributes:
        message: the sentence the student reads (it names the file and line itself,
            e.g. "minitorch/autodiff.py:12: the fence of task 1.1 … is missing").
        file: the file it is about ("minitorch/autodiff.py"), None for the whole submission.
        line: the 1-based line in that file, when there is one.
        tasks: the task ids it concerns; empty when it concerns every task of `file` (or,
            without a file, every task).
    """

    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    tasks: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message

    def concerns(self, task_id: str, task_files: Collection[str]) -> bool:
        """Whether the problem is about task `task_id`, whose fences lie in `task_files`."""
        if self.tasks:
            return task_id in self.tasks
        if self.file is not None:
            return self.file in task_files
        return True


@dataclass
class CheckResult:
    """One hidden check: its status, the one-line message and the full feedback.

    When the student's code raised, `raised_in` names the function that raised (module and
    qualified name inside ``minitorch``: "tensor_data.strides_from_shape"), `raised_in_task`
    the task whose fence lies in it ("" when unknown) and `unfinished` tells a
    NotImplementedError (a stub) from any other exception.
    """

    name: str
    kind: str
    status: str
    message: str = ""
    details: str = ""
    seconds: float = 0.0
    grader_error: str = ""
    raised_in: str = ""
    raised_in_task: str = ""
    unfinished: bool = False


@dataclass
class TaskResult:
    """One row of the report: a task (or a notebook part).

    `message` is one line (that of the first failing check, naming the others); `messages`,
    when there are several, says what fails one line each ("index_to_position: …"), for
    the report's table.
    """

    id: str
    title: str
    max_points: float
    score: float
    status: str
    message: str
    feedback: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    kind: str = "task"
    messages: list[str] = field(default_factory=list)


@dataclass
class GradeResult:
    """A grading run of one submission for one stage."""

    stage: str
    title: str
    submission: str
    tasks: list[TaskResult]
    seconds: float
    isolate: bool = False
    isolation: str = "process"  # the jail tier that ran the student's code (grader.sandbox.tiers)
    problems: list[Problem] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)
    output: str = ""

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tasks), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_points for t in self.tasks), 4)
