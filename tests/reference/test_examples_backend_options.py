"""The examples' `--backend` / `--device` options (minitorch/examples/backend_options.py),
and an example trained with `--device cuda` (Numba's simulator in CI)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import minitorch
from minitorch.examples import char_lm, gpt, seq2seq
from minitorch.examples.backend_options import add_backend_options, chosen_backend

pytestmark = pytest.mark.library


def _choose(*argv: str) -> str:
    parser = argparse.ArgumentParser()
    add_backend_options(parser)
    return chosen_backend(parser, parser.parse_args(argv))


def test_the_backend_follows_backend_or_device() -> None:
    assert _choose() == "fast"
    assert _choose("--backend", "simple") == "simple"
    assert _choose("--device", "cpu") == "fast"
    assert _choose("--device", "cpu", "--backend", "simple") == "simple"
    if cuda.is_available():
        assert _choose("--device", "cuda") == "cuda" == _choose("--backend", "cuda")
    assert (
        gpt.parse_args([]).backend
        == "fast"
        == char_lm.parse_args([]).backend
        == seq2seq.parse_args([]).backend
    )
    assert seq2seq.parse_args(["--backend", "simple"]).backend == "simple"
    assert seq2seq.parse_args(["--device", "cpu"]).backend == "fast"
    if cuda.is_available():
        assert seq2seq.parse_args(["--device", "cuda"]).backend == "cuda"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--device", "cuda", "--backend", "simple"],
            "--device cuda runs on the cuda backend, not --backend simple",
        ),
        (["--device", "cpu", "--backend", "cuda"], "contradict"),
    ],
)
def test_contradictions_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        _choose(*argv)
    assert message in capsys.readouterr().err


def test_cuda_without_a_gpu_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(minitorch.cuda, "is_available", lambda: False)
    for example in (gpt, char_lm, seq2seq):
        with pytest.raises(SystemExit):
            example.parse_args(["--device", "cuda"])
        assert "no CUDA GPU is available" in capsys.readouterr().err


@pytest.mark.skipif(not cuda.is_available(), reason="no GPU and NUMBA_ENABLE_CUDASIM is off")
@pytest.mark.usefixtures("quick_thread_switches")
def test_the_tiny_gpt_trains_with_device_cuda_as_on_the_cpu(tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("to be, or not to be: that is the question.\n" * 5)
    argv = ["--text", str(text), "--steps", "2", "--eval-every", "2", "--batch-size", "2", "--context", "6"]
    argv += ["--d-model", "8", "--heads", "2", "--layers", "1", "--feedforward", "12", "--dtype", "float64"]
    argv += ["--prompt", "to ", "--sample-length", "2", "--eval-batch-size", "64"]
    on_cuda = gpt.train(gpt.parse_args(argv + ["--device", "cuda"]), quiet=True)
    on_cpu = gpt.train(gpt.parse_args(argv + ["--device", "cpu"]), quiet=True)
    assert on_cuda.model.backend is minitorch.CudaBackend and on_cpu.model.backend is minitorch.FastBackend
    np.testing.assert_allclose(on_cuda.train_losses, on_cpu.train_losses, rtol=1e-12)
    assert on_cuda.final is not None and on_cpu.final is not None
    assert on_cuda.final.val_loss == pytest.approx(on_cpu.final.val_loss, rel=1e-12)
    assert on_cuda.sample == on_cpu.sample
