r"""LayerNorm as one fused operation — the reference's fast path for `layer_norm` (task 6.4).

The composed `layer_norm` (task 6.4) is ten tensor operations — mean, subtract, square,
mean, add ε, square root, divide, reshape, × γ, + β — so ten kernels, ten temporary
tensors and ten graph nodes, each pass reading the whole input again. Here the whole
normalisation is ONE `Function`, with one Numba kernel forward and one backward, each
reading a row once it is in the cache.

Shapes: the input x [..., *normalized_shape] is seen as R rows of N = ∏ normalized_shape
values, x [R, N]; γ (weight) and β (bias), when given, are [N].

Forward, for each row r (two passes over the row, as the composed code):

    μ_r      = (1/N) Σ_i x_ri                                          [R]
    σ²_r     = (1/N) Σ_i (x_ri − μ_r)²       (biased, as PyTorch)        [R]
    rstd_r   = 1 / √(σ²_r + ε)                                         [R]
    x̂_ri     = (x_ri − μ_r) · rstd_r                                   [R, N]  (saved)
    y_ri     = x̂_ri · γ_i + β_i                                        [R, N]

Backward, given ∂y [R, N]. With g = ∂y ⊙ γ (the gradient reaching x̂), the chain rule
through μ and σ² collapses to (Σ and mean over the N values of a row):

    ∂x_ri = rstd_r · (g_ri − mean_i(g_r·) − x̂_ri · mean_i(g_r· ⊙ x̂_r·))   [R, N]
    ∂γ_i  = Σ_r ∂y_ri · x̂_ri                                            [N]
    ∂β_i  = Σ_r ∂y_ri                                                  [N]

(why: x̂ = (x − μ)·rstd; changing x moves x̂ directly, moves μ — hence "− mean(g)" — and
moves σ², whose derivative ∂rstd/∂x_i = −rstd³ (x_i − μ)/N gives the "− x̂ mean(g x̂)").

Saving x̂ and rstd (rather than recomputing them from x) costs one [R, N] array and
makes the backward a single pass over rows.

The kernels loop over rows in parallel (`prange`); ∂γ and ∂β are sums *across* rows, so
each thread sums its own block of rows into a private partial row, and the partials are
added at the end (no two threads ever write the same number). Small inputs run on one
thread: waking the thread pool costs more than the loop.

It replaces `F.layer_norm` (`minitorch/nn/layer_norm.py`, through `fast_paths`) only on
CPU backends, for float32/float64 inputs with weight/bias of shape normalized_shape and
the input's dtype; anything else takes the composed path. It is `reference_only` in the
A6 manifest: A6 releases and grader trees (and earlier ones) leave it out, so a student's
composed code is what runs and is graded there.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numba
import numpy as np
from numba import prange

from ..autodiff import Context
from ..fast_paths import replaces
from ..function import Function
from ..jit import serial_and_parallel
from ..nn.layer_norm import checked_shape
from ..tensor import Tensor

__all__ = ["supports", "layer_norm"]

#: Below this many values a kernel runs on the calling thread only (the serial compile of
#: the same Python function): starting the other threads costs more than the work.
PARALLEL_MIN = 1 << 14
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ## The kernels (each Python function is compiled twice: serial and parallel)


def _forward(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    has_gamma: bool,
    has_beta: bool,
    eps: float,
    y: np.ndarray,
    xhat: np.ndarray,
    rstd: np.ndarray,
) -> None:
    """x [R, N] → y [R, N], x̂ [R, N], rstd [R]; every element of the outputs is written."""
    rows, n = x.shape
    for r in prange(rows):
        total = 0.0  # float64 accumulators, also for float32 data
        for i in range(n):
            total += x[r, i]
        mean = total / n
        sq = 0.0
        for i in range(n):
            d = x[r, i] - mean
            sq += d * d
        s = 1.0 / math.sqrt(sq / n + eps)
        rstd[r] = s
        for i in range(n):
            h = (x[r, i] - mean) * s
            xhat[r, i] = h
            if has_gamma:
                h = h * gamma[i]
            if has_beta:
                h = h + beta[i]
            y[r, i] = h


def _backward(
    dy: np.ndarray,
    xhat: np.ndarray,
    rstd: np.ndarray,
    gamma: np.ndarray,
    has_gamma: bool,
    chunks: int,
    dx: np.ndarray,
    dgamma_part: np.ndarray,
    dbeta_part: np.ndarray,
) -> None:
    """dy, x̂ [R, N], rstd [R] → dx [R, N] and per-chunk partial sums dγ, dβ [chunks, N]."""
    rows, n = dy.shape
    per = (rows + chunks - 1) // chunks
    for c in prange(chunks):  # one block of rows per chunk: its partial row is its own
        for i in range(n):
            dgamma_part[c, i] = 0.0
            dbeta_part[c, i] = 0.0
        for r in range(c * per, min(rows, (c + 1) * per)):
            sum_g = 0.0
            sum_gx = 0.0
            for i in range(n):
                g = dy[r, i] * gamma[i] if has_gamma else dy[r, i]
                sum_g += g
                sum_gx += g * xhat[r, i]
                dgamma_part[c, i] += dy[r, i] * xhat[r, i]
                dbeta_part[c, i] += dy[r, i]
            mean_g = sum_g / n
            mean_gx = sum_gx / n
            s = rstd[r]
            for i in range(n):
                g = dy[r, i] * gamma[i] if has_gamma else dy[r, i]
                dx[r, i] = s * (g - mean_g - xhat[r, i] * mean_gx)


_forward_serial, _forward_parallel = serial_and_parallel(_forward)
_backward_serial, _backward_parallel = serial_and_parallel(_backward)


# ## NumPy views of tensors


def _array(t: Tensor) -> np.ndarray:
    """A NumPy view (no copy) of `t` with its shape and strides."""
    return t._tensor.numpy_view()


def _rows(t: Tensor, n: int) -> np.ndarray:
    """`t` as a C-contiguous [R, n] array (a copy only when `t` is not contiguous)."""
    return np.ascontiguousarray(_array(t)).reshape(-1, n)


def _tensor(array: np.ndarray, shape: Sequence[int], like: Tensor) -> Tensor:
    """A tensor over a C-contiguous array, on `like`'s backend."""
    return Tensor.make(array.reshape(-1), tuple(shape), backend=like.backend)


