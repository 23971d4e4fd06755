"""Train Kim's CNN-rand (2014) on SST-2 and report dev and test accuracy after every epoch.

    python -m minitorch.examples.sentiment                      # the full run
    python -m minitorch.examples.sentiment --epochs 1 --limit 500   # a quick look
    python -m minitorch.examples.sentiment --saliency "a gorgeous , witty , seductive movie ." \\
        --saliency-png saliency.png

The model (`minitorch.nn.TextCNN`): random 300-d embeddings learned from scratch
(initialised U(−0.25, 0.25) as in Kim's code), filters of widths 3, 4 and 5 (100 maps each) with ReLU,
max-over-time pooling, dropout 0.5 and a linear layer to 2 classes, trained with Adam on
cross-entropy (learning rate 10⁻³, halved before each epoch from the third on). The vocabulary is built from the training split (words seen at least twice;
<pad> = 0, <unk> = 1); each batch is padded to its longest sentence (at least the widest
filter). The model keeps the parameters of the epoch with the best dev accuracy.

When other work keeps some cores busy as it starts, `main` uses only the free cores and its
threads sleep instead of spinning between kernels (`minitorch.threads.share_the_cpu`;
`MINITORCH_SHARE_CPU=0` turns it off).

`--saliency` then explains one sentence: for each token, the L2 norm of the gradient of
the loss (of the predicted class) with respect to that token's embedding — a large norm
means a small change of that word's vector would change the decision most. `--saliency-png FILE`
draws the first sentence's saliency as a bar chart (with matplotlib: the `plot` extra).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

import minitorch
from minitorch.datasets import TextSplit, load_sst2
from minitorch.datasets.sst2 import CLASSES
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.plots import bar_chart
from minitorch.examples.progress import first_step_note, metrics, metrics_column
from minitorch.nn import functional as F
from minitorch.nn.textcnn import TextCNN, saliency
from minitorch.text import Vocab, batches, pad_batch, tokenize
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu


@dataclass
class EpochResult:
    epoch: int
    loss: float
    train_accuracy: float
    dev_accuracy: float
    test_accuracy: float
    seconds: float
    ms_per_step: float


@dataclass
class TrainResult:
    model: TextCNN
    vocab: Vocab
    epochs: list[EpochResult] = field(default_factory=list)
    seconds: float = 0.0
    #: Mean training-set loss (evaluation mode) before and after training, when measured.
    initial_train_loss: float = float("nan")
    final_train_loss: float = float("nan")

    @property
    def best(self) -> Optional[EpochResult]:
        """The epoch with the best dev accuracy (model selection on dev)."""
        return max(self.epochs, key=lambda e: e.dev_accuracy) if self.epochs else None


def encode(split: TextSplit, vocab: Vocab, max_len: Optional[int] = None) -> list[list[int]]:
    """Token ids of every sentence of a split (cut to max_len tokens)."""
    out = [vocab.encode(tokenize(s)) for s in split.sentences]
    return [ids[:max_len] for ids in out] if max_len else out


def predict(model: TextCNN, encoded: Sequence[Sequence[int]], batch_size: int = 256) -> np.ndarray:
    """Predicted classes (evaluation mode, no gradients)."""
    was_training = model.training
    model.eval()
    min_len = max(model.kernel_sizes)
    backend = model.embedding.weight.value.backend
    out = []
    with minitorch.no_grad():
        for start in range(0, len(encoded), batch_size):
            ids = pad_batch(encoded[start : start + batch_size], min_len=min_len)
            logits = model(minitorch.tensor(ids, dtype=minitorch.int64, backend=backend))
            out.append(np.argmax(logits.numpy(), axis=1))
    model.train(was_training)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(model: TextCNN, encoded: Sequence[Sequence[int]], labels: Sequence[int]) -> float:
    return float(np.mean(predict(model, encoded) == np.asarray(labels))) if len(labels) else float("nan")


def mean_loss(
    model: TextCNN, encoded: Sequence[Sequence[int]], labels: Sequence[int], batch_size: int = 256
) -> float:
    """Average cross-entropy over a dataset in evaluation mode."""
    was_training = model.training
    model.eval()
    backend = model.embedding.weight.value.backend
    total = 0.0
    with minitorch.no_grad():
        for ids, y in batches(encoded, labels, batch_size, shuffle=False, min_len=max(model.kernel_sizes)):
            logits = model(minitorch.tensor(ids, dtype=minitorch.int64, backend=backend))
            total += F.cross_entropy(
                logits, minitorch.tensor(y, dtype=minitorch.int64), reduction="sum"
            ).item()
    model.train(was_training)
    return total / len(labels)


def init_embeddings_uniform(model: TextCNN, scale: float, rng: np.random.Generator) -> None:
    """Kim's initialisation of random word vectors: U(−scale, scale) (he used 0.25, the
    spread of pre-trained word2vec vectors), with the padding row kept at zero."""
    weight = model.embedding.weight.value
    values = rng.uniform(-scale, scale, weight.shape)
    if model.embedding.padding_idx is not None:
        values[model.embedding.padding_idx] = 0.0
    model.embedding.weight.update(minitorch.tensor(values, dtype=weight.dtype, backend=weight.backend))


def train(
    epochs: int = 6,
    emb: int = 300,
    batch: int = 50,
    max_len: Optional[int] = None,
    dtype: str = "float32",
    seed: int = 0,
    limit: Optional[int] = None,
    lr: float = 1e-3,
    filters: int = 100,
    dropout: float = 0.5,
    min_freq: int = 2,
    weight_decay: float = 0.0,
    emb_init: float = 0.25,
    lr_decay: float = 0.5,
    backend: str = "fast",
    console: Optional[Console] = None,
    quiet: bool = False,
    evaluate: bool = True,
    measure_train_loss: bool = False,
) -> TrainResult:
    """Build the vocabulary, train for `epochs` and evaluate on dev and test after each.

    `emb_init` > 0 initialises the embeddings U(−emb_init, emb_init) as Kim did (0 keeps
    PyTorch's N(0, 1)). From the third epoch on, the learning rate is multiplied by
    `lr_decay` before each epoch (the network fits the training set within 2–3 epochs;
    smaller steps afterwards keep dev accuracy from drifting down). After training, the model holds the parameters of the epoch with the
    best dev accuracy (early stopping on dev, as in Kim's experiments). `evaluate=False`
    skips the dev/test accuracies; `measure_train_loss=True` records the mean training loss
    before and after training (for quick checks on a `limit`ed subset).
    """
    console = console or Console()
    start = time.perf_counter()
    minitorch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    be = minitorch.backends.BACKENDS[backend]
    train_split = load_sst2("train").subset(limit)
    dev, test = load_sst2("dev"), load_sst2("test")
    vocab = Vocab.build((tokenize(s) for s in train_split.sentences), min_freq=min_freq)
    train_ids, dev_ids, test_ids = (encode(s, vocab, max_len) for s in (train_split, dev, test))
    model = TextCNN(
        len(vocab),
        emb,
        num_classes=2,
        num_filters=filters,
        dropout=dropout,
        dtype=np.dtype(dtype),
        backend=be,
    )
    if emb_init > 0:
        init_embeddings_uniform(model, emb_init, rng)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    min_len = max(model.kernel_sizes)
    steps = (len(train_ids) + batch - 1) // batch
    result = TrainResult(model, vocab)
    best_state: Optional[dict] = None
    if measure_train_loss:
        result.initial_train_loss = mean_loss(model, train_ids, train_split.labels)
    if not quiet:
        console.print(
            f"[bold]Kim CNN-rand on SST-2[/]: {len(train_ids)} training sentences, vocabulary {len(vocab)}, "
            f"embeddings {emb}, filters 3/4/5 × {filters}, dropout {dropout}, batch {batch}, {dtype}, Adam lr {lr}"
        )
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        metrics_column(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
        for epoch in range(1, epochs + 1):
            if epoch >= 3:
                for group in optimizer.param_groups:  # as in PyTorch: the groups hold the rate
                    group["lr"] *= lr_decay
            pending = metrics(
                show_acc=True, note=first_step_note(backend) if epoch == 1 else ""
            )  # no value before a step
            task = progress.add_task(f"epoch {epoch}/{epochs}", total=steps, metrics=pending)
            model.train()
            t0 = time.perf_counter()
            losses, correct, seen = 0.0, 0, 0
            for step, (ids, y) in enumerate(
                batches(train_ids, train_split.labels, batch, rng=rng, min_len=min_len), 1
            ):
                tokens = minitorch.tensor(ids, dtype=minitorch.int64, backend=be)
                target = minitorch.tensor(y, dtype=minitorch.int64, backend=be)
                optimizer.zero_grad()
                logits = model(tokens)
                loss = F.cross_entropy(logits, target)
                loss.backward()
                optimizer.step()
                losses += loss.item() * len(y)
                correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == y))
                seen += len(y)
                progress.update(
                    task,
                    completed=step,
                    metrics=metrics(losses / seen, correct / seen, 1000 * (time.perf_counter() - t0) / step),
                )
            seconds = time.perf_counter() - t0
            dev_acc = accuracy(model, dev_ids, dev.labels) if evaluate else float("nan")
            test_acc = accuracy(model, test_ids, test.labels) if evaluate else float("nan")
            r = EpochResult(
                epoch,
                losses / max(seen, 1),
                correct / max(seen, 1),
                dev_acc,
                test_acc,
                seconds,
                1000 * seconds / max(steps, 1),
            )
            result.epochs.append(r)
            if evaluate and r is result.best:
                best_state = model.state_dict()
            progress.remove_task(task)
            if not quiet:
                console.print(
                    f"epoch {epoch:>2}: loss {r.loss:.4f}  train {r.train_accuracy:.1%}  "
                    f"[bold]dev {r.dev_accuracy:.1%}[/]  test {r.test_accuracy:.1%}  "
                    f"({r.seconds:.1f} s, {r.ms_per_step:.1f} ms/step)"
                )
    if best_state is not None and result.best is not result.epochs[-1]:
        model.load_state_dict(best_state)
    if measure_train_loss:
        result.final_train_loss = mean_loss(model, train_ids, train_split.labels)
    result.seconds = time.perf_counter() - start
    if not quiet and result.epochs:
        table = Table(title="Kim CNN-rand on SST-2")
        for col in ("epoch", "loss", "train acc", "dev acc", "test acc", "s/epoch"):
            table.add_column(col, justify="right")
        best = result.best
        for r in result.epochs:
            style = "bold green" if r is best else None
            table.add_row(
                str(r.epoch),
                f"{r.loss:.4f}",
                f"{r.train_accuracy:.1%}",
                f"{r.dev_accuracy:.1%}",
                f"{r.test_accuracy:.1%}",
                f"{r.seconds:.1f}",
                style=style,
            )
        console.print(table)
        assert best is not None
        console.print(
            f"best dev accuracy {best.dev_accuracy:.1%} (epoch {best.epoch}); test accuracy at that epoch "
            f"{best.test_accuracy:.1%} (the model keeps that epoch's parameters); total "
            f"{result.seconds / 60:.1f} min. Kim (2014), CNN-rand: 82.7 % test, trained on phrases and sentences."
        )
    return result


def explain(
    model: TextCNN,
    vocab: Vocab,
    sentence: str,
    console: Optional[Console] = None,
    png: Optional[str] = None,
) -> list[tuple[str, float]]:
    """Print (and optionally plot) each token's gradient-norm saliency for one sentence."""
    console = console or Console()
    tokens = tokenize(sentence)
    if not tokens:
        raise ValueError("--saliency: the sentence has no tokens")
    min_len = max(model.kernel_sizes)
    ids = pad_batch([vocab.encode(tokens)], min_len=min_len)
    backend = model.embedding.weight.value.backend
    importance, probs = saliency(model, minitorch.tensor(ids, dtype=minitorch.int64, backend=backend))
    importance = importance[: len(tokens)]
    label = int(np.argmax(probs))
    shown = [t if t in vocab else f"{t} (unk)" for t in tokens]
    table = Table(title=f"saliency: predicted {CLASSES[label]} (p = {probs[label]:.3f})")
    table.add_column("token")
    table.add_column("‖∂loss/∂e‖₂", justify="right")
    table.add_column("")
    top = float(importance.max()) or 1.0
    for tok, v in zip(shown, importance):
        table.add_row(tok, f"{v:.3g}", "█" * max(1, int(round(30 * v / top))))
    console.print(table)
    if png:
        try:
            bar_chart(
                png,
                shown,
                importance,
                title=f"saliency - predicted {CLASSES[label]} (p = {probs[label]:.3f})",
            )
        except ModuleNotFoundError as error:  # matplotlib is optional: say so, and go on
            console.print(f"no bar chart: {error}", markup=False, highlight=False)
        else:
            console.print(f"saved the bar chart to {png}")
    return list(zip(tokens, importance.tolist()))


def main(argv: Optional[Sequence[str]] = None) -> None:
    tune_malloc()  # keep freed step memory in the process (minitorch.allocator)
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--emb", type=int, default=300, help="embedding size (Kim: 300)")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--max-len", type=int, default=None, help="cut sentences to this many tokens")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="train on the first LIMIT sentences only")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--lr-decay", type=float, default=0.5, help="multiply the lr by this before epochs 3, 4, …"
    )
    parser.add_argument("--filters", type=int, default=100, help="feature maps per filter width")
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--min-freq", type=int, default=2, help="rarer training words become <unk>")
    parser.add_argument(
        "--emb-init",
        type=float,
        default=0.25,
        help="initialise embeddings U(-a, a) as Kim did; 0 keeps PyTorch's N(0, 1)",
    )
    parser.add_argument("--weight-decay", type=float, default=0.0)
    add_backend_options(parser)
    parser.add_argument(
        "--saliency",
        action="append",
        default=[],
        metavar="SENTENCE",
        help="after training, show each token's gradient-norm saliency (repeatable)",
    )
    parser.add_argument(
        "--saliency-png",
        default=None,
        metavar="FILE",
        help="also save the (first) saliency as a bar chart PNG",
    )
    args = parser.parse_args(argv)
    backend = chosen_backend(parser, args)
    console = Console()
    try:
        result = train(
            args.epochs,
            args.emb,
            args.batch,
            args.max_len,
            args.dtype,
            args.seed,
            args.limit,
            args.lr,
            args.filters,
            args.dropout,
            args.min_freq,
            args.weight_decay,
            args.emb_init,
            args.lr_decay,
            backend,
            console,
        )
    except NotImplementedError as error:
        if backend != "cuda":
            raise  # e.g. a task still to do: the traceback shows where
        parser.exit(2, f"sentiment: {error}\n")  # a release without these CUDA kernels
    for i, sentence in enumerate(args.saliency):
        explain(result.model, result.vocab, sentence, console, args.saliency_png if i == 0 else None)


if __name__ == "__main__":
    main()
