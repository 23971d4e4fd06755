"""`minitorch.save` / `minitorch.load`: tensors and state dicts round-trip exactly (values,
dtypes, order), files from elsewhere load with their dtypes converted, and what is not a
safetensors file (a pickle) is refused without being run."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch import nn

pytestmark = pytest.mark.library


def test_a_state_dict_round_trips_into_another_model(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Embedding(5, 3), nn.LayerNorm(3), nn.Linear(3, 2))
    model.register_buffer("steps", minitorch.tensor([7]))
    path = tmp_path / "model.safetensors"
    minitorch.save(model.state_dict(), path)
    loaded = minitorch.load(path)
    assert list(loaded) == list(model.state_dict())
    twin = nn.Sequential(nn.Embedding(5, 3), nn.LayerNorm(3), nn.Linear(3, 2))
    twin.register_buffer("steps", minitorch.tensor([0]))
    twin.load_state_dict(loaded)
    for (name, a), b in zip(model.state_dict().items(), twin.state_dict().values()):
        np.testing.assert_array_equal(a, b, err_msg=name)
        assert a.dtype == b.dtype, name


@pytest.mark.parametrize(
    "value",
    [
        np.arange(6.0).reshape(2, 3),
        np.float32([[1.5]]),
        np.array([3, 4]),
        np.array([True, False]),
        np.array(2.5),
    ],
)
def test_a_tensor_round_trips_with_its_dtype_and_shape(tmp_path: Path, value: np.ndarray) -> None:
    minitorch.save(minitorch.tensor(value), tmp_path / "t")
    out = minitorch.load(tmp_path / "t")
    assert isinstance(out, minitorch.Tensor) and out.dtype == value.dtype and out.shape == value.shape
    np.testing.assert_array_equal(out.numpy(), value)


def test_a_transposed_tensor_is_saved_as_its_values(tmp_path: Path) -> None:
    x = minitorch.tensor(np.arange(6.0).reshape(2, 3)).permute(1, 0)
    minitorch.save({"x": x, "lr": 0.5}, tmp_path / "f")
    out = minitorch.load(tmp_path / "f")
    np.testing.assert_array_equal(out["x"].numpy(), np.arange(6.0).reshape(2, 3).T)
    assert out["lr"].item() == 0.5


def test_other_dtypes_are_converted_and_others_refused(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    save_file(
        {"ids": np.array([1, 2], np.int32), "half": np.float16([0.5]), "bytes": np.uint8([255])},
        str(tmp_path / "f"),
    )
    out = minitorch.load(tmp_path / "f")
    assert list(out) == ["bytes", "half", "ids"]  # a file from elsewhere: sorted, as safetensors lists it
    assert (out["ids"].dtype, out["half"].dtype, out["bytes"].dtype) == (
        minitorch.int64,
        minitorch.float32,
        minitorch.int64,
    )
    assert out["bytes"].tolist() == [255]
    save_file({"z": np.complex64([1j])}, str(tmp_path / "c"))
    with pytest.raises(TypeError, match="'z' has dtype complex64, which minitorch cannot hold"):
        minitorch.load(tmp_path / "c")


class _Boom:
    def __reduce__(self):
        return (Path("/nonexistent-should-never-run").touch, ())


def test_a_pickle_is_refused_and_never_run(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(pickle.dumps({"weight": _Boom()}))
    with pytest.raises(ValueError, match="is not a safetensors file .* pickle, which minitorch never loads"):
        minitorch.load(path)
    with pytest.raises(FileNotFoundError):
        minitorch.load(tmp_path / "missing")


def test_what_a_file_cannot_hold_is_named(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="'opt' is a list; a file holds tensors, arrays and numbers only"):
        minitorch.save({"opt": [1, 2]}, tmp_path / "f")
    with pytest.raises(TypeError, match="expected a Tensor or a dict"):
        minitorch.save([minitorch.tensor([1.0])], tmp_path / "f")
