"""`tensor_data.view_strides` against PyTorch's `view` on the same layouts: the same strides
where torch makes a view, and no view where torch refuses one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.tensor_data import view_strides
from test_view_strides import _factorisations

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_view_strides_are_torchs(shape, data) -> None:
    order = data.draw(st.permutations(range(len(shape))))
    t = torch.arange(int(np.prod(shape)), dtype=torch.float64).reshape(shape).permute(*order)
    d = data.draw(st.integers(0, t.dim() - 1))
    t = t.narrow(d, 0, data.draw(st.integers(1, t.shape[d])))
    new_shape = data.draw(st.sampled_from(_factorisations(t.numel(), data.draw(st.integers(1, 4)))))
    ours = view_strides(tuple(t.shape), t.stride(), new_shape)
    try:
        theirs = t.view(new_shape).stride()
    except RuntimeError:
        theirs = None
    if theirs is None or ours is None:
        assert ours == theirs, (tuple(t.shape), t.stride(), new_shape)
    else:  # strides of dimensions of size 1 are never used to step: compare the others
        assert [s for s, n in zip(ours, new_shape) if n != 1] == [
            s for s, n in zip(theirs, new_shape) if n != 1
        ]
