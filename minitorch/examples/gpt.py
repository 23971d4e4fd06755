"""Train a tiny character-level GPT on Tiny Shakespeare and generate text; or train the very
same model in PyTorch, to compare.

    python -m minitorch.examples.gpt --steps 2000                      # minitorch
    python -m minitorch.examples.gpt --steps 2000 --framework torch    # the same run in PyTorch
    python -m minitorch.examples.gpt --steps 200 --eval-every 100 --out out/gpt   # a quick look, with plots

The model (`minitorch.nn.gpt.TinyGPT`): 64-d character and learned position embeddings
(`--positions sinusoidal` for the fixed table), 2 pre-norm transformer blocks of 4 heads with a
feed-forward layer of 256 GELU units, causal self-attention over a context of 64 characters, a
final LayerNorm and a linear layer to the 65 characters. Each step trains on 16 windows of 64
characters at random offsets of the training split (the first 90 % of the text), with Adam
(lr 2·10⁻³) on the mean cross-entropy of the next character, the gradient norm clipped to 1.0,
in float32.

Every `--eval-every` steps (and at the end) the whole validation split (the last 10 %) is
scored in consecutive windows of the context length: the validation loss (nats/char) and its
perplexity exp(loss) are printed. At the end the model writes a sample of text.

`--framework torch` builds the same structure from `torch.nn.TransformerEncoderLayer` etc.
(`torch_twin`), starts from the minitorch model's initial weights (copied through its
state_dict), draws the same batches (the same NumPy generator) and evaluates and samples the
same way, so the two validation perplexities after the same number of steps can be compared.
PyTorch uses as many threads as Numba does (`numba.get_num_threads()`).

`--out DIR` writes the loss curve (`loss_curve.csv`, and `loss_curve.png` when matplotlib, the
`plot` extra, is installed) and the generated sample (`sample.txt`).

When other work keeps some cores busy as it starts, `main` uses only the free cores and its
threads sleep instead of spinning between kernels (`minitorch.threads.share_the_cpu`;
`MINITORCH_SHARE_CPU=0` turns it off).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

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

import minitorch
from minitorch.datasets import CharCorpus, load_tiny_shakespeare, random_batch
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.char_lm import EvalResult, write_loss_curve
from minitorch.examples.progress import first_step_note, metrics, metrics_column
from minitorch.nn.gpt import TinyGPT, extend_ids, evaluate, sample, train_step
from minitorch.nn.positional import sinusoidal_positional_encoding
from minitorch.optim import Adam
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu

FRAMEWORKS = ("minitorch", "torch")


@dataclass
class Config:
    steps: int = 2000
    context: int = 64
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    feedforward: int = 256
    dropout: float = 0.0
    positions: str = "learned"
    batch_size: int = 16
    lr: float = 2e-3
    clip: float = 1.0
    eval_every: int = 500
    eval_batch_size: int = 64
    seed: int = 0
    dtype: str = "float32"
    backend: str = "fast"
    framework: str = "minitorch"
    text: Optional[str] = None  # another plain-text file instead of Tiny Shakespeare
    out: Optional[str] = None
    prompt: str = "ROMEO:\n"
    sample_length: int = 300
    temperature: float = 0.8


@dataclass
class TrainResult:
    model: Any  # a TinyGPT, or its PyTorch twin with --framework torch
    corpus: CharCorpus
    framework: str = "minitorch"
    train_losses: list[float] = field(default_factory=list)  # one per step, from step 1
    evals: list[EvalResult] = field(default_factory=list)
    sample: str = ""
    train_seconds: float = 0.0  # wall time of the training steps (evaluations excluded)

    @property
    def final(self) -> Optional[EvalResult]:
        return self.evals[-1] if self.evals else None

    @property
    def ms_per_step(self) -> float:
        return 1000 * self.train_seconds / max(len(self.train_losses), 1)


def build_model(config: Config, vocab_size: int) -> TinyGPT:
    """The minitorch TinyGPT of `config` (its initial weights drawn from `minitorch.manual_seed(config.seed)`)."""
    minitorch.manual_seed(config.seed)
    return TinyGPT(
        vocab_size,
        config.context,
        config.d_model,
        config.heads,
        config.layers,
        config.feedforward,
        config.dropout,
        config.positions,
        dtype=np.dtype(config.dtype),
        backend=minitorch.backends.BACKENDS[config.backend],
    )


# ---------------------------------------------------------------------------------------
# The PyTorch twin


def torch_twin(model: TinyGPT) -> Any:
    """A PyTorch module with TinyGPT's structure and parameter names, built from
    `torch.nn.Embedding`, `TransformerEncoderLayer(norm_first=True, batch_first=True,
    activation="gelu")`, `LayerNorm` and `Linear`, holding a copy of `model`'s parameters (in
    model's dtype). forward(idx [B, T] int64) → logits [B, T, V], the same function."""
    import torch

    layer = model.blocks[0]
    vocab, context, d = model.vocab_size, model.context_length, model.d_model
    nhead, ff = layer.self_attn.num_heads, layer.linear1.out_features
    p = layer.dropout.p

    class TorchTinyGPT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token_embedding = torch.nn.Embedding(vocab, d)
            if model.positions == "learned":
                self.position_embedding = torch.nn.Embedding(context, d)
            else:
                table = sinusoidal_positional_encoding(context, d).numpy()
                self.register_buffer("sinusoids", torch.from_numpy(table), persistent=False)
            self.dropout = torch.nn.Dropout(model.dropout.p)
            self.blocks = torch.nn.ModuleList(
                [
                    torch.nn.TransformerEncoderLayer(
                        d, nhead, ff, p, activation="gelu", batch_first=True, norm_first=True
                    )
                    for _ in range(len(model.blocks))
                ]
            )
            self.norm = torch.nn.LayerNorm(d)
            self.head = torch.nn.Linear(d, vocab)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            if model.positions == "learned":
                positions = self.position_embedding(torch.arange(t, device=idx.device))
            else:
                positions = self.sinusoids[:t]
            x = self.dropout(self.token_embedding(idx) + positions)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=x.dtype, device=idx.device)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(self.norm(x))

    dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}[
        model.head.weight.value.dtype
    ]
    twin = TorchTinyGPT().to(dtype)
    twin.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()})
    twin.train(model.training)
    return twin


