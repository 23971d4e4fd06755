"""Buffers (`register_buffer`), `Module.apply` and `ModuleDict`, as PyTorch has them: a
buffer is saved and loaded with the parameters but never learned; `apply` visits children
before their parent; a ModuleDict registers its modules under their keys."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn

pytestmark = pytest.mark.library


class Encoding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 2)
        self.register_buffer("table", minitorch.tensor(np.arange(6.0).reshape(2, 3)))
        self.register_buffer("cache", minitorch.zeros(2), persistent=False)
        self.register_buffer("unused", None)


def test_a_buffer_is_state_that_is_saved_but_not_learned() -> None:
    model = nn.Sequential(Encoding())
    assert [name for name, _ in model.named_buffers()] == ["0.table", "0.cache"]
    assert list(model.state_dict()) == ["0.proj.weight", "0.proj.bias", "0.table"]
    assert all(p.value is not model[0].table for p in model.parameters())
    assert not model[0].table.requires_grad
    saved = model.state_dict()
    saved["0.table"] = np.full((2, 3), 7.0)
    table = model[0].table
    model.load_state_dict(saved)
    assert model[0].table is table  # loaded in place, as a parameter is
    np.testing.assert_array_equal(table.numpy(), np.full((2, 3), 7.0))
    with pytest.raises(RuntimeError, match="missing key\\(s\\) '0.table'"):
        model.load_state_dict({k: v for k, v in saved.items() if k != "0.table"})


def test_assigning_to_a_buffer_replaces_it_and_other_values_are_refused() -> None:
    enc = Encoding()
    enc.cache = minitorch.ones(4)
    assert enc.state_dict().keys() == {"proj.weight", "proj.bias", "table"} and enc.cache.shape == (4,)
    with pytest.raises(TypeError, match="cannot assign 'float' as buffer 'cache'"):
        enc.cache = 1.5
    with pytest.raises(KeyError, match="attribute 'proj' already exists"):
        enc.register_buffer("proj", minitorch.zeros(1))
    with pytest.raises(KeyError, match="be empty or contain"):
        enc.register_buffer("a.b", minitorch.zeros(1))
    del enc.table
    assert "table" not in enc.state_dict()


def test_apply_visits_every_module_children_first() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3)), nn.ReLU())
    seen: list[str] = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Linear", "Sequential", "ReLU", "Sequential"]

    def init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.25)

    model.apply(init_weights)
    assert all(
        np.all(p.value.numpy() == 0.25) for name, p in model.named_parameters() if name.endswith("weight")
    )


def test_module_dict_registers_its_modules_under_their_keys() -> None:
    heads = nn.ModuleDict({"sentiment": nn.Linear(4, 2), "topic": nn.Linear(4, 5)})
    assert list(heads) == ["sentiment", "topic"] and "topic" in heads and len(heads) == 2
    assert [n for n, _ in heads.named_parameters()] == [
        "sentiment.weight",
        "sentiment.bias",
        "topic.weight",
        "topic.bias",
    ]
    heads["topic"] = nn.Linear(4, 3)  # replaced in place: the order stays
    heads.update([("lang", nn.Linear(4, 7))])
    assert heads.keys() == ["sentiment", "topic", "lang"] and heads["topic"].out_features == 3
    assert isinstance(heads.pop("lang"), nn.Linear) and list(heads) == ["sentiment", "topic"]
    with pytest.raises(KeyError):
        heads["nope"]
    with pytest.raises(NotImplementedError, match="ModuleDict has no forward"):
        heads(1)
