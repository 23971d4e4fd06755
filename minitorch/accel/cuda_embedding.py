"""CUDA twins of the embedding kernels of `nn/embedding.py`: the row gather and its adjoint.

* gather: one thread per entry (i, j) of out [M, D]: out[i, j] = weight[ids[i], j].
* scatter-add: out[ids[i], :] += grad[i, :]. Two rows i with the same id add into the same
  entries, so one thread per (i, j) would race (or need atomic additions, whose order —
  and so whose float rounding — changes from run to run). One thread per column j instead,
  as the CPU kernel's parallel loop: the thread walks the M rows in order, so repeated ids
  add up in the CPU's order and the result is the same on every run. Only D threads: fine
  for a training step's gradient, and the price of a deterministic sum without sorting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from numba import cuda

from ..cuda_ops import launch_per_element
from .cuda_twins import cuda_twin

if TYPE_CHECKING:
    from ..tensor_data import Shape, Storage, Strides

__all__ = ["embedding_gather", "embedding_scatter_add"]


@cuda.jit
def _embedding_gather(out, out_shape, out_strides, weight, weight_shape, weight_strides, ids):
    o = cuda.grid(1)
    width = out_shape[1]
    if o < out_shape[0] * width:
        i = o // width
        j = o % width
        out[i * out_strides[0] + j * out_strides[1]] = weight[
            ids[i] * weight_strides[0] + j * weight_strides[1]
        ]


@cuda_twin
def embedding_gather(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    weight: Storage,
    weight_shape: Shape,
    weight_strides: Strides,
    ids: Storage,
) -> None:
    """out [M, D] = the rows ids [M] of weight [V, D]: one thread per entry of out."""
    launch_per_element(
        _embedding_gather,
        int(out_shape[0]) * int(out_shape[1]),
        out,
        out_shape,
        out_strides,
        weight,
        weight_shape,
        weight_strides,
        ids,
    )


@cuda.jit
def _embedding_scatter_add(out, out_shape, out_strides, grad, grad_shape, grad_strides, ids, padding_idx):
    j = cuda.grid(1)  # this thread owns column j of out
    if j < out_shape[1]:
        for i in range(grad_shape[0]):
            row = ids[i]
            if row != padding_idx:
                out[row * out_strides[0] + j * out_strides[1]] += grad[
                    i * grad_strides[0] + j * grad_strides[1]
                ]


@cuda_twin
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
    """out [V, D] (zeros on arrival) += grad [M, D] at the rows ids [M]: one thread per column."""
    launch_per_element(
        _embedding_scatter_add,
        int(out_shape[1]),
        out,
        out_shape,
        out_strides,
        grad,
        grad_shape,
        grad_strides,
        ids,
        int(padding_idx),
    )
