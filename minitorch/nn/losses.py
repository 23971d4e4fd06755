"""Regression and binary classification losses (PyTorch semantics)."""

from __future__ import annotations

import numpy as np

from ..autodiff import Context
from ..tensor import Tensor
from ..constructors import from_numpy
from ..function import Function

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


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error: mean over elements of (input − target)²."""
    _check_shapes("mse_loss", input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


class BinaryCrossEntropy(Function):
    r"""Element-wise ℓ = −[t · ln p + (1 − t) · ln(1 − p)], each ln clamped to ≥ −100.

    Backward, as PyTorch: ∂ℓ/∂p = (p − t) / max(p (1 − p), 10⁻¹²). Written as one function
    rather than composed from log and arithmetic, because at a saturated sigmoid (p exactly
    1.0) the composed backward would meet 0 / 0 = nan.
    """

    @staticmethod
    def forward(ctx: Context, p: Tensor, t: Tensor) -> Tensor:
        pv, tv = p.numpy(), t.numpy()
        ctx.save_for_backward(pv, tv)
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(pv), -100.0)
            log_1p = np.maximum(np.log(1.0 - pv), -100.0)
        return from_numpy(-(tv * log_p + (1.0 - tv) * log_1p), backend=p.backend)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        pv, tv = ctx.saved_values
        d = (pv - tv) / np.maximum(pv * (1.0 - pv), 1e-12)
        return from_numpy(d * grad_output.numpy(), backend=grad_output.backend), None


def binary_cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    r"""Binary cross-entropy of probabilities p = input against targets t ∈ [0, 1]:

        ℓ = −[t · ln p + (1 − t) · ln(1 − p)]

    `input` must already be probabilities (apply sigmoid first). As in PyTorch, each ln is
    clamped to ≥ −100, so a saturated sigmoid gives a large finite loss, not inf or nan.
    """
    _check_shapes("binary_cross_entropy", input, target)
    return _reduce(BinaryCrossEntropy.apply(input, target), reduction)