# ## The Function


class LayerNormFunction(Function):
    """y = (x − μ)·rstd·γ + β over rows of N values: one graph node (see the module docstring)."""

    @staticmethod
    def forward(
        ctx: Context,
        x: Tensor,
        weight: Optional[Tensor],
        bias: Optional[Tensor],
        shape: tuple[int, ...],
        eps: float,
    ) -> Tensor:
        n = math.prod(shape)
        xs = _rows(x, n)
        rows = xs.shape[0]
        gamma = _rows(weight, n)[0] if weight is not None else np.empty(0, dtype=xs.dtype)
        beta = _rows(bias, n)[0] if bias is not None else np.empty(0, dtype=xs.dtype)
        y = np.empty_like(xs)  # the kernel writes every element
        xhat = np.empty_like(xs)
        rstd = np.empty(rows, dtype=np.float64)  # one number a row: keep it exact
        kernel = _forward_parallel if xs.size >= PARALLEL_MIN else _forward_serial
        kernel(xs, gamma, beta, weight is not None, bias is not None, float(eps), y, xhat, rstd)
        ctx.save_for_backward(xhat, rstd, gamma, shape, weight is not None, bias is not None)
        return _tensor(y, x.shape, x)

    @staticmethod
    def backward(
        ctx: Context, grad_output: Tensor
    ) -> tuple[Tensor, Optional[Tensor], Optional[Tensor], None, None]:
        xhat, rstd, gamma, shape, has_weight, has_bias = ctx.saved_values
        rows, n = xhat.shape
        dy = _rows(grad_output, n)
        parallel = dy.size >= PARALLEL_MIN
        chunks = max(1, min(rows, numba.get_num_threads())) if parallel else 1
        dx = np.empty_like(xhat)
        dgamma_part = np.empty((chunks, n), dtype=np.float64)  # partial sums: accumulate in float64
        dbeta_part = np.empty((chunks, n), dtype=np.float64)
        kernel = _backward_parallel if parallel else _backward_serial
        kernel(dy, xhat, rstd, gamma, has_weight, chunks, dx, dgamma_part, dbeta_part)
        dtype = xhat.dtype
        dweight = _tensor(dgamma_part.sum(0).astype(dtype), shape, grad_output) if has_weight else None
        dbias = _tensor(dbeta_part.sum(0).astype(dtype), shape, grad_output) if has_bias else None
        return _tensor(dx, grad_output.shape, grad_output), dweight, dbias, None, None


def supports(input: Tensor, shape: tuple[int, ...], weight: Optional[Tensor], bias: Optional[Tensor]) -> bool:
    """Whether the fused kernel computes exactly what the composed `layer_norm` would:
    a float32/float64 input on a CPU backend, weight and bias (when given) of shape
    `normalized_shape` and the input's dtype, and no empty dimension."""
    if input.backend.cuda or input.dtype not in FLOATS or input._tensor.size == 0:
        return False
    for p in (weight, bias):
        if p is None:
            continue
        if not isinstance(p, Tensor) or p.backend.cuda or p.dtype != input.dtype or tuple(p.shape) != shape:
            return False
    return True


@replaces("layer_norm")
def layer_norm(
    input: Tensor,
    normalized_shape: Union[int, Sequence[int]],
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x − μ)/√(σ² + ε) · weight + bias over the last len(normalized_shape) dimensions,
    as ONE graph node; `NotImplemented` (the composed `layer_norm`) unless it `supports`
    the arguments. The shapes are checked as `F.layer_norm` checks them, with its errors.

    Shapes: input [..., *normalized_shape] → the same; weight, bias: normalized_shape or None.
    """
    if not isinstance(input, Tensor):
        return NotImplemented
    shape = checked_shape(input, normalized_shape)
    if not supports(input, shape, weight, bias):
        return NotImplemented
    return LayerNormFunction.apply(input, weight, bias, shape, eps)
