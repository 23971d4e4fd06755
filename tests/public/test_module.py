"""Stage A0, task 0.3: the module tree, parameter names, modes and state dicts.

The task 0.3 tests use floats, NumPy arrays and Scalars as parameter values, so they run
before tensors exist (stage A0); the `library` tests at the end repeat the state-dict checks
with tensors.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import Module, Parameter, Scalar


class Leaf(Module):
    def __init__(self, shape: tuple[int, ...] = (2, 3)) -> None:
        super().__init__()
        self.weight = Parameter(np.arange(float(np.prod(shape))).reshape(shape))
        self.bias = Parameter(0.5)
        self.not_a_parameter = 7

    def extra_repr(self) -> str:
        return f"shape={self.weight.value.shape}"


class Block(Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Leaf((3, 1))
        self.gain = Parameter(2.0)


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = Parameter(1.0)
        self.layer1 = Leaf()
        self.block = Block()

    def forward(self, x: float, y: float = 0.0) -> float:
        return self.scale.value * x + y


@pytest.mark.task0_3
def test_registration_by_assignment() -> None:
    net = Net()
    assert list(net._parameters) == ["scale"]
    assert list(net._modules) == ["layer1", "block"]
    assert "not_a_parameter" not in net.layer1._parameters
    assert net.layer1.not_a_parameter == 7
    assert isinstance(net.scale, Parameter)
    assert net.layer1 is net._modules["layer1"]


@pytest.mark.task0_3
def test_reassignment_changes_kind() -> None:
    net = Net()
    net.scale = 3.0  # a plain attribute now, no longer a parameter
    assert "scale" not in net._parameters
    assert net.scale == 3.0
    net.layer1 = Parameter(4.0)
    assert "layer1" not in net._modules and "layer1" in net._parameters
    del net.layer1
    assert "layer1" not in net._parameters
    with pytest.raises(AttributeError, match="layer1"):
        net.layer1


@pytest.mark.task0_3
def test_named_parameters_dotted_names_in_order() -> None:
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == [
        "scale",
        "layer1.weight",
        "layer1.bias",
        "block.gain",
        "block.inner.weight",
        "block.inner.bias",
    ]
    params = dict(net.named_parameters())
    assert params["block.inner.weight"] is net.block.inner.weight
    assert [p for p in net.parameters()] == [p for _, p in net.named_parameters()]
    assert len(net.parameters()) == 6
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.block.named_parameters(prefix="block")] == [
        "block.gain",
        "block.inner.weight",
        "block.inner.bias",
    ]


@pytest.mark.task0_3
def test_modules_and_children() -> None:
    net = Net()
    assert net.children() == [net.layer1, net.block]
    assert net.named_children() == [("layer1", net.layer1), ("block", net.block)]
    assert net.modules() == [net, net.layer1, net.block, net.block.inner]
    assert [n for n, _ in net.named_modules()] == ["", "layer1", "block", "block.inner"]


@pytest.mark.task0_3
def test_shared_parameter_listed_once_but_saved_under_each_name() -> None:
    net = Net()
    net.block.inner.weight = net.layer1.weight = Parameter(np.ones((2, 2)))
    names = [n for n, _ in net.named_parameters()]
    assert "layer1.weight" in names and "block.inner.weight" not in names
    assert len(net.parameters()) == 5
    state = net.state_dict()
    assert "layer1.weight" in state and "block.inner.weight" in state


@pytest.mark.task0_3
def test_train_eval_recursive() -> None:
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert net.train() is net
    assert all(m.training for m in net.modules())
    net.block.eval()
    assert net.training and net.layer1.training
    assert not net.block.training and not net.block.inner.training
    net.train(False)
    assert not any(m.training for m in net.modules())


@pytest.mark.task0_3
def test_call_runs_forward() -> None:
    net = Net()
    net.scale.update(3.0)
    assert net(2.0) == 6.0
    assert net(2.0, y=1.0) == 7.0
    with pytest.raises(NotImplementedError, match="Leaf"):
        Leaf()(1.0)


@pytest.mark.task0_3
def test_repr_is_nested_like_pytorch() -> None:
    assert repr(Leaf()) == "Leaf(shape=(2, 3))"
    assert repr(Net()) == (
        "Net(\n  (layer1): Leaf(shape=(2, 3))\n  (block): Block(\n    (inner): Leaf(shape=(3, 1))\n  )\n)"
    )


@pytest.mark.task0_3
def test_parameter_before_init_is_a_clear_error() -> None:
    class Forgot(Module):
        def __init__(self) -> None:
            self.w = Parameter(1.0)

    with pytest.raises(AttributeError, match=r"super\(\).__init__"):
        Forgot()


@pytest.mark.task0_3
def test_add_parameter() -> None:
    m = Module()
    p = m.add_parameter("w", 2.5)
    assert m.w is p and p.value == 2.5 and p.name == "w"
    assert m.named_parameters() == [("w", p)]


@pytest.mark.task0_3
def test_parameter_update_marks_scalars_as_leaves() -> None:
    x = Scalar(1.0, history=None)  # a constant
    p = Parameter(x)
    assert p.value is x and x.is_leaf()
    y = Scalar(2.0, history=None)
    p.update(y)
    assert p.value is y and y.is_leaf()
    p.update(3.0)
    assert p.value == 3.0


@pytest.mark.task0_3
def test_parameter_calls_requires_grad_() -> None:
    class FakeTensor:
        def __init__(self) -> None:
            self.requires_grad = False

        def requires_grad_(self, flag: bool = True) -> "FakeTensor":
            self.requires_grad = flag
            return self

    t = FakeTensor()
    Parameter(t)
    assert t.requires_grad
    t2 = FakeTensor()
    Parameter(1.0).update(t2)
    assert t2.requires_grad


@pytest.mark.task0_3
def test_state_dict_round_trip() -> None:
    net = Net()
    net.block.inner.bias.update(Scalar(4.0))
    state = net.state_dict()
    assert list(state) == [n for n, _ in net.named_parameters()]
    assert isinstance(state["layer1.weight"], np.ndarray)
    assert isinstance(state["scale"], float) and isinstance(state["block.inner.bias"], float)
    assert state["block.inner.bias"] == 4.0

    # state_dict holds copies: changing the model afterwards does not change it
    net.layer1.weight.value[0, 0] = 100.0
    assert state["layer1.weight"][0, 0] == 0.0

    other = Net()
    new_state = {k: (v + 1.0) for k, v in state.items()}
    result = other.load_state_dict(new_state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    loaded = other.state_dict()
    for key in state:
        np.testing.assert_array_equal(loaded[key], new_state[key], err_msg=key)
    # kinds are kept: a Scalar stays a Scalar (a fresh leaf), a float a float
    assert isinstance(other.block.inner.bias.value, float)
    net.load_state_dict(new_state)
    assert isinstance(net.block.inner.bias.value, Scalar)
    assert net.block.inner.bias.value.data == 5.0 and net.block.inner.bias.value.is_leaf()
    assert net.layer1.weight.value.dtype == np.float64


@pytest.mark.task0_3
def test_load_copies_into_existing_arrays() -> None:
    net = Net()
    weight = net.layer1.weight.value
    state = net.state_dict()
    state["layer1.weight"] = np.full((2, 3), 9.0, dtype=np.float32)
    net.load_state_dict(state)
    assert net.layer1.weight.value is weight  # same array, new values, dtype kept
    assert weight.dtype == np.float64 and (weight == 9.0).all()


@pytest.mark.task0_3
def test_load_strict_missing_key_names_it() -> None:
    net = Net()
    state = net.state_dict()
    del state["block.inner.weight"]
    with pytest.raises(RuntimeError, match=r"missing.*'block\.inner\.weight'"):
        net.load_state_dict(state)


@pytest.mark.task0_3
def test_load_strict_unexpected_key_names_it() -> None:
    net = Net()
    state = net.state_dict()
    state["block.extra"] = 1.0
    with pytest.raises(RuntimeError, match=r"unexpected.*'block\.extra'"):
        net.load_state_dict(state)


@pytest.mark.task0_3
def test_load_not_strict_reports_keys() -> None:
    net = Net()
    state = net.state_dict()
    del state["scale"]
    state["extra"] = 3.0
    state["layer1.bias"] = 8.0
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["scale"]
    assert result.unexpected_keys == ["extra"]
    assert net.layer1.bias.value == 8.0
    assert net.scale.value == 1.0


@pytest.mark.task0_3
@pytest.mark.parametrize("strict", [True, False])
def test_load_shape_mismatch_names_key_and_shapes(strict: bool) -> None:
    net = Net()
    state = net.state_dict()
    state["layer1.weight"] = np.zeros((3, 2))
    state["scale"] = 5.0
    with pytest.raises(RuntimeError, match=r"'layer1\.weight'.*\(3, 2\).*\(2, 3\)"):
        net.load_state_dict(state, strict=strict)
    assert net.scale.value == 1.0  # nothing was loaded


@pytest.mark.task0_3
def test_load_array_into_float_parameter_is_a_shape_error() -> None:
    net = Net()
    state = net.state_dict()
    state["scale"] = np.ones(3)
    with pytest.raises(RuntimeError, match=r"'scale'.*\(3,\).*\(\)"):
        net.load_state_dict(state)


@pytest.mark.task0_3
def test_exported_names() -> None:
    assert minitorch.Module is Module and minitorch.Parameter is Parameter


# ---- with tensors (stage A2 on): library behaviour of state dicts ----------------------


@pytest.fixture
def tensors_available() -> None:
    """Tensors come in stage A2: in the release of an earlier stage their code is still a stub."""
    try:
        minitorch.tensor([[1.0, 2.0]]).permute(1, 0).numpy()
    except NotImplementedError as e:
        pytest.skip(f"tensors are not implemented yet ({e})")


class TensorNet(Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = Parameter(minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=minitorch.float32))
        self.bias = Parameter(minitorch.tensor(0.5))


@pytest.mark.library
def test_tensor_state_dict_round_trip_in_place(tensors_available: None) -> None:
    net = TensorNet()
    weight = net.weight.value
    state = net.state_dict()
    assert isinstance(state["weight"], np.ndarray) and state["weight"].dtype == np.float32
    assert state["weight"].shape == (2, 3) and state["bias"].shape == ()
    net.load_state_dict({"weight": np.full((2, 3), 7.0), "bias": np.array(1.5)})
    assert net.weight.value is weight  # copied into the existing tensor
    assert weight.dtype == np.float32 and weight.requires_grad
    np.testing.assert_array_equal(weight.numpy(), np.full((2, 3), 7.0, dtype=np.float32))
    assert net.bias.value.item() == 1.5
    # tensors from either library are accepted as values
    net.load_state_dict({"weight": minitorch.ones(2, 3), "bias": minitorch.tensor(2.0)})
    assert weight.numpy().sum() == 6.0 and net.bias.value.item() == 2.0


@pytest.mark.library
def test_tensor_load_into_non_contiguous_parameter(tensors_available: None) -> None:
    net = TensorNet()
    net.weight.update(minitorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).permute(1, 0))
    assert not net.weight.value._tensor.is_contiguous()
    new = np.arange(6.0).reshape(2, 3)
    net.load_state_dict({"weight": new, "bias": np.array(0.0)})
    np.testing.assert_array_equal(net.weight.value.numpy(), new)
    assert net.weight.value.requires_grad and net.weight.value.dtype == np.float64


@pytest.mark.library
def test_tensor_shape_mismatch_names_key_and_shapes(tensors_available: None) -> None:
    net = TensorNet()
    with pytest.raises(RuntimeError, match=r"'weight'.*\(3, 2\).*\(2, 3\)"):
        net.load_state_dict({"weight": np.zeros((3, 2)), "bias": np.array(0.0)})
