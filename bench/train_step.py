"""Training steps of four NLP models in minitorch and in PyTorch, side by side in one run.

    python -m bench.train_step [--models mlp,cnn,lstm,gpt] [--repeats 20] [--threads 2]
                               [--processes 3] [--cold] [--markdown BENCHMARKS.md]
    python -m bench.train_step --device cuda     # both on the GPU: the CUDA backend, PyTorch's CUDA

The *same model code* runs on both frameworks: each model below is written once against
a module `lib` that is either `minitorch` or `torch` (the library's PyTorch-compatible API
makes that possible). One training step is what a training loop does:

    zero_grad → forward → cross-entropy → backward → clip_grad_norm_(1.0) → Adam.step

Models (float32; the sizes of the training-speed issue):

* `mlp`  bag of embeddings: vocabulary 5,000, embeddings 64, mean over 50 tokens, two hidden
  layers of 256 with ReLU, 2 classes, batch 64;
* `cnn`  Kim's text CNN: vocabulary 5,000, embeddings 50, filters of width 3/4/5 × 100,
  max over time, dropout 0.5, 2 classes, sequences of 50, batch 32;
* `lstm` char-level LSTM language model: vocabulary 65, embeddings 64, LSTM 256, sequences
  of 64, batch 32, a prediction per position;
* `gpt`  tiny GPT: vocabulary 65, context 64, d_model 64, 4 heads, 2 pre-norm layers,
  feed-forward 256, learned positions, causal mask, batch 16.

Each (framework, model) pair runs in its own fresh process — two thread pools in one
process slow each other down — with Numba, BLAS and PyTorch all set to `--threads`. A
process times its first step (`first step`: it includes compiling or loading the Numba
kernels), runs `--warmup` more, then reports the median of `--repeats` steps and the peak
resident memory: of the whole process, and of the steps alone (the peak above the memory
in use when timing starts, after `/proc/self/clear_refs` resets the kernel's high-water
mark). `--cold` also runs every minitorch model once with an empty Numba cache, so its
first step includes every compilation a new student pays.

Each pair runs `--processes` times (default 3), minitorch and PyTorch alternating, and the
table gives the median over the processes with the fastest and slowest in brackets: on a
2-CPU machine one fresh process's median can differ from the next one's by 30%.

`--device cuda` builds the same models on the GPU: minitorch's CUDA backend (the course's
Numba CUDA kernels) against PyTorch's CUDA. A step ends with `loss.item()`, which waits for
the GPU, so the times are whole steps; minitorch's first step includes compiling every CUDA
kernel the model uses (Numba does not cache them on disk).

Ratios are minitorch ÷ PyTorch: 1.0 is as fast, 2.0 twice as slow (the target is ≤ 2).
Absolute times move with the machine's load: the header prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional

from bench.machine import CODE, CODE_LABELS, code_env, code_line, cpu_label, cpu_name
from bench.markdown_sections import replace_section

MODELS = ("mlp", "cnn", "lstm", "gpt")
DESCRIPTIONS = {
    "mlp": "bag-of-embeddings MLP (V 5000, E 64, 256×2, seq 50, batch 64)",
    "cnn": "Kim text CNN (V 5000, E 50, 3/4/5×100, seq 50, batch 32)",
    "lstm": "char LSTM LM (V 65, E 64, H 256, seq 64, batch 32)",
    "gpt": "tiny GPT (V 65, ctx 64, d 64, 4 heads, 2 layers, ff 256, batch 16)",
}


# ## The models, written once for both frameworks


def build(lib: Any, name: str, device: str = "cpu") -> tuple[Any, Callable[[], Any], Any, Any]:
    """(model, a function computing the loss of one batch, the inputs, the targets), all on
    `device` ("cpu", or "cuda": minitorch's CUDA backend, PyTorch's GPU).

    `lib` is the `minitorch` or the `torch` module; both provide `nn`, `optim`, `from_numpy`.
    """
    import numpy as np

    nn, F, dtype = lib.nn, lib.nn.functional, lib.float32
    rng = np.random.default_rng(0)

    def tokens(high: int, *shape: int) -> Any:
        return lib.from_numpy(rng.integers(0, high, shape).astype(np.int64)).to(device)

    if name == "mlp":

        class BagOfEmbeddings(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embedding = nn.Embedding(5000, 64, dtype=dtype)
                self.hidden1 = nn.Linear(64, 256, dtype=dtype)
                self.hidden2 = nn.Linear(256, 256, dtype=dtype)
                self.out = nn.Linear(256, 2, dtype=dtype)

            def forward(self, x: Any) -> Any:
                h = self.embedding(x).mean(dim=1)
                h = self.hidden1(h).relu()
                h = self.hidden2(h).relu()
                return self.out(h)

        model, x, y = BagOfEmbeddings().to(device), tokens(5000, 64, 50), tokens(2, 64)
        return model, lambda: F.cross_entropy(model(x), y), x, y

    if name == "cnn":

        class KimCNN(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embedding = nn.Embedding(5000, 50, dtype=dtype)
                self.convs = nn.ModuleList([nn.Conv1d(50, 100, k, dtype=dtype) for k in (3, 4, 5)])
                self.dropout = nn.Dropout(0.5)
                self.fc = nn.Linear(300, 2, dtype=dtype)

            def forward(self, x: Any) -> Any:
                e = self.embedding(x).permute(0, 2, 1)  # [B, E, T]: channels first for Conv1d
                h = lib.cat([conv(e).relu().amax(dim=2) for conv in self.convs], dim=1)
                return self.fc(self.dropout(h))

        model, x, y = KimCNN().to(device), tokens(5000, 32, 50), tokens(2, 32)
        return model, lambda: F.cross_entropy(model(x), y), x, y

    if name == "lstm":

        class CharLSTM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embedding = nn.Embedding(65, 64, dtype=dtype)
                self.lstm = nn.LSTM(64, 256, batch_first=True, dtype=dtype)
                self.head = nn.Linear(256, 65, dtype=dtype)

            def forward(self, x: Any) -> Any:
                h, _ = self.lstm(self.embedding(x))
                return self.head(h)

        model, x, y = CharLSTM().to(device), tokens(65, 32, 64), tokens(65, 32, 64)
        return model, lambda: F.cross_entropy(model(x).reshape(32 * 64, 65), y.reshape(32 * 64)), x, y

    if name == "gpt":

        class TinyGPT(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.tokens = nn.Embedding(65, 64, dtype=dtype)
                self.positions = nn.Embedding(64, 64, dtype=dtype)
                layer = nn.TransformerEncoderLayer(
                    64,
                    4,
                    dim_feedforward=256,
                    dropout=0.0,
                    activation="gelu",
                    batch_first=True,
                    norm_first=True,
                    dtype=dtype,
                )
                self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.norm = nn.LayerNorm(64, dtype=dtype)
                self.head = nn.Linear(64, 65, dtype=dtype)
                # buffers, so that `.to(device)` moves them with the parameters
                mask = nn.Transformer.generate_square_subsequent_mask(64, dtype=dtype)
                self.register_buffer("mask", mask, persistent=False)
                self.register_buffer("where", lib.from_numpy(np.arange(64, dtype=np.int64)), persistent=False)

            def forward(self, x: Any) -> Any:
                h = self.tokens(x) + self.positions(self.where)
                return self.head(self.norm(self.blocks(h, mask=self.mask)))

        model, x, y = TinyGPT().to(device), tokens(65, 16, 64), tokens(65, 16, 64)
        return model, lambda: F.cross_entropy(model(x).reshape(16 * 64, 65), y.reshape(16 * 64)), x, y

    raise ValueError(f"unknown model {name!r}: choose from {MODELS}")


# ## One process measures one (framework, model) pair


def training_step(lib: Any, name: str, device: str = "cpu") -> Callable[[], float]:
    """One training step of model `name` (built on `device`), as the table times it:
    zero_grad → forward → cross-entropy → backward → clip_grad_norm_(1.0) → Adam.step. It
    returns the loss: `loss.item()`, which also waits for the GPU's work."""
    model, loss_of_batch, _, _ = build(lib, name, device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    params = list(model.parameters())
    model.train()

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_of_batch()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        return loss.item()

    return step


def _rss_kib(field: str) -> int:
    """A line of /proc/self/status in KiB (VmRSS: now, VmHWM: the peak since the last reset)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux ≥ 4.0); False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def gpu_name() -> str:
    """The GPU that minitorch's CUDA backend runs on (Numba's view of device 0)."""
    import numba
    from numba import cuda

    if numba.config.ENABLE_CUDASIM:
        return "Numba's CUDA simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def measure(
    framework: str, name: str, repeats: int, warmup: int, threads: int, device: str = "cpu"
) -> dict[str, Any]:
    """Time `repeats` training steps of one model in this process. Each step ends with
    `loss.item()`, which waits for the GPU's work too, so on `device="cuda"` a step's time
    is the GPU's and the launches', with nothing left queued."""
    start = time.perf_counter()
    if framework == "torch":
        import torch as lib

        lib.set_num_threads(threads)
    else:
        import minitorch as lib
        from minitorch.allocator import tune_malloc

        tune_malloc()  # as the examples do: freed step memory stays in the process
    lib.manual_seed(0)
    step = training_step(lib, name, device)
    t = time.perf_counter()
    first_loss = step()
    first = time.perf_counter() - t
    to_first_step = time.perf_counter() - start
    for _ in range(warmup):
        step()
    base = _rss_kib("VmRSS")
    peak_resettable = _reset_peak_rss()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return {
        "median_ms": 1000 * statistics.median(times),
        "first_step_s": first,
        "to_first_step_s": to_first_step,
        "first_loss": first_loss,
        "rss_peak_mib": _rss_kib("VmHWM") / 1024 if peak_resettable else _rss_kib("VmPeak") / 1024,
        # the steps' own peak: above the memory in use when timing began (never below 0)
        "step_peak_mib": max(0, _rss_kib("VmHWM") - base) / 1024 if peak_resettable else None,
        "code": _code(framework, device),
    }


def _code(framework: str, device: str) -> str:
    """What ran the steps: the GPU, or the CPU code of each framework (for the header)."""
    if framework == "torch":
        import torch

        return torch.cuda.get_device_name() if device == "cuda" else torch.backends.cpu.get_cpu_capability()
    return gpu_name() if device == "cuda" else code_line()


def run_worker(framework: str, name: str, args: argparse.Namespace, cache_dir: Optional[str] = None) -> dict:
    """Measure in a fresh process with the settings of `--code` (optionally with its own
    Numba cache directory)."""
    env = code_env(args.code)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    cmd = [
        sys.executable,
        "-m",
        "bench.train_step",
        "--worker",
        framework,
        "--models",
        name,
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
        "--threads",
        str(args.threads),
        "--device",
        args.device,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{framework} {name} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  {framework} {name}: {result['median_ms']:.2f} ms per step", file=sys.stderr, flush=True)
    return result


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One (framework, model) result from several fresh processes: the median over the
    processes of each number, and the slowest and fastest process's median step.

    Why several processes: on this 2-CPU machine the same step's median differs by up to
    30% from one fresh process to the next (thread placement, memory layout), far more than
    between steps of one process; one process per framework would make the ratio a draw."""
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [r[key] for r in runs]
        out[key] = statistics.median(values) if all(isinstance(v, (int, float)) for v in values) else value
    out["median_ms_range"] = (min(r["median_ms"] for r in runs), max(r["median_ms"] for r in runs))
    out["processes"] = len(runs)
    return out


