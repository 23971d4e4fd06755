r"""Stage A6, task 6.5: a tiny GPT — a decoder-only transformer language model
(Radford et al., 2018/2019) over characters.

Like the recurrent language model of A5 (`language_model.py`) it predicts each next
character, p(c_{t+1} | c_1 … c_t) = softmax(logits[b, t, :]), but instead of carrying the
prefix in a state it lets every position *attend* to all positions before it:

    idx [B, T] ──token embedding──▶ [B, T, d]
               + position vectors  [T, d]   (learned: an Embedding over 0 … T−1;
                                             or the fixed sinusoidal table)
               ──dropout──▶ x [B, T, d]
               ──num_layers × pre-norm block, causal self-attention──▶ [B, T, d]
                     x ← x + SelfAttention(LN₁(x), mask = causal)
                     x ← x + FFN(LN₂(x))            FFN: d → F → d with GELU
               ──final LayerNorm──▶ ──linear head──▶ logits [B, T, V]

The causal mask (−∞ above the diagonal, `generate_square_subsequent_mask(T)`) makes the
logits at position t a function of idx[:, : t + 1] only: one forward pass scores all T
next-character predictions of a window at once (training is parallel over time, unlike an
RNN), and none of them can peek at the character it predicts. Generation is still one
character at a time: append the sampled character, run the model on the last
`context_length` characters, sample from the last position's logits.

Training minimises the same mean cross-entropy of the next character as the A5 model
(`sequence_loss`; perplexity = exp(loss)); `train_step`, `evaluate` and `sample` below do
what their A5 namesakes do, with the window length bounded by `context_length` (a GPT sees
no character further back than that, where an RNN's state could in principle carry more).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..constructors import arange, tensor
from ..containers import ModuleList
from ..function import no_grad
from ..module import Module
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from . import language_model
from .dropout import Dropout
from .embedding import Embedding
from .language_model import _ids, sequence_loss  # _ids: token ids as an int64 tensor on model.backend
from .layer_norm import LayerNorm
from .linear import Linear
from .positional import sinusoidal_positional_encoding
from .transformer import TransformerEncoderLayer, generate_square_subsequent_mask

__all__ = ["TinyGPT", "train_step", "evaluate", "sample", "draw", "extend_ids", "POSITIONS"]

#: The kinds of position vectors TinyGPT can add to the token embeddings.
POSITIONS = ("learned", "sinusoidal")


class TinyGPT(Module):
    """A decoder-only transformer language model (see the module docstring).

    Args:
        vocab_size: V, the number of tokens (characters).
        context_length: the longest window the model reads (positions 0 … context_length − 1).
        d_model: d, the size of the embeddings and of the residual stream.
        nhead: attention heads per block (d_model must be divisible by nhead).
        num_layers: transformer blocks.
        dim_feedforward: F, the hidden size of each block's feed-forward network.
        dropout: p of the embedding dropout and of every dropout inside the blocks.
        positions: "learned" (an Embedding(context_length, d_model)) or "sinusoidal"
            (the fixed table of `F.sinusoidal_positional_encoding`, no parameters).

    Parameters (the names a PyTorch model with the same attributes has): `token_embedding.weight`
    [V, d], `position_embedding.weight` [context_length, d] (learned positions only),
    `blocks.<i>.…` (each a `TransformerEncoderLayer(d_model, nhead, dim_feedforward,
    dropout, activation="gelu", batch_first=True, norm_first=True)`), `norm.weight`,
    `norm.bias` [d], `head.weight` [V, d], `head.bias` [V]. All start as PyTorch's layers do.

    forward(idx [B, T] int64, 1 ≤ T ≤ context_length) → logits [B, T, V].
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        nhead: int,
        num_layers: int,
        dim_feedforward: int,
        dropout: float = 0.0,
        positions: str = "learned",
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        if positions not in POSITIONS:
            raise ValueError(f"TinyGPT: positions must be one of {POSITIONS}, got {positions!r}")
        sizes = {
            "vocab_size": vocab_size,
            "context_length": context_length,
            "d_model": d_model,
            "nhead": nhead,
            "num_layers": num_layers,
            "dim_feedforward": dim_feedforward,
        }
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0 for v in sizes.values()):
            raise ValueError(
                "TinyGPT: sizes must be positive integers, got "
                + ", ".join(f"{k}={v!r}" for k, v in sizes.items())
            )
        if d_model % nhead:
            raise ValueError(f"TinyGPT: d_model ({d_model}) must be divisible by nhead ({nhead})")
        self.vocab_size, self.context_length, self.d_model = (
            int(vocab_size),
            int(context_length),
            int(d_model),
        )
        self.positions = positions
        self.token_embedding = Embedding(vocab_size, d_model, dtype=dtype, backend=backend)
        if positions == "learned":
            self.position_embedding = Embedding(context_length, d_model, dtype=dtype, backend=backend)
        self.dropout = Dropout(dropout)
        self.blocks = ModuleList(
            [
                TransformerEncoderLayer(
                    d_model,
                    nhead,
                    dim_feedforward,
                    dropout,
                    activation="gelu",
                    batch_first=True,
                    norm_first=True,
                    dtype=dtype,
                    backend=backend,
                )
                for _ in range(num_layers)
            ]
        )
        self.norm = LayerNorm(d_model, dtype=dtype, backend=backend)
        self.head = Linear(d_model, vocab_size, dtype=dtype, backend=backend)
        self._sinusoids: Optional[Tensor] = None  # the sinusoidal table, built on first use

    @property
    def backend(self) -> TensorBackend:
        """The backend the parameters live on (where inputs must be built)."""
        return self.token_embedding.weight.value.backend

    def position_vectors(self, length: int) -> Tensor:
        """The vectors added at positions 0 … length − 1: [length, d_model] (constants for
        sinusoidal positions, rows of `position_embedding` for learned ones)."""
        weight = self.token_embedding.weight.value
        if self.positions == "learned":
            return self.position_embedding(arange(length, backend=weight.backend))
        if self._sinusoids is None:  # computed once, never in __init__
            self._sinusoids = sinusoidal_positional_encoding(
                self.context_length, self.d_model, dtype=weight.dtype, backend=weight.backend
            )
        return self._sinusoids[:length]

    def forward(self, idx: Tensor) -> Tensor:
        """idx [B, T] int64 token ids (T ≤ context_length) → next-token logits [B, T, V]."""
        if not isinstance(idx, Tensor) or idx.dtype != np.int64:
            raise TypeError(
                f"TinyGPT: idx must be an int64 tensor (minitorch.int64), got "
                f"{idx.dtype if isinstance(idx, Tensor) else type(idx).__name__}"
            )
        if idx.dims != 2 or not 1 <= idx.shape[1] <= self.context_length:
            raise ShapeError(
                f"TinyGPT: idx must be [B, T] token ids with 1 ≤ T ≤ context_length = "
                f"{self.context_length}, got shape {idx.shape}"
            )
        positions = self.position_vectors(idx.shape[1])  # [T, d]
        # BEGIN SOLUTION 6.5
        t = idx.shape[1]
        x = self.dropout(self.token_embedding(idx) + positions)  # [B, T, d]: tokens + positions
        mask = generate_square_subsequent_mask(t, dtype=x.dtype, backend=x.backend)  # [T, T]: −∞ at j > i
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))  # [B, T, V]
        # END SOLUTION 6.5

    def loss(self, idx: Tensor, targets: Any) -> Tensor:
        """Mean cross-entropy of the next token over all B·T positions (nats per token):
        `sequence_loss(self(idx), targets)` with targets [B, T] (idx shifted by one)."""
        return sequence_loss(self(idx), targets)

    def generate(
        self,
        idx: Any,
        max_new_tokens: int,
        temperature: float = 1.0,
        rng: Optional[np.random.Generator] = None,
    ) -> Tensor:
        """Extend each row of idx [B, T] by `max_new_tokens` tokens, one at a time: run the
        model on the last `context_length` tokens, draw the next token from
        softmax(logits[:, −1] / temperature) (temperature 0: the argmax), append it.
        Returns the int64 tensor [B, T + max_new_tokens] (the prompt included). Draws come
        from `rng` (default: `numpy.random.default_rng(0)`). Does not change the mode:
        call `.eval()` first to switch dropout off.
        """
        ids = _ids(self, idx, "TinyGPT.generate")
        if ids.dims != 2 or ids.shape[1] == 0:
            raise ShapeError(
                f"TinyGPT.generate: idx must be [B, T] token ids with T ≥ 1, got shape {ids.shape}"
            )
        if max_new_tokens < 0 or temperature < 0:
            raise ValueError(
                f"TinyGPT.generate: need max_new_tokens ≥ 0 and temperature ≥ 0, "
                f"got {max_new_tokens}, {temperature}"
            )
        rng = np.random.default_rng(0) if rng is None else rng
        with no_grad():
            out = extend_ids(self._last_logits, ids.numpy(), max_new_tokens, temperature, rng)
        return tensor(out, dtype=np.int64, backend=self.backend)

    def _last_logits(self, ids: np.ndarray) -> np.ndarray:
        """The last position's logits [B, V] for the ids [B, T] (cropped to the context)."""
        window = ids[:, -self.context_length :]
        return self(tensor(window, dtype=np.int64, backend=self.backend)).numpy()[:, -1]

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, context_length={self.context_length}, positions={self.positions!r}"


