"""Saving and loading tensors and state dicts (`minitorch.save`, `minitorch.load`), in the
safetensors format.

    minitorch.save(model.state_dict(), "model.safetensors")
    model.load_state_dict(minitorch.load("model.safetensors"))

Why safetensors and not pickle (what `torch.save` writes): a pickle file can hold code that
runs when it is loaded, so loading a file from someone else is running their program. A
safetensors file is a JSON header (name → dtype, shape, byte range) and the raw numbers;
loading it runs nothing. The format is PyTorch's too: a file saved here loads in PyTorch
with `safetensors.torch.load_file`, and a PyTorch state dict saved there with
`safetensors.torch.save_file` loads here, without importing torch.

What a file holds: one tensor, or a dict of named tensors, arrays and numbers (a
`state_dict()`). Dtypes minitorch lacks are converted on loading: integers of other widths
to int64, float16 to float32 (bfloat16 is refused: NumPy has no such type).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Union

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from .constructors import from_numpy
from .tensor import Tensor

__all__ = ["save", "load"]

PathLike = Union[str, "os.PathLike[str]"]

#: The metadata key telling what the file holds ("tensor" or "dict").
_KIND = "minitorch"
#: The name of the one array of a file that holds a single tensor.
_SINGLE = "tensor"
#: The metadata key of the names in the dict's order (safetensors lists them sorted).
_ORDER = "minitorch.order"


def _array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.asarray(value.detach().numpy(), order="C")  # (ascontiguousarray makes 0-d 1-d)
    if isinstance(value, np.ndarray):
        return np.asarray(value, order="C")
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return np.asarray(value)
    raise TypeError(
        f"minitorch.save: {name!r} is a {type(value).__name__}; a file holds tensors, arrays and numbers only"
    )


def save(obj: Union[Tensor, Mapping[str, Any]], f: PathLike) -> None:
    """Write a tensor, or a dict of named tensors / arrays / numbers, to the file `f`."""
    if isinstance(obj, Tensor):
        arrays, kind = {_SINGLE: _array("tensor", obj)}, "tensor"
    elif isinstance(obj, Mapping):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise TypeError(f"minitorch.save: the keys of a dict must be strings, got {bad[0]!r}")
        arrays, kind = {k: _array(k, v) for k, v in obj.items()}, "dict"
    else:
        raise TypeError(
            f"minitorch.save: expected a Tensor or a dict (a state_dict), got {type(obj).__name__}"
        )
    save_file(arrays, os.fspath(f), metadata={_KIND: kind, _ORDER: json.dumps(list(arrays))})


def _supported(name: str, array: np.ndarray) -> np.ndarray:
    kind = array.dtype.kind
    if kind == "b" or array.dtype in (np.float64, np.float32, np.int64):
        return array
    if kind in "iu":
        return array.astype(np.int64)
    if array.dtype == np.float16:
        return array.astype(np.float32)
    raise TypeError(f"minitorch.load: {name!r} has dtype {array.dtype}, which minitorch cannot hold")


def load(f: PathLike) -> Union[Tensor, dict[str, Tensor]]:
    """Read what `save` wrote (or a safetensors file from elsewhere): a tensor, or a dict of
    name → tensor (in the order saved; a file from elsewhere in safetensors' sorted order).

    Raises:
        FileNotFoundError: there is no file `f`.
        ValueError: `f` is not a safetensors file (e.g. a pickle written by `torch.save`).
        TypeError: it holds a dtype minitorch cannot hold (bfloat16, complex numbers).
    """
    path = os.fspath(f)
    with open(path, "rb"):  # a missing file is a FileNotFoundError, as for open()
        pass
    try:
        with safe_open(path, framework="numpy") as file:
            metadata = file.metadata() or {}
            arrays = {}
            for name in file.keys():
                try:
                    arrays[name] = file.get_tensor(name)
                except (TypeError, ValueError) as exc:  # bfloat16: NumPy has no such dtype
                    raise TypeError(
                        f"minitorch.load: {name!r} of {path} cannot be read as a NumPy array ({exc})"
                    ) from exc
    except SafetensorError as exc:
        raise ValueError(
            f"minitorch.load: {path} is not a safetensors file ({exc}); a PyTorch checkpoint saved with "
            f"torch.save is a pickle, which minitorch never loads: save it with safetensors.torch.save_file"
        ) from exc
    order = json.loads(metadata.get(_ORDER, "[]"))
    if sorted(order) != sorted(arrays):  # a file from elsewhere: safetensors' (sorted) order
        order = list(arrays)
    out = {name: from_numpy(np.array(_supported(name, arrays[name]))) for name in order}
    if metadata.get(_KIND) == "tensor":
        return out[_SINGLE]
    return out
