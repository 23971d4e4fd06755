"""Train a small MLP on a toy 2-D dataset and report training accuracy.

    python -m minitorch.examples.train_mlp --dataset xor

The network is 2 → hidden → hidden → 1 with ReLU and a sigmoid output, trained with full-batch
gradient descent on binary cross-entropy — the first network of the course.
"""

from __future__ import annotations

import argparse
import time
from typing import Optional, Sequence

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

import minitorch
from minitorch import nn
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.progress import first_step_note, metrics, metrics_column
from minitorch.nn import functional as Fn
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu


class MLP(nn.Module):
    """Two hidden ReLU layers and a sigmoid output: p(y = 1 | x) for x ∈ ℝ²."""

    def __init__(self, hidden: int, backend: Optional[minitorch.TensorBackend] = None):
        super().__init__()
        self.layer1 = nn.Linear(2, hidden, backend=backend)
        self.layer2 = nn.Linear(hidden, hidden, backend=backend)
        self.layer3 = nn.Linear(hidden, 1, backend=backend)

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        h = self.layer1(x).relu()
        h = self.layer2(h).relu()
        return self.layer3(h).sigmoid().view(x.shape[0])


def train(
    dataset: str = "xor",
    points: int = 100,
    hidden: int = 10,
    epochs: int = 500,
    lr: float = 0.05,
    seed: int = 0,
    backend: str = "fast",
    console: Optional[Console] = None,
    quiet: bool = False,
) -> float:
    """Train on one dataset; return the final training accuracy (0 … 1)."""
    console = console or Console()
    minitorch.manual_seed(seed)
    be = minitorch.backends.BACKENDS[backend]
    data = minitorch.datasets.DATASETS[dataset](points, seed=seed)
    X = minitorch.tensor(data.X, backend=be)
    y = minitorch.tensor(data.y, backend=be)
    model = MLP(hidden, backend=be)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=lr)

    accuracy = 0.0
    start = time.perf_counter()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("epoch {task.completed:>4}/{task.total}"),
        metrics_column(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
        transient=False,
    ) as progress:
        task = progress.add_task(
            f"{dataset} ({backend})",
            total=epochs,
            metrics=metrics(show_acc=True, note=first_step_note(backend)),
        )
        for epoch in range(1, epochs + 1):
            optimizer.zero_grad()
            p = model(X)
            loss = Fn.binary_cross_entropy(p, y)
            loss.backward()
            optimizer.step()
            if epoch % 10 == 0 or epoch == epochs:
                predicted = p.numpy() > 0.5
                accuracy = float(np.mean(predicted == (data.y > 0.5)))
                progress.update(
                    task, completed=epoch, metrics=metrics(loss.item(), accuracy, loss_spec=".4f")
                )
    elapsed = time.perf_counter() - start
    if not quiet:
        console.print(
            f"[bold green]{dataset}[/]: training accuracy {accuracy:.1%} after {epochs} epochs "
            f"({elapsed:.1f} s, {1000 * elapsed / epochs:.1f} ms/epoch, {backend} backend)"
        )
    return accuracy


def main(argv: Optional[Sequence[str]] = None) -> None:
    tune_malloc()  # keep freed step memory in the process (minitorch.allocator)
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=sorted(minitorch.datasets.DATASETS), default="xor")
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--hidden", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    add_backend_options(parser)
    args = parser.parse_args(argv)
    backend = chosen_backend(parser, args)
    train(args.dataset, args.points, args.hidden, args.epochs, args.lr, args.seed, backend)


if __name__ == "__main__":
    main()