def draw(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """One token id from softmax(logits / temperature) over a row of logits [V] (the argmax
    at temperature 0), as `language_model.sample` draws."""
    last = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return int(np.argmax(last))
    z = last / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def extend_ids(
    last_logits: Callable[[np.ndarray], np.ndarray],
    ids: np.ndarray,
    n: int,
    temperature: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """ids [B, T] followed by n drawn tokens, [B, T + n]; `last_logits(ids)` gives the
    logits [B, V] of the next token (any framework: the example's PyTorch twin uses this too)."""
    out = np.asarray(ids, dtype=np.int64)
    for _ in range(n):
        logits = last_logits(out)
        nxt = np.array([[draw(row, temperature, rng)] for row in logits], dtype=np.int64)
        out = np.concatenate([out, nxt], axis=1)
    return out


class _Recurrent(Module):
    """A TinyGPT seen through the interface of the A5 language model, forward(x, state) →
    (logits, state), so that `language_model.train_chunk` and `evaluate` run it unchanged.
    A GPT has no state: it is always None."""

    def __init__(self, gpt: TinyGPT) -> None:
        super().__init__()
        self.gpt = gpt
        self.training = gpt.training

    @property
    def backend(self) -> TensorBackend:
        return self.gpt.backend

    def forward(self, x: Tensor, state: None = None) -> tuple[Tensor, None]:
        return self.gpt(x), None


def train_step(model: TinyGPT, optimizer: Any, x: Any, y: Any, max_norm: Optional[float] = 1.0) -> float:
    """One optimisation step on windows x, y [B, T] (y = x shifted by one, T ≤ context_length):
    zero the gradients, mean next-token cross-entropy, backward, clip the global gradient
    norm to `max_norm` (None: no clipping), optimizer step, as `language_model.train_step`.
    Puts the model in training mode; returns the batch's loss as a float."""
    return language_model.train_step(_Recurrent(model), optimizer, x, y, max_norm)


def evaluate(model: TinyGPT, data: Any, seq_len: Optional[int] = None, batch_size: int = 32) -> float:
    """Mean NLL (nats/token) of every token of `data` (a 1-D array of ids) given the ones
    before it in its window: the stream cut into consecutive windows of `seq_len`
    (default and at most `context_length`), as `language_model.evaluate` does. Runs in
    evaluation mode under no_grad; the mode is restored."""
    seq_len = model.context_length if seq_len is None else seq_len
    if not 0 < seq_len <= model.context_length:
        raise ValueError(
            f"evaluate: seq_len must be in 1 … context_length = {model.context_length}, got {seq_len}"
        )
    return language_model.evaluate(_Recurrent(model), data, seq_len, batch_size)


def sample(
    model: TinyGPT, vocab: Any, prompt: str, length: int, temperature: float = 1.0, seed: int = 0
) -> str:
    """Generate `length` characters after `prompt` (see `TinyGPT.generate`), as
    `language_model.sample` does for the A5 model: draws from `numpy.random.default_rng(seed)`,
    evaluation mode (restored afterwards); returns the generated text without the prompt.
    `vocab` has `encode(str) -> ids` and `decode(ids) -> str` (a `CharVocab`)."""
    if not prompt:
        raise ValueError("sample: the prompt must hold at least one character (the model needs an input)")
    if length < 0:
        raise ValueError(f"sample: length must be ≥ 0, got {length}")
    if temperature < 0:
        raise ValueError(f"sample: temperature must be ≥ 0, got {temperature}")
    was_training = model.training
    model.eval()
    try:
        ids = np.asarray(vocab.encode(prompt), dtype=np.int64)[None, :]
        out = model.generate(ids, length, temperature, np.random.default_rng(seed))
        return vocab.decode(out.numpy()[0, ids.shape[1] :])
    finally:
        model.train(was_training)
