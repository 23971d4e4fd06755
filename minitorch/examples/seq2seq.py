r"""Translate dates to ISO format with a GRU encoder–decoder and Bahdanau attention.

    python -m minitorch.examples.seq2seq                                # the default run
    python -m minitorch.examples.seq2seq --heatmap-png attention.png    # and draw the attention
    python -m minitorch.examples.seq2seq --steps 300 --eval-every 100   # a quick look

The task (`minitorch.datasets.translation`): "march 3, 1998", "3/3/98", "1998 mar 03", …
→ "1998-03-03", character by character; the test dates never occur in training.

The model (Bahdanau, Cho & Bengio, 2015, "Neural machine translation by jointly learning
to align and translate"), with B the batch, S the source length, T the target length:

    encoder   x [B, S] ──embedding──▶ [B, S, E] ──GRU →, GRU ←──▶ k_j = [h→_j ; h←_j]   keys [B, S, 2H]
    bridge    s_0 = tanh(W_b [h→_{len} ; h←_1] + b_b)                                      [B, H]
    decoder   at step t, with y_{t−1} the previous character (<sos> at t = 1):
              c_t, α_t = AdditiveAttention(s_{t−1}, keys)       context [B, 2H], weights [B, S]
              s_t      = GRUCell([emb(y_{t−1}) ; c_t], s_{t−1})                            [B, H]
              logits_t = W_o [s_t ; c_t ; emb(y_{t−1})] + b_o                              [B, V]

The attention scores every source position j against the decoder's state,
e_tj = vᵀ tanh(W s_{t−1} + U k_j), α_t = softmax over the unpadded j, c_t = Σ_j α_tj k_j.
U k_j does not depend on t: the decoder computes it once per batch (`project_keys`) and
reuses it at every step. α_t [B, S] says where the model looks to write character t; drawn
for all t it is the *alignment* of output and input (`--heatmap-png`, which needs matplotlib:
the `plot` extra).

The backward GRU reads each source from its last real character to its first. Sources of
a batch have different lengths, so the reversal is done per row (padding stays at the end):
the backward GRU never reads padding before a real character, as PyTorch's
`pack_padded_sequence` would arrange. Its output is reversed back, so that k_j describes
position j in both directions.

Training: teacher forcing — the decoder's input at step t is the true y_{t−1}, and the loss
is the mean cross-entropy of y_1 … y_T <eos> (padding ignored); Adam, the gradient norm
clipped. Evaluation: greedy decoding — the decoder's input at step t is its own most likely
character of step t − 1, until it writes <eos> (or `max_len` characters). The score is
exact match: the fraction of sources whose whole output string equals the target.
"""

from __future__ import annotations

import argparse
import re
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

import minitorch
from minitorch.datasets.translation import (
    Seq2SeqBatch,
    Seq2SeqVocab,
    TranslationData,
    TranslationSplit,
    date_translation,
    encode_batch,
    seq2seq_batches,
)
from minitorch.examples.backend_options import add_backend_options, chosen_backend
from minitorch.examples.plots import Heatmap, heatmaps
from minitorch.examples.progress import first_step_note, metrics, metrics_column
from minitorch.function import no_grad
from minitorch.joining import cat, stack
from minitorch.module import Module
from minitorch.nn import GRU, AdditiveAttention, Embedding, GRUCell, Linear
from minitorch.nn.clip_grad import clip_grad_norm_
from minitorch.nn.losses import cross_entropy
from minitorch.optim import Adam
from minitorch.tensor import Tensor
from minitorch.tensor_ops import TensorBackend
from minitorch.allocator import tune_malloc
from minitorch.threads import share_the_cpu


def _ids(array: np.ndarray, backend: TensorBackend) -> Tensor:
    return minitorch.tensor(np.ascontiguousarray(array, dtype=np.int64), dtype=np.int64, backend=backend)


