"""cat / stack (minitorch/joining.py) and ModuleList (minitorch/containers.py): values,
gradients by central differences, PyTorch equivalence, errors, and every backend."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

BACKENDS = [minitorch.SimpleBackend, minitorch.FastBackend, minitorch.CudaBackend]


def t(a: np.ndarray, backend=minitorch.SimpleBackend, dtype=None) -> minitorch.Tensor:  # noqa: ANN001
    return minitorch.tensor(a, dtype=dtype, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_values_match_numpy(backend, dim: int) -> None:  # noqa: ANN001
    rng = np.random.default_rng(dim + 7)
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for k, size in enumerate((1, 3, 2)):
        shapes[k][dim] = size
    arrays = [rng.standard_normal(s) for s in shapes]
    out = minitorch.cat([t(a, backend) for a in arrays], dim=dim)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(arrays, axis=dim))


def test_cat_of_permuted_views_and_empty_parts() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal((0, 3))
    out = minitorch.cat([t(a).permute(1, 0), t(np.zeros((3, 0))), t(b).T], dim=1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a.T, np.zeros((3, 0)), b.T], axis=1))


def test_cat_keeps_int64_and_promotes_mixed_floats() -> None:
    ids = minitorch.cat([t([1, 2], dtype=np.int64), t([3], dtype=np.int64)])
    assert ids.dtype == np.int64 and ids.tolist() == [1, 2, 3]
    mixed = minitorch.cat([t([1.0], dtype=np.float32), t([2.0])])
    assert mixed.dtype == np.float64


def test_cat_returns_a_new_tensor() -> None:
    a = t([1.0, 2.0])
    out = minitorch.cat([a])
    assert out is not a and out.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_gradient_central_difference(dim: int) -> None:
    rng = np.random.default_rng(3)
    sizes = [(2, 3), (2, 3), (2, 3)]
    shapes = [tuple(s if k != dim % 2 else s + i for k, s in enumerate(base)) for i, base in enumerate(sizes)]
    inputs = [t(rng.standard_normal(s)) for s in shapes]
    grad_check(lambda *xs: minitorch.cat(list(xs), dim=dim), *inputs)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_gradient_central_difference(dim: int) -> None:
    rng = np.random.default_rng(4)
    inputs = [t(rng.standard_normal((3, 2))) for _ in range(3)]
    grad_check(lambda *xs: minitorch.stack(list(xs), dim=dim), *inputs)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack_match_torch(dim: int) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((2, 3)) for _ in range(3)]
    g_cat = rng.standard_normal(np.concatenate(arrays, axis=dim).shape)
    g_stack = rng.standard_normal(np.stack(arrays, axis=dim).shape)
    for join, g in ((minitorch.cat, g_cat), (minitorch.stack, g_stack)):
        ours = [t(a).requires_grad_() for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = join(ours, dim=dim)
        expected = getattr(torch, join.__name__)(theirs, dim=dim)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy())
        out.backward(t(g))
        expected.backward(torch.tensor(g))
        for x, y in zip(ours, theirs):
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy())


def test_cat_errors_name_the_problem() -> None:
    with pytest.raises(minitorch.ShapeError, match="Expected size 3 but got size 4 for tensor number 1"):
        minitorch.cat([minitorch.zeros(2, 3), minitorch.zeros(2, 4)], dim=0)
    with pytest.raises(minitorch.ShapeError, match="same number of dimensions"):
        minitorch.cat([minitorch.zeros(2, 3), minitorch.zeros(3)])
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        minitorch.cat([minitorch.zeros(2, 3)], dim=2)
    with pytest.raises(ValueError, match="non-empty"):
        minitorch.cat([])
    with pytest.raises(TypeError, match="element 1 is ndarray"):
        minitorch.cat([minitorch.zeros(2), np.zeros(2)])
    with pytest.raises(
        minitorch.ShapeError, match=r"equal size, but got \[2\] at entry 0 and \[3\] at entry 1"
    ):
        minitorch.stack([minitorch.zeros(2), minitorch.zeros(3)])


def test_new_tensor_family_keeps_dtype_and_backend() -> None:
    a = minitorch.tensor([1.0, 2.0], dtype=np.float32, backend=minitorch.FastBackend)
    for made in (a.new_zeros((2, 3)), a.new_ones(4), a.new_full((), 2.5), a.new_tensor([[1, 2]])):
        assert made.dtype == np.float32 and made.backend is minitorch.FastBackend
        assert not made.requires_grad
    assert a.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert a.new_tensor([1, 2], dtype=np.int64).dtype == np.int64


def test_module_list_registers_items_like_torch() -> None:
    torch = pytest.importorskip("torch")

    class Net(minitorch.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = minitorch.ModuleList([minitorch.nn.Linear(3, 4), minitorch.nn.Linear(4, 2)])
            self.layers.append(minitorch.nn.Linear(2, 2))

    class TorchNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)])
            self.layers.append(torch.nn.Linear(2, 2))

    net = Net()
    assert list(net.state_dict()) == list(TorchNet().state_dict())
    assert len(net.layers) == 3 and net.layers[-1] is list(net.layers)[2]
    assert isinstance(net.layers[1:], minitorch.ModuleList) and len(net.layers[1:]) == 2
    with pytest.raises(IndexError, match="out of range for a ModuleList of length 3"):
        net.layers[3]
