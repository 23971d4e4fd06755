r"""Stage A6, task 6.5: the transformer block (Vaswani et al., 2017), as
`torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer`, their stacks
`TransformerEncoder` / `TransformerDecoder`, `Transformer`, and the causal mask.

A block keeps a *residual stream* x [B, S, d] (or [S, B, d] without `batch_first`, [S, d]
without a batch) and adds to it what each sub-layer computes, so that every block only
learns a correction and the gradient has a straight path down the stack:

    encoder layer, post-norm (the 2017 paper, `norm_first=False`):
        x ← LayerNorm₁(x + SelfAttention(x))
        x ← LayerNorm₂(x + FFN(x))

    encoder layer, pre-norm (GPT-2 and most models since, `norm_first=True`):
        x ← x + SelfAttention(LayerNorm₁(x))
        x ← x + FFN(LayerNorm₂(x))

    the position-wise feed-forward network, the same for every position:
        FFN(x) = W₂ act(W₁ x + b₁) + b₂        W₁ [F, d], W₂ [d, F]   (F = dim_feedforward)

A decoder layer has a third sub-layer between the two: *cross-attention*, whose queries come
from the decoder's stream and whose keys and values come from the encoder's output
("memory" [B, S, d]):

    post-norm:  x ← LN₁(x + SelfAttn(x));   x ← LN₂(x + CrossAttn(x, memory));   x ← LN₃(x + FFN(x))
    pre-norm:   x ← x + SelfAttn(LN₁(x));   x ← x + CrossAttn(LN₂(x), memory);   x ← x + FFN(LN₃(x))

Dropout (p = `dropout`) is applied to each sub-layer's output before it is added
(`dropout1`, `dropout2`, `dropout3`) and inside the FFN after the activation (`dropout`).

Post-norm normalises the stream itself after every addition; pre-norm leaves the stream
un-normalised and normalises only each sub-layer's input, so a deep stack trains without
a learning-rate warm-up (Xiong et al., 2020) — but then the stack's output needs a final
LayerNorm (`TransformerEncoder(…, norm=LayerNorm(d))`).

**Masks** are those of `MultiheadAttention` (PyTorch's convention, the opposite of
`scaled_dot_product_attention`'s): a bool `src_mask` / `tgt_mask` [S, S] is True where a
query may NOT attend; a float mask is added to the scores (−∞ forbids). A
`key_padding_mask` [B, S] is True at padding keys. The causal mask of a decoder or a GPT,

    generate_square_subsequent_mask(S)[i, j] = 0 if j ≤ i else −∞,

lets position i see positions 0 … i only, so the output at i cannot depend on the tokens
after i. `is_causal=True` says that the mask given is this one (a hint, as in PyTorch).

Parameter names and order are PyTorch's (`self_attn.in_proj_weight`, `linear1.weight`,
`norm1.weight`, … ; a stack's `layers.0.…`), so a PyTorch `state_dict` loads unchanged.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, Optional

import numpy as np

from ..constructors import tensor
from ..module import Module
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from ..containers import ModuleList
from .activation import GELU, Activation, ReLU, gelu, get_activation
from .dropout import Dropout
from .layer_norm import LayerNorm
from .linear import Linear, uniform
from .multihead_attention import MultiheadAttention
from .validation import check_float

__all__ = [
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerDecoder",
    "Transformer",
    "generate_square_subsequent_mask",
    "feed_forward",
]


def generate_square_subsequent_mask(
    sz: int,
    device: Any = None,
    dtype: Any = None,
    backend: Optional[TensorBackend] = None,
) -> Tensor:
    """The causal mask [sz, sz]: 0.0 where j ≤ i (may attend), −∞ where j > i (the future),
    as `torch.nn.Transformer.generate_square_subsequent_mask`. A float mask (float64 unless
    `dtype`), added to the attention scores. `device` is accepted for PyTorch's argument
    order and ignored: a minitorch tensor lives on its `backend`.
    """
    if isinstance(sz, bool) or not isinstance(sz, (int, np.integer)) or sz < 0:
        raise ValueError(f"generate_square_subsequent_mask: sz must be an integer ≥ 0, got {sz!r}")
    mask = np.triu(np.full((int(sz), int(sz)), -np.inf), k=1)  # −∞ above the diagonal, 0 on and below
    return tensor(mask, dtype=np.float64 if dtype is None else dtype, backend=backend)


def _detect_is_causal_mask(mask: Optional[Tensor], is_causal: Optional[bool], size: Optional[int]) -> bool:
    """PyTorch's rule: an explicit `is_causal` wins; when None, the mask is causal if it
    equals `generate_square_subsequent_mask(size)` (float) or its bool form (True above
    the diagonal)."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    sz = size if size is not None else mask.shape[-2]
    if tuple(mask.shape) != (sz, sz):
        return False
    causal = np.triu(np.ones((sz, sz), dtype=bool), k=1)
    values = mask.numpy()
    if values.dtype == bool:
        return bool(np.array_equal(values, causal))
    return bool(np.array_equal(values, np.where(causal, -np.inf, 0.0)))


