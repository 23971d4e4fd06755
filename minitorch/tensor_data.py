"""Stage A2: how an n-dimensional tensor lives in flat memory.

A tensor's values sit in a 1-D *storage* array. Its *shape* says how many entries each
dimension has; its *strides* say how far apart (in storage elements) two neighbours along
each dimension are. A multidimensional index (i₀, …, i_{d−1}) lives at

    position = Σ_k  i_k · strides[k]

Permuting dimensions or viewing a slice changes only shape and strides, never the storage.
Broadcasting (NumPy / PyTorch rules) lines shapes up from the right; a dimension of size 1
(or a missing one) is repeated to match the other operand.

The index helpers here are plain loops over small integer arrays so that the fast backends
can compile them with Numba (`numba.njit(inline="always")`).
"""

from __future__ import annotations

import math
import random
from typing import Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from .device_memory import MIRRORS, on_host

MAX_DIMS = 32

#: A flat array of values (float64 by default, float32 supported, int64 for indices).
Storage = npt.NDArray[np.float64]
#: Integer arrays describing indices, shapes and strides (what the kernels work on).
OutIndex = npt.NDArray[np.int64]
Index = npt.NDArray[np.int64]
Shape = npt.NDArray[np.int64]
Strides = npt.NDArray[np.int64]

#: The same, as the tuples that user code passes around.
UserIndex = Sequence[int]
UserShape = Sequence[int]
UserStrides = Sequence[int]

INDEX_DTYPE = np.int64


class IndexingError(RuntimeError):
    """An index outside the tensor, or with the wrong number of dimensions."""


class ShapeError(RuntimeError, ValueError):
    """Shapes that cannot be broadcast, viewed or permuted as asked.

    A `RuntimeError`, as PyTorch raises for these, and a `ValueError` (what it was before).
    """


# ## Task 2.1: strides and indexing


def index_to_position(index: Index, strides: Strides) -> int:
    """Storage position of a multidimensional index: Σ_k index[k] · strides[k].

    Args:
        index: the index, one entry per dimension (shape [d]).
        strides: the tensor's strides (shape [d]).

    Returns:
        The position in storage.
    """
    # BEGIN SOLUTION 2.1
    position = 0
    for k in range(len(index)):
        position += index[k] * strides[k]
    return position
    # END SOLUTION 2.1


def to_index(ordinal: int, shape: Shape, out_index: OutIndex) -> None:
    """Turn an ordinal 0 … size−1 into the index it denotes in row-major order.

    Row-major (C) order enumerates the last dimension fastest, so for shape (2, 3)
    ordinals 0…5 are (0,0) (0,1) (0,2) (1,0) (1,1) (1,2). This is the inverse of
    `index_to_position` with contiguous strides. Works for any shape; `out_index`
    (shape [len(shape)]) is overwritten.
    """
    # BEGIN SOLUTION 2.1
    rest = ordinal
    for k in range(len(shape) - 1, -1, -1):
        out_index[k] = rest % shape[k]
        rest = rest // shape[k]
    # END SOLUTION 2.1


def strides_from_shape(shape: UserShape) -> tuple[int, ...]:
    """Contiguous (row-major) strides: strides[k] = Π_{j>k} shape[j]."""
    # BEGIN SOLUTION 2.1
    strides = []
    step = 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= int(size)
    return tuple(reversed(strides))
    # END SOLUTION 2.1


# ## Task 2.2: broadcasting


def broadcast_index(big_index: Index, big_shape: Shape, shape: Shape, out_index: OutIndex) -> None:
    """Map an index of the broadcast (big) shape to the index of a smaller operand.

    Shapes are aligned on the right: dimension k of `shape` matches dimension
    k + (len(big_shape) − len(shape)) of `big_shape`. Where the operand has size 1 the
    index is 0 (the one entry is repeated); elsewhere it equals the big index.

    Args:
        big_index: index into the broadcast shape (shape [len(big_shape)]).
        big_shape: the broadcast shape.
        shape: the operand's shape (len(shape) ≤ len(big_shape)).
        out_index: overwritten with the operand's index (shape [len(shape)]).
    """
    # BEGIN SOLUTION 2.2
    offset = len(big_shape) - len(shape)
    for k in range(len(shape)):
        if shape[k] == 1:
            out_index[k] = 0
        else:
            out_index[k] = big_index[k + offset]
    # END SOLUTION 2.2


