r"""Scaled dot-product attention as one fused operation — the reference's fast path for
`scaled_dot_product_attention_with_weights` (task 6.2).

The composed attention (task 6.2 on top of 6.1's `masked_softmax`) is a dozen tensor
operations — Q Kᵀ, × scale, + float mask or masked_fill, amax, masked_fill, subtract,
exp, sum, masked_fill, divide, (dropout), @ V — each a kernel, a temporary [..., L, S]
tensor and a graph node. Here the whole attention is ONE `Function`: two matrix products
(the backend's batched matmul) around one Numba kernel that does scale + masks + softmax
in a single sweep over each row of scores; the backward is four matrix products around
one kernel for the softmax's backward.

Shapes (leading dimensions "..." broadcast; B = their product, the rows are B·L):

    Q [..., L, E]   K [..., S, E]   V [..., S, Ev]
    s   = Q Kᵀ                                     [..., L, S]   (batched matmul)
    z   = s · scale + M_float       (−∞ where the bool mask / causality forbids)
    m   = max_{j allowed} z_j       (0 when no j is allowed)       one per row
    W   = e^{z − m} / Σ_j e^{z_j − m}  (a row with Σ = 0, i.e. nothing allowed, is all 0)
    Wd  = W ⊙ D                     D = keep / (1 − p), dropout's multiplier (D = 1 if p = 0)
    out = Wd V                                     [..., L, Ev]  (batched matmul)

Returned: (out, Wd), exactly what the composed function returns.

Backward, given ∂out [..., L, Ev] (and ∂Wd when the weights themselves are used):

    ∂V  = Wdᵀ ∂out                                 [..., S, Ev]
    ∂Wd = ∂out Vᵀ   (+ the gradient of the returned weights)   [..., L, S]
    ∂W  = ∂Wd ⊙ D
    ∂z  = W ⊙ (∂W − Σ_j ∂W_j W_j)   (softmax backward, one row at a time)
    ∂M_float = ∂z                   ∂Q = scale · ∂z K     ∂K = scale · ∂zᵀ Q

A masked position has W = 0, so ∂z = 0 there, and a fully masked row gets ∂z = 0: no NaN.

**Two outputs.** A `Function` returns one tensor. The attention's node (`AttentionFunction`)
returns `out`; the weights come back from a second, tiny node (`AttentionWeights`) that
computes nothing in its forward — it hands out the Wd the attention computed — and whose
backward runs the same softmax backward for ∂Wd, when (and only when) a loss uses the
weights. A caller that ignores the weights (`need_weights=False`) never reaches it.

Tricks, each worth a copy or a pass over [B, L, S]:

* The matrix products run on 3-D views [B, ·, ·] of Q, K, V (a copy only when the batch
  dimensions do not merge, e.g. heads split out of [B, L, H, d]), kept for the backward,
  so every transpose (Kᵀ, Vᵀ, Wdᵀ, ∂zᵀ) is a free strided view: the matmul takes any
  strides.
* The softmax overwrites the scores in place (a fresh matmul result nobody else holds).
* Masks are read in place, never expanded to [B, L, S]: each is passed as its 1-D storage
  plus, for each of the B matrices, where that matrix starts (a stride of 0 repeats a
  broadcast mask), and the strides of its last two dimensions.
* is_causal needs no mask at all: row i stops at key i (half the exponentials).
* float32 scores are scaled, masked and exponentiated in float32 (expf, twice as fast as
  exp); only the row sums accumulate in float64.

It replaces `scaled_dot_product_attention_with_weights` (`nn/attention.py`, through
`fast_paths`) for float32 / float64 on CPU backends, when V's batch dimensions add nothing
to those of Q Kᵀ (else the composed path runs). Dropout draws from the library's generator exactly as `F.dropout`
does, so both paths give the same numbers for the same seed. It is `reference_only` in
the A6 manifest: A6 releases and grader trees (and earlier ones) leave it out, so a
student's composed code is what runs and is graded there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numba import prange

from ..autodiff import Context
from ..constructors import rand
from ..fast_paths import replaces
from ..function import Function
from ..jit import serial_and_parallel
from ..nn.attention import sdpa_arguments
from ..tensor import Tensor

__all__ = ["supports", "scaled_dot_product_attention_with_weights"]

#: Below this many scores a kernel runs on the calling thread only (the serial compile of
#: the same Python function): starting the other threads costs more than the work.
PARALLEL_MIN = 1 << 14
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ## The kernels (each Python function is compiled twice: serial and parallel)


def _softmax_forward(
    scores: np.ndarray,
    scale: float,
    neg_inf: float,
    fmask: np.ndarray,
    f_off: np.ndarray,
    f_sl: int,
    f_ss: int,
    has_fmask: bool,
    bmask: np.ndarray,
    b_off: np.ndarray,
    b_sl: int,
    b_ss: int,
    has_bmask: bool,
    causal: bool,
    w: np.ndarray,
) -> None:
    """scores [B, L, S] → w [B, L, S] = masked softmax of scores · scale + float mask.

    A mask value for matrix b, query i, key j is mask[off[b] + i·sl + j·ss] (see the module
    docstring). `w` may be `scores` itself: each element is read before it is written.
    `scale` and `neg_inf` come in the scores' dtype, so that for float32 scores the
    arithmetic and the exponential stay float32 (expf is about twice as fast as exp).
    """
    nb, n_l, n_s = scores.shape
    for row in prange(nb * n_l):
        b = row // n_l
        i = row - b * n_l
        # causal: keys j > i are masked; skip them outright (half the work of a square mask)
        n_keys = min(i + 1, n_s) if causal else n_s
        for j in range(n_keys, n_s):
            w[b, i, j] = 0
        # pass 1: the masked, scaled scores z and their maximum m
        m = neg_inf
        for j in range(n_keys):
            z = scores[b, i, j] * scale
            if has_fmask:
                z += fmask[f_off[b] + i * f_sl + j * f_ss]
            if has_bmask and not bmask[b_off[b] + i * b_sl + j * b_ss]:
                z = neg_inf
            w[b, i, j] = z
            m = max(m, z)
        if m == neg_inf:  # nothing allowed: the row is 0 (never e^{−∞ − (−∞)} = NaN)
            for j in range(n_keys):
                w[b, i, j] = 0
            continue
        # pass 2: e^{z − m} and their sum (e^{−∞} = 0 at masked positions)
        total = 0.0  # a float64 accumulator, also for float32 scores
        for j in range(n_keys):
            e = math.exp(w[b, i, j] - m)
            w[b, i, j] = e
            total += e
        # pass 3: normalise; one division per row, then multiplications
        inv = 1.0 / total
        for j in range(n_keys):
            w[b, i, j] = w[b, i, j] * inv


def _softmax_backward(
    w: np.ndarray, dw: np.ndarray, mult: np.ndarray, has_mult: bool, factor: float, dz: np.ndarray
) -> None:
    """dz = factor · W ⊙ (∂W − Σ_j ∂W_j W_j) per row, with ∂W = dw ⊙ mult (dropout) or dw."""
    nb, n_l, n_s = w.shape
    for row in prange(nb * n_l):
        b = row // n_l
        i = row - b * n_l
        dot = 0.0
        for j in range(n_s):
            g = dw[b, i, j] * mult[b, i, j] if has_mult else dw[b, i, j]
            dot += g * w[b, i, j]
        for j in range(n_s):
            g = dw[b, i, j] * mult[b, i, j] if has_mult else dw[b, i, j]
            dz[b, i, j] = factor * w[b, i, j] * (g - dot)


_forward_serial, _forward_parallel = serial_and_parallel(_softmax_forward)
_backward_serial, _backward_parallel = serial_and_parallel(_softmax_backward)


# ## NumPy views of tensors


def _array(t: Tensor) -> np.ndarray:
    """A NumPy view (no copy) of `t` with its shape and strides."""
    return t._tensor.numpy_view()


def _matrices(t: Tensor, nb: int) -> np.ndarray:
    """`t` [..., L, S] as a C-contiguous [B, L, S] array (a copy only when not contiguous)."""
    return np.ascontiguousarray(_array(t)).reshape(nb, t.shape[-2], t.shape[-1])


def _tensor(array: np.ndarray, shape: tuple[int, ...], like: Tensor) -> Tensor:
    """A tensor over a C-contiguous array, on `like`'s backend."""
    return Tensor.make(array.reshape(-1), shape, backend=like.backend)