# ## The table


def _fmt_ms(ms: float) -> str:
    return f"{ms:.1f} ms" if ms >= 10 else f"{ms:.2f} ms"


def _fmt_step(r: dict[str, Any]) -> str:
    low, high = r.get("median_ms_range", (r["median_ms"], r["median_ms"]))
    spread = f" ({low:.1f}–{high:.1f})" if r.get("processes", 1) > 1 else ""
    return _fmt_ms(r["median_ms"]) + spread


def table(results: dict[str, dict[str, Any]], cold: dict[str, dict]) -> list[str]:
    rows = [
        "| model | minitorch step | PyTorch step | ratio (÷ PyTorch) | minitorch first step (warm cache)"
        + (" | minitorch first step (cold cache)" if cold else "")
        + " | PyTorch first step | RSS peak minitorch / PyTorch | step memory minitorch / PyTorch |",
        "|---|---|---|---|---" + ("|---" if cold else "") + "|---|---|---|",
    ]
    for name, r in results.items():
        mt, pt = r["minitorch"], r.get("torch")
        ratio = f"{mt['median_ms'] / pt['median_ms']:.2f}" if pt else "—"
        step_mem = (
            f"{mt['step_peak_mib']:.0f} / {pt['step_peak_mib']:.0f} MiB"
            if pt and mt["step_peak_mib"] is not None and pt["step_peak_mib"] is not None
            else "—"
        )
        rows.append(
            "| "
            + " | ".join(
                [
                    DESCRIPTIONS[name],
                    _fmt_step(mt),
                    _fmt_step(pt) if pt else "—",
                    ratio,
                    f"{mt['first_step_s']:.2f} s",
                    *([f"{cold[name]['first_step_s']:.2f} s"] if cold else []),
                    f"{pt['first_step_s']:.2f} s" if pt else "—",
                    f"{mt['rss_peak_mib']:.0f} / {pt['rss_peak_mib']:.0f} MiB"
                    if pt
                    else f"{mt['rss_peak_mib']:.0f} MiB",
                    step_mem,
                ]
            )
            + " |"
        )
    return rows


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models", default=",".join(MODELS), help="comma-separated, from " + ", ".join(MODELS)
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads for Numba, BLAS and PyTorch")
    parser.add_argument(
        "--processes",
        type=int,
        default=3,
        help="fresh processes per (framework, model), alternating; the table shows the median over them",
    )
    parser.add_argument(
        "--cold", action="store_true", help="also time minitorch's first step with an empty Numba cache"
    )
    parser.add_argument(
        "--code",
        choices=sorted(CODE),
        default="native",
        help="native: each framework's code for this CPU; avx2: AVX2 code in both (bench/machine.py)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cuda: both frameworks train on the GPU (minitorch's CUDA backend, PyTorch's CUDA)",
    )
    parser.add_argument("--markdown", help="replace this table's section (for --code) of this Markdown file")
    parser.add_argument("--worker", choices=("minitorch", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    if args.device == "cuda" and not args.worker:
        import minitorch

        if not minitorch.cuda.is_available():
            parser.error("--device cuda: no CUDA GPU is available (nor NUMBA_ENABLE_CUDASIM=1)")
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            parser.error(f"unknown model {n!r}: choose from {', '.join(MODELS)}")
    if args.worker:
        print(
            json.dumps(measure(args.worker, names[0], args.repeats, args.warmup, args.threads, args.device))
        )
        return

    began, load = time.perf_counter(), os.getloadavg()
    try:
        import torch  # noqa: F401  (only to know whether the PyTorch column can be filled)

        have_torch = True
    except ImportError:
        have_torch = False
    results: dict[str, dict[str, Any]] = {}
    cold: dict[str, dict] = {}
    for name in names:
        if args.cold:
            with tempfile.TemporaryDirectory(prefix="numba-cold-") as empty:
                cold[name] = run_worker("minitorch", name, args, cache_dir=empty)
        runs: dict[str, list[dict]] = {"minitorch": [], "torch": []}
        for _ in range(max(1, args.processes)):  # alternating, so that drift in the machine hits both
            runs["minitorch"].append(run_worker("minitorch", name, args))
            if have_torch:
                runs["torch"].append(run_worker("torch", name, args))
        results[name] = {fw: combine(r) for fw, r in runs.items() if r}
        r = results[name]
        line = f"{name:5} minitorch {r['minitorch']['median_ms']:8.2f} ms"
        if have_torch:
            line += f"   PyTorch {r['torch']['median_ms']:8.2f} ms   ratio {r['minitorch']['median_ms'] / r['torch']['median_ms']:.2f}"
        print(line, flush=True)
    end_load = os.getloadavg()
    torch_code = next(iter(results.values())).get("torch", {}).get("code", "")
    header = [
        f"Training steps, float32, {args.threads} thread(s), median of {args.repeats} steps after "
        f"{args.warmup + 1} warm-up steps, in each of {max(1, args.processes)} fresh processes per "
        f"(framework, model), run alternately; the table gives the median over the processes "
        f"(in brackets: the fastest and slowest process).",
        _machine_line(args.device, next(iter(results.values()))["minitorch"]["code"], torch_code),
        f"Load average {load[0]:.2f} at start, {end_load[0]:.2f} at end; {os.cpu_count()} CPUs; "
        f"run took {time.perf_counter() - began:.0f} s."
        + ("" if have_torch else " PyTorch is not installed: no reference in this run."),
        "",
    ]
    lines = header + table(results, cold)
    print("\n".join(lines))
    if args.markdown:
        write_section(args.markdown, lines, args)


def _machine_line(device: str, minitorch_code: str, torch_code: str) -> str:
    """The header line that says what ran the steps."""
    if device == "cuda":
        return (
            f"GPU: {minitorch_code} (minitorch: the CUDA backend's Numba kernels"
            + (f"; PyTorch: CUDA on {torch_code}" if torch_code else "")
            + f"). CPU: {cpu_name()}."
        )
    return f"CPU: {cpu_name()}. {minitorch_code}." + (
        " PyTorch's CPU kernels: " + torch_code + "." if torch_code else ""
    )


def write_section(path: str, lines: list[str], args: argparse.Namespace) -> None:
    """Replace (or append) this table's section of a Markdown file: one per kind of code and
    CPU, and one for the GPU."""
    device = getattr(args, "device", "cpu")
    if device == "cuda":
        command = f"python -m bench.train_step --device cuda --markdown {os.path.basename(path)}"
        title = "Training steps against PyTorch: on the GPU"
    else:
        command = f"python -m bench.train_step --cold --code {args.code} --markdown {os.path.basename(path)}"
        title = f"Training steps against PyTorch: {CODE_LABELS[args.code]}, {cpu_label()}"
    body = f"Generated by `{command}` (see `bench/train_step.py`).\n\n" + "\n".join(lines)
    replace_section(path, title, body)


if __name__ == "__main__":
    main()
