"""`bench/train_step.py`'s bookkeeping: several processes combined into one row, the Markdown
section of each kind of code replaced in place, and the AVX2 settings passed to the workers
(the timings themselves are never asserted)."""

from __future__ import annotations

import subprocess
from argparse import Namespace

import pytest

from bench import machine, train_step
from bench.machine import CODE, runs_code
from bench.markdown_sections import replace_section

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
    path.write_text("# Benchmarks\n\nintro\n\n## Steps: AVX2\n\nold table\n\n## Later\n\nkept\n")
    replace_section(str(path), "Steps: AVX2", "new table")
    text = path.read_text()
    assert "new table" in text and "old table" not in text
    assert text.index("intro") < text.index("new table") < text.index("## Later\n\nkept")
    replace_section(str(path), "Steps: native", "native table")  # a new section goes last
    assert path.read_text().startswith(text.rstrip("\n")) and path.read_text().endswith("native table\n")
    replace_section(str(path), "Later", "replaced")  # the last section: up to the end
    assert path.read_text().endswith("## Later\n\nreplaced\n\n## Steps: native\n\nnative table\n")


def test_each_kind_of_code_writes_its_own_section(tmp_path) -> None:
    """`train_step --code avx2 --markdown F` and `--code native` keep each other's table, and
    so does `python -m bench` (its sections have other titles)."""
    from bench.__main__ import results_title

    path = tmp_path / "BENCHMARKS.md"
    args = Namespace(code="avx2")
    train_step.write_section(str(path), ["avx2 steps"], args)
    train_step.write_section(str(path), ["native steps"], Namespace(code="native"))
    replace_section(str(path), results_title("avx2"), "avx2 kernels")
    train_step.write_section(str(path), ["avx2 steps, again"], args)
    text = path.read_text()
    cpu = machine.cpu_label()
    assert f"## Training steps against PyTorch: AVX2 code, {cpu}\n" in text
    assert f"## Training steps against PyTorch: native code of the machine, {cpu}\n" in text
    assert "--code avx2" in text and "avx2 steps, again" in text and "native steps" in text
    assert "avx2 kernels" in text and "avx2 steps\n" not in text


def test_another_cpu_s_tables_are_kept(tmp_path, monkeypatch) -> None:
    """A run on another CPU adds its own sections: BENCHMARKS.md keeps the tables of every
    machine it was measured on, each titled with its CPU."""
    path = tmp_path / "BENCHMARKS.md"
    train_step.write_section(str(path), ["this cpu"], Namespace(code="native"))
    monkeypatch.setattr(machine, "cpu_name", lambda: "Other CPU (family 1, model 2: avx2, fma)")
    assert machine.cpu_label() == "Other CPU (family 1, model 2)"
    train_step.write_section(str(path), ["other cpu"], Namespace(code="native"))
    text = path.read_text()
    assert "this cpu" in text and "other cpu" in text
    assert (
        "## Training steps against PyTorch: native code of the machine, Other CPU (family 1, model 2)\n"
        in text
    )


def test_avx2_code_settings_reach_the_worker_processes(monkeypatch) -> None:
    """Every library's AVX2 setting is in a worker's environment with `--code avx2`, none
    with `--code native` (unless the user set it)."""
    for name in CODE["avx2"]:
        monkeypatch.delenv(name, raising=False)
    seen = {}

    def fake_run(cmd, capture_output, text, env):  # the worker's command and environment
        seen["env"] = env
        return subprocess.CompletedProcess(cmd, 0, stdout='{"median_ms": 1.0}\n', stderr="")

    monkeypatch.setattr(train_step.subprocess, "run", fake_run)
    args = Namespace(code="avx2", repeats=1, warmup=0, threads=1, device="cpu")
    train_step.run_worker("minitorch", "mlp", args)
    assert {k: seen["env"][k] for k in CODE["avx2"]} == CODE["avx2"]
    assert seen["env"]["NUMBA_CPU_NAME"] == "haswell" and seen["env"]["NUMBA_CPU_FEATURES"] == ""
    train_step.run_worker(
        "torch", "mlp", Namespace(code="native", repeats=1, warmup=0, threads=1, device="cpu")
    )
    assert not any(k in seen["env"] for k in CODE["avx2"])
    assert runs_code("native")


def test_the_device_reaches_the_workers(monkeypatch) -> None:
    """`--device cuda` is passed on to each worker process, which builds its model there."""
    seen = {}

    def fake_run(cmd, capture_output, text, env):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 0, stdout='{"median_ms": 1.0}\n', stderr="")

    monkeypatch.setattr(train_step.subprocess, "run", fake_run)
    train_step.run_worker(
        "torch", "gpt", Namespace(code="native", repeats=1, warmup=0, threads=1, device="cuda")
    )
    assert seen["cmd"][seen["cmd"].index("--device") + 1] == "cuda"


@pytest.mark.parametrize("name", train_step.MODELS)
def test_a_model_built_for_cuda_has_everything_on_the_cuda_backend(name: str) -> None:
    """Parameters, buffers (the GPT's causal mask and positions) and the batch: nothing the
    step reads is left on the CPU (the simulator stands in for the GPU; no step is run)."""
    import minitorch

    if not minitorch.cuda.is_available():
        pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is off")
    model, _, x, y = train_step.build(minitorch, name, "cuda")
    tensors = [p.value for p in model.parameters()] + list(model.buffers()) + [x, y]
    assert len(tensors) > 2 and all(t.device.type == "cuda" for t in tensors)
    on_cpu, _, x_cpu, _ = train_step.build(minitorch, name)
    assert x_cpu.device.type == "cpu"
    assert [p.value.shape for p in model.parameters()] == [p.value.shape for p in on_cpu.parameters()]


def test_the_gpu_table_has_its_own_section(tmp_path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    train_step.write_section(str(path), ["cpu steps"], Namespace(code="native", device="cpu"))
    train_step.write_section(str(path), ["gpu steps"], Namespace(code="native", device="cuda"))
    text = path.read_text()
    assert "## Training steps against PyTorch: on the GPU\n" in text and "--device cuda" in text
    assert "cpu steps" in text and "gpu steps" in text


def test_profile_step_reports_times_copies_and_the_functions() -> None:
    """`python -m bench.profile_step`: the plain and the profiled step times, the copies per
    step (none on the CPU), and the listing in both orders."""
    from bench.profile_step import profile

    report = profile("mlp", "cpu", steps=1, top=5)
    first_line = report.splitlines()[0]
    assert first_line.startswith("mlp on cpu: first step ") and "under cProfile" in first_line
    assert "copies per step: 0 to the GPU, 0 back" in first_line
    assert "Ordered by: internal time" in report and "Ordered by: cumulative time" in report
    assert "tensor_matmul" in report  # the model's matmuls were profiled


def test_profile_step_refuses_an_unknown_model(capsys) -> None:
    from bench.profile_step import main

    with pytest.raises(SystemExit):
        main(["--models", "rnn"])
    assert "unknown model 'rnn'" in capsys.readouterr().err
