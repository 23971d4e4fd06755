"""`nn.init` against `torch.nn.init`: the same gains, fans and bounds, and the same errors'
words for the arguments PyTorch refuses."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn import init

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None),
        ("conv2d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.3),
        ("selu", None),
    ],
)
def test_gains_match_torch(nonlinearity: str, param) -> None:
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15
    )


@pytest.mark.parametrize("shape", [(7, 3), (8, 3, 5), (4, 2, 3, 3)])
def test_fans_match_torch(shape) -> None:
    assert init._fans("x", minitorch.zeros(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(
        torch.zeros(*shape)
    )


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("xavier_uniform_", {"gain": 1.5}),
        ("kaiming_uniform_", {"a": 5**0.5}),
        ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}),
        ("uniform_", {"a": -0.2, "b": 0.7}),
    ],
)
def test_uniform_bounds_match_torch(name: str, kwargs: dict) -> None:
    """The largest |value| of a large uniform fill approaches its bound: both libraries' maxima
    agree to 1 %."""
    ours = getattr(init, name)(minitorch.zeros(200, 50, 3), **kwargs).numpy()
    torch.manual_seed(0)
    theirs = getattr(torch.nn.init, name)(torch.zeros(200, 50, 3), **kwargs).numpy()
    assert ours.min() == pytest.approx(float(theirs.min()), rel=0.01, abs=1e-3)
    assert ours.max() == pytest.approx(float(theirs.max()), rel=0.01)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("xavier_normal_", {"gain": 0.5}),
        ("kaiming_normal_", {"mode": "fan_out"}),
        ("normal_", {"mean": 1.0, "std": 0.2}),
        ("trunc_normal_", {"std": 2.0}),
    ],
)
def test_normal_spreads_match_torch(name: str, kwargs: dict) -> None:
    ours = getattr(init, name)(minitorch.zeros(300, 100, 2), **kwargs).numpy()
    torch.manual_seed(0)
    theirs = getattr(torch.nn.init, name)(torch.zeros(300, 100, 2), **kwargs).numpy()
    assert ours.mean() == pytest.approx(float(theirs.mean()), abs=0.02 * float(theirs.std()))
    assert ours.std() == pytest.approx(float(theirs.std()), rel=0.02)
    assert (ours.min() >= -2.0 and ours.max() <= 2.0) if name == "trunc_normal_" else True


def test_the_errors_say_what_torch_says() -> None:
    for call in (
        lambda m: m.nn.init.xavier_uniform_(m.zeros(5)),
        lambda m: m.nn.init.kaiming_normal_(m.zeros(5, 5), mode="x"),
        lambda m: m.nn.init.calculate_gain("gelu"),
    ):
        with pytest.raises(ValueError) as theirs:
            call(torch)
        with pytest.raises(ValueError) as ours:
            call(minitorch)
        assert str(theirs.value).split(" (")[0] in str(ours.value)