def _check_stream(name: str, what: str, x: Tensor, d_model: int) -> None:
    """x must be a float tensor [S, d] (no batch) or [B, S, d] / [S, B, d] with d = d_model."""
    check_float(name, **{what: x})
    if x.dims not in (2, 3):
        raise ShapeError(f"{name}: {what} must be 2-D [S, d_model] or 3-D (batched), got shape {x.shape}")
    if x.shape[-1] != d_model:
        raise ShapeError(
            f"{name}: {what} must have d_model = {d_model} features in its last dimension, "
            f"got shape {x.shape}"
        )


def feed_forward(
    x: Tensor,
    linear1: Callable[[Tensor], Tensor],
    linear2: Callable[[Tensor], Tensor],
    activation: Callable[[Tensor], Tensor],
    dropout: Callable[[Tensor], Tensor],
) -> Tensor:
    """The position-wise feed-forward network, FFN(x) = linear2(dropout(act(linear1(x)))):

        x [..., d] ──linear1──▶ [..., F] ──act──▶ ──dropout──▶ ──linear2──▶ [..., d]

    Every position is transformed alone by the same two layers (the matrix products treat
    the leading dimensions as a batch). `dropout` is the layer's inner dropout (`self.dropout`).
    """
    # BEGIN SOLUTION 6.5
    return linear2(dropout(activation(linear1(x))))
    # END SOLUTION 6.5


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each with a residual connection and a
    LayerNorm, as `torch.nn.TransformerEncoderLayer` (see the module docstring).

    Args:
        d_model: d, the size of the residual stream.
        nhead: attention heads (d_model must be divisible by nhead).
        dim_feedforward: F, the hidden size of the feed-forward network.
        dropout: p of every dropout of the layer (and of the attention weights).
        activation: "relu", "gelu" or a callable (a function or a module).
        layer_norm_eps: ε of both LayerNorms.
        batch_first: inputs are [B, S, d] (True) or [S, B, d] (False, PyTorch's default).
        norm_first: pre-norm (True) or post-norm (False).
        bias: biases in the linear layers, the attention and the LayerNorms.

    Sub-modules (PyTorch's names): `self_attn`, `linear1`, `dropout`, `linear2`, `norm1`,
    `norm2`, `dropout1`, `dropout2`.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False) → src's shape.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype, backend=backend
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype, backend=backend)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype, backend=backend)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=backend)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=backend)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = get_activation(activation)
        self.activation_relu_or_gelu = (
            1
            if activation == "relu" or isinstance(activation, ReLU)
            else 2
            if activation in ("gelu", gelu) or isinstance(activation, GELU)
            else 0
        )

    def forward(
        self,
        src: Tensor,
        src_mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        is_causal: bool = False,
    ) -> Tensor:
        """One encoder block: src [B, S, d] (batch_first), [S, B, d] or [S, d] → the same shape.

        Masks as in `MultiheadAttention` (see the module docstring)."""
        _check_stream("TransformerEncoderLayer", "src", src, self.self_attn.embed_dim)
        # BEGIN SOLUTION 6.5
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x
        # END SOLUTION 6.5

    def _sa_block(
        self,
        x: Tensor,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        is_causal: bool = False,
    ) -> Tensor:
        """The self-attention sub-layer's output, dropped out: dropout1(SelfAttention(x, x, x))."""
        out, _ = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )
        return self.dropout1(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        """The feed-forward sub-layer's output, dropped out: dropout2(FFN(x))."""
        return self.dropout2(feed_forward(x, self.linear1, self.linear2, self.activation, self.dropout))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention to the encoder's output and a feed-forward network,
    each with a residual connection and a LayerNorm, as `torch.nn.TransformerDecoderLayer`.

    Arguments as `TransformerEncoderLayer`. Sub-modules (PyTorch's names): `self_attn`,
    `multihead_attn` (the cross-attention), `linear1`, `dropout`, `linear2`, `norm1`,
    `norm2`, `norm3`, `dropout1`, `dropout2`, `dropout3`.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False) → tgt's shape;
    tgt [B, T, d] and memory [B, S, d] (batch_first), or [T, B, d] and [S, B, d], or unbatched.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype, backend=backend
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype, backend=backend
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype, backend=backend)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype, backend=backend)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=backend)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=backend)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=backend)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = get_activation(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """One decoder block: tgt [B, T, d] attends to itself and to memory [B, S, d] → [B, T, d]
        (or the other layouts, see the class docstring)."""
        d_model = self.self_attn.embed_dim
        _check_stream("TransformerDecoderLayer", "tgt", tgt, d_model)
        _check_stream("TransformerDecoderLayer", "memory", memory, d_model)
        if tgt.dims != memory.dims:
            raise ShapeError(
                f"TransformerDecoderLayer: tgt and memory must both be batched or both unbatched, "
                f"got shapes {tgt.shape} and {memory.shape}"
            )
        # BEGIN SOLUTION 6.5
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x
        # END SOLUTION 6.5

    def _sa_block(
        self,
        x: Tensor,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        is_causal: bool = False,
    ) -> Tensor:
        """The self-attention sub-layer's output, dropped out: dropout1(SelfAttention(x, x, x))."""
        out, _ = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )
        return self.dropout1(out)

    def _mha_block(
        self,
        x: Tensor,
        mem: Tensor,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        is_causal: bool = False,
    ) -> Tensor:
        """The cross-attention sub-layer's output, dropped out: dropout2(Attention(x, mem, mem))."""
        out, _ = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        """The feed-forward sub-layer's output, dropped out: dropout3(FFN(x))."""
        return self.dropout3(feed_forward(x, self.linear1, self.linear2, self.activation, self.dropout))