def shape_broadcast(shape1: UserShape, shape2: UserShape) -> tuple[int, ...]:
    """The shape two operands broadcast to (NumPy / PyTorch rules).

    Align on the right, pad the shorter shape with 1s on the left; each pair of sizes
    must be equal or one of them 1, and the result takes the larger.
    E.g. (4, 1, 3) and (5, 1) → (4, 5, 3).

    Raises:
        ShapeError: naming both shapes, when some pair is neither equal nor 1.
    """
    # BEGIN SOLUTION 2.2
    a, b = tuple(shape1), tuple(shape2)
    n = len(a) if len(a) > len(b) else len(b)
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(int(x))
        elif x == 1:
            out.append(int(y))
        else:
            raise ShapeError(
                f"cannot broadcast shapes {tuple(shape1)} and {tuple(shape2)}: "
                f"sizes {x} and {y} differ and neither is 1"
            )
    return tuple(out)
    # END SOLUTION 2.2


#: Layouts of row-major shapes already seen (`_row_major_layout`): shape → (strides, shape
#: array, strides array, size); at most _ROW_MAJOR_KEPT of them.
_ROW_MAJOR: dict[tuple[int, ...], tuple[tuple[int, ...], np.ndarray, np.ndarray, int]] = {}
_ROW_MAJOR_KEPT = 4096
#: Layouts seen by `TensorData.view_of`: (shape, strides) → (shape array, strides array,
#: size); at most _VIEWS_KEPT of them (strides vary more than shapes do).
_VIEWS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray, np.ndarray, int]] = {}
_VIEWS_KEPT = 4096


def _row_major_layout(shape: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, int]:
    """(strides, shape array, strides array, size) of the row-major layout of `shape`, made
    once per shape and shared by every TensorData of that layout (kernels only read the
    arrays; making two arrays costs about a microsecond, a tenth of a small operation)."""
    layout = _ROW_MAJOR.get(shape)
    if layout is None:
        strides = tuple(int(s) for s in strides_from_shape(shape))
        layout = (
            strides,
            np.array(shape, dtype=INDEX_DTYPE),
            np.array(strides, dtype=INDEX_DTYPE),
            math.prod(shape),
        )
        if len(_ROW_MAJOR) < _ROW_MAJOR_KEPT:
            _ROW_MAJOR[shape] = layout
    return layout


