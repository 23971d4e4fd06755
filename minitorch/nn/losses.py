"""Regression and binary classification losses (PyTorch semantics)."""

from __future__ import annotations

from ..tensor import Tensor

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


def binary_cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    r"""Binary cross-entropy of probabilities p = input against targets t ∈ [0, 1]:

        ℓ = −[t · ln p + (1 − t) · ln(1 − p)]

    `input` must already be probabilities (apply sigmoid first). Unlike PyTorch, which
    clamps ln to ≥ −100, a probability of exactly 0 or 1 on the wrong side gives inf.
    """
    _check_shapes("binary_cross_entropy", input, target)
    loss = -(target * input.log() + (1.0 - target) * (1.0 - input).log())
    return _reduce(loss, reduction)
