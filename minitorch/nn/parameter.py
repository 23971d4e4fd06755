"""`nn.Parameter`: a tensor that a module learns, as `torch.nn.Parameter`.

In A0 a `minitorch.Parameter` is a box around a learned value — a float, a Scalar or a
tensor — kept in `.value`. From the tensor stages on, a parameter *is* its tensor, as in
PyTorch, so that code written for PyTorch reads it as one:

    self.weight = nn.Parameter(minitorch.randn(3, 4))   # registered by Module.__setattr__
    y = x @ self.weight.T + self.bias                    # a Tensor in every operation
    self.weight.numel(), self.weight.grad, self.weight.data.normal_(0, 0.02)

`nn.Parameter` is both: a `Tensor` (a leaf that requires grad by default) and an A0
`Parameter` (so `Module` registers it and the optimizers take it). Its `.value` is itself,
so code of the kit that reads `self.weight.value` is unchanged, and `update(t)` makes it
hold `t`'s data, as assigning `p.data = t` does in PyTorch: the object — and every module,
optimizer and list that holds it — stays the same.

Operations on a parameter give plain tensors (`p * 2` is a `Tensor`), as in PyTorch.
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from ..module import Parameter as BoxParameter
from ..tensor import Tensor
from ..tensor_data import TensorData


class Parameter(Tensor, BoxParameter):
    """A leaf tensor registered as learned state when assigned to a Module attribute.

    Args:
        data: the initial values (shared, not copied, as PyTorch); None gives an empty tensor.
        requires_grad: whether the parameter accumulates a gradient (default True).
    """

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        if data is None:
            from ..constructors import zeros

            data = zeros((0,))
        if isinstance(data, BoxParameter) and not isinstance(data, Tensor):
            data = data.value  # an A0 box holding a tensor
        if not isinstance(data, Tensor):
            raise TypeError(
                f"nn.Parameter(data): data must be a Tensor, got {type(data).__name__} "
                "(a float or a Scalar that a module learns goes in minitorch.Parameter, the A0 box)"
            )
        Tensor.__init__(self, data._tensor, backend=data.backend)
        self.requires_grad_(requires_grad)

    # A plain tensor's attributes: none of the A0 box's passing-on to a held value.
    __setattr__ = object.__setattr__

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'Parameter' object has no attribute {name!r}")

    # ---- the A0 Parameter's interface ------------------------------------------------

    @property
    def value(self) -> "Parameter":
        """The tensor this parameter is: itself (`.value` of the A0 box)."""
        return self

    @value.setter
    def value(self, new: Any) -> None:
        raise AttributeError(
            "an nn.Parameter is its tensor, so its .value cannot be another one: "
            "p.update(t) gives it t's data (as p.data = t in PyTorch)"
        )

    def update(self, value: Any) -> None:
        """Hold `value`'s data from now on (same object; the gradient is kept if the shape is).

        The tensor's data changes under anything that saved this parameter for a pending
        backward pass: that is stamped as an in-place write, so the backward refuses to run
        with the new values instead of computing a wrong gradient.
        """
        from .. import inplace

        if not isinstance(value, Tensor):
            raise TypeError(f"Parameter.update: expected a Tensor, got {type(value).__name__}")
        if self.grad is not None and tuple(self.grad.shape) != tuple(value.shape):
            self.grad = None
        self._tensor = value._tensor
        self.backend = value.backend
        inplace.mark_written(self._tensor._storage)

    # ---- PyTorch's behaviours --------------------------------------------------------

    def __deepcopy__(self, memo: dict) -> "Parameter":
        """`copy.deepcopy(model)`: a new Parameter with its own storage (and `.grad`)."""
        out = Parameter(
            Tensor(
                TensorData(self._tensor._storage.copy(), self.shape, self._tensor.strides),
                backend=self.backend,
            ),
            self.requires_grad,
        )
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)
