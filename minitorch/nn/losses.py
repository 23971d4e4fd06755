"""Loss functions, with PyTorch's names, arguments and semantics.

Regression and binary classification:

    mse_loss(x, y)               = mean_i (x_i − y_i)²
    binary_cross_entropy(p, t)   = mean_i −[t_i · ln p_i + (1 − t_i) · ln(1 − p_i)]

Multi-class classification, for logits z [N, C] and integer targets t [N] (class ids, int64):

    cross_entropy(z, t) = nll_loss(log_softmax(z, dim=1), t)
    nll_loss(lp, t)     = mean_n  −w[t_n] · lp[n, t_n]     (over the n with t_n ≠ ignore_index)

With class weights w the mean divides by Σ_n w[t_n] (PyTorch's weighted mean); without,
w = 1 and it divides by the number of targets that are not ignored. Targets equal to
`ignore_index` (e.g. padding in a language model) contribute nothing, not even to the
count. If every target is ignored the mean is NaN (0/0), as in PyTorch. Also accepted, as
in PyTorch: unbatched input [C] with a 0-d target, and input [N, C, d1, …] with target
[N, d1, …] (e.g. per-token logits [batch, classes, time]).

How nll_loss picks lp[n, t_n] with tensor operations: a constant "pick" matrix P [N, C]
holds w[t_n] at (n, t_n) and 0 elsewhere (0 in the whole row of an ignored target), built
from the integer targets; then the per-example losses are −Σ_c lp[n, c] · P[n, c] — a
product and a sum, so autograd gives the gradient −P · g. (Log-probabilities must be
finite: −inf · 0 would be NaN. A gather kernel would avoid the [N, C] matrix, but then
the loss could not run on a backend without one, such as CUDA.)

Every reduction is 'mean' (the default), 'sum' or 'none' (per-element losses).

`cross_entropy` may be replaced by a faster version that computes the same values
(`minitorch.fast_paths`); it checks its arguments with the same `class_targets`.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..autodiff import Context
from ..fast_paths import replaceable
from ..function import Function
from ..tensor import Tensor
from ..tensor_data import ShapeError
from .softmax import log_softmax
from .validation import check_float

__all__ = ["mse_loss", "binary_cross_entropy", "nll_loss", "cross_entropy", "REDUCTIONS"]

REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


def _check_shapes(name: str, input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        raise ValueError(f"{name}: input shape {input.shape} and target shape {target.shape} differ")


# ---------------------------------------------------------------------------------------
# Regression and binary classification


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error: mean over elements of (input − target)²."""
    _check_shapes("mse_loss", input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


def _clamped_log(x: Tensor) -> Tensor:
    """max(ln x, −100), element-wise: ln 0 = −inf becomes −100 (PyTorch's BCE clamp)."""
    return x.backend.max_zip(x.log(), x.new_tensor(-100.0))


class BinaryCrossEntropy(Function):
    r"""Element-wise ℓ = −[t · ln p + (1 − t) · ln(1 − p)], each ln clamped to ≥ −100.

    Backward, as PyTorch: ∂ℓ/∂p = (p − t) / max(p (1 − p), 10⁻¹²). Written as one function
    rather than composed from log and arithmetic, because at a saturated sigmoid (p exactly
    1.0) the composed backward would meet 0 / 0 = nan. Both directions are tensor
    operations of the backend (forward runs without recording a graph).
    """

    @staticmethod
    def forward(ctx: Context, p: Tensor, t: Tensor) -> Tensor:
        ctx.save_for_backward(p, t)
        return -(t * _clamped_log(p) + (1.0 - t) * _clamped_log(1.0 - p))

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        p, t = ctx.saved_values
        denominator = p.backend.max_zip(p * (1.0 - p), p.new_tensor(1e-12))
        return grad_output * (p - t) / denominator, None


def binary_cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    r"""Binary cross-entropy of probabilities p = input against targets t ∈ [0, 1]:

        ℓ = −[t · ln p + (1 − t) · ln(1 − p)]

    `input` must already be probabilities (apply sigmoid first). As in PyTorch, each ln is
    clamped to ≥ −100, so a saturated sigmoid gives a large finite loss, not inf or nan.
    """
    _check_shapes("binary_cross_entropy", input, target)
    return _reduce(BinaryCrossEntropy.apply(input, target), reduction)


# ---------------------------------------------------------------------------------------
# Multi-class classification


def _target_array(name: str, target: Any) -> np.ndarray:
    """The class ids as an int64 ndarray (they index: they are data, not part of the graph)."""
    if isinstance(target, Tensor):
        if target.dtype != np.int64:
            raise TypeError(
                f"{name}: target must hold class indices as int64 (minitorch.int64), got dtype {target.dtype}"
            )
        return target.numpy()
    t = np.asarray(target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must hold integer class indices, got {t.dtype}")
    return t.astype(np.int64)


def class_targets(
    name: str,
    input: Tensor,
    target: Any,
    weight: Optional[Tensor],
    ignore_index: int,
    reduction: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Check the arguments of a classification loss over `input` [C], [N, C] or [N, C, d…];
    return (t, t_flat, keep, w): the targets as given (int64), flattened [M] in the order
    (n, d…), whether each is kept (≠ ignore_index), and its weight w[t_m] (float64; 1
    without class weights, 0 where ignored). Raises the errors of `nll_loss`."""
    check_float(name, input=input, weight=weight)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    t = _target_array(name, target)
    if input.dims == 1:
        if t.ndim != 0:
            raise ShapeError(
                f"{name}: unbatched input of shape {input.shape} needs a 0-d target, got shape {t.shape}"
            )
        classes = input.shape[0]
    elif input.dims >= 2:
        n, classes = input.shape[0], input.shape[1]
        expected = (n,) + input.shape[2:]
        if t.shape != expected:
            raise ShapeError(
                f"{name}: input of shape {input.shape} (N={n}, C={classes}) needs a target of shape "
                f"{expected}, got {t.shape}"
            )
    else:
        raise ShapeError(f"{name}: input must have a class dimension, got a 0-d tensor")
    t_flat = t.reshape(-1)
    keep = t_flat != ignore_index
    bad = keep & ((t_flat < 0) | (t_flat >= classes))
    if bad.any():
        raise IndexError(
            f"{name}: target {int(t_flat[bad][0])} is out of bounds for {classes} classes "
            f"(valid: 0 … {classes - 1}, or ignore_index={ignore_index})"
        )
    if weight is None:
        w = np.ones(len(t_flat))
    else:
        if weight.shape != (classes,):
            raise ShapeError(
                f"{name}: weight must have shape ({classes},) (one per class), got {weight.shape}"
            )
        w = weight.numpy().astype(np.float64)[np.where(keep, t_flat, 0)]
    w = np.where(keep, w, 0.0)
    return t, t_flat, keep, w


def _as_rows(input: Tensor) -> Tensor:
    """Every accepted layout as [M, C] rows, in the order of the flattened targets:
    [C] → [1, C]; [N, C] as it is; [N, C, d…] → [N·d…, C]."""
    if input.dims == 1:
        return input.view(1, input.shape[0])
    if input.dims > 2:
        order = (0,) + tuple(range(2, input.dims)) + (1,)
        return input.permute(*order).contiguous().view(-1, input.shape[1])
    return input


def _reduce_rows(losses: Tensor, t: np.ndarray, w: np.ndarray, reduction: str) -> Tensor:
    """Per-row losses [M] reduced as `reduction` says; 'mean' divides by the targets' weights."""
    if reduction == "none":
        return losses.view(*t.shape) if t.ndim != 1 else losses
    total = losses.sum()
    if reduction == "sum":
        return total
    denominator = float(np.sum(w, dtype=np.float64))
    return total * (1.0 / denominator if denominator != 0 else float("nan"))


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
    t, t_flat, keep, w = class_targets("nll_loss", input, target, weight, ignore_index, reduction)
    lp = _as_rows(input)
    # −P: −w[t_m] at (m, t_m), 0 elsewhere and in the rows of ignored targets
    pick = np.zeros(lp.shape, dtype=lp.dtype)
    rows = np.flatnonzero(keep)
    pick[rows, t_flat[rows]] = -w[rows]
    picked = lp * lp.new_tensor(pick)  # [M, C]: −w[t_m] · lp[m, t_m] in each row, else 0
    return _reduce_rows(picked.sum(1), t, w, reduction)


@replaceable("cross_entropy")
def cross_entropy(
    input: Tensor,
    target: Any,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy of integer targets under logits `input` [N, C]:
    nll_loss(log_softmax(input, dim=1), target) — stable for any finite logits.

    With `label_smoothing` ε, each target is the mixture (1 − ε)·one_hot(y) + ε·uniform(C),
    as in PyTorch: loss = (1 − ε)·nll + (ε / C)·Σ_c −w_c log p_c, the second term reduced as
    the first (for 'mean' divided by the targets' weights; ignored targets count nothing).
    """
    check_float("cross_entropy", input=input)
    if input.dims == 0:
        raise ShapeError("cross_entropy: input must have a class dimension, got a 0-d tensor")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if label_smoothing > 0.0:
        return _smoothed_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    dim = 0 if input.dims == 1 else 1
    return nll_loss(log_softmax(input, dim), target, weight, ignore_index, reduction)


def _smoothed_cross_entropy(
    input: Tensor, target: Any, weight: Optional[Tensor], ignore_index: int, reduction: str, eps: float
) -> Tensor:
    """`cross_entropy` with label smoothing ε > 0 (composed: log_softmax, then both terms)."""
    dim = 0 if input.dims == 1 else 1
    log_p = log_softmax(input, dim)
    nll = nll_loss(log_p, target, weight, ignore_index, reduction)
    t, _, keep, w = class_targets("cross_entropy", input, target, weight, ignore_index, reduction)
    rows = _as_rows(log_p)  # [M, C]
    classes = rows.shape[1]
    class_w = np.ones(classes) if weight is None else weight.numpy().astype(np.float64)
    coef = np.where(keep[:, None], -class_w[None, :], 0.0).astype(rows.dtype)  # −w_c, 0 in ignored rows
    smooth = _reduce_rows((rows * rows.new_tensor(coef)).sum(1), t, w, reduction)
    return nll * (1.0 - eps) + smooth * (eps / classes)
