"""Reading Gradescope's results.json (`grader.grading.report.gradescope`) in tests.

A task whose hidden checks fail has two tests there: its score test (its points, which
checks fail) and a details test worth nothing (its feedback, shown after the due date by
default). `task_tests` gives one entry per task, as a student sees it once both are shown.
"""

from __future__ import annotations


def is_details(test: dict) -> bool:
    """Whether `test` is a task's details test (not its score)."""
    extra = test.get("extra_data")
    return isinstance(extra, dict) and extra.get("part") == "details"


def task_tests(results: dict) -> list[dict]:
    """The score test of each task, in order, its output followed by that of its details test."""
    tests = results.get("tests", [])
    details = {t.get("number"): t.get("output", "") for t in tests if is_details(t)}
    return [
        {
            **t,
            "output": t.get("output", "")
            + (f"\n\n{details[t.get('number')]}" if t.get("number") in details else ""),
        }
        for t in tests
        if not is_details(t)
    ]


def by_number(results: dict) -> dict[str, dict]:
    """`task_tests` by task number ("1.1", or a notebook's file name)."""
    return {t["number"]: t for t in task_tests(results)}
