"""`minitorch.autograd`, as `torch.autograd`: what older PyTorch code imports from it.

`Variable` was PyTorch's autograd wrapper before tensors took its place (PyTorch 0.4);
there, as here, it is now the tensor itself: `Variable(x, requires_grad=True)` is `x`
asking for a gradient. `no_grad` and `Function` are the library's own.
"""

from __future__ import annotations

from .function import Function, no_grad
from .tensor import Tensor

__all__ = ["Variable", "Function", "no_grad"]


def Variable(data: Tensor, requires_grad: bool = False) -> Tensor:  # noqa: N802 - PyTorch's name
    """`data` itself (marked as needing a gradient when `requires_grad`)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable(): expected a minitorch Tensor, got {type(data).__name__}")
    return data.requires_grad_(True) if requires_grad else data
