"""Splitting a tensor into pieces along a dimension: `split` and `chunk` (the inverse of
`cat`), with PyTorch's names, arguments and errors.

    split(x [10, 4], 4)          → [4, 4], [4, 4], [2, 4]    pieces of 4 rows, the last smaller
    split(x [10, 4], [3, 7])     → [3, 4], [7, 4]            pieces of the given sizes
    chunk(x [8, 12], 4, dim=1)   → 4 × [8, 3]                ⌈size / chunks⌉ per piece

Each piece is a view `x[..., start:stop, ...]` (basic indexing, `indexing.py`): no copy,
and differentiable — the gradient of every piece lands in its slice of ∂L/∂x. An LSTM
splits its 4H gate pre-activations with `chunk(4, dim=1)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Union

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["chunk", "split"]


def _pieces(tensor: "Tensor", dim: int, sizes: Sequence[int]) -> tuple["Tensor", ...]:
    """Views of consecutive slices of the given sizes along (non-negative) `dim`."""
    before = (slice(None),) * dim
    out = []
    start = 0
    for size in sizes:
        out.append(tensor[before + (slice(start, start + size),)])
        start += size
    return tuple(out)


def _dim(name: str, tensor: "Tensor", dim: int) -> int:
    if tensor.dims == 0:
        raise RuntimeError(f"{name}: expected a tensor with at least 1 dimension, got a 0-d tensor")
    if not -tensor.dims <= dim < tensor.dims:
        raise IndexError(
            f"{name}: dimension out of range (expected to be in range of "
            f"[{-tensor.dims}, {tensor.dims - 1}], but got {dim})"
        )
    return dim % tensor.dims


def split(
    tensor: "Tensor", split_size_or_sections: Union[int, Sequence[int]], dim: int = 0
) -> tuple["Tensor", ...]:
    """Pieces of `split_size_or_sections` along `dim` (as `torch.split`).

    An int s gives pieces of size s (the last one smaller if s does not divide the size);
    a list of sizes gives one piece per entry, and the sizes must sum to the dimension's size.
    """
    d = _dim("split()", tensor, dim)
    total = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
        if s == 0:
            if total != 0:
                raise RuntimeError(
                    f"split_size can only be 0 if dimension size is 0, but got dimension size of {total}"
                )
            return (tensor,)
        sizes = [min(s, total - start) for start in range(0, total, s)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes) or sum(sizes) != total:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {total} (input tensor's size at "
                f"dimension {d}), but got split_sizes={sizes}"
            )
    return _pieces(tensor, d, sizes)


def chunk(input: "Tensor", chunks: int, dim: int = 0) -> tuple["Tensor", ...]:
    """`chunks` pieces along `dim` of ⌈size / chunks⌉ each, the last one smaller (as
    `torch.chunk`); fewer pieces when the size does not allow `chunks` of them."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim("chunk()", input, dim)
    total = input.shape[d]
    if total == 0:
        return _pieces(input, d, [0] * chunks)
    return split(input, -(-total // chunks), d)
