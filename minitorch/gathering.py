"""Picking along one dimension by index: `gather`, `topk`, and drawing indices: `multinomial`.

`gather(x, dim, index)` takes, at every position of `index`, the element of x that the
index names along `dim` and the position itself names along the other dimensions:

    out[i, j, k] = x[index[i, j, k], j, k]      dim = 0
    out[i, j, k] = x[i, index[i, j, k], k]      dim = 1        (index.shape[d] ≤ x.shape[d], d ≠ dim)

It is advanced indexing (`indexing.py`) with, in every other dimension, the positions
0 … n−1 laid along that dimension: `x[index, j_grid, k_grid]`. So it is a gather of the
backend and its backward a scatter-add, as for any `x[idx]`.

`topk(x, k, dim)` is a gather: the indices of the k largest (or smallest) values, found by
sorting (not differentiable: data), then `gather` picks the values (differentiable).

`multinomial(p, n)` draws n category indices per row with probabilities proportional to
the row of p (minitorch's generator, `manual_seed`): the sampling step of a language model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .rng import generator

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["gather", "topk", "multinomial", "TopK"]


class TopK(NamedTuple):
    """What `topk` returns, as in PyTorch."""

    values: "Tensor"
    indices: "Tensor"


def gather(input: "Tensor", dim: int, index: "Tensor") -> "Tensor":
    """out[…, i_dim, …] = input[…, index[…, i_dim, …], …] (module docstring)."""
    d = input._dim(dim)
    idx = index.numpy() if hasattr(index, "_tensor") else np.asarray(index)
    if idx.dtype != np.int64:
        raise RuntimeError(f"gather(): Expected dtype int64 for index, got {idx.dtype}")
    if idx.ndim != input.dims:
        raise RuntimeError(
            f"gather(): Index tensor must have the same number of dimensions as input tensor "
            f"(index {idx.shape}, input {input.shape})"
        )
    for k in range(input.dims):
        if k != d and idx.shape[k] > input.shape[k]:
            raise RuntimeError(
                f"gather(): Size does not match at dimension {k} expected index {idx.shape} to be "
                f"smaller than self {input.shape} apart from dimension {d}"
            )
    bad = idx[(idx < 0) | (idx >= input.shape[d])]
    if bad.size:
        raise IndexError(
            f"gather(): index {int(bad[0])} is out of bounds for dimension {d} with size {input.shape[d]}"
        )
    grids = np.indices(idx.shape, sparse=True)
    key = tuple(
        input.new_tensor(np.broadcast_to(idx if k == d else grids[k], idx.shape).copy(), dtype=np.int64)
        for k in range(input.dims)
    )
    return input[key]


def topk(input: "Tensor", k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:  # noqa: A002
    """The k largest (smallest with `largest=False`) values along `dim` and their indices,
    largest first (as PyTorch; ties keep the earlier index first)."""
    d = input._dim(dim) if input.dims else 0
    size = input.shape[d] if input.dims else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, size {size} along dimension {d})")
    values = input.numpy()
    if input.dims == 0:
        return TopK(input, input.new_tensor(np.zeros((), np.int64), dtype=np.int64))
    keys = -values if largest else values
    order = np.argsort(keys, axis=d, kind="stable")
    idx = np.take(order, np.arange(k), axis=d)
    indices = input.new_tensor(idx, dtype=np.int64)
    return TopK(gather(input, d, indices), indices)


def multinomial(input: "Tensor", num_samples: int, replacement: bool = False) -> "Tensor":
    """Category indices drawn from each row of `input` (non-negative weights, [C] or [N, C]):
    int64, [num_samples] or [N, num_samples]."""
    weights = input.numpy().astype(np.float64)
    if input.dims not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got shape {input.shape}")
    rows = weights.reshape(-1, weights.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for r, row in enumerate(rows):
        total = row.sum()
        if total <= 0:
            raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(row):
            raise RuntimeError(
                "multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        out[r] = generator().choice(len(row), size=num_samples, replace=replacement, p=row / total)
    return input.new_tensor(out.reshape(weights.shape[:-1] + (num_samples,)), dtype=np.int64)
