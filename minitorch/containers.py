"""Containers of modules: `ModuleList`, a list whose items are registered sub-modules,
`ModuleDict`, the same keyed by name, and `Sequential`, a chain of modules applied one
after the other.

A plain Python list of layers hides them from the module tree (their parameters would not be
found by `parameters()` or saved by `state_dict()`). `ModuleList` registers item i under
the name "i", so the parameter names match `torch.nn.ModuleList` (`convs.0.weight`, …);
`ModuleDict` registers each under its key (`heads.sentiment.weight`); `Sequential` does
the same (or uses the names of an OrderedDict), as `torch.nn.Sequential`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping, Optional, Union

from .module import Module

__all__ = ["ModuleList", "ModuleDict", "Sequential"]


def _replace(container: Module, name: str, module: Module) -> None:
    """Put `module` in place of the child `name`, keeping its position in the order
    (attribute assignment would move it to the end)."""
    if not isinstance(module, Module):
        raise TypeError(f"{type(container).__name__}: expected a Module, got {type(module).__name__}")
    container._modules[name] = module


class ModuleList(Module):
    """Holds sub-modules in a list: `ModuleList([Linear(4, 4) for _ in range(3)])`."""

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a ModuleList of length {n}")
        return i % n

    def __getitem__(self, i: Union[int, slice]) -> Union[Module, "ModuleList"]:
        items = list(self._modules.values())
        if isinstance(i, slice):
            return ModuleList(items[i])
        return items[self._index(i)]

    def __setitem__(self, i: int, module: Module) -> None:
        _replace(self, str(self._index(i)), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> "ModuleList":
        """Add `module` at the end (named by its position)."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Append every module of `modules`."""
        for module in modules:
            self.append(module)
        return self

    def forward(self, *args: object) -> None:
        raise NotImplementedError("ModuleList has no forward(): iterate over it and call its modules")


class ModuleDict(Module):
    """Holds sub-modules by name: `ModuleDict({"encoder": Linear(4, 8), "head": Linear(8, 2)})`,
    as `torch.nn.ModuleDict` (insertion order kept; iterating gives the keys)."""

    def __init__(
        self, modules: Optional[Union[Mapping[str, Module], Iterable[tuple[str, Module]]]] = None
    ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise KeyError(key)
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._modules))

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> list[str]:
        return list(self._modules)

    def values(self) -> list[Module]:
        return list(self._modules.values())

    def items(self) -> list[tuple[str, Module]]:
        return list(self._modules.items())

    def pop(self, key: str) -> Module:
        """Remove the module `key` and return it."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Union[Mapping[str, Module], Iterable[tuple[str, Module]]]) -> None:
        """Add (or replace) modules from a mapping or from (name, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            if not isinstance(key, str):
                raise TypeError(f"ModuleDict keys must be strings, got {type(key).__name__}")
            if key in self._modules:
                _replace(self, key, module)
            else:
                self.add_module(key, module)

    def forward(self, *args: object) -> None:
        raise NotImplementedError(
            "ModuleDict has no forward(): call the modules it holds, e.g. self.heads[name](x)"
        )


class Sequential(Module):
    """Modules applied in order: `Sequential(Linear(4, 8), ReLU(), Linear(8, 2))(x)` is
    `m2(m1(m0(x)))`, as `torch.nn.Sequential`.

    Positional modules are named "0", "1", …; `Sequential(OrderedDict([("fc", …), …]))`
    names them by the keys (parameter names `fc.weight`, …). Indexing with an int gives a
    module, with a slice a `Sequential` of those modules (keeping their names).
    """

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def _index(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a Sequential of length {n}")
        return i % n

    def __getitem__(self, i: Union[int, slice]) -> Union[Module, "Sequential"]:
        items = list(self._modules.items())
        if isinstance(i, slice):
            return Sequential(OrderedDict(items[i]))
        return items[self._index(i)][1]

    def __setitem__(self, i: int, module: Module) -> None:
        _replace(self, list(self._modules)[self._index(i)], module)

    def __delitem__(self, i: Union[int, slice]) -> None:
        names = list(self._modules)
        for name in names[i] if isinstance(i, slice) else [names[self._index(i)]]:
            del self._modules[name]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> "Sequential":
        """Add `module` at the end (named by its position)."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        """Append every module of `modules`."""
        for module in modules:
            self.append(module)
        return self

    def forward(self, input: Any) -> Any:
        """Feed `input` through every module in order; each module's output is the next one's input."""
        for module in self:
            input = module(input)
        return input
