"""Train a character-level language model on Tiny Shakespeare and generate text.

    python -m minitorch.examples.char_lm --steps 3000 --cell lstm --hidden 256 --seed 0
    python -m minitorch.examples.char_lm --steps 200 --eval-every 100          # a quick look
    python -m minitorch.examples.char_lm --checkpoint lm.npz --out out/char_lm   # resumable, with plots

The model (`minitorch.nn.language_model.CharLanguageModel`): 64-d character embeddings, one
LSTM layer of 256 units (or `--cell rnn|gru`, `--layers N`) and a linear layer to the 65
characters. Each step trains on a batch of 32 windows of 64 characters at random offsets of
the training split (the first 90 % of the text), with Adam (lr 2·10⁻³) on the mean
cross-entropy of the next character, the gradient norm clipped to 1.0.

Every `--eval-every` steps (and at the end) the whole validation split (the last 10 %,
111,540 characters) is scored in consecutive windows of `--seq-len`: the validation loss
(nats/char) and its perplexity exp(loss) are printed. The target: perplexity ≤ 5.0 after
3000 steps of the default configuration (PyTorch, same set-up: 4.85). At the end the model
writes a sample of text.

`--tbptt` trains by truncated backpropagation through time instead: the training split is cut
into 32 parallel streams, each step takes the next 64 characters of every stream and starts
from the previous step's final state, detached (`train_chunk`).

`--checkpoint PATH` saves everything needed to continue (step, parameters, Adam's moments,
both random generators, the loss history, the carried state of `--tbptt`) at every evaluation, and resumes from PATH when it
exists: an interrupted run continued this way ends exactly where an uninterrupted one would.
`--out DIR` writes the loss curve (`loss_curve.csv`, and `loss_curve.png` when matplotlib, the
`plot` extra, is installed) and the generated sample (`sample.txt`).

When other work keeps some cores busy as it starts, `main` uses only the free cores and its
threads sleep instead of spinning between kernels (`minitorch.threads.share_the_cpu`;
`MINITORCH_SHARE_CPU=0` turns it off).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
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

import minitorch
from minitorch.datasets import (
    CharCorpus,
    load_tiny_shakespeare,
    random_batch,
    stream_chunk,
    stream_chunks_per_pass,
)
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.plots import loss_curve
from minitorch.examples.progress import first_step_note, metrics, metrics_column
from minitorch.nn.language_model import (
    CharLanguageModel,
    State,
    evaluate,
    perplexity,
    sample,
    train_chunk,
    train_step,
)
from minitorch.optim import Adam
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu

#: Settings that fix the model's shape: a checkpoint only resumes a run that agrees on them.
MODEL_KEYS = ("cell", "embedding", "hidden", "layers", "dtype")


@dataclass
class Config:
    steps: int = 3000
    cell: str = "lstm"
    embedding: int = 64
    hidden: int = 256
    layers: int = 1
    dropout: float = 0.0
    seq_len: int = 64
    batch_size: int = 32
    lr: float = 2e-3
    clip: float = 1.0
    eval_every: int = 500
    eval_batch_size: int = 256
    seed: int = 0
    dtype: str = "float32"
    backend: str = "fast"
    text: Optional[str] = None  # another plain-text file instead of Tiny Shakespeare
    tbptt: bool = False  # consecutive chunks of parallel streams, the state carried (detached)
    checkpoint: Optional[str] = None
    out: Optional[str] = None
    prompt: str = "ROMEO:\n"
    sample_length: int = 500
    temperature: float = 0.8


@dataclass
class EvalResult:
    step: int
    val_loss: float
    train_loss: float  # mean training loss since the previous evaluation
    ms_per_step: float

    @property
    def perplexity(self) -> float:
        return perplexity(self.val_loss)


@dataclass
class TrainResult:
    model: CharLanguageModel
    corpus: CharCorpus
    train_losses: list[float] = field(default_factory=list)  # one per step, from step 1
    evals: list[EvalResult] = field(default_factory=list)
    sample: str = ""
    resumed_from: int = 0  # the step a checkpoint restored (0: a fresh start)

    @property
    def final(self) -> Optional[EvalResult]:
        return self.evals[-1] if self.evals else None


# ---------------------------------------------------------------------------------------
# Checkpoints: one .npz file of arrays plus a JSON string of everything else


def _adam_arrays(optimizer: Adam) -> dict[str, np.ndarray]:
    """Adam's per-parameter state (`Optimizer.state_dict`) as flat arrays "adam.<i>.<name>"."""
    return {
        f"adam.{i}.{name}": np.asarray(value)
        for i, state in optimizer.state_dict()["state"].items()
        for name, value in state.items()
    }


