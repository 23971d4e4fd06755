"""Classify SST-2 sentences with attention pooling, and show which words the model looked at.

    python -m minitorch.examples.sentiment_attention                        # the full run
    python -m minitorch.examples.sentiment_attention --epochs 1 --limit 500 # a quick look
    python -m minitorch.examples.sentiment_attention \\
        --heatmap "a gorgeous , witty , seductive movie ." --heatmap-png attention.png

The model (`AttentionClassifier`), for a batch of token ids [B, T] padded with 0:

    e_p = Embedding(V, emb)[token_p]               [B, T, emb]   (padding row 0, U(−0.25, 0.25))
    h_p = tanh(W e_p + b)                          [B, T, hidden]
    s_p = wᵀ h_p,  α = softmax(s) over the real tokens,  z = Σ_p α_p h_p     (nn.AttentionPooling)
    logits = Linear(dropout(z))                    [B, 2]

The padding mask (token == 0, True = padding, as PyTorch's key_padding_mask) keeps the
padding out of the softmax, so a sentence gets the same prediction however much its batch
pads it. Training reuses the text CNN's pieces (`minitorch.examples.sentiment`: data,
vocabulary, encoding, the embedding initialisation, the result records) with Adam on
cross-entropy, the learning rate halved before each epoch from the third on, and keeps the
parameters of the epoch with the best dev accuracy.

The attention weights α are an explanation the model gives for free: `--heatmap SENTENCE`
prints them as a table after training, and `--heatmap-png FILE` draws them as a one-row
heatmap over the tokens (with matplotlib: the `plot` extra). (Weights show where the average
was taken, not what the classifier did with it: a heavily weighted word can still push either
way.)

When other work keeps some cores busy as it starts, `main` uses only the free cores and its
threads sleep instead of spinning between kernels (`minitorch.threads.share_the_cpu`;
`MINITORCH_SHARE_CPU=0` turns it off).
"""

from __future__ import annotations

import argparse
import time
from typing import Optional, Sequence

import numpy as np
from rich.console import Console
from rich.table import Table

import minitorch
from minitorch.datasets import load_sst2
from minitorch.datasets.sst2 import CLASSES
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.plots import heatmap
from minitorch.examples.sentiment import EpochResult, TrainResult, encode, init_embeddings_uniform
from minitorch.module import Module
from minitorch.nn import AttentionPooling, Dropout, Embedding, Linear
from minitorch.nn import functional as F
from minitorch.tensor import Tensor
from minitorch.tensor_ops import TensorBackend
from minitorch.text import Vocab, batches, pad_batch, tokenize
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu


