"""Containers of modules: `ModuleList`, a list whose items are registered sub-modules.

A plain Python list of layers hides them from the module tree (their parameters would not be
found by `parameters()` or saved by `state_dict()`). `ModuleList` registers item i under
the name "i", so the parameter names match `torch.nn.ModuleList` (`convs.0.weight`, …).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Union

from .module import Module

__all__ = ["ModuleList"]


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
        self.add_module(str(self._index(i)), module)

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
