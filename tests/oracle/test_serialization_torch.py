"""Files move between minitorch and PyTorch: a state dict saved here loads into the same
torch module, and one saved by torch (with safetensors) loads here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch import nn

pytestmark = pytest.mark.library
torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")


def test_state_dicts_move_both_ways(tmp_path: Path) -> None:
    ours = nn.LSTM(4, 3, num_layers=2)
    minitorch.save(ours.state_dict(), tmp_path / "ours.safetensors")
    theirs = torch.nn.LSTM(4, 3, num_layers=2).double()
    theirs.load_state_dict(safetensors_torch.load_file(str(tmp_path / "ours.safetensors")))
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), ours.state_dict()[name], err_msg=name)

    torch.manual_seed(0)
    back = torch.nn.Linear(5, 2).double()
    safetensors_torch.save_file(back.state_dict(), str(tmp_path / "theirs.safetensors"))
    layer = nn.Linear(5, 2)
    layer.load_state_dict(minitorch.load(tmp_path / "theirs.safetensors"))
    np.testing.assert_array_equal(layer.weight.value.numpy(), back.weight.detach().numpy())
