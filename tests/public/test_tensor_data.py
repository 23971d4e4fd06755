"""Tasks 2.1 (strides and indexing) and 2.2 (broadcasting).

These tests use `TensorData` and the broadcasting functions only: a tensor operation such as
`a + b`, `.contiguous()` or `.permute()` runs a kernel of task 2.3, so the tests that need
one (broadcast errors of `a + b`, copies of permuted tensors, gradients summed back to an
operand's shape by `reduce_to_shape`) are in test_tensor.py, marked with 2.3 or 2.4.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.tensor_data import (
    IndexingError,
    ShapeError,
    TensorData,
    broadcast_index,
    index_to_position,
    shape_broadcast,
    strides_from_shape,
    to_index,
)

from tensor_strategies import broadcastable_pair, shapes

FAST = settings(max_examples=40, deadline=None)


# ---- 2.1 -----------------------------------------------------------------------------


@pytest.mark.task2_1
def test_strides_from_shape() -> None:
    assert strides_from_shape((2, 3, 4)) == (12, 4, 1)
    assert strides_from_shape((5,)) == (1,)
    assert strides_from_shape(()) == ()
    assert strides_from_shape((3, 1, 2)) == (2, 2, 1)


@pytest.mark.task2_1
def test_layout_example() -> None:
    t = TensorData(np.arange(6.0), (2, 3))
    assert t.is_contiguous()
    assert t.strides == (3, 1)
    assert t.index((1, 0)) == 3
    assert t.get((1, 2)) == 5.0
    tt = t.permute(1, 0)
    assert tt.shape == (3, 2) and tt.strides == (1, 3)
    assert not tt.is_contiguous()
    assert tt.get((2, 1)) == 5.0


@pytest.mark.task2_1
@FAST
@given(shapes(max_dims=4))
def test_to_index_is_inverse_of_position(shape: tuple[int, ...]) -> None:
    data = TensorData(np.zeros(int(np.prod(shape))), shape)
    out = np.zeros(len(shape), dtype=np.int64)
    for ordinal in range(data.size):
        to_index(ordinal, data._shape, out)
        assert all(0 <= out[k] < shape[k] for k in range(len(shape)))
        assert index_to_position(out, data._strides) == ordinal


@pytest.mark.task2_1
@FAST
@given(shapes(max_dims=4), st.data())
def test_permute_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(len(shape))))
    storage = np.arange(float(np.prod(shape)))
    td = TensorData(storage, shape).permute(*order)
    np.testing.assert_array_equal(td.to_numpy(), storage.reshape(shape).transpose(order))
    for idx in td.indices():
        assert td.get(idx) == storage.reshape(shape).transpose(order)[idx]


@pytest.mark.task2_1
def test_bad_layouts_raise() -> None:
    with pytest.raises(ShapeError, match="storage holds only"):
        TensorData(np.zeros(5), (2, 3))
    with pytest.raises(ShapeError, match="strides"):
        TensorData(np.zeros(6), (2, 3), (1,))
    t = TensorData(np.zeros(6), (2, 3))
    with pytest.raises(IndexingError, match="out of range"):
        t.index((2, 0))
    with pytest.raises(IndexingError, match="entries"):
        t.index((1,))
    with pytest.raises(ShapeError, match="exactly once"):
        t.permute(0, 0)


@pytest.mark.task2_1
def test_view_of_non_contiguous_tensor_raises() -> None:
    t = minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], backend=minitorch.SimpleBackend)
    np.testing.assert_array_equal(t.view(3, 2).numpy(), [[1, 2], [3, 4], [5, 6]])
    # t's transpose, built on TensorData.permute (Tensor.permute is task 2.3): not contiguous.
    tt = minitorch.Tensor(
        TensorData(np.arange(1.0, 7.0), (2, 3)).permute(1, 0), backend=minitorch.SimpleBackend
    )
    np.testing.assert_array_equal(tt.numpy(), [[1, 4], [2, 5], [3, 6]])
    with pytest.raises(ShapeError, match="contiguous"):
        tt.view(6)
    with pytest.raises(ShapeError, match="invalid"):
        t.view(4)


@pytest.mark.library
def test_view_shapes_are_checked_before_the_unchecked_layout() -> None:
    """`View` builds its layout without `TensorData`'s checks, so `Tensor.view` must refuse
    every bad shape itself: negative sizes (even ones whose product is right), two −1s,
    a wrong size."""
    t = minitorch.arange(6)
    for shape, match in [
        ((-2, -3), "negative"),
        ((-1, -1), "only one"),
        ((4, -1), "invalid"),
        ((7,), "invalid"),
    ]:
        with pytest.raises(ShapeError, match=match):
            t.view(*shape)
    assert t.view(2, -1).shape == (2, 3) and t.view(-1).shape == (6,)


# ---- 2.2 -----------------------------------------------------------------------------


@pytest.mark.task2_2
def test_shape_broadcast_examples() -> None:
    assert shape_broadcast((1,), (5, 5)) == (5, 5)
    assert shape_broadcast((5, 5), (1,)) == (5, 5)
    assert shape_broadcast((1, 5, 5), (5, 5)) == (1, 5, 5)
    assert shape_broadcast((5, 1, 5, 1), (1, 5, 1, 5)) == (5, 5, 5, 5)
    assert shape_broadcast((4, 1, 3), (5, 1)) == (4, 5, 3)
    assert shape_broadcast((), (2, 3)) == (2, 3)


@pytest.mark.task2_2
@pytest.mark.parametrize("a, b", [((5, 7, 5, 1), (1, 5, 1, 5)), ((2, 3), (3, 2)), ((4,), (5,))])
def test_incompatible_broadcast_names_both_shapes(a, b) -> None:
    with pytest.raises(ShapeError) as err:
        shape_broadcast(a, b)
    assert str(tuple(a)) in str(err.value) and str(tuple(b)) in str(err.value)


@pytest.mark.task2_2
@FAST
@given(broadcastable_pair(max_dims=4))
def test_broadcast_laws(pair) -> None:
    a, b = pair
    out = shape_broadcast(a, b)
    assert out == shape_broadcast(b, a)  # symmetric
    assert out == tuple(np.broadcast_shapes(a, b))  # NumPy's rule
    assert shape_broadcast(out, a) == out  # idempotent: the result absorbs its operands
    assert shape_broadcast(out, (1,) * len(out)) == out  # ones are the identity


@pytest.mark.task2_2
@FAST
@given(broadcastable_pair(max_dims=4))
def test_broadcast_index_matches_numpy(pair) -> None:
    big, small = pair
    big = shape_broadcast(big, small)
    values = np.arange(float(np.prod(small))).reshape(small)
    expanded = np.broadcast_to(values, big)
    out = np.zeros(len(small), dtype=np.int64)
    for idx in np.ndindex(*big):
        broadcast_index(np.array(idx, dtype=np.int64), np.array(big), np.array(small), out)
        assert values[tuple(out)] == expanded[idx]
