"""Stage A0: modules, the tree that holds a model's parameters.

A model is a tree of `Module`s. Assigning a `Parameter` or a `Module` to an attribute
registers it (PyTorch style), so the tree can be walked without listing anything twice:

    class Net(Module):
        def __init__(self):
            super().__init__()
            self.layer1 = Linear(2, 3)        # registered in self._modules
            self.scale = Parameter(1.0)        # registered in self._parameters

    net.named_parameters()  →  [("scale", …), ("layer1.weight", …), ("layer1.bias", …)]

Parameters are named by the path of attribute names from the root, joined by dots.
`state_dict()` / `load_state_dict()` save and restore them as NumPy arrays under those
names (the keys a PyTorch `state_dict` of the same architecture uses).

A *buffer* is state a module keeps but does not learn (a positional-encoding table, running
statistics): `self.register_buffer("pe", table)`. It is found by `named_buffers()`, saved
by `state_dict()` after the parameters (unless registered with `persistent=False`) and never
handed to an optimizer.

This module does not import the tensor code (A0 comes before tensors): tensors are recognised
by what they can do (`.numpy()`, `.shape`), Scalars by `.data`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, NamedTuple, Optional, Union

import numpy as np


class Parameter:
    """A value a module learns: a Tensor, a Scalar or a plain float, kept in `.value`.

    The wrapper stays in place while training replaces what it holds (`update`), so an
    optimizer that keeps a list of parameters always sees the current values. From the
    tensor stages on, layers use `nn.Parameter` (`minitorch/nn/parameter.py`), which *is*
    its tensor, as in PyTorch, and is also one of these (its `.value` is itself).
    """

    def __init__(self, value: Any = None, name: Optional[str] = None) -> None:
        self.value = value
        self.name = name
        _mark_requires_grad(value)

    def update(self, value: Any) -> None:
        """Replace the held value; a Tensor or Scalar is marked as needing a gradient."""
        self.value = value
        _mark_requires_grad(value)

    # In PyTorch a Parameter *is* its tensor, and code reads `p.numel()`, `p.grad`, `p.data`,
    # `p.shape` off it. Here it holds one, and passes on what it does not have itself:

    def __getattr__(self, name: str) -> Any:
        """An attribute of the held value (`p.numel()`, `p.grad`, `p.shape`, …)."""
        value = self.__dict__.get("value")
        if name.startswith("_") or value is None:
            raise AttributeError(f"'Parameter' object has no attribute {name!r}")
        try:
            return getattr(value, name)
        except AttributeError:
            raise AttributeError(
                f"'Parameter' object (holding a {type(value).__name__}) has no attribute {name!r}"
            ) from None

    def __setattr__(self, name: str, new: Any) -> None:
        """`p.grad = None`, `p.data = t`, `p.requires_grad = False` set the held tensor's."""
        if name in _PASSED_ON and name not in self.__dict__ and hasattr(self.__dict__.get("value"), name):
            setattr(self.__dict__["value"], name, new)
        else:
            object.__setattr__(self, name, new)

    def __repr__(self) -> str:
        return f"Parameter({self.value!r})"

    def __str__(self) -> str:
        return str(self.value)


#: The attributes a Parameter sets on the tensor it holds (see `Parameter.__setattr__`).
_PASSED_ON = ("grad", "data", "requires_grad")


