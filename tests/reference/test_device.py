"""Devices: `minitorch.device`, `tensor.device` / `.to(device)` / `.cpu()` / `.cuda()`,
`module.to(...)` and the `device=` keyword, each standing for a backend (`device.py`). The
CUDA backend runs on Numba's simulator here (tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.testing import grad_check

pytestmark = pytest.mark.library


def test_device_names_parse_as_pytorchs() -> None:
    assert (
        str(minitorch.device("cuda:0")) == "cuda:0" and repr(minitorch.device("cpu")) == "device(type='cpu')"
    )
    assert minitorch.device("cuda") == "cuda:0" and minitorch.device("cuda", 0).index == 0
    assert minitorch.device(minitorch.device("cpu")) == minitorch.device("cpu")
    with pytest.raises(
        RuntimeError, match="Expected one of cpu, cuda device type at start of device string: mps"
    ):
        minitorch.device("mps")
    with pytest.raises(RuntimeError, match="one cuda device: cuda:1 does not exist"):
        minitorch.device("cuda:1")


def test_to_moves_between_devices_and_the_gradient_comes_back() -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.device == minitorch.device("cpu") and x.to("cpu") is x and x.cpu() is x
    y = x.to("cuda")
    assert y.device == minitorch.device("cuda") and y.is_cuda and y.backend is minitorch.CudaBackend
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    assert x.grad.device == minitorch.device("cpu")
    grad_check(lambda a: (a.to("cuda") * 3.0).cpu(), minitorch.tensor([0.5, -1.5]))
    both = x.to("cuda", minitorch.float32)
    assert (both.device.type, both.dtype) == ("cuda", minitorch.float32)
    assert (
        x.to(both).dtype == minitorch.float32
        and x.to(dtype=minitorch.float32, device="cpu").device.type == "cpu"
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_format'"):
        x.to("cpu", memory_format=None)


def test_the_device_keyword_of_the_constructors() -> None:
    for make in (
        lambda d: minitorch.zeros(2, device=d),
        lambda d: minitorch.tensor([1], device=d),
        lambda d: minitorch.arange(3, device=d),
        lambda d: minitorch.randn(2, device=d),
        lambda d: minitorch.full((2,), 1.0, device=d),
        lambda d: minitorch.eye(2, device=d),
        lambda d: minitorch.zeros_like(minitorch.ones(2), device=d),
    ):
        assert make("cuda").device.type == "cuda" and make("cpu").device.type == "cpu"
    with pytest.raises(
        ValueError, match="zeros\\(\\): backend=<cuda backend> computes on cuda:0, but device='cpu'"
    ):
        minitorch.zeros(2, backend=minitorch.CudaBackend, device="cpu")


def test_a_module_moves_and_converts_its_parameters_and_buffers_keeping_them() -> None:
    layer = nn.Linear(3, 2)
    layer.register_buffer("ids", minitorch.tensor([1, 2]))
    weight = layer.weight
    assert layer.to("cuda") is layer and layer.weight is weight
    assert layer.weight.value.device.type == "cuda" and layer.weight.value.requires_grad
    assert layer.ids.device.type == "cuda"
    layer(minitorch.ones(4, 3, device="cuda")).sum().backward()
    assert layer.weight.value.grad.device.type == "cuda"
    layer.cpu().float()
    assert (layer.weight.value.device.type, layer.weight.value.dtype) == ("cpu", minitorch.float32)
    assert layer.ids.dtype == minitorch.int64  # only floating tensors change dtype


def test_the_cuda_namespace_answers_pytorchs_idiom() -> None:
    assert minitorch.cuda.is_available()  # the simulator counts
    assert minitorch.cuda.device_count() == 1
    device = minitorch.device("cuda" if minitorch.cuda.is_available() else "cpu")
    assert minitorch.ones(1, device=device).device == device


@pytest.mark.parametrize("name", ["cpu", "cuda", "cuda:0"])
def test_device_strings_and_reprs_are_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = minitorch.device(name), torch.device(name)
    assert (str(ours), repr(ours), ours.type, ours.index) == (
        str(theirs),
        repr(theirs),
        theirs.type,
        theirs.index,
    )
