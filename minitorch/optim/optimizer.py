"""The base class of the optimizers: parameter groups, gradients, and saving the state.

`Optimizer(params, defaults)` takes either an iterable of parameters (one group) or an
iterable of dicts, each a group: `{"params": [...], "lr": 0.1}`; a setting a group leaves
out takes the optimizer's value (its `defaults`). `param_groups` is the list of groups, each
a dict whose values `step()` reads every time, so a schedule changes the learning rate by
writing `group["lr"]`, as in PyTorch.
"""

from __future__ import annotations

from typing import Any, Iterable, Union

import numpy as np

from .. import device_memory, inplace
from ..module import Parameter
from ..tensor import Tensor

#: From this many elements a parameter's update runs on all threads (`prange`); smaller
#: ones run on the calling thread, for which waking the thread pool would cost more.
PARALLEL_MIN = 1 << 16

Params = Union[Iterable[Union[Parameter, Tensor]], Iterable[dict[str, Any]]]


def tensor_of(p: Union[Parameter, Tensor]) -> Tensor:
    """The tensor an optimizer updates: a Parameter's value, or a leaf tensor itself
    (PyTorch optimizes any leaf that requires grad: `SGD([w, b], lr=0.1)`)."""
    return p.value if isinstance(p, Parameter) else p


def _contiguous(p: Union[Parameter, Tensor]) -> Tensor:
    """The tensor an optimizer updates, made contiguous first where it is not."""
    t = tensor_of(p)
    if not t._tensor.is_contiguous():
        if isinstance(p, Parameter):
            p.update(t.contiguous().detach().requires_grad_(True))
        else:  # the leaf tensor takes the contiguous copy's data (stamped: a pending backward refuses it)
            t._tensor = t.contiguous()._tensor
            inplace.mark_written(t._tensor._buffer)
        t = tensor_of(p)
    return t


def values_of(p: Union[Parameter, Tensor]) -> np.ndarray:
    """The parameter's values as a NumPy array that shares its storage (made contiguous)."""
    t = _contiguous(p)
    return t._tensor._storage[: t.numel()].reshape(t.shape)


def flat_grad(p: Parameter, dtype: np.dtype) -> np.ndarray:
    """The gradient as a flat C-contiguous array of `dtype`: its storage itself (no copy)
    when it is contiguous and of that dtype, else a copy. Only read, never written."""
    g = tensor_of(p).grad
    data = g._tensor
    if data.is_contiguous() and data.dtype == dtype:
        return data._storage[: g.numel()]
    return np.ascontiguousarray(g.numpy(), dtype=dtype).reshape(-1)


def on_gpu(p: Union[Parameter, Tensor]) -> bool:
    """Whether the parameter is a tensor of the CUDA backend (its update runs on the GPU)."""
    return tensor_of(p).backend.cuda


def gpu_arrays(p: Union[Parameter, Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """(values, gradient) of a CUDA parameter as flat storage arrays whose GPU copies the
    update kernels use (`optim/on_gpu.py`): the parameter made contiguous, the gradient made
    contiguous and of the parameter's dtype by GPU operations. Nothing goes to the host."""
    t = _contiguous(p)
    g = t.grad
    if not g._tensor.is_contiguous() or g.dtype != t.dtype:
        g = g.contiguous().to(t.dtype)
    return t._tensor._buffer[: t.numel()], g._tensor._buffer[: g.numel()]


def state_array(p: Union[Parameter, Tensor]) -> np.ndarray:
    """A new state array of zeros (momentum, Adam's m and v) of the parameter's shape and
    dtype; for a CUDA parameter its GPU copy is zeroed there when the update first needs it."""
    t = tensor_of(p)
    array = np.zeros(t.shape, dtype=t.dtype)
    if t.backend.cuda:
        device_memory.filled(array, 0)
    return array


class Optimizer:
    """Base class: the parameter groups (those parameters that have tensor values).

    Attributes:
        defaults: the settings a group gets unless it names its own.
        param_groups: the groups, each {"params": [Parameter, …], setting: value, …}.
    """

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        for group in groups if isinstance(groups[0], dict) else [{"params": groups}]:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group: its parameters, with its settings or else the defaults."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(
                f"{type(self).__name__}: a parameter group is a dict with a 'params' key, got {group!r}"
            )
        params = group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        params = [params] if isinstance(params, Tensor) else params
        unknown = [
            p for p in params if not (isinstance(p, Parameter) or (isinstance(p, Tensor) and p.is_leaf()))
        ]
        if unknown:
            what = (
                "a tensor computed from others"
                if isinstance(unknown[0], Tensor)
                else type(unknown[0]).__name__
            )
            raise TypeError(
                f"{type(self).__name__} can only optimize Parameters and leaf tensors that require grad, got {what}"
            )
        held = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in held for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        full = {**self.defaults, **group, "params": [p for p in params if hasattr(tensor_of(p), "grad")]}
        self._check_settings(full)
        self.param_groups.append(full)

    def _check_settings(self, group: dict[str, Any]) -> None:
        """Raise ValueError for settings out of range (each optimizer its own)."""

    @property
    def parameters(self) -> list[Parameter]:
        """Every parameter, group after group (the order the saved state is keyed by)."""
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the last backward pass (zeros with `set_to_none=False`)."""
        for p in self.parameters:
            value = tensor_of(p)
            if value.grad is not None:
                value.grad = None if set_to_none else value.zeros(value.shape)

    def step(self) -> None:
        raise NotImplementedError

    # Saving and restoring (checkpoints). As in PyTorch, the per-parameter state is keyed by
    # the parameter's position in the groups, so it can be loaded into an optimizer built
    # the same way over another copy of the model.

    def _per_parameter(self) -> dict[int, dict[str, Any]]:
        """The state of the parameter at position i, for each i that has one."""
        return {}

    def _set_per_parameter(self, index: int, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """{"state": {i: {name: value}}, "param_groups": [{setting: value, "params": [i, …]}]}:
        copies of the per-parameter state and the groups' settings (as torch)."""
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append(
                {**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))}
            )
            start += n
        return {
            "state": {
                i: {k: np.array(v, copy=True) for k, v in st.items()}
                for i, st in self._per_parameter().items()
            },
            "param_groups": groups,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` returned (copies are taken); the groups' settings too."""
        name = type(self).__name__
        saved_groups = state_dict.get("param_groups")
        if saved_groups is not None:
            sizes = [len(g["params"]) for g in saved_groups]
            if sizes != [len(g["params"]) for g in self.param_groups]:
                raise ValueError(
                    f"{name}.load_state_dict: the saved groups hold {sizes} parameters, this optimizer's "
                    f"{[len(g['params']) for g in self.param_groups]}"
                )
        for i, st in state_dict["state"].items():
            i = int(i)
            if not 0 <= i < len(self.parameters):
                raise ValueError(
                    f"{name}.load_state_dict: state for parameter {i}, "
                    f"but the optimizer has {len(self.parameters)} parameters"
                )
            shape = tensor_of(self.parameters[i]).shape
            for key, value in st.items():
                if np.ndim(value) and np.shape(value) != shape:
                    raise ValueError(
                        f"{name}.load_state_dict: {key} of parameter {i} has shape "
                        f"{np.shape(value)}, the parameter {shape}"
                    )
        for i, st in state_dict["state"].items():
            # C order: the kernels update the state through flat views of these arrays
            self._set_per_parameter(int(i), {k: np.array(v, copy=True, order="C") for k, v in st.items()})
        for group, saved in zip(self.param_groups, saved_groups or []):
            group.update({k: v for k, v in saved.items() if k != "params"})