# ---------------------------------------------------------------------------------------
# One training step, evaluation and sampling, in each framework


class MinitorchRun:
    """Training, evaluation and sampling of a TinyGPT with minitorch (`minitorch.nn.gpt`)."""

    def __init__(self, model: TinyGPT, config: Config) -> None:
        self.model, self.config = model, config
        self.optimizer = Adam(model.parameters(), lr=config.lr)

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        return train_step(self.model, self.optimizer, x, y, self.config.clip)

    def evaluate(self, data: np.ndarray) -> float:
        return evaluate(self.model, data, self.config.context, self.config.eval_batch_size)

    def sample(self, vocab: Any) -> str:
        c = self.config
        return sample(self.model, vocab, c.prompt, c.sample_length, c.temperature, c.seed)


class TorchRun:
    """The same with PyTorch, on `torch_twin(model)` (the minitorch model's initial weights):
    Adam with the same settings, the same clipping, the same evaluation windows and the same
    sampling (`minitorch.nn.gpt`'s draws from the same generator)."""

    def __init__(self, model: TinyGPT, config: Config) -> None:
        import numba
        import torch

        self.torch, self.config = torch, config
        torch.manual_seed(config.seed)  # dropout masks (only with --dropout > 0)
        torch.set_num_threads(numba.get_num_threads())  # after main's share_the_cpu()
        self.model = torch_twin(model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)

    def _logits(self, ids: np.ndarray) -> Any:
        return self.model(self.torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)))

    def _loss(self, ids: np.ndarray, targets: np.ndarray) -> Any:
        logits = self._logits(ids)
        targets = self.torch.from_numpy(np.asarray(targets, dtype=np.int64)).reshape(-1)
        return self.torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        self.model.train()
        self.optimizer.zero_grad()
        loss = self._loss(x, y)
        loss.backward()
        if self.config.clip is not None:
            self.torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip)
        self.optimizer.step()
        return loss.item()

    def evaluate(self, data: np.ndarray) -> float:
        """Mean NLL over consecutive windows of the context length, every target scored once
        (the windows of `language_model.evaluate`)."""
        stream, seq_len, batch = (
            np.asarray(data, dtype=np.int64),
            self.config.context,
            self.config.eval_batch_size,
        )
        n = len(stream) - 1
        full = n // seq_len
        total = 0.0
        self.model.eval()
        with self.torch.no_grad():
            for first in range(0, full, batch):
                starts = np.arange(first, min(first + batch, full)) * seq_len
                chunk = stream[starts[:, None] + np.arange(seq_len + 1)]
                total += self._loss(chunk[:, :-1], chunk[:, 1:]).item() * chunk[:, 1:].size
            if n - full * seq_len:
                chunk = stream[None, full * seq_len :]
                total += self._loss(chunk[:, :-1], chunk[:, 1:]).item() * (n - full * seq_len)
        self.model.train()
        return total / n

    def sample(self, vocab: Any) -> str:
        c = self.config
        ids = np.asarray(vocab.encode(c.prompt), dtype=np.int64)[None, :]
        self.model.eval()
        with self.torch.no_grad():
            out = extend_ids(
                lambda ids: self._logits(ids[:, -c.context :])[:, -1].double().numpy(),
                ids,
                c.sample_length,
                c.temperature,
                np.random.default_rng(c.seed),
            )
        self.model.train()
        return vocab.decode(out[0, ids.shape[1] :])


