"""PyTorch's free functions and the Tensor conveniences added for PyTorch code (`clone`, `t`,
`flatten`, `narrow`, `min`, `argmax`, `argmin`, `softmax`): each is the method it names,
and the differentiable ones pass a central-difference check."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

X = np.random.default_rng(5).standard_normal((2, 3, 4))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.clone() * 2.0,
        lambda x: x.flatten(1),
        lambda x: x.flatten(),
        lambda x: x.narrow(2, 1, 2),
        lambda x: x.narrow(1, -2, 2),
        lambda x: x.min(1).values,
        lambda x: x.min(),
        lambda x: x.sum(0).t(),
        lambda x: x.softmax(-1),
        lambda x: x.log_softmax(1),
        lambda x: minitorch.pow(minitorch.exp(x), 2.5),
        lambda x: minitorch.bmm(x, x.transpose(1, 2)),
    ],
)
def test_the_differentiable_conveniences_pass_central_differences(fn) -> None:
    grad_check(fn, minitorch.tensor(X))


def test_the_conveniences_compute_what_numpy_does() -> None:
    x = minitorch.tensor(X)
    np.testing.assert_array_equal(x.flatten(1).numpy(), X.reshape(2, 12))
    np.testing.assert_array_equal(x.narrow(2, 1, 2).numpy(), X[:, :, 1:3])
    np.testing.assert_array_equal(x.min(2).values.numpy(), X.min(2))
    np.testing.assert_array_equal(x.argmax(1).numpy(), X.argmax(1))
    np.testing.assert_array_equal(x.argmin(2, keepdim=True).numpy(), X.argmin(2)[..., None])
    assert x.argmax().item() == X.argmax() and x.argmax().dtype == minitorch.int64
    clone = x.clone()
    assert clone._tensor._storage is not x._tensor._storage
    np.testing.assert_array_equal(minitorch.full_like(x, 2.0).numpy(), np.full(X.shape, 2.0))
    assert minitorch.zeros_like(x, dtype=minitorch.int64).dtype == minitorch.int64
    assert minitorch.full((2,), True).dtype == minitorch.bool_ and minitorch.full(3, 1.5).shape == (3,)
    np.testing.assert_array_equal(minitorch.eye(2, 3).numpy(), np.eye(2, 3))
    assert minitorch.is_tensor(x) and not minitorch.is_tensor(X) and minitorch.numel(x) == 24


def test_errors_name_the_call_and_the_shapes() -> None:
    x = minitorch.tensor(X)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        x.t()
    with pytest.raises(RuntimeError, match="start \\(3\\) \\+ length \\(2\\) exceeds dimension size \\(4\\)"):
        x.narrow(2, 3, 2)
    with pytest.raises(minitorch.ShapeError, match="bmm: both operands must be 3-D"):
        minitorch.bmm(x, x[0])


def test_star_import_does_not_shadow_pythons_own_functions() -> None:
    names: dict = {}
    exec("from minitorch import *", names)
    assert not {"sum", "max", "min", "abs", "pow", "float", "bool"} & names.keys()
    assert {"tensor", "exp", "softmax", "nn", "Tensor", "zeros_like"} <= names.keys()
    assert minitorch.sum is not sum and minitorch.sum(minitorch.tensor([1.0, 2.0])).item() == 3.0


@pytest.mark.parametrize("fn", [minitorch.maximum, minitorch.minimum, minitorch.max, minitorch.min])
def test_elementwise_max_min_pass_central_differences(fn) -> None:
    # away from ties, where the function is not differentiable
    a = minitorch.tensor(X)
    b = minitorch.tensor(X[0, ::-1] + 0.05)  # broadcast [3, 4] against [2, 3, 4]
    grad_check(lambda a, b: fn(a, b), a, b)