def _batch3(t: Tensor, batch: tuple[int, ...]) -> Tensor:
    """`t` [..., r, c], whose batch dimensions broadcast to `batch`, as a 3-D tensor
    [B, r, c] for the backend's matmul: a strided view of t's own storage when its batch
    dimensions merge into one (a broadcast one gets stride 0), else a contiguous copy.

    NumPy's reshape decides: it returns a view when the strides allow one, a copy when not
    (e.g. the heads of multi-head attention, a transposed [B, L, H, d] → [B, H, L, d]).
    """
    r, c = t.shape[-2:]
    storage = t._tensor._storage
    arr = np.broadcast_to(_array(t), batch + (r, c)).reshape(-1, r, c)
    if not np.may_share_memory(arr, storage):  # reshape had to copy: arr is C-contiguous
        storage = arr.reshape(-1)
    strides = tuple(s // storage.itemsize for s in arr.strides)
    return Tensor.make(storage, arr.shape, strides, backend=t.backend)


def _T(t3: Tensor) -> Tensor:
    """The transpose [B, c, r] of a 3-D tensor [B, r, c]: a view (the matmul takes any strides)."""
    data = t3._tensor
    return Tensor.make(
        data._storage,
        (data.shape[0], data.shape[2], data.shape[1]),
        (data.strides[0], data.strides[2], data.strides[1]),
        backend=t3.backend,
    )


def _mm(a3: Tensor, b3: Tensor, shape: tuple[int, ...]) -> Tensor:
    """a3 [B, n, k] @ b3 [B, k, m] with the backend's batched matmul, seen as `shape` [..., n, m]."""
    out = a3.backend.matrix_multiply(a3, b3)  # a new contiguous tensor
    return Tensor.make(out._tensor._storage, shape, backend=a3.backend)


def _mask_layout(mask: Tensor, batch: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(storage, off [B], stride of L, stride of S): mask element (b, i, j) of the
    broadcast [B, L, S] mask is storage[off[b] + i·sl + j·ss]. A broadcast dimension
    (missing, or of size 1) has stride 0."""
    data = mask._tensor
    pad = len(batch) + 2 - data.dims
    strides = [0] * pad + [0 if n == 1 else s for n, s in zip(data.shape, data.strides)]
    off = np.zeros(batch, dtype=np.int64)
    for d, n in enumerate(batch):
        off = off + (np.arange(n, dtype=np.int64) * strides[d]).reshape((n,) + (1,) * (len(batch) - d - 1))
    return data._storage, off.reshape(-1), strides[-2], strides[-1]


# ## The Functions


@dataclass
class _Attention:
    """What the forward computed, shared by the attention node and the weights node.

    Q, K, V are kept as 3-D tensors [B, ·, ·] (views, or the one copy the forward made), so
    that every transpose the backward needs (Kᵀ, Vᵀ, Wdᵀ, ∂zᵀ) is a free strided view."""

    scale: float
    batch: tuple[int, ...]  # the batch dimensions of the scores
    bool_mask: Optional[Tensor]  # True = may attend
    causal: bool
    dropout_p: float
    q3: Optional[Tensor] = None  # Q [B, L, E]
    k3: Optional[Tensor] = None  # K [B, S, E]
    v3: Optional[Tensor] = None  # V [B, S, Ev]
    w: Optional[np.ndarray] = None  # W [B, L, S], the softmax
    mult: Optional[np.ndarray] = None  # D [B, L, S], dropout's multiplier (None: no dropout)
    weights: Optional[np.ndarray] = None  # Wd = W ⊙ D [B, L, S] (W itself without dropout)

    def shape(self, n: int, m: int) -> tuple[int, ...]:
        return self.batch + (n, m)


def _dropout_multiplier(shape: tuple[int, ...], p: float, like: Tensor) -> np.ndarray:
    """D = keep / (1 − p), drawn exactly as `F.dropout` draws it (same generator calls)."""
    dtype = like.dtype
    if p == 1.0:
        return np.zeros(shape, dtype=dtype)  # F.dropout: input · 0, no draw
    u = rand(shape, dtype=dtype, backend=like.backend).numpy()  # U[0, 1), in the weights' dtype
    return (u > dtype.type(p)).astype(dtype) * dtype.type(1.0 / (1.0 - p))


def _through_softmax(
    st: _Attention,
    dwd: Tensor,
    need_q: bool,
    need_k: bool,
    need_mask: bool,
) -> tuple[Optional[Tensor], Optional[Tensor], Optional[Tensor]]:
    """(∂Q, ∂K, ∂M_float) from ∂Wd [..., L, S] (None for an input that needs none)."""
    w = st.w
    nb, n_l, n_s = w.shape
    dw = _matrices(dwd, nb)
    mult = st.mult if st.mult is not None else w[:1, :1, :1]  # a placeholder of the right type
    kernel = _backward_parallel if w.size >= PARALLEL_MIN else _backward_serial
    dmask = None
    dz = np.empty_like(w)  # the kernel writes every element
    if need_mask:  # rare: ∂M = ∂z unscaled, then scale a copy
        kernel(w, dw, mult, st.mult is not None, 1.0, dz)
        dmask = _tensor(dz, st.shape(n_l, n_s), dwd)
        dz = dz * w.dtype.type(st.scale)
    else:  # the scale of Q Kᵀ folded into the kernel: dz = scale · ∂z
        kernel(w, dw, mult, st.mult is not None, st.scale, dz)
    dz3 = _tensor(dz, w.shape, dwd)
    dq = _mm(dz3, st.k3, st.shape(n_l, st.k3.shape[2])) if need_q else None  # [..., L, E]
    dk = _mm(_T(dz3), st.q3, st.shape(n_s, st.q3.shape[2])) if need_k else None  # [..., S, E]
    return dq, dk, dmask


class AttentionFunction(Function):
    """out = masked_softmax(Q Kᵀ · scale + M) (⊙ D) V: one graph node (see the module docstring)."""

    @staticmethod
    def forward(
        ctx: Context, q: Tensor, k: Tensor, v: Tensor, fmask: Optional[Tensor], st: _Attention
    ) -> Tensor:
        st.q3, st.k3, st.v3 = _batch3(q, st.batch), _batch3(k, st.batch), _batch3(v, st.batch)
        n_l, n_s = q.shape[-2], k.shape[-2]
        nb = st.q3.shape[0]
        scores = _mm(st.q3, _T(st.k3), (nb, n_l, n_s))  # [B, L, S], a new tensor: ours to overwrite
        s = _matrices(scores, nb)
        f_store, f_off, f_sl, f_ss = (
            _mask_layout(fmask, st.batch) if fmask is not None else (s[0, 0, :1], np.zeros(1, np.int64), 0, 0)
        )
        b_store, b_off, b_sl, b_ss = (
            _mask_layout(st.bool_mask, st.batch)
            if st.bool_mask is not None
            else (np.ones(1, np.bool_), np.zeros(1, np.int64), 0, 0)
        )
        kernel = _forward_parallel if s.size >= PARALLEL_MIN else _forward_serial
        kernel(
            s,
            s.dtype.type(st.scale),
            s.dtype.type(-np.inf),
            f_store,
            f_off,
            f_sl,
            f_ss,
            fmask is not None,
            b_store,
            b_off,
            b_sl,
            b_ss,
            st.bool_mask is not None,
            st.causal,
            s,
        )  # in place: s becomes W
        st.w = s
        st.weights = s
        if st.dropout_p > 0.0:
            st.mult = _dropout_multiplier(st.shape(n_l, n_s), st.dropout_p, q).reshape(s.shape)
            st.weights = s * st.mult
        ctx.save_for_backward(q, k, v, fmask, st)
        return _mm(_tensor(st.weights, s.shape, q), st.v3, st.shape(n_l, v.shape[-1]))  # [..., L, Ev]

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        q, k, v, fmask, st = ctx.saved_values
        n_l, n_s = st.w.shape[1:]
        dout3 = _batch3(grad_output, st.batch)  # [B, L, Ev]
        wd3 = _tensor(st.weights, st.w.shape, grad_output)
        dv = _mm(_T(wd3), dout3, st.shape(n_s, v.shape[-1])) if v.requires_grad else None  # [..., S, Ev]
        dq = dk = dmask = None
        need_mask = fmask is not None and fmask.requires_grad
        if q.requires_grad or k.requires_grad or need_mask:
            dwd = _mm(dout3, _T(st.v3), st.w.shape)  # [B, L, S]
            dq, dk, dmask = _through_softmax(st, dwd, q.requires_grad, k.requires_grad, need_mask)
        return dq, dk, dv, dmask, None


class AttentionWeights(Function):
    """The weights Wd that `AttentionFunction` computed, as a tensor of their own whose
    gradient flows back to Q, K and the float mask (see "Two outputs" above)."""

    @staticmethod
    def forward(ctx: Context, q: Tensor, k: Tensor, fmask: Optional[Tensor], st: _Attention) -> Tensor:
        ctx.save_for_backward(q, k, fmask, st)
        return _tensor(st.weights, st.shape(*st.w.shape[1:]), q)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        q, k, fmask, st = ctx.saved_values
        need_mask = fmask is not None and fmask.requires_grad
        dq, dk, dmask = _through_softmax(st, grad_output, q.requires_grad, k.requires_grad, need_mask)
        return dq, dk, dmask, None


# ## The entry points


def supports(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor]) -> bool:
    """Whether the fused path computes exactly what the composed one would (the arguments
    are already checked by `sdpa_arguments`): float32/float64 on CPU backends, no empty
    dimension, and V's batch dimensions broadcast into those of Q Kᵀ (the weights keep
    their shape [..., L, S] and multiply V matrix by matrix)."""
    tensors = [query, key, value] + ([attn_mask] if attn_mask is not None else [])
    if any(t.backend.cuda for t in tensors) or query.dtype not in FLOATS:
        return False
    if any(t._tensor.size == 0 for t in (query, key, value)):
        return False
    batch = tuple(np.broadcast_shapes(query.shape[:-2], key.shape[:-2]))
    return tuple(np.broadcast_shapes(batch, value.shape[:-2])) == batch


@replaces("scaled_dot_product_attention_with_weights")
def scaled_dot_product_attention_with_weights(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> tuple[Tensor, Tensor]:
    """(softmax(Q Kᵀ · scale + mask) V, the weights), as the composed function of task 6.2;
    `NotImplemented` (the composed function) unless it `supports` the arguments.

    The arguments are checked as the composed function checks them (`sdpa_arguments`, with
    its errors). attn_mask: bool (True = may attend), float (added) or None; is_causal: key
    j ≤ query i. Shapes: query [..., L, E], key [..., S, E], value [..., S, Ev] →
    (output [..., L, Ev], weights [..., L, S]).
    """
    if not all(isinstance(t, Tensor) for t in (query, key, value)):
        return NotImplemented
    attn_mask, scale = sdpa_arguments(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if not supports(query, key, value, attn_mask):
        return NotImplemented
    batch = tuple(np.broadcast_shapes(query.shape[:-2], key.shape[:-2]))
    bool_mask = attn_mask if attn_mask is not None and attn_mask.dtype == bool else None
    fmask = attn_mask if attn_mask is not None and attn_mask.dtype != bool else None
    st = _Attention(float(scale), batch, bool_mask, bool(is_causal), float(dropout_p))
    out = AttentionFunction.apply(query, key, value, fmask, st)
    weights = AttentionWeights.apply(query, key, fmask, st)
    return out, weights
