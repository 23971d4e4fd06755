"""`bench/train_step.py`'s bookkeeping: several processes combined into one row, and the
Markdown section replaced in place (the timings themselves are never asserted)."""

from __future__ import annotations

import pytest

from bench import train_step

pytestmark = pytest.mark.library


def _run(median: float, first: float = 0.5, rss: float = 200.0) -> dict:
    return {
        "median_ms": median,
        "first_step_s": first,
        "to_first_step_s": first + 1,
        "first_loss": 0.69,
        "rss_peak_mib": rss,
        "step_peak_mib": 3.0,
    }


def test_processes_combine_into_medians_and_a_range() -> None:
    combined = train_step.combine([_run(40.0, rss=210), _run(52.0, rss=190), _run(44.0, rss=200)])
    assert combined["median_ms"] == 44.0
    assert combined["median_ms_range"] == (40.0, 52.0)
    assert combined["rss_peak_mib"] == 200
    assert combined["processes"] == 3


def test_table_row_gives_the_ratio_of_the_medians_and_each_spread() -> None:
    results = {
        "lstm": {
            "minitorch": train_step.combine([_run(60.0), _run(50.0), _run(70.0)]),
            "torch": train_step.combine([_run(30.0), _run(25.0), _run(35.0)]),
        }
    }
    header, rule, row = train_step.table(results, {})
    assert "60.0 ms (50.0–70.0)" in row and "30.0 ms (25.0–35.0)" in row
    assert "| 2.00 |" in row
    assert header.count("|") == rule.count("|") == row.count("|")


def test_markdown_section_is_replaced_and_the_rest_kept(tmp_path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(f"# Benchmarks\n\nintro\n\n{train_step.SECTION}\n\nold table\n\n## Later\n\nkept\n")
    train_step.write_section(str(path), ["new table"])
    text = path.read_text()
    assert "new table" in text and "old table" not in text
    assert text.index("intro") < text.index("new table") < text.index("## Later\n\nkept")


def test_the_micro_benchmark_keeps_the_training_section(tmp_path) -> None:
    """`python -m bench --markdown F` rewrites its own table and keeps train_step's section."""
    from bench.__main__ import _training_section

    path = tmp_path / "BENCHMARKS.md"
    assert _training_section(str(path)) == ""
    path.write_text(f"# Benchmarks\n\nold micro table\n\n{train_step.SECTION}\n\nsteps table\n")
    assert _training_section(str(path)) == f"{train_step.SECTION}\n\nsteps table\n"
    path.write_text(f"# Benchmarks\n\n{train_step.SECTION}\n\nsteps\n\n## Other\n\nx\n")
    assert _training_section(str(path)) == f"{train_step.SECTION}\n\nsteps\n\n"
