"""Containers of parameters: `ParameterList` and `ParameterDict`, as `torch.nn`'s.

A plain Python list of parameters hides them from the module tree, as a list of layers
does (see `ModuleList`). `ParameterList` registers item i under the name "i" and
`ParameterDict` each item under its key, so `parameters()`, optimizers and `state_dict()`
find them with PyTorch's names (`scales.0`, `heads.sentiment`). A tensor that is not yet a
Parameter is made one when it is put in (it then requires grad), as PyTorch does.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Optional, Union

from ..module import Module
from ..tensor import Tensor
from .parameter import Parameter

__all__ = ["ParameterList", "ParameterDict"]


def _as_parameter(container: Module, value: Tensor) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"{type(container).__name__}: expected a Tensor or Parameter, got {type(value).__name__}")


class ParameterList(Module):
    """Holds parameters in a list: `ParameterList([Parameter(randn(4)) for _ in range(3)])`."""

    def __init__(self, values: Optional[Iterable[Tensor]] = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _index(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a ParameterList of length {n}")
        return i % n

    def __getitem__(self, i: Union[int, slice]) -> Union[Parameter, "ParameterList"]:
        items = list(self._parameters.values())
        if isinstance(i, slice):
            return ParameterList(items[i])
        return items[self._index(i)]

    def __setitem__(self, i: int, value: Tensor) -> None:
        # Written into the dict directly: attribute assignment would move it to the end.
        self._parameters[str(self._index(i))] = _as_parameter(self, value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(list(self._parameters.values()))

    def append(self, value: Tensor) -> "ParameterList":
        """Add `value` (made a Parameter if it is a plain tensor) at the end."""
        self.register_parameter(str(len(self)), _as_parameter(self, value))
        return self

    def extend(self, values: Iterable[Tensor]) -> "ParameterList":
        """Append every tensor of `values`."""
        for value in values:
            self.append(value)
        return self

    def forward(self, *args: object) -> None:
        raise NotImplementedError("ParameterList has no forward(): use its parameters in a module's forward")


class ParameterDict(Module):
    """Holds parameters by name: `ParameterDict({"scale": Parameter(ones(1))})`, as
    `torch.nn.ParameterDict` (insertion order kept; iterating gives the keys)."""

    def __init__(
        self, values: Optional[Union[Mapping[str, Tensor], Iterable[tuple[str, Tensor]]]] = None
    ) -> None:
        super().__init__()
        if values is not None:
            self.update(values)

    def __getitem__(self, key: str) -> Parameter:
        if key not in self._parameters:
            raise KeyError(key)
        return self._parameters[key]

    def __setitem__(self, key: str, value: Tensor) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        if key in self._parameters:  # in place: the key keeps its position
            self._parameters[key] = _as_parameter(self, value)
        else:
            self.register_parameter(key, _as_parameter(self, value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._parameters))

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> list[str]:
        return list(self._parameters)

    def values(self) -> list[Parameter]:
        return list(self._parameters.values())

    def items(self) -> list[tuple[str, Parameter]]:
        return list(self._parameters.items())

    def pop(self, key: str) -> Parameter:
        """Remove the parameter `key` and return it."""
        value = self[key]
        del self[key]
        return value

    def update(self, values: Union[Mapping[str, Tensor], Iterable[tuple[str, Tensor]]]) -> None:
        """Add (or replace) parameters from a mapping or from (name, tensor) pairs."""
        pairs = values.items() if isinstance(values, Mapping) else values
        for key, value in pairs:
            self[key] = value

    def forward(self, *args: object) -> None:
        raise NotImplementedError("ParameterDict has no forward(): use its parameters in a module's forward")
