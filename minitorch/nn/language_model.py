"""Stage A5, task 5.5: a character-level recurrent language model.

A language model gives the probability of a text one character at a time,

    p(c_1 … c_N) = Π_t p(c_{t+1} | c_1 … c_t),

and a recurrent network carries the prefix c_1 … c_t in its state h_t:

    ids x [B, T] ──embedding──▶ [B, T, E] ──RNN / LSTM / GRU──▶ h [B, T, H] ──linear──▶ logits [B, T, V]

    p(c_{t+1} = v | c_1 … c_t) = softmax(logits[b, t, :])_v

Training minimises the mean negative log-likelihood (cross-entropy) of the next character
over all B·T positions of a batch, in nats per character (÷ ln 2 for bits per character):

    NLL = −(1 / BT) Σ_{b,t} ln p(y[b, t] | x[b, :t+1])          (y = x shifted by one)

Perplexity = exp(mean NLL): the model is, on average, as uncertain about the next character
as a uniform choice among that many characters — its *effective branching factor*. A model
that knows nothing (uniform over the V = 65 characters of Tiny Shakespeare) has perplexity 65
(NLL ln 65 ≈ 4.17 nats); a perfect one has 1. A small LSTM reaches about 4.5–5 on Tiny
Shakespeare (NLL ≈ 1.5–1.6 nats/char).

Backpropagation through time (BPTT) differentiates the loss of a window through all T
steps of the unrolled network, back to its initial state. Text is one long stream, and
differentiating back to its beginning would cost memory and time proportional to its
length, so training cuts it into windows of T characters. Two ways to do that:

* independent windows (`train_step`, the example's default): each batch is B windows at
  random offsets, each starting from a zero state; the gradient spans the whole window;
* *truncated* BPTT: consecutive chunks of the stream; the final state of one chunk is the
  initial state of the next, but *detached* (`detach_state`) — its values flow forward, no
  gradient flows back across the boundary (`train_chunk`, the example's `--tbptt`). The
  forward pass then sees context beyond T characters while each backward pass still stops
  after T steps.

Gradient clipping (`clip_grad_norm_`) rescales the gradient when its norm exceeds
`max_norm`: products of T Jacobians can explode, and one huge step would undo training.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np

from ..constructors import tensor
from ..function import no_grad
from ..module import Module
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .clip_grad import clip_grad_norm_
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .losses import cross_entropy
from .recurrent import GRU, LSTM, RNN

__all__ = [
    "CharLanguageModel",
    "sequence_loss",
    "perplexity",
    "train_chunk",
    "train_step",
    "evaluate",
    "sample",
    "detach_state",
]

#: A recurrent state: h_n [num_layers, B, H] (RNN, GRU) or (h_n, c_n) (LSTM).
State = Union[Tensor, tuple[Tensor, Tensor]]

CELLS = {"rnn": RNN, "lstm": LSTM, "gru": GRU}


class CharLanguageModel(Module):
    """Embedding → recurrent layer(s) → linear decoder, predicting the next character.

    Args:
        vocab_size: V, the number of characters.
        embedding_dim: E, the size of a character vector.
        hidden_size: H, the size of the recurrent state.
        cell: "rnn" (tanh), "lstm" or "gru".
        num_layers: stacked recurrent layers.
        dropout: probability of dropout between stacked layers (passed to the recurrent layer)
            and on the top layer's output before the decoder (Zaremba et al., 2014: dropout on
            the non-recurrent connections only).

    Parameters (the names of a PyTorch model with `nn.Embedding` `embedding`, `nn.LSTM`
    `rnn` and `nn.Linear` `fc`): `embedding.weight` [V, E], `rnn.weight_ih_l0` …,
    `fc.weight` [V, H], `fc.bias` [V].

    forward(x [B, T] int64, state=None) → (logits [B, T, V], state): `state` is the
    recurrent layer's (h_n [num_layers, B, H], or (h_n, c_n) for an LSTM), zeros when None.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 64,
        hidden_size: int = 256,
        cell: str = "lstm",
        num_layers: int = 1,
        dropout: float = 0.0,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"CharLanguageModel: cell must be one of {sorted(CELLS)}, got {cell!r}")
        if vocab_size <= 0 or embedding_dim <= 0 or hidden_size <= 0 or num_layers <= 0:
            raise ValueError(
                f"CharLanguageModel: sizes must be positive, got vocab_size={vocab_size}, "
                f"embedding_dim={embedding_dim}, hidden_size={hidden_size}, num_layers={num_layers}"
            )
        self.vocab_size, self.cell = vocab_size, cell
        self.embedding = Embedding(vocab_size, embedding_dim, dtype=dtype, backend=backend)
        self.rnn = CELLS[cell](
            embedding_dim,
            hidden_size,
            num_layers=num_layers,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
            dtype=dtype,
            backend=backend,
        )
        self.dropout = Dropout(dropout)
        self.fc = Linear(hidden_size, vocab_size, dtype=dtype, backend=backend)

    @property
    def backend(self) -> TensorBackend:
        """The backend the parameters live on (where inputs must be built)."""
        return self.embedding.weight.value.backend

    def forward(self, x: Tensor, state: Optional[State] = None) -> tuple[Tensor, State]:
        """x [B, T] int64 ids → (logits [B, T, V], the final state)."""
        if x.dims != 2:
            raise ShapeError(f"CharLanguageModel: x must be 2-D [B, T] character ids, got shape {x.shape}")
        h, state = self.rnn(self.embedding(x), state)  # [B, T, H]
        return self.fc(self.dropout(h)), state

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, cell={self.cell!r}"


