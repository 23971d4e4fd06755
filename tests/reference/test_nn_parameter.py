"""`nn.Parameter` is a Tensor (as `torch.nn.Parameter`), `ParameterList` / `ParameterDict`,
`Tensor.new_zeros(*sizes)` and `F.linear`: what PyTorch model files use off a parameter."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

W = np.random.default_rng(3).standard_normal((3, 4))


def test_a_parameter_is_a_leaf_tensor_that_shares_its_data() -> None:
    data = minitorch.tensor(W)
    p = nn.Parameter(data)
    assert isinstance(p, minitorch.Tensor) and isinstance(p, minitorch.Parameter)
    assert p.requires_grad and p.is_leaf() and p.value is p
    assert p.shape == (3, 4) and p.numel() == 12 and p.dtype == minitorch.float64
    data[0, 0] = 7.0  # shares storage, as in PyTorch
    assert p[0, 0].item() == 7.0
    assert not nn.Parameter(minitorch.ones(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(nn.Parameter(minitorch.ones(2))).startswith("Parameter containing:\ntensor(")


def test_operations_on_a_parameter_give_tensors_and_gradients() -> None:
    p = nn.Parameter(minitorch.tensor(W))
    x = minitorch.tensor(np.ones((2, 3)))
    for out in (x @ p, p * 2.0, -p, 1.0 + p, p.T, minitorch.cat([p, p]), F.relu(p), p[0]):
        assert type(out) is minitorch.Tensor
    (x @ p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.full((3, 4), 2.0))


def test_a_parameter_is_refused_for_what_is_not_a_tensor() -> None:
    with pytest.raises(TypeError, match="minitorch.Parameter, the A0 box"):
        nn.Parameter(1.0)


def test_update_keeps_the_object_and_is_seen_by_a_pending_backward() -> None:
    p = nn.Parameter(minitorch.tensor(W))
    held = [p]
    p.update(minitorch.zeros((3, 4)))
    assert held[0] is p and p.sum().item() == 0.0 and p.requires_grad
    x = minitorch.tensor(np.ones((2, 3)), requires_grad=True)
    y = (x @ p).sum()
    p.update(minitorch.ones((3, 4)))  # the product saved p: its backward must not use the new data
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modules_hold_tensor_parameters_that_deepcopy_and_optimize() -> None:
    lin = nn.Linear(4, 3)
    assert isinstance(lin.weight, minitorch.Tensor) and isinstance(lin.weight, nn.Parameter)
    twin = copy.deepcopy(lin)
    assert type(twin.weight) is nn.Parameter and twin.weight is not lin.weight
    np.testing.assert_array_equal(twin.weight.numpy(), lin.weight.numpy())
    opt = minitorch.optim.SGD(lin.parameters(), lr=0.5)
    before = lin.weight.numpy().copy()
    lin(minitorch.tensor(np.ones((2, 4)))).sum().backward()
    opt.step()
    np.testing.assert_allclose(lin.weight.numpy(), before - 0.5 * 2.0)
    assert sum(p.numel() for p in lin.parameters()) == 15


def test_a_user_module_with_tensor_parameters_is_registered_and_saved() -> None:
    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(minitorch.ones(4))
            self.extra = nn.ParameterList([minitorch.zeros(2), nn.Parameter(minitorch.ones(1))])
            self.heads = nn.ParameterDict({"a": minitorch.ones(3)})

        def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
            return x * self.weight + self.extra[0].sum() + self.heads["a"].sum()

    m = Scale()
    assert [n for n, _ in m.named_parameters()] == ["weight", "extra.0", "extra.1", "heads.a"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert set(m.state_dict()) == {"weight", "extra.0", "extra.1", "heads.a"}
    m(minitorch.ones(4)).sum().backward()
    np.testing.assert_allclose(m.extra[0].grad.numpy(), [4.0, 4.0])


def test_parameter_list_and_dict_behave_as_containers() -> None:
    pl = nn.ParameterList()
    pl.append(minitorch.ones(2)).extend([minitorch.zeros(3)])
    assert len(pl) == 2 and pl[-1].shape == (3,) and [p.shape for p in pl] == [(2,), (3,)]
    pl[0] = minitorch.full((5,), 2.0)
    assert pl[0].shape == (5,) and [n for n, _ in pl.named_parameters()] == ["0", "1"]
    assert len(pl[0:1]) == 1
    with pytest.raises(IndexError, match="out of range for a ParameterList of length 2"):
        pl[2]
    with pytest.raises(TypeError, match="expected a Tensor or Parameter, got float"):
        pl.append(1.0)
    pd = nn.ParameterDict([("b", minitorch.ones(1)), ("a", minitorch.ones(2))])
    pd["b"] = minitorch.zeros(4)
    assert list(pd) == ["b", "a"] and pd["b"].shape == (4,) and "a" in pd and len(pd) == 2
    assert pd.pop("a").shape == (2,) and pd.keys() == ["b"]
    with pytest.raises(KeyError):
        pd["a"]
    with pytest.raises(TypeError, match="keys must be strings"):
        pd[1] = minitorch.ones(1)
    with pytest.raises(NotImplementedError, match="no forward"):
        pl(1)


def test_new_zeros_takes_sizes_as_ints_or_one_sequence() -> None:
    x = minitorch.tensor(W, dtype=minitorch.float32)
    assert x.new_zeros(2, 3).shape == (2, 3) and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_zeros([2]).shape == (2,) and x.new_zeros(2, 3).dtype == minitorch.float32
    assert x.new_ones(4, dtype=minitorch.int64).dtype == minitorch.int64
    assert x.new_zeros((2, 3), minitorch.int64).dtype == minitorch.int64  # the kit's (shape, dtype)
    assert float(x.new_ones(2, 2).sum().item()) == 4.0


def test_linear_function_is_x_wt_plus_b_and_checks_shapes() -> None:
    x = minitorch.tensor(np.random.default_rng(4).standard_normal((2, 5, 4)))
    w, b = minitorch.tensor(W), minitorch.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(F.linear(x, w, b).numpy(), x.numpy() @ W.T + [1.0, 2.0, 3.0])
    grad_check(lambda x, w, b: F.linear(x, w, b), x, w, b)
    with pytest.raises(ValueError, match="expected weight \\[out_features, 3\\]"):
        F.linear(minitorch.ones(2, 3), w)


def test_the_value_of_a_tensor_parameter_is_not_replaced() -> None:
    p = nn.Parameter(minitorch.ones(2))
    with pytest.raises(AttributeError, match="p.update\\(t\\) gives it t's data"):
        p.value = minitorch.zeros(2)
