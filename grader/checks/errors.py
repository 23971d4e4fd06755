"""What a check raises: the submission's wrong answer (`CheckFailed`), the student's code
raising (`StudentError`), or a mistake of the check itself (`GraderBug`). Parent side only;
`grader.checks.base` re-exports them (checks import them from there)."""

from __future__ import annotations

from typing import Optional

from grader.core.manifest import Task
from .feedback import error_message, join_lines as _join, not_implemented_message
from .probe import ErrorInfo

__all__ = ["CheckFailed", "GraderBug", "StudentError"]


class CheckFailed(Exception):
    """The submission gave a wrong answer.

    Args:
        message: one line for the table (what went wrong, on which input).
        details: the full feedback (inputs, expected, got).
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.message = message
        self.details = details


class StudentError(Exception):
    """The student's code raised an exception on a probe.

    Args:
        label: the call, as the student would write it ("operators.inv(0.0)").
        error: what the student's code raised.
        details: the inputs (and the expected value) for the full feedback.
        expected: what the reference returned, in short, when it returned a value: the
            one-line message then says what was wanted instead of the exception.
    """

    def __init__(self, label: str, error: ErrorInfo, details: str = "", expected: Optional[str] = None):
        super().__init__(f"{label}: {error.type}")
        self.label = label
        self.error = error
        self.details = _join(f"while running: {label}", details)
        self.expected = expected

    @property
    def not_implemented(self) -> bool:
        return self.error.is_a("NotImplementedError")

    @property
    def message(self) -> str:
        """The one-line message, without knowing the task being graded."""
        return self.message_for(None)

    def message_for(self, task: Optional[Task]) -> str:
        """The one-line message; `task` (the task being graded) lets a NotImplementedError
        raised by a function of another task say so."""
        if self.not_implemented:
            return not_implemented_message(self.error, task)
        return error_message(self.label, self.error, self.expected)


class GraderBug(Exception):
    """A check or probe is wrong (the reference itself failed where it must not)."""