def _get_clones(module: Module, n: int) -> ModuleList:
    """n independent deep copies of `module` (they start with equal parameters, as in PyTorch)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"num_layers must be an integer ≥ 1, got {n!r}")
    return ModuleList([copy.deepcopy(module) for _ in range(int(n))])


def _seq_len(x: Tensor, batch_first: bool) -> int:
    """The sequence length of a stream [S, d], [B, S, d] (batch_first) or [S, B, d]."""
    return x.shape[0] if x.dims == 2 else x.shape[1 if batch_first else 0]


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of `encoder_layer` (then `norm`, when given), as
    `torch.nn.TransformerEncoder`: parameters `layers.0.…`, `layers.1.…`, `norm.…`.

    The copies start equal (PyTorch's behaviour too: re-initialise them if that matters).
    `enable_nested_tensor` and `mask_check` are accepted for PyTorch's signature; they
    select PyTorch's inference fast paths, which this library does not have.

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None) → src's shape;
    is_causal=None detects a causal `mask` (see `generate_square_subsequent_mask`).
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Optional[Module] = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = int(num_layers)
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(
        self,
        src: Tensor,
        mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        is_causal: Optional[bool] = None,
    ) -> Tensor:
        first = self.layers[0]
        seq_len = _seq_len(src, first.self_attn.batch_first) if src.dims in (2, 3) else None
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(
                output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of `num_layers` copies of `decoder_layer` (then `norm`, when given), as
    `torch.nn.TransformerDecoder`: parameters `layers.0.…`, `norm.…`.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False) → tgt's shape.
    """

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Optional[Module] = None
    ) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        tgt_is_causal: Optional[bool] = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        first = self.layers[0]
        seq_len = _seq_len(tgt, first.self_attn.batch_first) if tgt.dims in (2, 3) else None
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder–decoder transformer of the 2017 paper, as `torch.nn.Transformer`: an
    encoder stack (`encoder`, with a final LayerNorm `encoder.norm`) reads src, a decoder
    stack (`decoder`, `decoder.norm`) reads tgt and attends to the encoder's output.

    Every parameter with more than one dimension starts Xavier-uniform,
    U(−a, a) with a = √(6 / (fan_in + fan_out)), as PyTorch's `_reset_parameters`.

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False) → tgt's shape.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        custom_encoder: Optional[Module] = None,
        custom_decoder: Optional[Module] = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "backend": backend}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(
                d_model,
                nhead,
                dim_feedforward,
                dropout,
                activation,
                layer_norm_eps,
                batch_first,
                norm_first,
                bias,
                **factory,
            )
            self.encoder = TransformerEncoder(
                layer, num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(
                d_model,
                nhead,
                dim_feedforward,
                dropout,
                activation,
                layer_norm_eps,
                batch_first,
                norm_first,
                bias,
                **factory,
            )
            self.decoder = TransformerDecoder(
                layer, num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            )
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Optional[Tensor] = None,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        src_is_causal: Optional[bool] = None,
        tgt_is_causal: Optional[bool] = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch = 0 if self.batch_first else 1
        if src.dims == 3 and tgt.dims == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError(
                f"the batch number of src and tgt must be equal (src {src.shape}, tgt {tgt.shape})"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"the feature number of src and tgt must be equal to d_model = {self.d_model} "
                f"(src {src.shape}, tgt {tgt.shape})"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(
        sz: int, device: Any = None, dtype: Any = None, backend: Optional[TensorBackend] = None
    ) -> Tensor:
        """The causal mask [sz, sz]: 0 on and below the diagonal, −∞ above (see the
        module-level `generate_square_subsequent_mask`)."""
        return generate_square_subsequent_mask(sz, device=device, dtype=dtype, backend=backend)

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every parameter of two or more dimensions (biases and LayerNorm
        parameters keep their values)."""
        for p in self.parameters():
            value = p.value
            if value.dims > 1:
                fan_out, fan_in = value.shape[0], value.shape[1]
                receptive = math.prod(value.shape[2:])
                bound = math.sqrt(6.0 / (fan_in * receptive + fan_out * receptive))
                p.update(uniform(tuple(value.shape), bound, value.dtype, value.backend))