def reverse_padded(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The permutation [B, S] that reverses each row's first lengths[b] positions and leaves
    its padding in place: rev[b, j] = lengths[b] − 1 − j for j < lengths[b], else j. It is
    its own inverse (reversing twice restores the order)."""
    b, s = ids.shape
    j = np.arange(s)[None, :]
    n = np.asarray(lengths)[:, None]
    return np.where(j < n, n - 1 - j, j)


class Encoder(Module):
    """Character embeddings and a GRU in each direction over the source.

    forward(src [B, S] int64 array, lengths [B]) → (keys [B, S, D·H], summary [B, D·H]) with
    D = 2 if bidirectional else 1: keys[:, j] = [h→_j ; h←_j], summary = [h→ at the last
    real character ; h← at the first] (the states that have read the whole source).
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int,
        hidden_size: int,
        bidirectional: bool = True,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:  # noqa: ANN001
        super().__init__()
        self.bidirectional = bidirectional
        self.embedding = Embedding(vocab_size, embedding_dim, padding_idx=0, dtype=dtype, backend=backend)
        self.forward_rnn = GRU(embedding_dim, hidden_size, batch_first=True, dtype=dtype, backend=backend)
        self.backward_rnn = (
            GRU(embedding_dim, hidden_size, batch_first=True, dtype=dtype, backend=backend)
            if bidirectional
            else None
        )

    @property
    def output_size(self) -> int:
        return self.forward_rnn.hidden_size * (2 if self.bidirectional else 1)

    def forward(self, src: np.ndarray, lengths: np.ndarray) -> tuple[Tensor, Tensor]:
        backend = self.embedding.weight.value.backend
        rows = np.arange(src.shape[0])
        out_f, _ = self.forward_rnn(self.embedding(_ids(src, backend)))  # [B, S, H]
        last = out_f[_ids(rows, backend), _ids(lengths - 1, backend)]  # h→ after the last real character
        if self.backward_rnn is None:
            return out_f, last
        rev = reverse_padded(src, lengths)
        src_rev = src[rows[:, None], rev]
        out_b_rev, _ = self.backward_rnn(self.embedding(_ids(src_rev, backend)))
        out_b = out_b_rev[
            _ids(np.broadcast_to(rows[:, None], rev.shape), backend), _ids(rev, backend)
        ]  # back in order
        return cat([out_f, out_b], dim=2), cat([last, out_b[:, 0]], dim=1)


class AttentionDecoder(Module):
    """A GRU cell that attends to the encoder's keys before every step (see the module docstring)."""

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int,
        hidden_size: int,
        key_size: int,
        attention_size: int,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:  # noqa: ANN001
        super().__init__()
        self.embedding = Embedding(vocab_size, embedding_dim, padding_idx=0, dtype=dtype, backend=backend)
        self.attention = AdditiveAttention(
            hidden_size, key_size, attention_size, dtype=dtype, backend=backend
        )
        self.cell = GRUCell(embedding_dim + key_size, hidden_size, dtype=dtype, backend=backend)
        self.out = Linear(hidden_size + key_size + embedding_dim, vocab_size, dtype=dtype, backend=backend)

    def step(
        self, embedded: Tensor, state: Tensor, keys: Tensor, projected_keys: Tensor, padding: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One step: emb(y_{t−1}) [B, E], s_{t−1} [B, H] → (s_t [B, H], c_t [B, K], α_t [B, S])."""
        context, weights = self.attention(
            state, keys, key_padding_mask=padding, projected_keys=projected_keys
        )
        state = self.cell(cat([embedded, context], dim=1), state)
        return state, context, weights


class Seq2Seq(Module):
    """The encoder, the bridge s_0 = tanh(W_b summary + b_b) and the attention decoder.

    forward(batch) → logits [B, T + 1, V_tgt] under teacher forcing;
    `greedy(src, lengths, max_len)` → (ids [B, L], attention weights [B, L, S]).
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embedding_dim: int = 32,
        hidden_size: int = 64,
        attention_size: int = 64,
        bidirectional: bool = True,
        dtype=None,  # noqa: ANN001
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        self.encoder = Encoder(src_vocab_size, embedding_dim, hidden_size, bidirectional, dtype, backend)
        key_size = self.encoder.output_size
        self.bridge = Linear(key_size, hidden_size, dtype=dtype, backend=backend)
        self.decoder = AttentionDecoder(
            tgt_vocab_size, embedding_dim, hidden_size, key_size, attention_size, dtype, backend
        )

    @property
    def backend(self) -> TensorBackend:
        return self.bridge.weight.value.backend

    def encode(self, src: np.ndarray, lengths: np.ndarray) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(keys [B, S, K], their projection U k [B, S, A], the padding mask [B, S], s_0 [B, H])."""
        keys, summary = self.encoder(src, lengths)
        padding = minitorch.tensor(np.arange(src.shape[1])[None, :] >= lengths[:, None], backend=self.backend)
        return keys, self.decoder.attention.project_keys(keys), padding, self.bridge(summary).tanh()

    def forward(self, batch: Seq2SeqBatch) -> Tensor:
        keys, projected, padding, state = self.encode(batch.src, batch.src_lengths)
        embedded = self.decoder.embedding(_ids(batch.tgt_in, self.backend))  # [B, T + 1, E]: <sos> y_1 … y_T
        states, contexts = [], []
        for t in range(batch.tgt_in.shape[1]):
            state, context, _ = self.decoder.step(embedded[:, t], state, keys, projected, padding)
            states.append(state)
            contexts.append(context)
        features = cat(
            [stack(states, dim=1), stack(contexts, dim=1), embedded], dim=2
        )  # [B, T + 1, H + K + E]
        return self.decoder.out(features)

    def greedy(self, src: np.ndarray, lengths: np.ndarray, max_len: int) -> tuple[np.ndarray, np.ndarray]:
        """Greedy decoding: each step feeds back the most likely character of the previous one.
        Returns ids [B, L] (L ≤ max_len; a row continues with <pad> after its <eos>) and the
        attention weights [B, L, S] of every step."""
        with no_grad():
            keys, projected, padding, state = self.encode(src, lengths)
            batch = src.shape[0]
            prev = np.full(batch, Seq2SeqVocab.sos_index, dtype=np.int64)
            done = np.zeros(batch, dtype=bool)
            ids, weights = [], []
            for _ in range(max_len):
                embedded = self.decoder.embedding(_ids(prev, self.backend))
                state, context, alpha = self.decoder.step(embedded, state, keys, projected, padding)
                logits = self.decoder.out(cat([state, context, embedded], dim=1)).numpy()
                prev = np.where(done, Seq2SeqVocab.pad_index, logits.argmax(axis=1)).astype(np.int64)
                ids.append(prev)
                weights.append(alpha.numpy())
                done |= prev == Seq2SeqVocab.eos_index
                if done.all():
                    break
            return np.stack(ids, axis=1), np.stack(weights, axis=1)


def sequence_loss(logits: Tensor, targets: np.ndarray) -> Tensor:
    """Mean cross-entropy over the non-padding target positions: logits [B, T, V], targets [B, T]."""
    b, t, v = logits.shape
    return cross_entropy(
        logits.contiguous().view(b * t, v), np.asarray(targets).reshape(b * t), ignore_index=0
    )


def train_step(model: Seq2Seq, optimizer: Adam, batch: Seq2SeqBatch, clip: Optional[float] = 1.0) -> float:
    """One step of teacher-forced training; returns the batch's loss."""
    model.train()
    optimizer.zero_grad()
    loss = sequence_loss(model(batch), batch.tgt_out)
    loss.backward()
    if clip is not None:
        clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def translate(
    model: Seq2Seq,
    data: TranslationData,
    sources: Sequence[str],
    max_len: int = 16,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Greedy translations of `sources`, with their output ids [N, L] and attention weights [N, L, S]."""
    batch = encode_batch(list(sources), [""] * len(sources), data.src_vocab, data.tgt_vocab)
    model.eval()
    ids, weights = model.greedy(batch.src, batch.src_lengths, max_len)
    return [data.tgt_vocab.decode(row) for row in ids], ids, weights


def exact_match(
    model: Seq2Seq, data: TranslationData, split: TranslationSplit, batch_size: int = 500, max_len: int = 16
) -> float:
    """The fraction of `split` whose greedy translation equals the target exactly."""
    right = 0
    for start in range(0, len(split), batch_size):
        sources = split.sources[start : start + batch_size]
        outputs, _, _ = translate(model, data, sources, max_len)
        right += sum(o == t for o, t in zip(outputs, split.targets[start : start + batch_size]))
    return right / max(len(split), 1)


# ---------------------------------------------------------------------------------------
# Pictures and tables of the attention


def _label(token: str) -> str:
    return "_" if token == " " else token


def attention_table(source: str, output_tokens: Sequence[str], weights: np.ndarray) -> str:
    """The weights [L, S] as text: a row per output character, a column per source character,
    each weight in percent ("." below 5 %)."""
    lines = ["      " + "".join(f"{_label(c):>3}" for c in source)]
    for token, row in zip(output_tokens, weights):
        cells = "".join(f"{round(100 * w):>3}" if w >= 0.05 else "  ." for w in row[: len(source)])
        lines.append(f"{_label(token):>5} {cells}")
    return "\n".join(lines)


def _output_tokens(vocab: Seq2SeqVocab, ids: np.ndarray) -> list[str]:
    """The tokens of one greedy output, up to and including <eos>."""
    tokens = []
    for i in ids:
        tokens.append(vocab.tokens[int(i)])
        if int(i) == vocab.eos_index:
            break
    return tokens


def diverse_examples(sources: Sequence[str], k: int) -> list[str]:
    """Up to k of `sources`, preferring different layouts (digits → 0, letters → a: "3/3/98"
    and "12/25/05" share the layout "0/0/0"), in order; then the first ones left over."""

    def layout(s: str) -> str:
        return re.sub("[a-z]+", "a", re.sub("[0-9]+", "0", s))

    chosen, seen = [], set()
    for s in sources:
        if layout(s) not in seen and len(chosen) < k:
            chosen.append(s)
            seen.add(layout(s))
    chosen += [s for s in sources if s not in chosen][: k - len(chosen)]
    return chosen


def attention_pictures(
    model: Seq2Seq,
    data: TranslationData,
    sources: Sequence[str],
    max_len: int = 16,
) -> tuple[list[Heatmap], list[str]]:
    """The attention of `sources`: a heatmap of each (for `plots.heatmaps`) and a text table of each."""
    outputs, ids, weights = translate(model, data, sources, max_len)
    pictures, tables = [], []
    for k, source in enumerate(sources):
        tokens = _output_tokens(data.tgt_vocab, ids[k])
        w = weights[k, : len(tokens), : len(source)]
        pictures.append(
            Heatmap(w, row_labels=tokens, col_labels=list(source), title=f"{source} → {outputs[k]}")
        )
        tables.append(f"{source!r} → {outputs[k]!r}\n" + attention_table(source, tokens, w))
    return pictures, tables


# ---------------------------------------------------------------------------------------
# Training


@dataclass
class Config:
    steps: int = 1000
    batch_size: int = 64
    embedding: int = 32
    hidden: int = 64
    attention: int = 64
    bidirectional: bool = True
    lr: float = 3e-3
    clip: float = 1.0
    eval_every: int = 200
    eval_size: int = 500  # validation pairs scored at each evaluation (all of them at the end)
    n_train: int = 20000
    n_val: int = 1000
    n_test: int = 1000
    max_len: int = 16
    seed: int = 0
    dtype: str = "float32"
    backend: str = "fast"
    heatmap_png: Optional[str] = None
    heatmap_examples: int = 3


@dataclass
class TrainResult:
    model: Seq2Seq
    data: TranslationData
    train_losses: list[float] = field(default_factory=list)
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, validation exact match)
    val_accuracy: float = float("nan")
    test_accuracy: float = float("nan")
    seconds: float = 0.0
    tables: list[str] = field(default_factory=list)


def train(config: Config, console: Optional[Console] = None, quiet: bool = False) -> TrainResult:
    """Train as `config` says; score the validation set every `eval_every` steps and the test set at the end."""
    console = console or Console()
    start = time.perf_counter()
    minitorch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    backend = minitorch.backends.BACKENDS[config.backend]
    data = date_translation(config.n_train, config.n_val, config.n_test, seed=config.seed)
    model = Seq2Seq(
        len(data.src_vocab),
        len(data.tgt_vocab),
        config.embedding,
        config.hidden,
        config.attention,
        config.bidirectional,
        dtype=np.dtype(config.dtype),
        backend=backend,
    )
    optimizer = Adam(model.parameters(), lr=config.lr)
    result = TrainResult(model, data)
    if not quiet:
        n_params = sum(p.value.numel() for p in model.parameters())
        console.print(
            f"[bold]date translation[/]: {len(data.train):,} training / {len(data.val):,} validation / "
            f"{len(data.test):,} test pairs, vocabularies {len(data.src_vocab)} → {len(data.tgt_vocab)}; "
            f"embedding {config.embedding}, {'bidirectional ' if config.bidirectional else ''}GRU {config.hidden}, "
            f"attention {config.attention}, {n_params:,} parameters; batch {config.batch_size}, Adam lr {config.lr}, "
            f"clip {config.clip}, {config.dtype}, {config.backend} backend"
        )
    val_probe = TranslationSplit(data.val.sources[: config.eval_size], data.val.targets[: config.eval_size])

    def batches():
        while True:  # epochs, each in a fresh order
            yield from seq2seq_batches(
                data.train, data.src_vocab, data.tgt_vocab, config.batch_size, True, rng
            )

    columns = (
        TextColumn("[bold]training"),
        BarColumn(),
        MofNCompleteColumn(),
        metrics_column(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    stream = batches()
    with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
        task = progress.add_task(
            "train", total=config.steps, metrics=metrics(note=first_step_note(config.backend))
        )
        seconds = 0.0
        for step in range(1, config.steps + 1):
            batch = next(stream)
            t0 = time.perf_counter()
            result.train_losses.append(train_step(model, optimizer, batch, config.clip))
            seconds += time.perf_counter() - t0
            recent = result.train_losses[-50:]
            shown = metrics(float(np.mean(recent)), ms=1000 * seconds / step, loss_spec=".4f")
            progress.update(task, completed=step, metrics=shown)
            if step % config.eval_every == 0 and step < config.steps:
                progress.update(task, metrics=f"{shown}  evaluating…")
                accuracy = exact_match(model, data, val_probe, max_len=config.max_len)
                progress.update(task, metrics=shown)
                result.evals.append((step, accuracy))
                if not quiet:
                    progress.console.print(
                        f"step {step:>5}: train loss {np.mean(recent):.4f}  [bold]validation exact "
                        f"match {100 * accuracy:.1f} %[/] (first {len(val_probe)})  "
                        f"({1000 * seconds / step:.0f} ms/step)"
                    )
    result.val_accuracy = exact_match(model, data, data.val, max_len=config.max_len)
    result.evals.append((config.steps, result.val_accuracy))
    result.test_accuracy = exact_match(model, data, data.test, max_len=config.max_len)
    drawn = False
    if config.heatmap_png or not quiet:
        examples = diverse_examples(data.test.sources, config.heatmap_examples)
        pictures, result.tables = attention_pictures(model, data, examples, config.max_len)
        if config.heatmap_png:
            try:
                heatmaps(config.heatmap_png, pictures)
                drawn = True
            except (
                ModuleNotFoundError
            ) as error:  # matplotlib is optional: say so (even when quiet), and go on
                console.print(f"no heatmaps: {error}", markup=False, highlight=False)
    result.seconds = time.perf_counter() - start
    if not quiet:
        outputs, _, _ = translate(model, data, data.test.sources[:8], config.max_len)
        for source, output, target in zip(data.test.sources[:8], outputs, data.test.targets[:8]):
            console.print(
                f"  {source:>20} → {output:<12} {'✓' if output == target else '✗ ' + target}",
                markup=False,
                highlight=False,
            )
        console.rule("attention (percent; rows: output characters, columns: input characters)")
        for table in result.tables:
            console.print(table, markup=False, highlight=False)
        console.rule()
        if drawn:
            console.print(f"wrote the attention heatmaps to {config.heatmap_png}")
        console.print(
            f"[bold]exact match: validation {100 * result.val_accuracy:.2f} %, test "
            f"{100 * result.test_accuracy:.2f} %[/] after {config.steps} steps, {result.seconds:.0f} s "
            f"(target ≥ 99 %)"
        )
    return result


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = Config()
    parser.add_argument("--steps", type=int, default=d.steps, help="training steps (batches)")
    parser.add_argument("--batch-size", type=int, default=d.batch_size)
    parser.add_argument("--embedding", type=int, default=d.embedding, help="character embedding size")
    parser.add_argument("--hidden", type=int, default=d.hidden, help="GRU state size (each direction)")
    parser.add_argument(
        "--attention", type=int, default=d.attention, help="hidden size of the attention's scorer"
    )
    parser.add_argument(
        "--unidirectional",
        dest="bidirectional",
        action="store_false",
        help="a forward GRU only in the encoder",
    )
    parser.add_argument("--lr", type=float, default=d.lr, help="Adam's learning rate")
    parser.add_argument("--clip", type=float, default=d.clip, help="clip the gradient norm to this")
    parser.add_argument(
        "--eval-every",
        type=int,
        default=d.eval_every,
        metavar="N",
        help="score the first --eval-size validation pairs every N steps",
    )
    parser.add_argument("--eval-size", type=int, default=d.eval_size)
    parser.add_argument("--n-train", type=int, default=d.n_train, help="training pairs")
    parser.add_argument("--n-val", type=int, default=d.n_val, help="validation pairs")
    parser.add_argument("--n-test", type=int, default=d.n_test, help="test pairs")
    parser.add_argument("--max-len", type=int, default=d.max_len, help="longest output of greedy decoding")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--dtype", choices=("float32", "float64"), default=d.dtype)
    add_backend_options(parser)
    parser.add_argument(
        "--heatmap-png",
        default=None,
        metavar="FILE",
        help="draw the attention of a few test examples into this PNG file",
    )
    parser.add_argument("--heatmap-examples", type=int, default=d.heatmap_examples, metavar="K")
    args = parser.parse_args(argv)
    if args.steps < 0 or args.eval_every <= 0 or args.batch_size <= 0 or args.max_len <= 0:
        parser.error("--steps must be ≥ 0; --eval-every, --batch-size and --max-len > 0")
    if args.heatmap_examples < 1 or args.heatmap_examples > args.n_test:
        parser.error("--heatmap-examples must be between 1 and --n-test")
    args.backend = chosen_backend(parser, args, default=d.backend)
    del args.device
    return Config(**vars(args))


def main(argv: Optional[Sequence[str]] = None) -> TrainResult:
    tune_malloc()  # keep freed step memory in the process (minitorch.allocator)
    share_the_cpu()  # on a busy machine: the free cores only, threads that sleep (minitorch.threads)
    return train(parse_args(argv))


if __name__ == "__main__":
    main()
