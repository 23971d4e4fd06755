"""Parameter groups, AdamW and the learning-rate schedules (no PyTorch needed here; the
values are compared with torch's in test_optim_groups_torch.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch import nn, optim
from minitorch.optim import lr_scheduler

pytestmark = pytest.mark.library


def _model() -> nn.Linear:
    layer = nn.Linear(3, 2)
    layer.load_state_dict({"weight": np.arange(6.0).reshape(2, 3) / 10, "bias": np.array([0.5, -0.5])})
    return layer


def _step(layer: nn.Linear, opt: optim.Optimizer) -> None:
    opt.zero_grad()
    (layer(minitorch.tensor(np.ones((4, 3)))) ** 2).sum().backward()
    opt.step()


def test_a_group_without_a_setting_takes_the_default_and_each_group_its_own() -> None:
    layer = _model()
    opt = optim.SGD([{"params": [layer.weight]}, {"params": [layer.bias], "lr": 0.0}], lr=0.1, momentum=0.9)
    bias = layer.bias.value.numpy().copy()
    _step(layer, opt)
    np.testing.assert_array_equal(layer.bias.value.numpy(), bias)  # lr 0: unchanged
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.9
    assert opt.parameters == [layer.weight, layer.bias]


def test_adamw_shrinks_the_weights_by_lr_times_decay_before_adams_step() -> None:
    """With a zero gradient Adam's own step is 0 (m = v = 0), so only the decay is left."""
    layer = _model()
    w = layer.weight.value.numpy().copy()
    opt = optim.AdamW([layer.weight], lr=0.1, weight_decay=0.5)
    layer.weight.value.grad = minitorch.zeros(2, 3)
    opt.step()
    np.testing.assert_allclose(layer.weight.value.numpy(), w * (1 - 0.1 * 0.5), rtol=1e-15)


def test_the_state_dict_holds_the_groups_settings_and_restores_them() -> None:
    layer = _model()
    opt = optim.Adam([{"params": [layer.weight], "lr": 0.2}, {"params": [layer.bias]}], lr=0.1)
    _step(layer, opt)
    saved = opt.state_dict()
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in saved["param_groups"]] == [0.2, 0.1]
    other = optim.Adam([{"params": [layer.weight]}, {"params": [layer.bias]}], lr=0.5)
    other.load_state_dict(saved)
    assert [g["lr"] for g in other.param_groups] == [0.2, 0.1]
    with pytest.raises(ValueError, match="the saved groups hold \\[1, 1\\] parameters"):
        optim.Adam(layer.parameters()).load_state_dict(saved)


def test_bad_groups_and_settings_are_refused() -> None:
    layer = _model()
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [layer.weight]}, {"params": layer.parameters()}], lr=0.1)
    with pytest.raises(TypeError, match="a dict with a 'params' key"):
        optim.SGD([{"params": [layer.weight]}, {"lr": 0.1}], lr=0.1)
    with pytest.raises(ValueError, match="amsgrad is not supported"):
        optim.AdamW(layer.parameters(), amsgrad=True)
    with pytest.raises(ValueError, match="betas in \\[0, 1\\)"):
        optim.Adam([{"params": layer.parameters(), "betas": (0.9, 1.0)}])


def test_a_schedule_changes_every_groups_rate_from_its_base() -> None:
    layer = _model()
    opt = optim.SGD([{"params": [layer.weight], "lr": 1.0}, {"params": [layer.bias], "lr": 0.1}], lr=0.5)
    schedule = lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.0)
    seen = [schedule.get_last_lr()]
    for _ in range(4):
        _step(layer, opt)
        schedule.step()
        seen.append(schedule.get_last_lr())
    for t, (w_lr, b_lr) in enumerate(seen):
        factor = (1 + math.cos(math.pi * t / 4)) / 2
        assert w_lr == pytest.approx(1.0 * factor, abs=1e-15) and b_lr == pytest.approx(
            0.1 * factor, abs=1e-15
        )
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.1]
    warm = lr_scheduler.LambdaLR(optim.SGD(layer.parameters(), lr=2.0), lambda t: min(1.0, (t + 1) / 3))
    assert warm.get_last_lr() == [pytest.approx(2 / 3)]
