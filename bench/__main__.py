"""``python -m bench``: minitorch's simple and fast backends against NumPy and PyTorch.

One table, measured side by side in one run:

* matmul n × n @ n × n for n = 64 … 1024, float64 and float32, with GFLOP/s;
* elementwise map / zip / reduce at 10⁴ and 10⁶ elements (contiguous, broadcast,
  transposed);
* one training epoch of an MLP 2-100-100-1 (500 points, batch 50, SGD) on each backend;
* compile cost: `import minitorch` plus the first use of each fast kernel in a fresh
  process, cold (empty Numba cache) and warm (kernels loaded from the cache).

Times are the fastest of several single calls (the least disturbed by other processes). The ratio
columns divide the other library's time by minitorch-fast's: 1.0 is as fast, 0.5 half as
fast. The simple backend is pure Python, so it only runs the small sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
from rich.console import Console
from rich.table import Table

import minitorch
from minitorch.allocator import tune_malloc

from .machine import CODE, CODE_LABELS, code_env, code_line, cpu_label, cpu_name, runs_code
from .markdown_sections import replace_section

try:  # PyTorch is optional: its column stays empty without it
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


@dataclass
class Row:
    section: str
    op: str
    size: str
    dtype: str
    simple: Optional[float] = None  # seconds
    fast: Optional[float] = None
    numpy: Optional[float] = None
    torch: Optional[float] = None
    rate: str = ""  # minitorch-fast's throughput, e.g. "93.1 GFLOP/s"


def best_time(fn: Callable[[], Any], repeats: int, min_time: float = 0.05, max_calls: int = 300) -> float:
    """Seconds per call: the fastest of at least `repeats` single calls, timed one by one
    (more, up to `max_calls`, while they last under `min_time` in all). The minimum is the
    estimate least disturbed by other processes; a single call is long enough to time for
    everything measured here (≥ 1 µs)."""
    fn()  # warm-up: compiles or loads kernels, allocates
    best, spent, calls = float("inf"), 0.0, 0
    while calls < repeats or (spent < min_time and calls < max_calls):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best, spent, calls = min(best, elapsed), spent + elapsed, calls + 1
    return best


def fmt_time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(other: Optional[float], fast: Optional[float]) -> str:
    if other is None or fast is None or fast == 0:
        return "—"
    return f"{other / fast:.2f}"


def fast_tensor(array: np.ndarray, backend: minitorch.TensorBackend) -> minitorch.Tensor:
    return minitorch.from_numpy(array, backend=backend)


# ---- sections ---------------------------------------------------------------------------


def bench_matmul(sizes: list[int], repeats: int) -> list[Row]:
    rows = []
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        for n in sizes:
            x = rng.standard_normal((n, n)).astype(dtype)
            y = rng.standard_normal((n, n)).astype(dtype)
            flops = 2.0 * n**3
            a, b = fast_tensor(x, minitorch.FastBackend), fast_tensor(y, minitorch.FastBackend)
            row = Row("matmul", "matmul", f"{n}×{n} @ {n}×{n}", np.dtype(dtype).name)
            row.fast = best_time(lambda: a @ b, repeats)
            row.numpy = best_time(lambda: x @ y, repeats)
            if torch is not None:
                tx, ty = torch.from_numpy(x), torch.from_numpy(y)
                row.torch = best_time(lambda: tx @ ty, repeats)
            if n <= 64:
                sa, sb = fast_tensor(x, minitorch.SimpleBackend), fast_tensor(y, minitorch.SimpleBackend)
                row.simple = best_time(lambda: sa @ sb, 1, min_time=0.0)
            row.rate = f"{flops / row.fast / 1e9:.1f} GFLOP/s (NumPy {flops / row.numpy / 1e9:.1f})"
            rows.append(row)
    return rows


def bench_elementwise(sizes: list[int], repeats: int) -> list[Row]:
    rows = []
    rng = np.random.default_rng(1)
    for dtype in (np.float64, np.float32):
        for size in sizes:
            side = int(round(size**0.5))
            x = rng.standard_normal((side, side)).astype(dtype)
            y = rng.standard_normal((side, side)).astype(dtype)
            v = rng.standard_normal(side).astype(dtype)
            cases: list[tuple[str, Callable, Callable, Callable]] = [
                # name, minitorch (a, b, c), NumPy, PyTorch
                ("exp (map)", lambda a, b, c: a.exp(), lambda: np.exp(x), lambda tx, ty, tv: tx.exp()),
                ("add (zip)", lambda a, b, c: a + b, lambda: x + y, lambda tx, ty, tv: tx + ty),
                ("mul row-broadcast (zip)", lambda a, b, c: a * c, lambda: x * v, lambda tx, ty, tv: tx * tv),
                (
                    "transposed copy (map)",
                    lambda a, b, c: a.transpose(0, 1).contiguous(),
                    lambda: np.ascontiguousarray(x.T),
                    lambda tx, ty, tv: tx.T.contiguous(),
                ),
                (
                    "sum dim 1 (reduce)",
                    lambda a, b, c: a.sum(1),
                    lambda: x.sum(1),
                    lambda tx, ty, tv: tx.sum(1),
                ),
                (
                    "sum dim 0 (reduce)",
                    lambda a, b, c: a.sum(0),
                    lambda: x.sum(0),
                    lambda tx, ty, tv: tx.sum(0),
                ),
            ]
            backends = {"fast": minitorch.FastBackend}
            if size <= 10_000:
                backends["simple"] = minitorch.SimpleBackend
            args = {name: [fast_tensor(t, be) for t in (x, y, v)] for name, be in backends.items()}
            targs = [torch.from_numpy(t) for t in (x, y, v)] if torch is not None else None
            for name, mt, npf, tf in cases:
                row = Row("elementwise", name, f"{side}×{side}", np.dtype(dtype).name)
                row.fast = best_time(lambda: mt(*args["fast"]), repeats)
                if "simple" in args:
                    row.simple = best_time(lambda: mt(*args["simple"]), 1, min_time=0.0)
                row.numpy = best_time(npf, repeats)
                if targs is not None:
                    row.torch = best_time(lambda: tf(*targs), repeats)
                row.rate = f"{side * side / row.fast / 1e6:.0f} M elements/s"
                rows.append(row)
    return rows


def mlp_epoch_factory(
    backend: Optional[minitorch.TensorBackend], hidden: int, batch: int, samples: int
) -> Callable[[], None]:
    """One training epoch (SGD, MSE loss on a sigmoid output) of an MLP 2-hidden-hidden-1
    over `samples` points in batches of `batch`; backend None builds the same in PyTorch."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((samples, 2))
    y = (x[:, :1] * x[:, 1:] > 0).astype(np.float64)  # the "xor" quadrants
    starts = range(0, samples, batch)
    if backend is None:
        model = torch.nn.Sequential(
            torch.nn.Linear(2, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 1),
        ).double()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        data = [(torch.from_numpy(x[s : s + batch]), torch.from_numpy(y[s : s + batch])) for s in starts]

        def torch_epoch() -> None:
            for tx, ty in data:
                opt.zero_grad()
                d = model(tx).sigmoid() - ty
                (d * d).mean().backward()
                opt.step()

        return torch_epoch

    nn = minitorch.nn

    class MLP(minitorch.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer1 = nn.Linear(2, hidden, backend=backend)
            self.layer2 = nn.Linear(hidden, hidden, backend=backend)
            self.layer3 = nn.Linear(hidden, 1, backend=backend)

        def forward(self, t: minitorch.Tensor) -> minitorch.Tensor:
            return self.layer3(self.layer2(self.layer1(t).relu()).relu()).sigmoid()

    model = MLP()
    opt = minitorch.optim.SGD(model.parameters(), lr=0.05)
    batches = [
        (fast_tensor(x[s : s + batch], backend), fast_tensor(y[s : s + batch], backend)) for s in starts
    ]

    def epoch() -> None:
        for mx, my in batches:
            opt.zero_grad()
            d = model(mx) - my
            (d * d).mean().backward()
            opt.step()

    return epoch


def bench_mlp(repeats: int, samples: int, hidden: int = 100, batch: int = 50) -> list[Row]:
    row = Row(
        "training",
        f"MLP 2-{hidden}-{hidden}-1, one SGD epoch",
        f"{samples} samples, batch {batch}",
        "float64",
    )
    row.fast = best_time(mlp_epoch_factory(minitorch.FastBackend, hidden, batch, samples), repeats)
    row.simple = best_time(
        mlp_epoch_factory(minitorch.SimpleBackend, hidden, batch, samples), 1, min_time=0.0
    )
    if torch is not None:
        row.torch = best_time(mlp_epoch_factory(None, hidden, batch, samples), repeats)
    row.rate = f"{samples / row.fast:.0f} samples/s"
    return [row]


def bench_compile() -> list[Row]:
    """`python -m bench.compile_probe` in fresh processes: cold cache, then warm."""
    rows = []
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="minitorch-numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, MINITORCH_BACKEND="fast")
        for label in ("cold", "warm"):
            done = subprocess.run(
                [sys.executable, "-m", "bench.compile_probe"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            for step, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
                rows.append(Row("compile", f"{step}", f"{label} cache", "float64", fast=seconds))
    return rows


# ---- output -----------------------------------------------------------------------------

COLUMNS = [
    "section",
    "op",
    "size",
    "dtype",
    "simple",
    "fast",
    "NumPy",
    "PyTorch",
    "fast throughput",
    "NumPy÷fast",
    "PyTorch÷fast",
]


def cells(row: Row) -> list[str]:
    return [
        row.section,
        row.op,
        row.size,
        row.dtype,
        fmt_time(row.simple),
        fmt_time(row.fast),
        fmt_time(row.numpy),
        fmt_time(row.torch),
        row.rate,
        fmt_ratio(row.numpy, row.fast),
        fmt_ratio(row.torch, row.fast),
    ]


def machine() -> list[str]:
    import numba

    lines = [
        f"CPU: {cpu_name()}, {os.cpu_count()} logical cores; load average at start: "
        + ", ".join(f"{v:.2f}" for v in os.getloadavg()),
        f"Python {platform.python_version()}, NumPy {np.__version__}, Numba {numba.__version__} "
        f"({numba.config.NUMBA_NUM_THREADS} threads), "
        + (f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else "no PyTorch"),
        "NUMBA_SLP_VECTORIZE: "
        + (
            os.environ["NUMBA_SLP_VECTORIZE"] + " (set by you)"
            if "NUMBA_SLP_VECTORIZE" in os.environ
            else "1 while minitorch's kernels compile (minitorch.jit.Vectorised)"
        ),
        code_line(),
    ]
    settings = {name: os.environ[name] for name in CODE["avx2"] if name in os.environ}
    if settings:
        lines.append("Settings: " + ", ".join(f"{name}={value!r}" for name, value in settings.items()))
    if torch is not None:
        lines.append(f"PyTorch's CPU kernels: {torch.backends.cpu.get_cpu_capability()}")
    return lines


def render(rows: list[Row], header: list[str], console: Console) -> None:
    table = Table(title="minitorch backends vs NumPy and PyTorch (best of repeats)")
    for name in COLUMNS:
        table.add_column(name, justify="right" if name not in ("section", "op") else "left")
    section = None
    for row in rows:
        if section is not None and row.section != section:
            table.add_section()
        section = row.section
        table.add_row(*cells(row))
    for line in header:
        console.print(line)
    console.print(table)


def results_title(code: str) -> str:
    """The BENCHMARKS.md section of this benchmark's table for one kind of code on this CPU."""
    return f"Results: {CODE_LABELS[code]}, {cpu_label()}"


def markdown(rows: list[Row], header: list[str], command: str, busy: bool) -> str:
    """The body of the results section: how it was made, the machine, the table."""
    out = [f"Generated by `{command}` (see `bench/__main__.py`).", ""]
    out += [f"* {line}" for line in header]
    if busy:
        out += [
            "",
            "**Measured while other processes were running** (load average above): "
            "parallel timings are noisy and pessimistic; regenerate on an idle machine.",
        ]
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    out += ["| " + " | ".join(cells(row)) + " |" for row in rows]
    return "\n".join(out) + "\n"


def main(argv: Optional[list[str]] = None) -> None:
    tune_malloc()  # as the examples do: freed step memory stays in the process
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (~1 min)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per timing (default 7, quick 3)")
    parser.add_argument(
        "--only",
        choices=["matmul", "elementwise", "training", "compile"],
        action="append",
        help="run only these sections (repeatable)",
    )
    parser.add_argument(
        "--code",
        choices=sorted(CODE),
        default="native",
        help="native: each library's code for this CPU; avx2: AVX2 code in every library "
        "(bench/machine.py), to measure what an AVX2 laptop runs on an AVX-512 machine",
    )
    parser.add_argument(
        "--markdown", metavar="FILE", help="also write the table into FILE (its section for --code)"
    )
    args = parser.parse_args(argv)
    if not runs_code(args.code):  # the libraries read their settings when they load: start again
        command = [sys.executable, "-m", "bench", *(argv if argv is not None else sys.argv[1:])]
        os.execve(sys.executable, command, code_env(args.code))

    repeats = args.repeats or (3 if args.quick else 7)
    sections = args.only or ["matmul", "elementwise", "training", "compile"]
    matmul_sizes = [64, 256] if args.quick else [64, 128, 256, 512, 1024]
    element_sizes = [10_000, 1_000_000] if not args.quick else [10_000, 250_000]

    console = Console(width=max(Console().width, 180))
    header = machine()
    busy = os.getloadavg()[0] > 0.5
    rows: list[Row] = []
    start = time.perf_counter()
    if "compile" in sections:  # first: its subprocesses want the machine as idle as possible
        rows_compile = bench_compile()
    else:
        rows_compile = []
    if "matmul" in sections:
        rows += bench_matmul(matmul_sizes, repeats)
    if "elementwise" in sections:
        rows += bench_elementwise(element_sizes, repeats)
    if "training" in sections:
        rows += bench_mlp(repeats, samples=100 if args.quick else 500)
    rows += rows_compile
    header.append(
        f"load average at end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}; "
        f"run took {time.perf_counter() - start:.0f} s"
    )
    busy = busy or os.getloadavg()[0] > 1.5  # our own run accounts for up to ~1
    render(rows, header, console)
    if args.markdown:
        command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
        replace_section(args.markdown, "What is measured", __doc__.split("\n\n", 1)[1].strip())
        replace_section(
            args.markdown, results_title(args.code), markdown(rows, header, command.strip(), busy)
        )
        console.print(f"wrote the section {results_title(args.code)!r} of {args.markdown}")


if __name__ == "__main__":
    main()
