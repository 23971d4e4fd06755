"""Multi-class classification losses (PyTorch semantics): `nll_loss` and `cross_entropy`.

For logits z [N, C] and integer targets t [N] (class ids, int64):

    cross_entropy(z, t) = nll_loss(log_softmax(z, dim=1), t)
    nll_loss(lp, t)     = mean_n  −w[t_n] · lp[n, t_n]     (over the n with t_n ≠ ignore_index)

With class weights w the mean divides by Σ_n w[t_n] (PyTorch's weighted mean); without,
w = 1 and it divides by the number of targets that are not ignored. Targets equal to
`ignore_index` (e.g. padding in a language model) contribute nothing, not even to the
count. If every target is ignored the mean is NaN (0/0), as in PyTorch.

Also accepted, as in PyTorch: unbatched input [C] with a 0-d target, and input
[N, C, d1, …] with target [N, d1, …] (e.g. per-token logits [batch, classes, time]).

`nll_loss`'s gradient is −w[t_n] at (n, t_n) and 0 elsewhere, scattered by index (no
one-hot matrix is built), so it costs O(N) beyond the [N, C] zeros.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..autodiff import Context
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..function import Function
from ._kernels import array, check_float, wrap
from .losses import REDUCTIONS
from .softmax import log_softmax

__all__ = ["nll_loss", "cross_entropy"]


class NLLLoss(Function):
    """Per-example losses −w[t_n] · lp[n, t_n] (0 where t_n is ignored): [N, C] → [N]."""

    @staticmethod
    def forward(ctx: Context, log_probs: Tensor, target: np.ndarray, weight: np.ndarray, keep: np.ndarray) -> Tensor:
        """target [N] int64 (ignored entries replaced by 0), weight [N] = w[t_n], keep [N] bool."""
        lp = array(log_probs)
        rows = np.arange(lp.shape[0])
        picked = lp[rows, target]
        losses = np.where(keep, -weight * picked, 0.0)
        ctx.save_for_backward(lp.shape, target, weight, keep)
        return wrap(losses, log_probs, lp.dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None, None, None]:
        shape, target, weight, keep = ctx.saved_values
        g = array(grad_output)
        grad = np.zeros(shape, dtype=grad_output.dtype)
        rows = np.arange(shape[0])
        grad[rows, target] = np.where(keep, -weight * g, 0.0)
        return wrap(grad, grad_output), None, None, None


def _target_array(name: str, target: Any) -> np.ndarray:
    if isinstance(target, Tensor):
        if target.dtype != np.int64:
            raise TypeError(f"{name}: target must hold class indices as int64 (minitorch.int64), got dtype {target.dtype}")
        return array(target)
    t = np.asarray(target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must hold integer class indices, got {t.dtype}")
    return t.astype(np.int64)


def nll_loss(
    input: Tensor,
    target: Any,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of integer targets under log-probabilities `input` [N, C].

    Returns the mean over non-ignored targets (`reduction='mean'`), their sum ('sum'), or
    the per-example losses ('none', shape of the target, 0 where ignored).
    """
    name = "nll_loss"
    check_float(name, input=input, weight=weight)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    t = _target_array(name, target)
    # Bring every accepted layout to [M, C] log-probs and [M] targets.
    if input.dims == 1:
        if t.ndim != 0:
            raise ShapeError(f"{name}: unbatched input of shape {input.shape} needs a 0-d target, got shape {t.shape}")
        lp, t_flat = input.view(1, input.shape[0]), t.reshape(1)
    elif input.dims >= 2:
        n, c = input.shape[0], input.shape[1]
        expected = (n,) + input.shape[2:]
        if t.shape != expected:
            raise ShapeError(
                f"{name}: input of shape {input.shape} (N={n}, C={c}) needs a target of shape "
                f"{expected}, got {t.shape}"
            )
        if input.dims > 2:  # [N, C, d…] → [N·d…, C]
            order = (0,) + tuple(range(2, input.dims)) + (1,)
            lp = input.permute(*order).contiguous().view(-1, c)
        else:
            lp = input
        t_flat = t.reshape(-1)
    else:
        raise ShapeError(f"{name}: input must have a class dimension, got a 0-d tensor")
    classes = lp.shape[1]
    keep = t_flat != ignore_index
    bad = keep & ((t_flat < 0) | (t_flat >= classes))
    if bad.any():
        raise IndexError(
            f"{name}: target {int(t_flat[bad][0])} is out of bounds for {classes} classes "
            f"(valid: 0 … {classes - 1}, or ignore_index={ignore_index})"
        )
    safe = np.where(keep, t_flat, 0)
    if weight is None:
        w = np.ones(len(safe))
    else:
        if weight.shape != (classes,):
            raise ShapeError(f"{name}: weight must have shape ({classes},) (one per class), got {weight.shape}")
        w = array(weight, np.float64)[safe]
    w = w.astype(lp.dtype)
    losses = NLLLoss.apply(lp, safe, w, keep)
    if reduction == "none":
        return losses.view(*t.shape) if t.ndim != 1 else losses
    total = losses.sum()
    if reduction == "sum":
        return total
    denominator = float(np.sum(w[keep], dtype=np.float64))
    return total * (1.0 / denominator if denominator != 0 else float("nan"))


def cross_entropy(
    input: Tensor,
    target: Any,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Cross-entropy of integer targets under logits `input` [N, C]:
    nll_loss(log_softmax(input, dim=1), target) — stable for any finite logits."""
    check_float("cross_entropy", input=input)
    if input.dims == 0:
        raise ShapeError("cross_entropy: input must have a class dimension, got a 0-d tensor")
    dim = 0 if input.dims == 1 else 1
    return nll_loss(log_softmax(input, dim), target, weight, ignore_index, reduction)