def detach_state(state: Optional[State]) -> Optional[State]:
    """The state's values cut from the graph (truncated BPTT: no gradient crosses a chunk
    boundary). Works for a tensor h, an LSTM's (h, c) and None."""
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)  # type: ignore[return-value]
    return state.detach()


def _ids(model: Any, ids: Any, name: str) -> Tensor:
    """Character ids [B, T] as an int64 tensor on `model.backend` (arrays are converted;
    `nn.gpt` uses it too)."""
    if isinstance(ids, Tensor):
        if ids.dtype != np.int64:
            raise TypeError(f"{name}: ids must be an int64 tensor (minitorch.int64), got dtype {ids.dtype}")
        return ids
    array = np.asarray(ids)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name}: ids must be integers, got dtype {array.dtype}")
    return tensor(array.astype(np.int64), dtype=np.int64, backend=model.backend)


def _stream(data: Any, name: str) -> np.ndarray:
    """A split of a corpus as a 1-D int64 array of character ids."""
    array = np.asarray(data.numpy() if isinstance(data, Tensor) else data)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise ValueError(
            f"{name}: data must be a 1-D array of character ids, got shape {array.shape} ({array.dtype})"
        )
    return array.astype(np.int64, copy=False)


def sequence_loss(logits: Tensor, targets: Any) -> Tensor:
    """Mean cross-entropy of the next character over all B·T positions (nats per character).

        NLL = −(1 / BT) Σ_{b,t} log_softmax(logits[b, t, :])[targets[b, t]]

    logits [B, T, V] (float), targets [B, T] (int64 tensor or integer array) → a 0-d tensor.
    """
    if logits.dims != 3:
        raise ShapeError(f"sequence_loss: logits must be 3-D [B, T, V], got shape {logits.shape}")
    target_shape = tuple(targets.shape) if isinstance(targets, Tensor) else np.shape(targets)
    if target_shape != logits.shape[:2]:
        raise ShapeError(
            f"sequence_loss: targets must have shape {logits.shape[:2]} (the [B, T] of logits {logits.shape}), "
            f"got {target_shape}"
        )
    # BEGIN SOLUTION 5.5
    b, t, v = logits.shape
    flat_targets = (
        targets.contiguous().view(b * t)
        if isinstance(targets, Tensor)
        else np.asarray(targets).reshape(b * t)
    )
    return cross_entropy(logits.contiguous().view(b * t, v), flat_targets)
    # END SOLUTION 5.5


def perplexity(mean_nll: float) -> float:
    """Perplexity = exp(mean NLL in nats): the effective number of equally likely choices
    for the next character (65 for a uniform guess over 65 characters, 1 for certainty).
    Returns inf when the exponential overflows."""
    # BEGIN SOLUTION 5.5
    try:
        return math.exp(float(mean_nll))
    except OverflowError:
        return math.inf
    # END SOLUTION 5.5


def train_chunk(
    model: CharLanguageModel,
    optimizer: Any,
    x: Any,
    y: Any,
    state: Optional[State] = None,
    max_norm: Optional[float] = 1.0,
) -> tuple[float, State]:
    """One optimisation step on a batch of windows x, y [B, T] (y = x shifted by one),
    starting from `state` — the final state of the previous chunk of the same streams
    (truncated BPTT) — or from zeros when None.

    The state's values enter the forward pass, but not its graph: run the model from
    `detach_state(state)`, so the backward pass stops at this chunk's first step. Then:
    zero the gradients, take `sequence_loss`, backpropagate (through the T steps of the
    chunk), clip the global gradient norm to `max_norm` (`clip_grad_norm_`; None skips
    clipping) and let the optimizer step. Puts the model in training mode.
    Returns (the batch's loss as a float, mean NLL in nats/char; the chunk's final state).
    """
    x, y = _ids(model, x, "train_chunk"), _ids(model, y, "train_chunk")
    model.train()
    # BEGIN SOLUTION 5.5
    optimizer.zero_grad()
    logits, final = model(x, detach_state(state))
    loss = sequence_loss(logits, y)
    loss.backward()
    if max_norm is not None:
        clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), final
    # END SOLUTION 5.5


