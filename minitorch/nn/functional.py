"""Functional forms of the layers and losses (`minitorch.nn.functional`, as `torch.nn.functional`)."""

from __future__ import annotations

from ..tensor import Tensor
from .conv import conv1d, conv2d
from .dropout import dropout
from .embedding import embedding
from .layer_norm import layer_norm
from .linear import linear
from .positional import sinusoidal_positional_encoding
from .losses import binary_cross_entropy, cross_entropy, mse_loss, nll_loss
from .pooling import avg_pool1d, avg_pool2d, max_over_time, max_pool1d, max_pool2d
from .softmax import log_softmax, softmax
from .activation import gelu
from .attention_pooling import attention_pooling
from .additive_attention import additive_attention
from .attention import scaled_dot_product_attention


def relu(x: Tensor) -> Tensor:
    """relu(x) = max(0, x), element-wise."""
    return x.relu()


def sigmoid(x: Tensor) -> Tensor:
    """σ(x) = 1 / (1 + e^{−x}), element-wise."""
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    """tanh(x), element-wise."""
    return x.tanh()


__all__ = [
    "relu",
    "sigmoid",
    "tanh",
    "linear",
    "mse_loss",
    "binary_cross_entropy",
    "conv1d",
    "conv2d",
    "avg_pool1d",
    "avg_pool2d",
    "max_pool1d",
    "max_pool2d",
    "max_over_time",
    "softmax",
    "log_softmax",
    "dropout",
    "embedding",
    "cross_entropy",
    "nll_loss",
    "layer_norm",
    "sinusoidal_positional_encoding",
    "gelu",
    "attention_pooling",
    "additive_attention",
    "scaled_dot_product_attention",
]
