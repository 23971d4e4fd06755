"""The examples' progress bars (`minitorch.examples.progress`, library): a metric reads "–"
until its first value, never ``nan`` or ``acc 0.0 %`` (which look like a diverged model
while Numba compiles the first step), and the elapsed time keeps running through the
evaluations (a stopped rich task keeps its elapsed time frozen for good)."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress

from minitorch.examples.progress import PENDING, first_step_note, metric, metrics

pytestmark = pytest.mark.library


def test_a_metric_reads_a_dash_until_its_first_value() -> None:
    assert metrics() == f"loss {PENDING}" and PENDING == "–"
    assert metrics(show_acc=True, note="compiling…") == "loss –  acc – %  compiling…"
    assert metrics(0.69314, 0.5, 12.4) == "loss 0.693  acc 50.0 %  12 ms/step"
    assert (
        metrics(0.5, ms=1.25, loss_spec=".4f", ms_spec=".1f", note="evaluating…")
        == "loss 0.5000  1.2 ms/step  evaluating…"
    )
    assert metric(None, ".3f") == "–" and metric(math.nan, ".3f") == "nan"  # a real NaN (divergence) is shown
    assert first_step_note("fast") == first_step_note("cuda") == "compiling…"
    assert first_step_note("simple") == first_step_note("torch") == "first step…"


class WatchedProgress(Progress):
    """A Progress that records, at every update, each task's text and whether its elapsed time runs."""

    seen: list[tuple[str, bool]] = []

    def __init__(self, *columns: Any, **kwargs: Any) -> None:  # sys.stdout left alone: pytest captures it
        super().__init__(*columns, **{**kwargs, "redirect_stdout": False, "redirect_stderr": False})

    def update(self, task_id: Any, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        task = self._tasks[task_id]
        WatchedProgress.seen.append((task.fields.get("metrics", ""), task.stop_time is None))


@pytest.mark.parametrize("example", ["char_lm", "gpt"])
def test_the_example_bar_shows_no_nan_and_its_elapsed_time_runs_on(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    module = importlib.import_module(f"minitorch.examples.{example}")
    text = tmp_path / "text.txt"
    text.write_text("to be, or not to be: that is the question.\n" * 40)
    small = dict(
        steps=4,
        eval_every=2,
        batch_size=4,
        eval_batch_size=16,
        text=str(text),
        prompt="to ",
        sample_length=5,
        backend="simple",
        dtype="float64",
    )
    if example == "char_lm":
        config = module.Config(cell="lstm", embedding=4, hidden=8, seq_len=8, **small)
    else:
        config = module.Config(context=8, d_model=8, heads=2, layers=1, feedforward=16, **small)
    monkeypatch.setattr(module, "Progress", WatchedProgress)
    WatchedProgress.seen = []
    out = io.StringIO()
    module.train(config, console=Console(file=out, force_terminal=True, width=200), quiet=False)
    shown = out.getvalue()
    assert "loss –  first step…" in shown  # the first frame, before any step
    assert "nan" not in shown.lower()
    texts = [t for t, _ in WatchedProgress.seen]
    assert len(texts) >= config.steps and all("nan" not in t for t in texts)
    assert any(t.endswith("evaluating…") for t in texts)
    assert all(running for _, running in WatchedProgress.seen), "a task was stopped: its elapsed time froze"