class TensorData:
    """Storage plus shape and strides: the memory layout of one tensor.

    `_storage` is the storage's values in host memory. A tensor of the CUDA backend may
    have newer values in GPU memory, where its kernels wrote them: reading `_storage`
    fetches them first (`device_memory`). `_buffer` is the same array without that step,
    for what only shares the storage (a view) or hands it to a kernel launcher that finds
    the GPU copy itself (`Tensor.tuple`)."""

    _buffer: Storage
    _strides: Strides
    _shape: Shape
    strides: tuple[int, ...]
    shape: tuple[int, ...]
    dims: int

    def __init__(
        self,
        storage: Union[Sequence[float], Storage],
        shape: UserShape,
        strides: UserStrides | None = None,
    ):
        if not isinstance(storage, np.ndarray):
            storage = np.array(storage, dtype=np.float64)
        if storage.ndim != 1:
            raise ShapeError(f"storage must be 1-D, got an array of shape {storage.shape}")
        self._buffer = storage
        shape = tuple(map(int, shape))
        if shape and min(shape) < 0:
            raise ShapeError(f"negative size in shape {shape}")
        if len(shape) > MAX_DIMS:
            raise ShapeError(f"at most {MAX_DIMS} dimensions are supported, got {len(shape)}")
        if strides is None:  # row-major: the layout of the shape, computed once and shared
            strides, self._shape, self._strides, self.size = _row_major_layout(shape)
        else:
            strides = tuple(map(int, strides))
            if len(strides) != len(shape):
                raise ShapeError(f"strides {strides} do not match shape {shape}")
            self._shape = np.array(shape, dtype=INDEX_DTYPE)
            self._strides = np.array(strides, dtype=INDEX_DTYPE)
            self.size = math.prod(shape)
        self.shape = shape
        self.strides = strides
        self.dims = len(shape)
        if self.size > 0:
            last = 0
            for size, stride in zip(shape, strides):
                last += (size - 1) * stride
            if last >= len(storage):
                raise ShapeError(
                    f"shape {shape} with strides {strides} reaches position {last}, "
                    f"but storage holds only {len(storage)} values"
                )

    @property
    def _storage(self) -> Storage:
        """The storage, holding the newest values in host memory (see the class docstring)."""
        if MIRRORS:  # some storage has a GPU copy (else, as on every CPU-only run, nothing to do)
            return on_host(self._buffer)
        return self._buffer

    @_storage.setter
    def _storage(self, storage: Storage) -> None:
        self._buffer = storage

    def __getstate__(self) -> dict:
        """For pickle and `copy`: the host values, fetched first where a kernel wrote them last."""
        state = self.__dict__.copy()
        state["_buffer"] = self._storage
        return state

    @classmethod
    def row_major(cls, storage: Storage, shape: tuple[int, ...]) -> "TensorData":
        """A row-major TensorData over `storage` (its first prod(shape) values), without the
        checks of `__init__` — for outputs the fast backend allocates itself, and for a
        contiguous tensor seen with another shape of the same size (`View`), whose shape
        the caller has already checked. The strides and the shape/stride arrays the kernels
        read are computed once per shape and shared (kernels only read them)."""
        data = cls.__new__(cls)
        data._buffer = storage
        data.shape = shape
        data.strides, data._shape, data._strides, data.size = _row_major_layout(shape)
        data.dims = len(shape)
        return data

    @classmethod
    def view_of(cls, storage: Storage, shape: tuple[int, ...], strides: tuple[int, ...]) -> "TensorData":
        """A TensorData over `storage` with the given shape and strides, without the checks
        of `__init__` — for views the library derives from a valid tensor (a batch of one
        in front of a matrix, say), where the checks cannot fail. Shape/stride arrays are
        shared per layout, as in `row_major`."""
        key = (shape, strides)
        layout = _VIEWS.get(key)
        if layout is None:
            layout = (
                np.array(shape, dtype=INDEX_DTYPE),
                np.array(strides, dtype=INDEX_DTYPE),
                math.prod(shape),
            )
            if len(_VIEWS) < _VIEWS_KEPT:
                _VIEWS[key] = layout
        data = cls.__new__(cls)
        data._buffer = storage
        data.shape, data.strides = shape, strides
        data._shape, data._strides, data.size = layout
        data.dims = len(shape)
        return data

    @property
    def dtype(self) -> np.dtype:
        return self._buffer.dtype

    def is_contiguous(self) -> bool:
        """True when the strides are the row-major strides of the shape (sizes 1 ignored)."""
        layout = _ROW_MAJOR.get(self.shape)  # a shape seen before: one comparison, no loop
        if layout is not None and layout[0] == self.strides:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    @staticmethod
    def shape_broadcast(shape_a: UserShape, shape_b: UserShape) -> tuple[int, ...]:
        return shape_broadcast(shape_a, shape_b)

    def index(self, index: Union[int, UserIndex]) -> int:
        """Storage position of a user index, with bounds checking."""
        if isinstance(index, (int, np.integer)):
            index = (int(index),)
        index = tuple(index)
        if len(index) != len(self.shape):
            raise IndexingError(
                f"index {index} has {len(index)} entries, shape {self.shape} needs {len(self.shape)}"
            )
        for i, (ix, size) in enumerate(zip(index, self.shape)):
            if ix < 0 or ix >= size:
                raise IndexingError(f"index {index} is out of range for shape {self.shape} (dimension {i})")
        return int(index_to_position(np.array(index, dtype=INDEX_DTYPE), self._strides))

    def indices(self) -> Iterator[tuple[int, ...]]:
        """Every index of the shape, in row-major order."""
        out = np.zeros(len(self.shape), dtype=INDEX_DTYPE)
        for ordinal in range(self.size):
            to_index(ordinal, self._shape, out)
            yield tuple(int(i) for i in out)

    def sample(self) -> tuple[int, ...]:
        """A random valid index."""
        return tuple(random.randint(0, s - 1) for s in self.shape)

    def get(self, key: UserIndex) -> float:
        return self._storage[self.index(key)].item()

    def set(self, key: UserIndex, val: float) -> None:
        self._storage[self.index(key)] = val

    def tuple(self) -> tuple[Storage, Shape, Strides]:
        """(storage, shape, strides): the three arrays a kernel works on."""
        return (self._storage, self._shape, self._strides)

    def permute(self, *order: int) -> "TensorData":
        """A view with dimensions reordered: new dimension k is old dimension order[k]."""
        # BEGIN SOLUTION 2.1
        order = tuple(int(o) for o in order)
        if sorted(order) != list(range(len(self.shape))):
            raise ShapeError(
                f"permute needs each of the dimensions 0…{len(self.shape) - 1} exactly once, "
                f"got {order} for shape {self.shape}"
            )
        return TensorData(
            self._buffer,
            tuple(self.shape[o] for o in order),
            tuple(self.strides[o] for o in order),
        )
        # END SOLUTION 2.1

    def numpy_view(self) -> np.ndarray:
        """The values as a NumPy array in this layout's shape and strides, sharing the storage
        (no copy: writing to it writes the tensor; kernels over NumPy arrays read their inputs so)."""
        storage = self._storage
        if self.is_contiguous():  # the common case: a reshape of the storage (0.3 µs, as_strided 3.5)
            return storage[: self.size].reshape(self.shape)
        itemsize = storage.itemsize
        return np.lib.stride_tricks.as_strided(
            storage, shape=self.shape, strides=tuple(s * itemsize for s in self.strides)
        )

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the values in this layout's shape."""
        if self.size == 0:
            return np.zeros(self.shape, dtype=self.dtype)
        return np.array(self.numpy_view(), copy=True)

    def to_string(self) -> str:
        return np.array2string(self.to_numpy(), precision=4, separator=", ", threshold=200)


