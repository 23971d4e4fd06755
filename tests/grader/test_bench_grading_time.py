"""`bench/grading_time.py`'s bookkeeping: the submissions it grades per stage and the table
with each stage's sums (the timings themselves are never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import grading_time
from grader.release.examples import EXAMPLES

pytestmark = pytest.mark.grader


def test_a_stage_is_timed_on_its_examples_and_a_fresh_release(tmp_path: Path) -> None:
    subs = grading_time.submissions("a1", tmp_path)
    names = [name for name, _ in subs]
    assert names == [n for n, e in EXAMPLES.items() if e.stage == "a1"] + ["a1 release"]
    assert names[0] == "a1-complete"  # the warm-up grades the reference
    for _, folder in subs:
        assert (folder / "minitorch" / "scalar.py").is_file()
    # the release is the stage's stubs: its scalar.py is not the reference's
    assert (tmp_path / "release" / "minitorch" / "scalar.py").read_text() != (
        tmp_path / "a1-complete" / "minitorch" / "scalar.py"
    ).read_text()


def test_the_table_gives_each_ratio_and_the_stage_sums() -> None:
    rows = [
        grading_time.Timing("a2", "a2-complete", 2.0, 2.0, 100, 100),
        grading_time.Timing("a2", "a2-strides-off-by-one", 2.0, 5.0, 10, 90),
    ]
    lines = grading_time.table(rows).splitlines()
    assert lines[2] == "| a2 | a2-complete | 2.0 (100) | 2.0 (100) | 1.00 |"
    assert lines[3] == "| a2 | a2-strides-off-by-one | 2.0 (10) | 5.0 (90) | 2.50 |"
    assert lines[4] == "| **a2** | all 2 | **4.0** | **7.0** | **1.75** |"