def _load_adam_arrays(optimizer: Adam, arrays: dict[str, np.ndarray]) -> None:
    state: dict[int, dict[str, np.ndarray]] = {}
    for key, value in arrays.items():
        if key.startswith("adam."):
            _, i, name = key.split(".", 2)
            state.setdefault(int(i), {})[name] = value
    optimizer.load_state_dict({"state": state})


def _state_parts(state: Optional[State]) -> list:
    """A recurrent state as a list of tensors: [] (None), [h] or [h, c]."""
    if state is None:
        return []
    return list(state) if isinstance(state, tuple) else [state]


def save_checkpoint(
    path: str,
    config: Config,
    step: int,
    model: CharLanguageModel,
    optimizer: Adam,
    rng: np.random.Generator,
    result: TrainResult,
    carried: Optional[State] = None,
) -> None:
    """Write the run's state to `path` (atomically: a crash never leaves half a file)."""
    meta = {
        "step": step,
        "config": asdict(config),
        "vocab": "".join(result.corpus.vocab.chars),
        "data_rng": rng.bit_generator.state,
        "minitorch_rng": minitorch.rng.generator().bit_generator.state,
        "evals": [asdict(e) for e in result.evals],
    }
    arrays = {f"param.{k}": v for k, v in model.state_dict().items()}
    arrays.update(_adam_arrays(optimizer))
    arrays["train_losses"] = np.asarray(result.train_losses, dtype=np.float64)
    arrays.update({f"carried.{i}": part.numpy() for i, part in enumerate(_state_parts(carried))})
    arrays["meta"] = np.array(json.dumps(meta))
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def load_checkpoint(
    path: str,
    config: Config,
    model: CharLanguageModel,
    optimizer: Adam,
    rng: np.random.Generator,
    result: TrainResult,
) -> tuple[int, Optional[State]]:
    """Restore a run saved by `save_checkpoint`; returns its step and the carried state."""
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(str(arrays.pop("meta")))
    saved = meta["config"]
    clash = [
        f"{k}: {saved[k]!r} ≠ {getattr(config, k)!r}" for k in MODEL_KEYS if saved[k] != getattr(config, k)
    ]
    if meta["vocab"] != "".join(result.corpus.vocab.chars):
        clash.append("the text's vocabulary differs")
    if clash:
        raise SystemExit(
            f"char_lm: checkpoint {path} belongs to another model ({'; '.join(clash)}); "
            "use another --checkpoint path or matching settings"
        )
    model.load_state_dict({k[len("param.") :]: v for k, v in arrays.items() if k.startswith("param.")})
    _load_adam_arrays(optimizer, arrays)
    rng.bit_generator.state = meta["data_rng"]
    minitorch.rng.generator().bit_generator.state = meta["minitorch_rng"]
    result.train_losses = arrays["train_losses"].tolist()
    result.evals = [EvalResult(**e) for e in meta["evals"]]
    parts = [
        minitorch.tensor(arrays[f"carried.{i}"], backend=model.backend)
        for i in range(2)
        if f"carried.{i}" in arrays
    ]
    carried = None if not parts else parts[0] if len(parts) == 1 else (parts[0], parts[1])
    return int(meta["step"]), carried


# ---------------------------------------------------------------------------------------
# The loss curve