def view_strides(shape: UserShape, strides: UserStrides, new_shape: UserShape) -> Optional[tuple[int, ...]]:
    """The strides that show the elements of (shape, strides) in row-major order as
    `new_shape` without copying, or None when there are none (PyTorch's rule for `view`).

    A tensor splits into *chunks*: runs of dimensions whose elements lie evenly spaced in
    storage (stride[d−1] = size[d] · stride[d]; dimensions of size 1 join any chunk). A
    view may merge or split dimensions inside a chunk but not across two: each chunk's
    element count must be matched exactly by a run of the new dimensions, which then
    step through it with the chunk's innermost stride.

        a [4, 6] strides (6, 1), split to a[:, :3]: shape (4, 3), strides (6, 1)
        → view(2, 2, 3): strides (12, 6, 1)      (the [4] dimension split, the [3] kept)
        → view(12): None                          (rows 3 apart, not 1: two chunks merged)
    """
    shape, strides, new_shape = tuple(shape), tuple(strides), tuple(new_shape)
    if math.prod(shape) != math.prod(new_shape):
        return None
    if math.prod(shape) == 0 or not shape:  # nothing to keep in place: row-major strides
        return tuple(math.prod(new_shape[k + 1 :]) for k in range(len(new_shape)))
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1]  # the innermost stride of the current chunk
    chunk_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        chunk_numel *= shape[d]
        chunk_ends = d == 0 or (shape[d - 1] != 1 and strides[d - 1] != chunk_numel * base)
        if chunk_ends:
            while view_d >= 0 and (view_numel < chunk_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != chunk_numel:
                return None
            if d > 0:
                base, chunk_numel, view_numel = strides[d - 1], 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def normalize_shape(shape: Iterable) -> tuple[int, ...]:
    """Accept `f(2, 3)` and `f((2, 3))` alike, as PyTorch does."""
    shape = tuple(shape)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)
