"""The losses as modules (`nn.MSELoss`, `nn.BCELoss`, `nn.NLLLoss`, `nn.CrossEntropyLoss`), as in PyTorch.

A loss module only remembers its options; calling it is calling the function of
`losses.py` with them:

    criterion = nn.CrossEntropyLoss(ignore_index=0)
    loss = criterion(logits, targets)        # = F.cross_entropy(logits, targets, ignore_index=0)

PyTorch's constructors also take `size_average` and `reduce`, deprecated there since 2018
in favour of `reduction`; they are accepted here only as None (their default), with an
error that names the `reduction` to use instead.
"""

from __future__ import annotations

from typing import Any, Optional

from ..module import Module
from ..tensor import Tensor
from .losses import REDUCTIONS, binary_cross_entropy, cross_entropy, mse_loss, nll_loss

__all__ = ["MSELoss", "BCELoss", "NLLLoss", "CrossEntropyLoss"]


class _Loss(Module):
    """What every loss module shares: the `reduction` ('mean', 'sum' or 'none'), checked
    when the module is made (PyTorch checks it at the call; failing early says where)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        name = type(self).__name__
        if size_average is not None or reduce is not None:
            raise ValueError(
                f"{name}: size_average and reduce are deprecated in PyTorch and not supported here; "
                f"use reduction='mean' (the default), 'sum' or 'none'"
            )
        if reduction not in REDUCTIONS:
            raise ValueError(f"{name}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class MSELoss(_Loss):
    """`torch.nn.MSELoss`: (input − target)², reduced; see `F.mse_loss`."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return mse_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    """`torch.nn.BCELoss`: binary cross-entropy of probabilities; see `F.binary_cross_entropy`.
    (Class weights, PyTorch's `weight` argument, are not supported.)"""

    def __init__(
        self,
        weight: Optional[Tensor] = None,
        size_average: Any = None,
        reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if weight is not None:
            raise ValueError(
                "BCELoss: weight (a rescaling of each element's loss) is not supported by minitorch"
            )

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return binary_cross_entropy(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    """`torch.nn.NLLLoss`: negative log-likelihood of class ids under log-probabilities;
    see `F.nll_loss` (class `weight`, `ignore_index`)."""

    def __init__(
        self,
        weight: Optional[Tensor] = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return nll_loss(
            input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )

    def extra_repr(self) -> str:
        parts = [super().extra_repr()] + (
            [f"ignore_index={self.ignore_index}"] if self.ignore_index != -100 else []
        )
        return ", ".join(p for p in parts if p)


class CrossEntropyLoss(NLLLoss):
    """`torch.nn.CrossEntropyLoss`: cross-entropy of class ids under logits, i.e.
    NLLLoss of log_softmax(logits); see `F.cross_entropy` (class `weight`, `ignore_index`,
    `label_smoothing`)."""

    def __init__(
        self,
        weight: Optional[Tensor] = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )
