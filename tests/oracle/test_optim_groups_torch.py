"""Parameter groups, AdamW and the schedules against torch: the same parameters after the
same steps, the same rates step by step."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn, optim

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
W0, B0, X = RNG.standard_normal((2, 3)), RNG.standard_normal(2), RNG.standard_normal((5, 3))


def _pair(make_ours, make_theirs, steps: int = 5, between=None) -> None:
    layer = nn.Linear(3, 2)
    layer.load_state_dict({"weight": W0, "bias": B0})
    tw, tb = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    ours, theirs = make_ours(layer.weight, layer.bias), make_theirs(tw, tb)
    for k in range(steps):
        ours.zero_grad()
        (layer(minitorch.tensor(X)) ** 2).sum().backward()
        ours.step()
        theirs.zero_grad()
        ((torch.tensor(X) @ tw.T + tb) ** 2).sum().backward()
        theirs.step()
        if between is not None:
            between(k, ours, theirs)
    np.testing.assert_allclose(layer.weight.value.numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(layer.bias.value.numpy(), tb.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_groups_with_their_own_settings_match_torch(name: str) -> None:
    extra = {"momentum": 0.9} if name == "SGD" else {"betas": (0.8, 0.99)}
    _pair(
        lambda w, b: getattr(optim, name)(
            [{"params": [w], "weight_decay": 0.1}, {"params": [b], "lr": 0.05}], lr=0.01, **extra
        ),
        lambda w, b: getattr(torch.optim, name)(
            [{"params": [w], "weight_decay": 0.1}, {"params": [b], "lr": 0.05}], lr=0.01, **extra
        ),
    )


def test_adamw_defaults_match_torch() -> None:
    _pair(lambda w, b: optim.AdamW([w, b], lr=0.05), lambda w, b: torch.optim.AdamW([w, b], lr=0.05))


def test_changing_a_groups_rate_between_steps_matches_torch() -> None:
    def halve(k, ours, theirs):
        for group in ours.param_groups + theirs.param_groups:
            group["lr"] *= 0.5

    _pair(
        lambda w, b: optim.Adam([w, b], lr=0.1), lambda w, b: torch.optim.Adam([w, b], lr=0.1), between=halve
    )


SCHEDULES = {
    "step": ("StepLR", {"step_size": 3, "gamma": 0.5}),
    "multistep": ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    "exponential": ("ExponentialLR", {"gamma": 0.9}),
    "linear": ("LinearLR", {"start_factor": 0.25, "total_iters": 4}),
    "cosine": ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.001}),
    "lambda": ("LambdaLR", {"lr_lambda": lambda t: 1 / (1 + t) ** 0.5}),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedules_give_torchs_rates_step_by_step(schedule: str) -> None:
    name, kwargs = SCHEDULES[schedule]
    layer = nn.Linear(3, 2)
    ours_opt = optim.SGD([{"params": [layer.weight]}, {"params": [layer.bias], "lr": 0.3}], lr=0.1)
    tw, tb = torch.zeros(2, 3, requires_grad=True), torch.zeros(2, requires_grad=True)
    theirs_opt = torch.optim.SGD([{"params": [tw]}, {"params": [tb], "lr": 0.3}], lr=0.1)
    ours = getattr(optim.lr_scheduler, name)(ours_opt, **kwargs)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kwargs)
    for _ in range(13):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-14, atol=1e-17)
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
