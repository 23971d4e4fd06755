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

Both directions are kernels over raw storages that the tensor backend runs
(`backend.embedding_gather`, `backend.embedding_scatter_add`; see `tensor_ops`): Python
on the simple backend, compiled and parallel on the fast one, and CUDA versions of them
on the CUDA backend (one GPU thread per entry of the lookup, per column of the gradient). The ids are data, not part
of the graph: they are checked and flattened as a NumPy int64 array before the lookup.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from numba import prange

from ..autodiff import Context
from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..constructors import randn, tensor
from ..function import Function
from ..tensor_data import Shape, Storage, Strides
from ..tensor_ops import TensorBackend, backend_kernel
from .validation import check_float

__all__ = ["embedding", "Embedding"]


# ---------------------------------------------------------------------------------------
# The kernels (library code; the backend runs them, see `tensor_ops.compile_kernel`)


@backend_kernel("embedding lookup (embedding_gather)")
def embedding_gather(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    weight: Storage,
    weight_shape: Shape,
    weight_strides: Strides,
    ids: Storage,
) -> None:
    """Kernel: out[i, :] = weight[ids[i], :] for out [M, D], weight [V, D], ids [M] (int64,
    contiguous). Parallel over the M rows of out."""
    for i in prange(out_shape[0]):
        row = ids[i]
        for j in range(out_shape[1]):
            out[i * out_strides[0] + j * out_strides[1]] = weight[
                row * weight_strides[0] + j * weight_strides[1]
            ]


@backend_kernel("embedding backward (embedding_scatter_add)")
def embedding_scatter_add(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    grad: Storage,
    grad_shape: Shape,
    grad_strides: Strides,
    ids: Storage,
    padding_idx: int,
) -> None:
    """Kernel: out[ids[i], :] += grad[i, :] for every i with ids[i] ≠ padding_idx, into
    out = ∂L/∂weight [V, D] (zero on arrival); grad [M, D], ids [M] int64 contiguous.

    Repeated ids add up. Parallel over the D columns, not the M rows: two rows with the
    same id would race on the same entries of out, two columns never do.
    """
    for j in prange(out_shape[1]):
        for i in range(grad_shape[0]):
            row = ids[i]
            if row != padding_idx:
                out[row * out_strides[0] + j * out_strides[1]] += grad[
                    i * grad_strides[0] + j * grad_strides[1]
                ]


def _rows(t: Tensor, m: int) -> tuple[Storage, Shape, Strides]:
    """(storage, shape, strides) of a contiguous tensor seen as [M, D] (its last dimension D)."""
    d = t.shape[-1]
    return t.tuple()[0], np.array([m, d], dtype=np.int64), np.array([d, 1], dtype=np.int64)


class EmbeddingFun(Function):
    """out = weight[ids] (a row lookup); the gradient scatter-adds into weight."""

    @staticmethod
    def forward(ctx: Context, weight: Tensor, ids: np.ndarray, padding_idx: Optional[int]) -> Tensor:
        """`ids`: int64 ndarray of any shape [*] (checked by `embedding`) → [*, D]."""
        gather = weight.backend.embedding_gather  # the backend's version (raises if it has none)
        flat = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        out = weight.new_zeros(ids.shape + (weight.shape[1],))
        gather(*_rows(out, flat.size), *weight.tuple(), flat)
        ctx.save_for_backward(flat, weight.shape, weight.dtype, padding_idx)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None, None]:
        flat, shape, dtype, padding_idx = ctx.saved_values
        scatter_add = grad_output.backend.embedding_scatter_add
        grad = grad_output.new_zeros(shape, dtype=dtype)
        g = grad_output.contiguous()
        scatter_add(*grad.tuple(), *_rows(g, flat.size), flat, -1 if padding_idx is None else padding_idx)
        return grad, None, None


def _ids(name: str, input: Any, num_embeddings: int) -> np.ndarray:
    """The ids as an int64 ndarray, checked to lie in 0 … num_embeddings − 1."""
    if isinstance(input, Tensor):
        if input.dtype != np.int64:
            raise TypeError(f"{name}: ids must be an int64 tensor (minitorch.int64), got dtype {input.dtype}")
        ids = input.numpy()
    else:
        ids = np.asarray(input)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name}: ids must be integers, got {ids.dtype}")
        ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_embeddings):
        bad = ids.min() if ids.min() < 0 else ids.max()
        raise IndexError(
            f"{name}: id {bad} is out of range for {num_embeddings} embeddings (valid: 0 … {num_embeddings - 1})"
        )
    return ids


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None) -> Tensor:
    """Rows of `weight` [num, dim] named by the int64 ids `input` [*] → [*, dim], as
    `torch.nn.functional.embedding` (the padding row receives no gradient)."""
    check_float("embedding", weight=weight)
    if weight.dims != 2:
        raise ValueError(
            f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape {weight.shape}"
        )
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
                raise ValueError(
                    f"Embedding: padding_idx {padding_idx} must be within num_embeddings ({num_embeddings})"
                )
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
