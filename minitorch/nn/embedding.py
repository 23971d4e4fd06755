"""Embeddings: a learned vector per token id, as `torch.nn.Embedding`.

The layer holds a table `weight` [num_embeddings, embedding_dim]; the input is a tensor of
integer ids of any shape [*], and the output stacks the rows they name: [*, embedding_dim],

    out[..., :] = weight[ids[...], :]

which equals multiplying one-hot vectors by the table, without building them. The backward
pass is a *scatter-add*: each occurrence of an id adds its output gradient to that id's row,

    ∂L/∂weight[v, :] = Σ_{positions p with ids[p] = v} ∂L/∂out[p, :]

so an id used twice in a batch receives the sum of both gradients, and rows of ids not in
the batch receive 0. With `padding_idx`, that row starts at zero and never receives a
gradient, so padding stays a zero vector.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..autodiff import Context
from ..module import Module, Parameter
from ..tensor import Tensor
from ..constructors import randn, tensor
from ..function import Function
from ..tensor_ops import TensorBackend
from ._kernels import array, check_float, embedding_backward_kernel, wrap

__all__ = ["embedding", "Embedding"]


class EmbeddingFun(Function):
    """out = weight[ids] (a row lookup); the gradient scatter-adds into weight."""

    @staticmethod
    def forward(ctx: Context, weight: Tensor, ids: np.ndarray, padding_idx: Optional[int]) -> Tensor:
        w = array(weight)
        out = w[ids]  # NumPy fancy indexing: [*ids.shape, dim]
        ctx.save_for_backward(ids, w.shape, padding_idx)
        return wrap(out, weight)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None, None]:
        ids, shape, padding_idx = ctx.saved_values
        grad = np.zeros(shape, dtype=grad_output.dtype)
        g = array(grad_output).reshape(-1, shape[1])
        embedding_backward_kernel(grad, ids.reshape(-1), g)
        if padding_idx is not None:
            grad[padding_idx] = 0.0
        return wrap(grad, grad_output), None, None


def _ids(name: str, input: Any, num_embeddings: int) -> np.ndarray:
    """The ids as an int64 ndarray, checked to lie in 0 … num_embeddings − 1."""
    if isinstance(input, Tensor):
        if input.dtype != np.int64:
            raise TypeError(f"{name}: ids must be an int64 tensor (minitorch.int64), got dtype {input.dtype}")
        ids = array(input)
    else:
        ids = np.asarray(input)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name}: ids must be integers, got {ids.dtype}")
        ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_embeddings):
        bad = ids.min() if ids.min() < 0 else ids.max()
        raise IndexError(f"{name}: id {bad} is out of range for {num_embeddings} embeddings (valid: 0 … {num_embeddings - 1})")
    return ids


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None) -> Tensor:
    """Rows of `weight` [num, dim] named by the int64 ids `input` [*] → [*, dim], as
    `torch.nn.functional.embedding` (the padding row receives no gradient)."""
    check_float("embedding", weight=weight)
    if weight.dims != 2:
        raise ValueError(f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape {weight.shape}")
    ids = _ids("embedding", input, weight.shape[0])
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return EmbeddingFun.apply(weight, ids, padding_idx)


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, as `torch.nn.Embedding`.

    Parameter: `weight` [num_embeddings, embedding_dim], initialised N(0, 1) (PyTorch's
    default), with the row `padding_idx` (if given) set to zero.
    Input: int64 ids of any shape [*]; output [*, embedding_dim].
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: Optional[int] = None,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise ValueError(f"Embedding({num_embeddings}, {embedding_dim}): sizes must be positive")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        weight = randn(num_embeddings, embedding_dim, dtype=dtype, backend=backend)
        if padding_idx is not None:
            values = weight.numpy()
            values[padding_idx] = 0.0
            weight = tensor(values, dtype=weight.dtype, backend=backend)
        self.weight = Parameter(weight)

    def forward(self, input: Tensor) -> Tensor:
        return embedding(input, self.weight.value, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
