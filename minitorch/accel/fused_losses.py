r"""Softmax + cross-entropy as one fused operation — the reference's fast path for
`cross_entropy` (whose composed version rests on task 4.4's `log_softmax`).

The composed `cross_entropy` is `nll_loss(log_softmax(x))`: amax, subtract, exp, sum, log,
subtract, then a [M, C] "pick" matrix, a product and a sum — eight kernels, as many
temporary [M, C] tensors and graph nodes. Here the whole loss is ONE `Function`: one Numba
kernel forward (one sweep over each row of logits) and one backward.

Shapes: logits x [N, C, d…] (or [N, C], or one unbatched row [C]) are seen as
x [N, C, D] with D = ∏ d… (D = 1 for [N, C]); a row is the C logits of one (n, d), so there
are M = N·D rows, numbered r = n·D + d in the order of the flattened target t [M].
No copy is needed: x[n, :, d] is read with stride D.

Forward, for each row r with target t_r and weight w_r (w[t_r] with class weights, else 1;
0 when t_r = ignore_index):

    m_r    = max_c x_rc                                           [M]
    lse_r  = m_r + ln Σ_c e^{x_rc − m_r}     (log-sum-exp, stable)   [M]  (saved)
    ℓ_r    = w_r · (lse_r − x_r,t_r)          (= −w_r · log_softmax(x_r)_t_r)

    'none' → ℓ [M] (target's shape);  'sum' → Σ_r ℓ_r;  'mean' → Σ_r ℓ_r / Σ_r w_r

Backward, given ∂ℓ (one number per row for 'none', one number g otherwise). With the
softmax p_rc = e^{x_rc − lse_r} (recomputed from the saved lse, not stored [M, C]):

    ∂x_rc = k_r · (p_rc − [c = t_r])      k_r = ∂ℓ_r·w_r ('none'),  g·w_r ('sum'),
                                            g·w_r / Σ_s w_s ('mean')

so an ignored row (w_r = 0) gets 0. (why: ∂ lse_r / ∂x_rc = p_rc, ∂ x_r,t_r / ∂x_rc = [c = t_r].)
As in the composed version (and PyTorch), 'mean' over only ignored targets is NaN (0/0),
and so is its gradient.

The kernels compute in float64 (also for float32 logits, whose loss and gradient are then
rounded back to float32). They loop over rows in parallel (`prange`) when there are enough
logits to pay for waking the thread pool; each row is written by one thread only.

It replaces `cross_entropy` (`minitorch/nn/losses.py`, through `fast_paths`) for
float32/float64 logits on CPU backends (the targets are checked by the same code as the
composed path, `losses.class_targets`); anything else takes the composed path. The
reference ships this file from stage A5 on (`reference_only` in the A4 manifest), so a
student's A4 log_softmax is what runs and is graded in A4.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from numba import prange

from ..autodiff import Context
from ..fast_paths import replaces
from ..function import Function
from ..jit import serial_and_parallel
from ..tensor import Tensor
from ..nn.losses import class_targets

__all__ = ["supports", "cross_entropy"]

#: Below this many logits a kernel runs on the calling thread only (the serial compile of
#: the same Python function): starting the other threads costs more than the work.
PARALLEL_MIN = 1 << 14
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ## The kernels (each Python function is compiled twice: serial and parallel)


def _forward(x: np.ndarray, target: np.ndarray, w: np.ndarray, lse: np.ndarray, loss: np.ndarray) -> None:
    """x [N, C, D], target, w [M] → lse, ℓ [M] (float64; every element written)."""
    n_batch, classes, depth = x.shape
    for r in prange(n_batch * depth):
        n, d = r // depth, r % depth
        m = float(x[n, 0, d])  # float(): float64 arithmetic, also for float32 logits
        for c in range(1, classes):
            m = max(m, float(x[n, c, d]))
        total = 0.0
        for c in range(classes):
            total += math.exp(float(x[n, c, d]) - m)
        log_total = math.log(total)
        lse[r] = m + log_total
        # w_r · (lse_r − x_t) written as −w_r · ((x_t − m) − ln Σ): the composed log_softmax
        loss[r] = w[r] * (log_total - (float(x[n, target[r], d]) - m))


def _backward(x: np.ndarray, target: np.ndarray, lse: np.ndarray, k: np.ndarray, dx: np.ndarray) -> None:
    """x [N, C, D], target, lse, k [M] → dx [N, C, D] = k_r · (p_rc − [c = t_r])."""
    n_batch, classes, depth = x.shape
    for r in prange(n_batch * depth):
        n, d = r // depth, r % depth
        for c in range(classes):
            p = math.exp(float(x[n, c, d]) - lse[r])
            dx[n, c, d] = k[r] * (p - 1.0 if c == target[r] else p)


_forward_serial, _forward_parallel = serial_and_parallel(_forward)
_backward_serial, _backward_parallel = serial_and_parallel(_backward)


# ## NumPy views of tensors


def _logits(t: Tensor) -> np.ndarray:
    """`t` ([C], [N, C] or [N, C, d…]) as a C-contiguous [N, C, D] array (a view of its
    storage when `t` is contiguous, else a copy)."""
    data = t._tensor
    view = data.numpy_view()
    if t.dims == 1:
        return np.ascontiguousarray(view).reshape(1, t.shape[0], 1)
    return np.ascontiguousarray(view).reshape(t.shape[0], t.shape[1], -1)


# ## The Function


class CrossEntropyFunction(Function):
    """ℓ_r = w_r · (lse_r − x_r,t_r), reduced: one graph node (see the module docstring)."""

    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        target: np.ndarray,
        w: np.ndarray,
        scale: float,
        reduce: bool,
        out_shape: tuple[int, ...],
    ) -> Tensor:
        x = _logits(input)
        rows = len(target)
        lse = np.empty(rows, dtype=np.float64)  # one number a row: keep it exact
        loss = np.empty(rows, dtype=np.float64)
        kernel = _forward_parallel if x.size >= PARALLEL_MIN else _forward_serial
        kernel(x, target, w, lse, loss)
        ctx.save_for_backward(x, target, w, scale, reduce, lse, input.shape)
        values = np.sum(loss) * scale if reduce else loss  # 'sum': scale 1; 'mean': 1 / Σ w
        out = np.asarray(values, dtype=x.dtype).reshape(-1)
        return Tensor.make(out, out_shape, backend=input.backend)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None, None, None, None, None]:
        x, target, w, scale, reduce, lse, shape = ctx.saved_values
        g = grad_output.numpy().astype(np.float64).reshape(-1)  # [M] ('none') or [1]
        k = (g[0] * scale) * w if reduce else g * w
        dx = np.empty_like(x)  # the kernel writes every element
        kernel = _backward_parallel if x.size >= PARALLEL_MIN else _backward_serial
        kernel(x, target, lse, k, dx)
        return Tensor.make(dx.reshape(-1), shape, backend=grad_output.backend), None, None, None, None, None


def supports(input: Tensor, weight: Optional[Tensor]) -> bool:
    """Whether the fused kernel computes what the composed `cross_entropy` would: float32 /
    float64 logits with at least one element on a CPU backend, class weights (if any) not
    on CUDA. (Targets and the other arguments are checked as in the composed path.)"""
    if not isinstance(input, Tensor) or input.backend.cuda or input.dtype not in FLOATS:
        return False
    if input._tensor.size == 0:
        return False
    return not (isinstance(weight, Tensor) and weight.backend.cuda)


@replaces("cross_entropy")
def cross_entropy(
    input: Tensor,
    target: Any,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy of integer targets under logits, as `nn.functional.cross_entropy`, as
    ONE graph node; `NotImplemented` (the composed function, which also checks what this
    one does not look at) for label smoothing, a 0-d input, or logits it does not `supports`.

    Shapes: input [N, C] with target [N], [N, C, d…] with [N, d…], or [C] with a 0-d target.
    Returns a 0-d tensor ('mean', 'sum') or the per-target losses ('none', target's shape).
    """
    if label_smoothing != 0.0 or not supports(input, weight) or input.dims == 0:
        return NotImplemented
    t, t_flat, keep, w = class_targets("cross_entropy", input, target, weight, ignore_index, reduction)
    scale = 1.0
    if reduction == "mean":
        denominator = float(np.sum(w, dtype=np.float64))
        scale = 1.0 / denominator if denominator != 0 else float("nan")
    rows = np.ascontiguousarray(np.where(keep, t_flat, 0))  # an ignored row reads class 0, × w = 0
    out_shape = tuple(t.shape) if reduction == "none" else ()
    return CrossEntropyFunction.apply(
        input, rows, np.ascontiguousarray(w), scale, reduction != "none", out_shape
    )
