"""What Gradescope shows a student, and when: the optional ``[gradescope]`` table of a stage's manifest.

    [gradescope]
    visibility = "visible"          # the score: the summary and each task's points and status
    details = "after_due_date"      # each task's feedback: the inputs, expected values, tracebacks
    stdout_visibility = "hidden"    # run_autograder's stdout: the instructor's table, feedback included

Each value is one of Gradescope's visibilities (`VISIBILITIES`): ``hidden`` (never shown to
the student), ``after_due_date`` (after the due date, the late due date if there is one),
``after_published`` (once the grades are published), ``visible`` (at once).

The defaults (`GradescopeSettings()`, used when the table or a key is absent) protect the
hidden checks: a check's feedback names its inputs and the reference's answer, so shown at
once a student could read every hidden check's expected values off one submission and copy
them into the next. The score and which checks fail stay visible at once; the details come
after the due date. ``details = "visible"`` gives one test per task with everything, as a
public test suite would.

`grader.grading.report.gradescope` writes results.json from these: one test per task with its points
(``visibility``); where ``details`` differs, a task whose checks did not all pass says there
only which checks fail, and a second test of it, worth nothing, holds its feedback
(``details``). A test not yet shown hides its score too (and Gradescope hides its own total
while a test is hidden), so no point is ever in a details test: each task's points are in
its score test and the total in the summary (``output``), both ``visibility``. Every text
is declared plain text (`OUTPUT_FORMAT`), never HTML or Markdown: much of it is the student's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NoReturn

__all__ = ["KEYS", "OUTPUT_FORMAT", "VISIBILITIES", "GradescopeSettings", "parse_gradescope", "when_shown"]

#: Gradescope's visibilities (its autograder specification), from the most to the least shown.
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
#: How Gradescope renders every text of results.json: as text (student text is never markup).
OUTPUT_FORMAT = "text"
#: The keys of the ``[gradescope]`` table.
KEYS = ("visibility", "details", "stdout_visibility")


@dataclass(frozen=True)
class GradescopeSettings:
    """A stage's ``[gradescope]`` table (the defaults: see the module's docstring)."""

    visibility: str = "visible"
    details: str = "after_due_date"
    stdout_visibility: str = "hidden"

    @property
    def split(self) -> bool:
        """Whether a task's details go in a test of their own (shown otherwise than its score)."""
        return self.details != self.visibility


def when_shown(visibility: str) -> str:
    """How a student reads a visibility: "after the due date", …"""
    return {
        "visible": "now",
        "after_due_date": "after the due date",
        "after_published": "once the grades are published",
        "hidden": "to the course staff only",
    }[visibility]


def parse_gradescope(raw: Any, fail: Callable[[str], NoReturn]) -> GradescopeSettings:
    """The settings of a ``[gradescope]`` table (`raw`, {} when absent); `fail(message)`
    raises the manifest's error for an unknown key or value."""
    if not isinstance(raw, dict):
        fail(f"[gradescope] must be a table, got {raw!r}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} in [gradescope] (allowed: {', '.join(KEYS)})")
    for key, value in raw.items():
        if value not in VISIBILITIES:
            fail(
                f"[gradescope].{key} = {value!r} is not a Gradescope visibility (allowed: {', '.join(VISIBILITIES)})"
            )
    return GradescopeSettings(**raw)