# ---------------------------------------------------------------------------------------
# Training


def train(config: Config, console: Optional[Console] = None, quiet: bool = False) -> TrainResult:
    """Train as `config` says, evaluating every `eval_every` steps and at the end; sample."""
    console = console or Console()
    if config.framework not in FRAMEWORKS:
        raise SystemExit(f"gpt: --framework must be one of {FRAMEWORKS}, got {config.framework!r}")
    corpus = load_tiny_shakespeare(path=config.text)
    unknown = sorted(set(config.prompt) - set(corpus.vocab.chars))
    if not config.prompt or unknown:
        raise SystemExit(
            f"gpt: the prompt must be non-empty text of the vocabulary; unknown characters: {unknown}"
        )
    model = build_model(config, len(corpus.vocab))
    run = MinitorchRun(model, config) if config.framework == "minitorch" else TorchRun(model, config)
    rng = np.random.default_rng(config.seed)  # the batches: the same in both frameworks
    result = TrainResult(run.model, corpus, config.framework)
    if not quiet:
        n_params = sum(p.value.numel() for p in model.parameters())
        console.print(
            f"[bold]character GPT[/] ({config.framework}): {len(corpus.train):,} training / {len(corpus.val):,} "
            f"validation characters, vocabulary {len(corpus.vocab)}; context {config.context}, d_model "
            f"{config.d_model}, {config.layers} blocks × {config.heads} heads, feed-forward {config.feedforward}, "
            f"{config.positions} positions, {n_params:,} parameters; batch {config.batch_size}, Adam lr {config.lr}, "
            f"clip {config.clip}, {config.dtype}"
            + (f", {config.backend} backend" if config.framework == "minitorch" else "")
        )

    def run_eval(step: int, since: int, seconds: float) -> None:
        recent = result.train_losses[since:]
        r = EvalResult(
            step,
            run.evaluate(corpus.val),
            float(np.mean(recent)) if recent else float("nan"),
            1000 * seconds / max(len(recent), 1),
        )
        result.evals.append(r)
        if not quiet:
            console.print(
                f"step {step:>5}: train {r.train_loss:.4f}  [bold]validation {r.val_loss:.4f} nats/char, "
                f"perplexity {r.perplexity:.2f}[/]  ({r.ms_per_step:.1f} ms/step)"
            )

    columns = (
        TextColumn("[bold]training"),
        BarColumn(),
        MofNCompleteColumn(),
        metrics_column(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    step = 0
    with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
        first = first_step_note(config.backend if config.framework == "minitorch" else "torch")
        task = progress.add_task("train", total=config.steps, metrics=metrics(note=first))
        since, seconds = 0, 0.0
        while step < config.steps:
            t0 = time.perf_counter()
            x, y = random_batch(corpus.train, config.batch_size, config.context, rng)
            loss = run.step(x, y)
            elapsed = time.perf_counter() - t0
            seconds += elapsed
            result.train_seconds += elapsed
            step += 1
            result.train_losses.append(loss)
            recent = result.train_losses[max(since, step - 50) :]
            shown = metrics(float(np.mean(recent)), ms=1000 * seconds / (step - since), ms_spec=".1f")
            progress.update(task, completed=step, metrics=shown)
            if (
                step % config.eval_every == 0 or step == config.steps
            ):  # the elapsed time runs on while it evaluates
                progress.update(task, metrics=f"{shown}  evaluating…")
                run_eval(step, since, seconds)
                progress.update(task, metrics=shown)
                since, seconds = step, 0.0
    if not result.evals:  # no steps: score the initial model
        run_eval(0, 0, 0.0)

    result.sample = run.sample(corpus.vocab)
    final = result.final
    if not quiet and final is not None:
        console.print(
            f"[bold]validation perplexity {final.perplexity:.3f}[/] ({final.val_loss:.4f} nats/char, "
            f"{final.val_loss / np.log(2):.3f} bits/char) after {final.step} steps ({config.framework}; "
            f"training {result.train_seconds:.1f} s, {result.ms_per_step:.1f} ms/step)"
        )
        console.rule(f"sample (temperature {config.temperature}, seed {config.seed})")
        console.print(config.prompt + result.sample, markup=False, highlight=False)
        console.rule()
    if config.out:
        out = Path(config.out)
        write_loss_curve(
            out, result.train_losses, result.evals, f"tiny character GPT ({config.framework})", console
        )
        (out / "sample.txt").write_text(config.prompt + result.sample, encoding="utf-8")
    return result


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = Config()
    parser.add_argument("--steps", type=int, default=d.steps, help="training steps (batches)")
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default=d.framework,
        help="train with minitorch, or the same model, weights and batches with PyTorch",
    )
    parser.add_argument(
        "--context", type=int, default=d.context, help="context length (characters per window)"
    )
    parser.add_argument("--d-model", type=int, default=d.d_model, help="embedding / residual stream size")
    parser.add_argument("--heads", type=int, default=d.heads, help="attention heads per block")
    parser.add_argument("--layers", type=int, default=d.layers, help="transformer blocks")
    parser.add_argument("--feedforward", type=int, default=d.feedforward, help="feed-forward hidden size")
    parser.add_argument("--dropout", type=float, default=d.dropout)
    parser.add_argument("--positions", choices=("learned", "sinusoidal"), default=d.positions)
    parser.add_argument("--batch-size", type=int, default=d.batch_size)
    parser.add_argument("--lr", type=float, default=d.lr, help="Adam's learning rate")
    parser.add_argument("--clip", type=float, default=d.clip, help="clip the gradient norm to this")
    parser.add_argument(
        "--eval-every",
        type=int,
        default=d.eval_every,
        metavar="N",
        help="score the whole validation split every N steps",
    )
    parser.add_argument("--eval-batch-size", type=int, default=d.eval_batch_size)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--dtype", choices=("float32", "float64"), default=d.dtype)
    add_backend_options(parser)
    parser.add_argument("--text", default=None, metavar="FILE", help="train on this text file instead")
    parser.add_argument("--out", default=None, metavar="DIR", help="write the loss curve and the sample here")
    parser.add_argument("--prompt", default=d.prompt, help="text the sample starts from")
    parser.add_argument("--sample-length", type=int, default=d.sample_length)
    parser.add_argument("--temperature", type=float, default=d.temperature)
    args = parser.parse_args(argv)
    if args.steps < 0 or args.eval_every <= 0:
        parser.error("--steps must be ≥ 0 and --eval-every > 0")
    args.backend = chosen_backend(parser, args, default=d.backend)
    del args.device
    return Config(**{k.replace("-", "_"): v for k, v in vars(args).items()})


def main(argv: Optional[Sequence[str]] = None) -> TrainResult:
    tune_malloc()  # keep freed step memory in the process (minitorch.allocator)
    config = parse_args(argv)
    if config.framework == "torch":
        # PyTorch before Numba's first parallel loop: Numba's pool loads the system's OpenMP
        # (libgomp), which PyTorch would then share instead of its own; measured on the
        # step of bench.train_step's tiny GPT, idle 2-core machine: 10 ms → 770–820 ms.
        import torch  # noqa: F401
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    try:
        return train(config)
    except NotImplementedError as error:
        if config.backend != "cuda":
            raise  # e.g. a task still to do: the traceback shows where
        raise SystemExit(f"gpt: {error}")  # a release without these CUDA kernels


if __name__ == "__main__":
    main()
