"""`view` of a tensor that is not contiguous (PyTorch's rule, `tensor_data.view_strides`):
where the rule finds strides, the view shows the tensor's elements in row-major order
under the new shape, shares its storage and passes gradients back; where it finds none,
`view` raises and `reshape` copies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.tensor_data import view_strides
from minitorch.testing import grad_check

pytestmark = pytest.mark.library


def _factorisations(n: int, dims: int) -> list[tuple[int, ...]]:
    """Every shape of `dims` dimensions whose sizes multiply to n."""
    if dims == 1:
        return [(n,)]
    return [(k,) + rest for k in range(1, n + 1) if n % k == 0 for rest in _factorisations(n // k, dims - 1)]


@st.composite
def strided_views(draw):
    """A tensor made by permuting and slicing a contiguous one, and a shape of its size."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    order = tuple(draw(st.permutations(range(len(shape)))))
    base = minitorch.tensor(np.arange(math.prod(shape), dtype=np.float64).reshape(shape))
    t = base.permute(*order)
    d = draw(st.integers(0, t.dims - 1))
    stop = draw(st.integers(1, t.shape[d]))
    t = t[(slice(None),) * d + (slice(0, stop),)]
    new_shape = draw(st.sampled_from(_factorisations(t.numel(), draw(st.integers(1, 4)))))
    return t, new_shape


@settings(max_examples=300, deadline=None)
@given(strided_views())
def test_a_view_shows_the_elements_in_row_major_order(case) -> None:
    t, new_shape = case
    strides = view_strides(t.shape, t._tensor.strides, new_shape)
    if strides is None:
        with pytest.raises(minitorch.ShapeError, match="not compatible with input tensor's size and stride"):
            t.view(*new_shape)
        assert not t._tensor.is_contiguous()
    else:
        out = t.view(*new_shape)
        assert out._tensor._storage is t._tensor._storage  # no copy
        np.testing.assert_array_equal(out.numpy(), t.numpy().reshape(new_shape))
    np.testing.assert_array_equal(t.reshape(*new_shape).numpy(), t.numpy().reshape(new_shape))


def test_split_then_view_is_a_view_and_its_gradient_flows_back() -> None:
    x = minitorch.tensor(np.arange(24.0).reshape(4, 6))
    left, _ = x.split(3, dim=1)
    assert view_strides(left.shape, left._tensor.strides, (2, 2, 3)) == (12, 6, 1)
    assert view_strides(left.shape, left._tensor.strides, (12,)) is None
    grad_check(
        lambda a: a.split(3, dim=1)[0].view(2, 2, 3) * 2.0, minitorch.tensor(np.arange(24.0).reshape(4, 6))
    )
    grad_check(
        lambda a: a.permute(1, 0).view(6, 2, 2).sum(2), minitorch.tensor(np.arange(24.0).reshape(4, 6))
    )
