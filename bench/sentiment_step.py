"""Time one training step of Kim's text CNN in minitorch, next to PyTorch in the same run.

    python -m bench.sentiment_step [--dtype float32|float64] [--repeats 30] [--threads 2]

Model and batch as in PERFORMANCE.md: vocabulary 5,000, embeddings 50, filters 3/4/5 × 100,
sequences of 50 tokens, batch 32, 2 classes. A training step is zero_grad + forward +
cross-entropy + backward + an SGD update; a forward step is the model alone (no graph).
Medians of `--repeats` steps after warm-up (which also compiles the Numba kernels). PyTorch
is measured if it is installed, with the same number of threads; each framework runs in
its own process (their thread pools would otherwise compete). The ratio is the number to
look at (absolute times move with the machine's load: check `uptime`).

`--threads N` sets the threads of everything in the process before it is imported: Numba
(NUMBA_NUM_THREADS), OpenBLAS/OpenMP (NumPy's matrix products) and PyTorch. On a machine
whose cores are busy with other work, parallel regions wait for descheduled threads and
times explode; `--threads 1` then gives a fairer single-core comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, Optional

VOCAB, EMB, SEQ, BATCH, FILTERS, WIDTHS, CLASSES = 5000, 50, 50, 32, 100, (3, 4, 5), 2


def _rng(seed: int):
    import numpy as np  # imported late: --threads must be set before NumPy loads its BLAS

    return np.random.default_rng(seed)


def _median_ms(step: Callable[[], None], repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def minitorch_steps(dtype: str, repeats: int) -> tuple[float, float]:
    import numpy as np

    import minitorch
    from minitorch.nn import functional as F
    from minitorch.nn.textcnn import TextCNN

    minitorch.manual_seed(0)
    rng = _rng(0)
    model = TextCNN(VOCAB, EMB, CLASSES, WIDTHS, FILTERS, dropout=0.5, dtype=np.dtype(dtype))
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.01)
    tokens = minitorch.tensor(rng.integers(0, VOCAB, (BATCH, SEQ)), dtype=minitorch.int64)
    target = minitorch.tensor(rng.integers(0, CLASSES, BATCH), dtype=minitorch.int64)

    def train_step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens), target)
        loss.backward()
        optimizer.step()

    def forward_step() -> None:
        with minitorch.no_grad():
            model(tokens)

    model.train()
    train_ms = _median_ms(train_step, repeats)
    model.eval()
    forward_ms = _median_ms(forward_step, repeats)
    return train_ms, forward_ms


def torch_steps(dtype: str, repeats: int, threads: int) -> Optional[tuple[float, float]]:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    tdtype = getattr(torch, dtype)

    class KimCNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(VOCAB, EMB, padding_idx=0)
            self.convs = torch.nn.ModuleList([torch.nn.Conv1d(EMB, FILTERS, k) for k in WIDTHS])
            self.dropout = torch.nn.Dropout(0.5)
            self.fc = torch.nn.Linear(FILTERS * len(WIDTHS), CLASSES)

        def forward(self, tokens: "torch.Tensor") -> "torch.Tensor":
            x = self.embedding(tokens).permute(0, 2, 1)
            h = torch.cat([conv(x).relu().amax(dim=2) for conv in self.convs], dim=1)
            return self.fc(self.dropout(h))

    model = KimCNN().to(tdtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = _rng(0)
    tokens = torch.tensor(rng.integers(0, VOCAB, (BATCH, SEQ)))
    target = torch.tensor(rng.integers(0, CLASSES, BATCH))

    def train_step() -> None:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tokens), target)
        loss.backward()
        optimizer.step()

    def forward_step() -> None:
        with torch.no_grad():
            model(tokens)

    model.train()
    train_ms = _median_ms(train_step, repeats)
    model.eval()
    forward_ms = _median_ms(forward_step, repeats)
    return train_ms, forward_ms


def _worker(framework: str, dtype: str, repeats: int, threads: int) -> Optional[tuple[float, float]]:
    if framework == "minitorch":
        return minitorch_steps(dtype, repeats)
    return torch_steps(dtype, repeats, threads)


def _in_subprocess(framework: str, args: argparse.Namespace) -> Optional[tuple[float, float]]:
    """Measure one framework in a fresh process: the two never share thread pools."""
    cmd = [
        sys.executable,
        "-m",
        "bench.sentiment_step",
        "--worker",
        framework,
        "--dtype",
        args.dtype,
        "--repeats",
        str(args.repeats),
        "--threads",
        str(args.threads),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise RuntimeError(f"{framework} benchmark failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return None if result is None else (result[0], result[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2, help="threads for Numba, BLAS and PyTorch")
    parser.add_argument("--worker", choices=("minitorch", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.dtype, args.repeats, args.threads)))
        return
    load = os.getloadavg()
    print(
        f"Kim CNN step: vocab {VOCAB}, emb {EMB}, seq {SEQ}, batch {BATCH}, filters 3/4/5 × {FILTERS}, "
        f"{args.dtype}, {args.threads} thread(s); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"on {os.cpu_count()} CPUs"
    )
    mt = _in_subprocess("minitorch", args)
    assert mt is not None
    pt = _in_subprocess("torch", args)
    print(f"{'':12}{'train ms':>10}{'forward ms':>12}")
    print(f"{'minitorch':12}{mt[0]:>10.2f}{mt[1]:>12.2f}")
    if pt is None:
        print("PyTorch is not installed: no reference in this run")
        return
    print(f"{'PyTorch':12}{pt[0]:>10.2f}{pt[1]:>12.2f}")
    print(f"{'ratio':12}{mt[0] / pt[0]:>10.2f}{mt[1] / pt[1]:>12.2f}   (minitorch / PyTorch; target ≤ 2)")


if __name__ == "__main__":
    main()
