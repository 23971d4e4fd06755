"""The loss modules (`nn.MSELoss`, `nn.BCELoss`, `nn.NLLLoss`, `nn.CrossEntropyLoss`) and
PyTorch's other dtype names (`minitorch.float`, `.long`, …): each module computes its
function with its options, gradients included; bad options fail when the module is made."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

RNG = np.random.default_rng(7)
LOGITS = RNG.standard_normal((5, 4))
CLASSES = np.array([0, 3, 1, 0, 2])
PROBS = 1.0 / (1.0 + np.exp(-RNG.standard_normal((3, 2))))
TARGETS01 = RNG.uniform(size=(3, 2))


def _cases() -> list:
    """(module, the function call it must equal, input, target): every module, every reduction."""
    weight = minitorch.tensor([1.0, 2.0, 0.5, 3.0])
    out = []
    for reduction in ("mean", "sum", "none"):
        out += [
            (
                nn.MSELoss(reduction=reduction),
                lambda x, t, r=reduction: F.mse_loss(x, t, reduction=r),
                PROBS,
                TARGETS01,
            ),
            (
                nn.BCELoss(reduction=reduction),
                lambda x, t, r=reduction: F.binary_cross_entropy(x, t, reduction=r),
                PROBS,
                TARGETS01,
            ),
            (
                nn.NLLLoss(weight, ignore_index=3, reduction=reduction),
                lambda x, t, r=reduction: F.nll_loss(x, t, weight, ignore_index=3, reduction=r),
                -np.abs(LOGITS),
                CLASSES,
            ),
            (
                nn.CrossEntropyLoss(weight=weight, ignore_index=1, reduction=reduction),
                lambda x, t, r=reduction: F.cross_entropy(x, t, weight, ignore_index=1, reduction=r),
                LOGITS,
                CLASSES,
            ),
        ]
    return out


@pytest.mark.parametrize(
    "module, function, x, t", _cases(), ids=lambda v: repr(v) if isinstance(v, nn.Module) else ""
)
def test_a_loss_module_is_its_function_with_its_options(module, function, x, t) -> None:
    target = minitorch.tensor(t)
    got, expected = module(minitorch.tensor(x), target), function(minitorch.tensor(x), target)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    grad_check(lambda a: module(a, target), minitorch.tensor(x))


def test_the_default_reduction_is_the_mean() -> None:
    x, t = minitorch.tensor(LOGITS), minitorch.tensor(CLASSES)
    assert nn.CrossEntropyLoss()(x, t).item() == pytest.approx(F.cross_entropy(x, t).item(), rel=1e-15)
    assert nn.CrossEntropyLoss()(x, t).item() == pytest.approx(
        nn.CrossEntropyLoss(reduction="sum")(x, t).item() / 5
    )


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: nn.MSELoss(reduction="avg"), "reduction must be one of"),
        (lambda: nn.NLLLoss(size_average=False), "size_average and reduce are deprecated"),
        (lambda: nn.CrossEntropyLoss(reduce=False), "use reduction="),
        (lambda: nn.CrossEntropyLoss(label_smoothing=1.5), "label_smoothing must be in \\[0, 1\\]"),
        (lambda: nn.BCELoss(weight=minitorch.tensor([1.0, 2.0])), "weight"),
    ],
)
def test_unsupported_options_fail_when_the_module_is_made(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_pytorch_dtype_names() -> None:
    assert (minitorch.float, minitorch.double, minitorch.long, minitorch.bool) == (
        minitorch.float32,
        minitorch.float64,
        minitorch.int64,
        minitorch.bool_,
    )
    assert minitorch.tensor([1, 2], dtype=minitorch.float).dtype == minitorch.float32
    assert minitorch.zeros(2, dtype=minitorch.long).dtype == minitorch.int64
    with pytest.raises(
        AttributeError, match=r"no dtype int32 \(torch.int32: 32-bit integers\).*int64 \(torch.long\)"
    ):
        minitorch.int32
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        minitorch.nonsense
    star: dict = {}
    exec("from minitorch import *", star)
    assert "float" not in star and "bool" not in star, "import * must not shadow Python's float and bool"


def test_label_smoothing_passes_central_differences() -> None:
    from minitorch.testing import grad_check

    x = minitorch.tensor(np.random.default_rng(3).standard_normal((4, 3)))
    target = minitorch.tensor([0, 2, 1, 2])
    weight = minitorch.tensor([1.0, 0.5, 2.0])
    grad_check(lambda x: F.cross_entropy(x, target, weight=weight, ignore_index=1, label_smoothing=0.2), x)
    grad_check(lambda x: F.cross_entropy(x, target, reduction="none", label_smoothing=0.2), x)