def _mark_requires_grad(value: Any) -> None:
    """Tensors and Scalars learn: ask them to record gradients (floats cannot)."""
    if hasattr(value, "requires_grad_"):
        value.requires_grad_(True)


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict(strict=False)` could not match (PyTorch returns the same)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class of every model and layer.

    Attributes:
        training: True in training mode (dropout active), False in evaluation mode.
        _parameters: this module's own parameters, by attribute name.
        _modules: this module's direct sub-modules, by attribute name.
    """

    training: bool
    _parameters: dict[str, Parameter]
    _modules: dict[str, "Module"]
    _buffers: dict[str, Any]
    _non_persistent: set[str]

    def __init__(self) -> None:
        # Written through __dict__: our __setattr__ relies on these existing.
        self.__dict__["_parameters"] = {}
        self.__dict__["_modules"] = {}
        self.__dict__["_buffers"] = {}
        self.__dict__["_non_persistent"] = set()
        self.__dict__["training"] = True

    # ---- registration by attribute assignment -------------------------------------------

    def __setattr__(self, key: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        if isinstance(value, (Parameter, Module)) and (params is None or modules is None):
            kind = "parameter" if isinstance(value, Parameter) else "sub-module"
            raise AttributeError(
                f"cannot assign {kind} {key!r} before Module.__init__() was called: "
                f"call super().__init__() first in {type(self).__name__}.__init__"
            )
        buffers = self.__dict__.get("_buffers", {})
        if key in buffers and not isinstance(value, (Parameter, Module)):
            if value is not None and not _is_tensor(value):
                raise TypeError(
                    f"cannot assign {type(value).__name__!r} as buffer {key!r} (a Tensor or None expected)"
                )
            buffers[key] = value
            return
        buffers.pop(key, None)
        self.__dict__.get("_non_persistent", set()).discard(key)
        # A name holds one thing: drop whatever it held before.
        if params is not None:
            params.pop(key, None)
        if modules is not None:
            modules.pop(key, None)
        self.__dict__.pop(key, None)
        if isinstance(value, Parameter):
            if value.name is None:
                value.name = key
            params[key] = value
        elif isinstance(value, Module):
            modules[key] = value
        else:
            object.__setattr__(self, key, value)

    def __getattr__(self, key: str) -> Any:
        # Only called when normal lookup fails, i.e. for registered parameters and modules.
        params = self.__dict__.get("_parameters", {})
        if key in params:
            return params[key]
        modules = self.__dict__.get("_modules", {})
        if key in modules:
            return modules[key]
        buffers = self.__dict__.get("_buffers", {})
        if key in buffers:
            return buffers[key]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __delattr__(self, key: str) -> None:
        if key in self.__dict__.get("_parameters", {}):
            del self._parameters[key]
        elif key in self.__dict__.get("_modules", {}):
            del self._modules[key]
        elif key in self.__dict__.get("_buffers", {}):
            del self._buffers[key]
            self._non_persistent.discard(key)
        else:
            object.__delattr__(self, key)

    def add_parameter(self, name: str, value: Any) -> Parameter:
        """Wrap `value` in a Parameter named `name`, register it and return it."""
        param = Parameter(value, name)
        setattr(self, name, param)
        return param

    def register_parameter(self, name: str, param: Parameter) -> None:
        """Register an existing Parameter under `name` (as `torch.nn.Module` does)."""
        if not isinstance(param, Parameter):
            raise TypeError(
                f"register_parameter({name!r}, …): expected a Parameter, got {type(param).__name__}"
            )
        setattr(self, name, param)

    def add_module(self, name: str, module: "Module") -> None:
        """Register `module` as a child named `name` (for names built at run time)."""
        if not isinstance(module, Module):
            raise TypeError(f"add_module({name!r}, …): expected a Module, got {type(module).__name__}")
        setattr(self, name, module)

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Keep `tensor` (or None) as state that is not learned, under `name` (`torch.nn.Module.register_buffer`).

        It is an attribute (`self.name`; assigning a tensor to `self.name` replaces it), is listed
        by `named_buffers()` and, when `persistent`, saved and loaded by `state_dict()` /
        `load_state_dict()`. It is not a parameter: no optimizer sees it.
        """
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'buffer name can\'t be empty or contain ".", got {name!r}')
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if tensor is not None and not _is_tensor(tensor):
            raise TypeError(
                f"cannot assign {type(tensor).__name__!r} object to buffer {name!r} (a Tensor or None required)"
            )
        if name not in self._buffers and (
            hasattr(self, name) or name in self._parameters or name in self._modules
        ):
            raise KeyError(f"attribute {name!r} already exists")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    # ---- walking the tree ---------------------------------------------------------------

    def named_children(self) -> list[tuple[str, "Module"]]:
        """The direct sub-modules with their attribute names, in registration order."""
        return list(self._modules.items())

    def children(self) -> list["Module"]:
        """The direct sub-modules, in registration order."""
        return list(self._modules.values())

    def named_modules(self, prefix: str = "", remove_duplicate: bool = True) -> list[tuple[str, "Module"]]:
        """This module and every module below it, each with its dotted path, parents first.

        The root gets `prefix` (by default ""), a child `c` of the root gets "c", its child
        `d` gets "c.d", and so on (depth first, in registration order). A module reachable by
        two paths is listed once unless `remove_duplicate=False`.

        Example: for Net(layer1=Linear, block=Block(fc=Linear)) the result is
        [("", net), ("layer1", …), ("block", …), ("block.fc", …)].
        """
        # BEGIN SOLUTION 0.3
        out: list[tuple[str, Module]] = []
        seen: set[int] = set()

        def visit(module: Module, path: str) -> None:
            if remove_duplicate:
                if id(module) in seen:
                    return
                seen.add(id(module))
            out.append((path, module))
            for name, child in module._modules.items():
                visit(child, f"{path}.{name}" if path else name)

        visit(self, prefix)
        return out
        # END SOLUTION 0.3

    def modules(self) -> list["Module"]:
        """This module and every module below it (see `named_modules`)."""
        return [m for _, m in self.named_modules()]

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> list[tuple[str, Parameter]]:
        """Every parameter with its dotted name: own parameters first, then each sub-module's.

        A parameter `weight` of the child `layer1` is named "layer1.weight". With
        `recurse=False` only this module's own parameters are listed. A Parameter object
        registered in two places (tied weights) is listed once unless
        `remove_duplicate=False`.
        """
        # BEGIN SOLUTION 0.3
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = [(prefix, self)]
        out: list[tuple[str, Parameter]] = []
        seen: set[int] = set()
        for path, module in modules:
            for name, param in module._parameters.items():
                if remove_duplicate:
                    if id(param) in seen:
                        continue
                    seen.add(id(param))
                out.append((f"{path}.{name}" if path else name, param))
        return out
        # END SOLUTION 0.3

    def parameters(self, recurse: bool = True) -> list[Parameter]:
        """Every parameter of this module and its sub-modules (see `named_parameters`)."""
        # BEGIN SOLUTION 0.3
        return [p for _, p in self.named_parameters(recurse=recurse)]
        # END SOLUTION 0.3

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> list[tuple[str, Any]]:
        """Every buffer (None ones left out) with its dotted name, module by module as
        `named_parameters`; a tensor registered in two places is listed once unless
        `remove_duplicate=False`."""
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        out: list[tuple[str, Any]] = []
        seen: set[int] = set()
        for path, module in modules:
            for name, buffer in module._buffers.items():
                if buffer is None or (remove_duplicate and id(buffer) in seen):
                    continue
                seen.add(id(buffer))
                out.append((f"{path}.{name}" if path else name, buffer))
        return out

    def buffers(self, recurse: bool = True) -> list[Any]:
        """Every buffer of this module and its sub-modules (see `named_buffers`)."""
        return [b for _, b in self.named_buffers(recurse=recurse)]

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        """Call `fn` on every sub-module (children first, recursively), then on this module;
        return self. The usual use is initialisation: `model.apply(init_weights)`."""
        for child in self._modules.values():
            child.apply(fn)
        fn(self)
        return self

    # ---- devices and dtypes -------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """Move every parameter and buffer to a device and/or convert the floating ones to a
        dtype, as `torch.nn.Module.to`: `model.to("cuda")`, `model.to(minitorch.float32)`.
        Each Parameter object stays (its value is replaced by a new leaf tensor); returns self."""
        from .tensor import _to_arguments  # tensors exist from stage A2 on

        device, dtype = _to_arguments(args, dict(kwargs))
        for module in self.modules():
            for param in module._parameters.values():
                moved = _moved(param.value, device, dtype)
                if moved is not param.value:
                    param.update(moved)
            for name, buffer in module._buffers.items():
                module._buffers[name] = _moved(buffer, device, dtype)
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Module":
        return self.to("cuda" if device is None else device)

    def double(self) -> "Module":
        """Floating parameters and buffers to float64."""
        return self.to(dtype=np.float64)

    def float(self) -> "Module":
        """Floating parameters and buffers to float32."""
        return self.to(dtype=np.float32)

    # ---- modes --------------------------------------------------------------------------

    def train(self, mode: bool = True) -> "Module":
        """Set `training = mode` on this module and every module below it; return self."""
        # BEGIN SOLUTION 0.3
        for module in self.modules():
            module.training = mode
        return self
        # END SOLUTION 0.3

    def eval(self) -> "Module":
        """Evaluation mode: `train(False)`."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of every parameter (`torch.nn.Module.zero_grad`): `grad = None`,
        or zeros of the parameter's shape with `set_to_none=False`."""
        for p in self.parameters():
            value = p.value
            if hasattr(value, "grad") and value.grad is not None:
                value.grad = None if set_to_none else value.zeros(value.shape)

    # ---- calling ------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- printing -----------------------------------------------------------------------

    def extra_repr(self) -> str:
        """Layer settings shown inside the parentheses of the repr (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [f"({name}): {_indent(repr(child), 2)}" for name, child in self._modules.items()]
        name = type(self).__name__
        if not children and len(lines) <= 1:
            return f"{name}({extra})"
        body = "\n  ".join(lines + children)
        return f"{name}(\n  {body}\n)"

    # ---- saving and loading -------------------------------------------------------------

    def _persistent_buffers(self) -> list[tuple[str, "Module", str]]:
        """(dotted name, owning module, attribute) of every buffer `state_dict` saves."""
        return [
            (f"{path}.{name}" if path else name, module, name)
            for path, module in self.named_modules(remove_duplicate=False)
            for name, buffer in module._buffers.items()
            if buffer is not None and name not in module._non_persistent
        ]

    def state_dict(self) -> dict[str, Any]:
        """A copy of every parameter, then of every persistent buffer, by dotted name: NumPy
        arrays for tensors, floats otherwise.

        Tied parameters appear under each of their names, as in PyTorch. (PyTorch lists each
        module's buffers right after its parameters; the keys and values are the same.)
        """
        out = {name: _export(p.value) for name, p in self.named_parameters(remove_duplicate=False)}
        for key, module, name in self._persistent_buffers():
            out[key] = _export(module._buffers[name])
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values from `state_dict` (dotted name → array or number) into the parameters.

        With `strict=True` (the default) the keys must match `state_dict()` exactly; a
        missing or unexpected key raises a RuntimeError naming it. A value whose shape
        differs from the parameter's raises a RuntimeError naming the key and both shapes,
        whatever `strict` says (as in PyTorch). Nothing is changed unless every check passes. Returns the missing and
        unexpected keys (empty lists when strict).
        """
        params: dict[str, Any] = dict(self.named_parameters(remove_duplicate=False))
        params.update({key: _BufferSlot(module, name) for key, module, name in self._persistent_buffers()})
        missing = [k for k in params if k not in state_dict]
        unexpected = [k for k in state_dict if k not in params]
        if strict and (missing or unexpected):
            problems = []
            if missing:
                problems.append("missing key(s) " + ", ".join(repr(k) for k in missing))
            if unexpected:
                problems.append("unexpected key(s) " + ", ".join(repr(k) for k in unexpected))
            raise RuntimeError(
                f"Error loading state_dict into {type(self).__name__}: "
                + "; ".join(problems)
                + f" (expected keys: {', '.join(params)})"
            )
        arrays: dict[str, np.ndarray] = {}
        mismatches = []
        for key, param in params.items():
            if key not in state_dict:
                continue
            arr = _to_numpy(state_dict[key])
            shape = _shape_of(param.value)
            if tuple(arr.shape) != shape:
                mismatches.append(
                    f"{key!r}: the state_dict holds shape {tuple(arr.shape)}, the parameter has shape {shape}"
                )
            arrays[key] = arr
        if mismatches:
            raise RuntimeError(
                f"Error loading state_dict into {type(self).__name__}: shape mismatch for "
                + "; ".join(mismatches)
            )
        for key, arr in arrays.items():
            _load_into(params[key], arr)
        return IncompatibleKeys(missing, unexpected)


def _moved(value: Any, device: Any, dtype: Any) -> Any:
    """A tensor on `device` with `dtype` (integer and bool tensors keep theirs), detached;
    anything else (a float, a Scalar, None) as it is."""
    if not (_is_tensor(value) and hasattr(value, "to")):
        return value
    if dtype is not None and np.dtype(value.dtype).kind != "f":
        dtype = None
    moved = value.to(device=device, dtype=dtype)
    return value if moved is value else moved.detach()


def _indent(text: str, spaces: int) -> str:
    """Indent every line of `text` but the first."""
    return text.replace("\n", "\n" + " " * spaces)


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "numpy") and hasattr(value, "shape")


def _to_numpy(value: Any) -> np.ndarray:
    """An array from whatever a state_dict may hold: arrays, numbers, minitorch/torch tensors."""
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "numpy"):
        value = value.numpy()
    elif hasattr(value, "data") and not isinstance(value, np.ndarray):  # a Scalar
        value = value.data
    return np.asarray(value)


def _shape_of(value: Any) -> tuple[int, ...]:
    if _is_tensor(value) or isinstance(value, np.ndarray):
        return tuple(value.shape)
    return ()


def _export(value: Any) -> Any:
    """What state_dict stores for a parameter value: an array copy, or a float."""
    if _is_tensor(value) or isinstance(value, np.ndarray):
        return np.array(_to_numpy(value), copy=True)
    return float(_to_numpy(value))


class _BufferSlot:
    """A buffer seen as a Parameter by `load_state_dict`: `.value` reads it, `update` replaces it."""

    def __init__(self, module: Module, name: str) -> None:
        self.module, self.name = module, name

    @property
    def value(self) -> Any:
        return self.module._buffers[self.name]

    def update(self, value: Any) -> None:
        self.module._buffers[self.name] = value


def _load_into(param: Union[Parameter, _BufferSlot], arr: np.ndarray) -> None:
    """Put the values of `arr` in `param`, keeping the kind (tensor, array, Scalar, float),
    dtype and backend of what it holds."""
    value = param.value
    if isinstance(value, np.ndarray):
        value[...] = arr
    elif _is_tensor(value):
        data = getattr(value, "_tensor", None)
        storage = getattr(data, "_storage", None)
        if isinstance(storage, np.ndarray) and storage.flags.writeable and data.is_contiguous():
            # In place: the tensor object (and anything holding it) sees the new values.
            storage[: arr.size] = arr.reshape(-1)
        else:
            param.update(value.new_tensor(arr))  # a new tensor of value's dtype and backend
    elif hasattr(value, "requires_grad_"):  # a Scalar: a fresh leaf with the loaded value
        param.update(type(value)(float(arr)))
    else:
        param.update(float(arr))