def write_loss_curve(
    out: Path, train_losses: Sequence[float], evals: Sequence[EvalResult], title: str, console: Console
) -> None:
    """`loss_curve.csv` (step, train loss, validation loss where measured) and, with
    matplotlib, `loss_curve.png` (`plots.loss_curve`); without it, a line saying so."""
    out.mkdir(parents=True, exist_ok=True)
    val = {e.step: e.val_loss for e in evals}
    lines = ["step,train_loss,val_loss"]
    for step, loss in enumerate(train_losses, 1):
        lines.append(f"{step},{loss:.6f},{val[step]:.6f}" if step in val else f"{step},{loss:.6f},")
    (out / "loss_curve.csv").write_text("\n".join(lines) + "\n")
    try:
        loss_curve(
            out / "loss_curve.png",
            train_losses,
            [(e.step, e.val_loss) for e in evals],
            title=title,
            ylabel="loss (nats / character)",
        )
    except ModuleNotFoundError as error:  # matplotlib is optional: the CSV has the numbers
        console.print(
            f"wrote the loss curve as {out / 'loss_curve.csv'} only: {error}", markup=False, highlight=False
        )
        return
    console.print(f"saved the loss curve to {out / 'loss_curve.png'} (and .csv)")


# ---------------------------------------------------------------------------------------
# Training