def train_step(
    model: CharLanguageModel, optimizer: Any, x: Any, y: Any, max_norm: Optional[float] = 1.0
) -> float:
    """`train_chunk` from a zero state (independent windows): returns the loss as a float."""
    loss, _ = train_chunk(model, optimizer, x, y, None, max_norm)
    return loss


def evaluate(model: CharLanguageModel, data: Any, seq_len: int = 64, batch_size: int = 32) -> float:
    """Mean NLL (nats/char) of predicting every character of `data` from the ones before it.

    `data` is a whole split as a 1-D array of N ids; its N − 1 targets data[1:] are all
    scored, each exactly once. The stream is cut into consecutive, non-overlapping windows
    of `seq_len` inputs (x = data[s : s + T], y = data[s + 1 : s + T + 1], s = 0, T, 2T, …;
    the last window may be shorter), run `batch_size` windows at a time under `no_grad` in
    evaluation mode (dropout off; the mode is restored afterwards). Each window starts from
    a zero state — nothing is carried between windows, so the first characters of a window
    are predicted with little context (exactly how the model was trained on random
    windows). Returns total NLL / (N − 1).
    """
    stream = _stream(data, "evaluate")
    if len(stream) < 2:
        raise ValueError(f"evaluate: need at least 2 characters to score one prediction, got {len(stream)}")
    if seq_len <= 0 or batch_size <= 0:
        raise ValueError(f"evaluate: seq_len and batch_size must be positive, got {seq_len}, {batch_size}")
    was_training = model.training
    model.eval()
    try:
        # BEGIN SOLUTION 5.5
        n = len(stream) - 1  # positions scored
        full = n // seq_len  # windows of exactly seq_len
        total = 0.0
        with no_grad():
            for first in range(0, full, batch_size):
                starts = np.arange(first, min(first + batch_size, full)) * seq_len
                chunk = stream[starts[:, None] + np.arange(seq_len + 1)]  # [b, T + 1]: inputs and targets
                logits, _ = model(_ids(model, chunk[:, :-1], "evaluate"))
                total += sequence_loss(logits, chunk[:, 1:]).item() * chunk[:, 1:].size
            rest = n - full * seq_len
            if rest:
                chunk = stream[None, full * seq_len :]  # [1, rest + 1]
                logits, _ = model(_ids(model, chunk[:, :-1], "evaluate"))
                total += sequence_loss(logits, chunk[:, 1:]).item() * rest
        return total / n
        # END SOLUTION 5.5
    finally:
        model.train(was_training)


def sample(
    model: CharLanguageModel,
    vocab: Any,
    prompt: str,
    length: int,
    temperature: float = 1.0,
    seed: int = 0,
) -> str:
    """Generate `length` characters after `prompt`, one at a time (autoregressively).

    Feed the prompt (its ids from `vocab.encode`) through the model; then repeatedly draw the
    next character v with probability softmax(logits / temperature)_v from the last
    position's logits and feed it back with the carried state. Temperature < 1 sharpens
    the distribution (safer, more repetitive text), > 1 flattens it; 0 takes the argmax
    (greedy). Draws come from `numpy.random.default_rng(seed)`: the same seed gives the
    same text. Runs in evaluation mode under `no_grad` (the mode is restored).

    `vocab` is anything with `encode(str) -> ids` and `decode(ids) -> str` (a `CharVocab`).
    Returns the generated text only (without the prompt).
    """
    if not prompt:
        raise ValueError("sample: the prompt must hold at least one character (the model needs an input)")
    if length < 0:
        raise ValueError(f"sample: length must be ≥ 0, got {length}")
    if temperature < 0:
        raise ValueError(f"sample: temperature must be ≥ 0, got {temperature}")
    rng = np.random.default_rng(seed)
    was_training = model.training
    model.eval()
    try:
        # BEGIN SOLUTION 5.5
        ids = vocab.encode(prompt)
        out: list[int] = []
        with no_grad():
            logits, state = model(_ids(model, np.asarray(ids)[None, :], "sample"))
            for _ in range(length):
                last = logits.numpy()[0, -1].astype(np.float64)  # [V]
                if temperature == 0:
                    nxt = int(np.argmax(last))
                else:
                    z = last / temperature
                    p = np.exp(z - z.max())
                    nxt = int(rng.choice(len(p), p=p / p.sum()))
                out.append(nxt)
                if len(out) < length:  # feed it back: the next step's input
                    logits, state = model(_ids(model, np.array([[nxt]]), "sample"), state)
        return vocab.decode(out)
        # END SOLUTION 5.5
    finally:
        model.train(was_training)
