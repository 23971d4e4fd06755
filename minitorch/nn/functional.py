"""Functional forms of the layers and losses (`minitorch.nn.functional`, as `torch.nn.functional`)."""

from __future__ import annotations

from ..tensor import Tensor
from .losses import binary_cross_entropy, mse_loss


def relu(x: Tensor) -> Tensor:
    """relu(x) = max(0, x), element-wise."""
    return x.relu()


def sigmoid(x: Tensor) -> Tensor:
    """σ(x) = 1 / (1 + e^{−x}), element-wise."""
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    """tanh(x), element-wise."""
    return x.tanh()


__all__ = ["relu", "sigmoid", "tanh", "mse_loss", "binary_cross_entropy"]