class AttentionClassifier(Module):
    """Embedding → Linear + tanh → attention pooling (padding masked) → dropout → Linear.

    forward(tokens [B, T] int64, 0 = padding) → logits [B, num_classes];
    `attend(tokens)` → (logits, attention weights [B, T]).
    """

    def __init__(
        self,
        vocab_size: int,
        emb: int = 128,
        hidden: int = 128,
        num_classes: int = 2,
        dropout: float = 0.5,
        padding_idx: int = 0,
        dtype=None,  # noqa: ANN001
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        self.padding_idx = padding_idx
        self.embedding = Embedding(vocab_size, emb, padding_idx=padding_idx, dtype=dtype, backend=backend)
        self.proj = Linear(emb, hidden, dtype=dtype, backend=backend)
        self.pool = AttentionPooling(hidden, dtype=dtype, backend=backend)
        self.dropout = Dropout(dropout)
        self.fc = Linear(hidden, num_classes, dtype=dtype, backend=backend)

    def attend(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """(logits [B, C], attention weights [B, T]) for token ids [B, T]."""
        padding = tokens == self.padding_idx  # [B, T] bool, True = padding
        h = self.proj(self.embedding(tokens)).tanh()
        pooled, weights = self.pool(h, key_padding_mask=padding)
        return self.fc(self.dropout(pooled)), weights

    def forward(self, tokens: Tensor) -> Tensor:
        return self.attend(tokens)[0]


def _backend(model: AttentionClassifier) -> TensorBackend:
    return model.embedding.weight.value.backend


def predict(
    model: AttentionClassifier, encoded: Sequence[Sequence[int]], batch_size: int = 256
) -> np.ndarray:
    """Predicted classes (evaluation mode, no gradients)."""
    was_training = model.training
    model.eval()
    out = []
    with minitorch.no_grad():
        for start in range(0, len(encoded), batch_size):
            ids = pad_batch(encoded[start : start + batch_size])
            logits = model(minitorch.tensor(ids, dtype=minitorch.int64, backend=_backend(model)))
            out.append(np.argmax(logits.numpy(), axis=1))
    model.train(was_training)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(model: AttentionClassifier, encoded: Sequence[Sequence[int]], labels: Sequence[int]) -> float:
    return float(np.mean(predict(model, encoded) == np.asarray(labels))) if len(labels) else float("nan")


def mean_loss(
    model: AttentionClassifier, encoded: Sequence[Sequence[int]], labels: Sequence[int], batch_size: int = 256
) -> float:
    """Average cross-entropy over a dataset in evaluation mode."""
    was_training = model.training
    model.eval()
    total = 0.0
    with minitorch.no_grad():
        for ids, y in batches(encoded, labels, batch_size, shuffle=False):
            logits = model(minitorch.tensor(ids, dtype=minitorch.int64, backend=_backend(model)))
            total += F.cross_entropy(
                logits, minitorch.tensor(y, dtype=minitorch.int64), reduction="sum"
            ).item()
    model.train(was_training)
    return total / len(labels)


def train(
    epochs: int = 6,
    emb: int = 128,
    hidden: int = 128,
    batch: int = 50,
    lr: float = 2e-3,
    lr_decay: float = 0.5,
    dropout: float = 0.5,
    min_freq: int = 2,
    emb_init: float = 0.25,
    weight_decay: float = 0.0,
    dtype: str = "float32",
    seed: int = 0,
    limit: Optional[int] = None,
    backend: str = "fast",
    console: Optional[Console] = None,
    quiet: bool = False,
    evaluate: bool = True,
    measure_train_loss: bool = False,
) -> TrainResult:
    """Build the vocabulary, train for `epochs`, evaluate on dev and test after each, and keep
    the parameters of the best dev epoch (see `minitorch.examples.sentiment.train`, whose
    settings these follow). `evaluate=False` skips dev/test; `measure_train_loss=True`
    records the mean training loss before and after training."""
    console = console or Console()
    start = time.perf_counter()
    minitorch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    be = minitorch.backends.BACKENDS[backend]
    train_split = load_sst2("train").subset(limit)
    dev, test = load_sst2("dev"), load_sst2("test")
    vocab = Vocab.build((tokenize(s) for s in train_split.sentences), min_freq=min_freq)
    train_ids, dev_ids, test_ids = (encode(s, vocab) for s in (train_split, dev, test))
    model = AttentionClassifier(len(vocab), emb, hidden, 2, dropout, dtype=np.dtype(dtype), backend=be)
    if emb_init > 0:
        init_embeddings_uniform(model, emb_init, rng)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    result = TrainResult(model, vocab)
    best_state: Optional[dict] = None
    if measure_train_loss:
        result.initial_train_loss = mean_loss(model, train_ids, train_split.labels)
    if not quiet:
        console.print(
            f"[bold]Attention pooling on SST-2[/]: {len(train_ids)} training sentences, vocabulary {len(vocab)}, "
            f"embeddings {emb}, hidden {hidden}, dropout {dropout}, batch {batch}, {dtype}, Adam lr {lr}"
        )
    steps = (len(train_ids) + batch - 1) // batch
    for epoch in range(1, epochs + 1):
        if epoch >= 3:
            for group in optimizer.param_groups:  # as in PyTorch: the groups hold the rate
                group["lr"] *= lr_decay
        model.train()
        t0 = time.perf_counter()
        losses, correct, seen = 0.0, 0, 0
        for ids, y in batches(train_ids, train_split.labels, batch, rng=rng):
            optimizer.zero_grad()
            logits = model(minitorch.tensor(ids, dtype=minitorch.int64, backend=be))
            loss = F.cross_entropy(logits, minitorch.tensor(y, dtype=minitorch.int64, backend=be))
            loss.backward()
            optimizer.step()
            losses += loss.item() * len(y)
            correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == y))
            seen += len(y)
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
    best = result.best
    if not quiet and best is not None and evaluate:
        console.print(
            f"best dev accuracy {best.dev_accuracy:.1%} (epoch {best.epoch}); test accuracy at that epoch "
            f"{best.test_accuracy:.1%} (the model keeps that epoch's parameters); total {result.seconds:.0f} s."
        )
    return result