def train(config: Config, console: Optional[Console] = None, quiet: bool = False) -> TrainResult:
    """Train (or resume) as `config` says, evaluating every `eval_every` steps and at the end."""
    console = console or Console()
    minitorch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    backend = minitorch.backends.BACKENDS[config.backend]
    corpus = load_tiny_shakespeare(path=config.text)
    unknown = sorted(set(config.prompt) - set(corpus.vocab.chars))
    if not config.prompt or unknown:
        raise SystemExit(
            f"char_lm: the prompt must be non-empty text of the vocabulary; unknown characters: {unknown}"
        )
    model = CharLanguageModel(
        len(corpus.vocab),
        config.embedding,
        config.hidden,
        config.cell,
        config.layers,
        config.dropout,
        dtype=np.dtype(config.dtype),
        backend=backend,
    )
    optimizer = Adam(model.parameters(), lr=config.lr)
    result = TrainResult(model, corpus)
    step = 0
    carried: Optional[State] = None  # --tbptt: the final state of the previous chunk
    if config.checkpoint and Path(config.checkpoint).exists():
        step, carried = load_checkpoint(config.checkpoint, config, model, optimizer, rng, result)
        result.resumed_from = step
    chunks = stream_chunks_per_pass(corpus.train, config.batch_size, config.seq_len) if config.tbptt else 0
    if not quiet:
        n_params = sum(p.value.numel() for p in model.parameters())
        console.print(
            f"[bold]character {config.cell.upper()} language model[/]: {len(corpus.train):,} training / "
            f"{len(corpus.val):,} validation characters, vocabulary {len(corpus.vocab)}; embedding {config.embedding}, "
            f"{config.layers} × {config.hidden} {config.cell}, {n_params:,} parameters; batch {config.batch_size} × "
            f"{config.seq_len}, Adam lr {config.lr}, clip {config.clip}, {config.dtype}, {config.backend} backend"
        )
        if step:
            console.print(f"resumed from {config.checkpoint} at step {step}")

    def run_eval(step: int, since: int, seconds: float) -> None:
        recent = result.train_losses[since:]
        r = EvalResult(
            step,
            evaluate(model, corpus.val, config.seq_len, config.eval_batch_size),
            float(np.mean(recent)) if recent else float("nan"),
            1000 * seconds / max(len(recent), 1),
        )
        result.evals.append(r)
        if config.checkpoint:
            save_checkpoint(config.checkpoint, config, step, model, optimizer, rng, result, carried)
        if not quiet:
            console.print(
                f"step {step:>5}: train {r.train_loss:.4f}  [bold]validation {r.val_loss:.4f} nats/char, "
                f"perplexity {r.perplexity:.2f}[/]  ({r.ms_per_step:.0f} ms/step)"
            )

    columns = (
        TextColumn("[bold]training"),
        BarColumn(),
        MofNCompleteColumn(),
        metrics_column(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
        task = progress.add_task(
            "train",
            total=config.steps,
            completed=min(step, config.steps),
            metrics=metrics(note=first_step_note(config.backend)),
        )
        since, seconds = step, 0.0
        while step < config.steps:
            t0 = time.perf_counter()
            if config.tbptt:  # the next chunk of every stream, from the carried state
                x, y = stream_chunk(corpus.train, config.batch_size, config.seq_len, step)
                if step % chunks == 0:
                    carried = None  # a new pass over the streams starts from zeros
                loss, carried = train_chunk(model, optimizer, x, y, carried, config.clip)
            else:  # independent windows at random offsets, each from a zero state
                x, y = random_batch(corpus.train, config.batch_size, config.seq_len, rng)
                loss = train_step(model, optimizer, x, y, config.clip)
            seconds += time.perf_counter() - t0
            step += 1
            result.train_losses.append(loss)
            recent = result.train_losses[max(since, step - 50) :]
            shown = metrics(float(np.mean(recent)), ms=1000 * seconds / (step - since))
            progress.update(task, completed=step, metrics=shown)
            if (
                step % config.eval_every == 0 or step == config.steps
            ):  # the elapsed time runs on while it evaluates
                progress.update(task, metrics=f"{shown}  evaluating…")
                run_eval(step, since, seconds)
                progress.update(task, metrics=shown)
                since, seconds = step, 0.0
    if not result.evals or result.evals[-1].step != step:  # e.g. resumed at the end
        run_eval(step, since, seconds)

    result.sample = sample(
        model, corpus.vocab, config.prompt, config.sample_length, config.temperature, config.seed
    )
    final = result.final
    if not quiet and final is not None:
        console.print(
            f"[bold]validation perplexity {final.perplexity:.2f}[/] ({final.val_loss:.4f} nats/char, "
            f"{final.val_loss / np.log(2):.3f} bits/char) after {final.step} steps; target ≤ 5.0 for the "
            "default configuration (PyTorch: 4.85)"
        )
        console.rule(f"sample (temperature {config.temperature}, seed {config.seed})")
        console.print(config.prompt + result.sample, markup=False, highlight=False)
        console.rule()
    if config.out:
        out = Path(config.out)
        title = f"character {result.model.cell.upper()} language model"
        write_loss_curve(out, result.train_losses, result.evals, title, console)
        (out / "sample.txt").write_text(config.prompt + result.sample, encoding="utf-8")
    return result


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = Config()
    parser.add_argument("--steps", type=int, default=d.steps, help="training steps (batches)")
    parser.add_argument("--cell", choices=("rnn", "lstm", "gru"), default=d.cell)
    parser.add_argument("--embedding", type=int, default=d.embedding, help="character embedding size")
    parser.add_argument("--hidden", type=int, default=d.hidden, help="recurrent state size")
    parser.add_argument("--layers", type=int, default=d.layers, help="stacked recurrent layers")
    parser.add_argument("--dropout", type=float, default=d.dropout)
    parser.add_argument("--seq-len", type=int, default=d.seq_len, help="characters per training window")
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
    parser.add_argument(
        "--tbptt",
        action="store_true",
        help="truncated BPTT: consecutive chunks of parallel streams, the state carried (detached)",
    )
    parser.add_argument("--text", default=None, metavar="FILE", help="train on this text file instead")
    parser.add_argument(
        "--checkpoint",
        default=None,
        metavar="PATH",
        help="save at every evaluation; resume from PATH if it exists",
    )
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
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    config = parse_args(argv)
    try:
        return train(config)
    except NotImplementedError as error:
        if config.backend != "cuda":
            raise  # e.g. a task still to do: the traceback shows where
        raise SystemExit(f"char_lm: {error}")  # a release without these CUDA kernels


if __name__ == "__main__":
    main()