def attention_weights(
    model: AttentionClassifier, vocab: Vocab, sentence: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(tokens, attention weights [T], class probabilities [C]) of one sentence (evaluation mode)."""
    tokens = tokenize(sentence)
    if not tokens:
        raise ValueError("--heatmap: the sentence has no tokens")
    was_training = model.training
    model.eval()
    with minitorch.no_grad():
        ids = minitorch.tensor(
            pad_batch([vocab.encode(tokens)]), dtype=minitorch.int64, backend=_backend(model)
        )
        logits, weights = model.attend(ids)
        probs = F.softmax(logits, dim=-1)
    model.train(was_training)
    return tokens, weights.numpy()[0, : len(tokens)].astype(np.float64), probs.numpy()[0].astype(np.float64)


def explain(
    model: AttentionClassifier,
    vocab: Vocab,
    sentence: str,
    console: Optional[Console] = None,
    png: Optional[str] = None,
) -> list[tuple[str, float]]:
    """Print each token's attention weight for one sentence (and draw them as a heatmap into `png`)."""
    console = console or Console()
    tokens, weights, probs = attention_weights(model, vocab, sentence)
    label = int(np.argmax(probs))
    shown = [t if t in vocab else f"{t} (unk)" for t in tokens]
    title = f"attention - predicted {CLASSES[label]} (p = {probs[label]:.3f})"
    table = Table(title=title)
    table.add_column("token")
    table.add_column("α", justify="right")
    table.add_column("")
    top = float(weights.max()) or 1.0
    for tok, a in zip(shown, weights):
        table.add_row(tok, f"{a:.3f}", "█" * max(1, int(round(30 * a / top))))
    console.print(table)
    if png:
        try:
            # colours from 0 to the largest weight (the colour bar says so): a long sentence's
            # weights are all small, and on [0, 1] they would all look white
            heatmap(
                png,
                weights[None, :],
                row_labels=["attention"],
                col_labels=shown,
                title=title,
                vmin=0.0,
                vmax=float(weights.max()),
            )
        except ModuleNotFoundError as error:  # matplotlib is optional: say so, and go on
            console.print(f"no heatmap: {error}", markup=False, highlight=False)
        else:
            console.print(f"saved the attention heatmap to {png}")
    return list(zip(tokens, weights.tolist()))


def main(argv: Optional[Sequence[str]] = None) -> TrainResult:
    tune_malloc()  # keep freed step memory in the process (minitorch.allocator)
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--emb", type=int, default=128, help="embedding size")
    parser.add_argument("--hidden", type=int, default=128, help="size of the tanh layer that attention pools")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument(
        "--lr-decay", type=float, default=0.5, help="multiply the lr by this before epochs 3, 4, …"
    )
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--min-freq", type=int, default=2, help="rarer training words become <unk>")
    parser.add_argument(
        "--emb-init",
        type=float,
        default=0.25,
        help="initialise embeddings U(-a, a); 0 keeps PyTorch's N(0, 1)",
    )
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="train on the first LIMIT sentences only")
    add_backend_options(parser)
    parser.add_argument(
        "--heatmap",
        action="append",
        default=[],
        metavar="SENTENCE",
        help="after training, show the attention weights over this sentence's tokens (repeatable)",
    )
    parser.add_argument(
        "--heatmap-png",
        default=None,
        metavar="FILE",
        help="also draw the (first) sentence's attention weights as a one-row heatmap PNG",
    )
    args = parser.parse_args(argv)
    backend = chosen_backend(parser, args)
    console = Console()
    try:
        result = train(
            args.epochs,
            args.emb,
            args.hidden,
            args.batch,
            args.lr,
            args.lr_decay,
            args.dropout,
            args.min_freq,
            args.emb_init,
            args.weight_decay,
            args.dtype,
            args.seed,
            args.limit,
            backend,
            console,
        )
    except NotImplementedError as error:
        if backend != "cuda":
            raise  # e.g. a task still to do: the traceback shows where
        parser.exit(2, f"sentiment_attention: {error}\n")  # a release without these CUDA kernels
    for i, sentence in enumerate(args.heatmap):
        explain(result.model, result.vocab, sentence, console, args.heatmap_png if i == 0 else None)
    return result


if __name__ == "__main__":
    main()
