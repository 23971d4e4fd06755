r"""Stage A5, task 5.4: gradient clipping, as `torch.nn.utils.clip_grad_norm_` and
`clip_grad_value_`.

Backpropagation through time multiplies T Jacobians of the recurrence, so gradients of
recurrent networks can explode: one bad batch then throws the weights far away. Clipping
bounds the step (Pascanu et al., 2013).

Clipping by norm rescales all gradients together, keeping their direction. With g_1 … g_n
the gradients of the parameters and p = norm_type:

    total = ‖(‖g_1‖_p, …, ‖g_n‖_p)‖_p = (Σ_k Σ_i |g_k,i|^p)^(1/p)      (p = ∞: max_k,i |g_k,i|)
    coef = min(1, max_norm / (total + 1e−6))
    g_k ← coef · g_k           for every k

(the 1e−6 keeps the division finite when every gradient is 0; PyTorch multiplies by coef
even when it is 1). The function returns `total`, the norm *before* clipping, as a 0-d
tensor — worth logging: a growing norm warns of instability. If `error_if_nonfinite` and
the norm is NaN or infinite, it raises a RuntimeError instead of scaling.

Clipping by value clamps every entry of every gradient into [−clip_value, clip_value]
(this changes the direction of the gradient).

Both skip parameters without a gradient (`.grad` None). `parameters` may be minitorch
Parameters (gradients in `p.value.grad`), tensors (gradients in `.grad`), one of either,
or an iterable such as `model.parameters()`. Gradients are data, not part of a graph:
compute with NumPy (`g.numpy()`) and store the result as a new tensor with
`g.new_tensor(array)` into the `.grad` attribute (`set_grad`).
"""

from __future__ import annotations

from typing import Any, Iterable, Union

import numpy as np

from ..fast_paths import replaceable
from ..module import Parameter
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_arguments", "gradient_holders", "set_grad"]

Parameters = Union[Parameter, Tensor, Iterable[Union[Parameter, Tensor]]]


def gradient_holders(name: str, parameters: Parameters) -> list[Tensor]:
    """The tensors whose `.grad` holds a gradient (None-gradients skipped): `p.value` for a
    Parameter, the tensor itself otherwise."""
    if isinstance(parameters, (Parameter, Tensor)):
        parameters = [parameters]
    holders = []
    for p in parameters:
        t: Any = p.value if isinstance(p, Parameter) else p
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected Parameters holding tensors or tensors, got {type(t).__name__}")
        if t.grad is not None:
            holders.append(t)
    return holders


def set_grad(holder: Tensor, values: np.ndarray) -> None:
    """Replace holder.grad by a tensor of `values` (the gradient's dtype and backend).

    The old gradient tensor is not modified in place: two gradients may share one storage
    (the backward pass of a + b hands the same tensor to both), so writing into one would
    change the other.
    """
    holder.grad = holder.grad.new_tensor(values)


def clip_arguments(
    parameters: Parameters, max_norm: float, norm_type: Union[float, str]
) -> tuple[list[Tensor], float, float]:
    """(the tensors holding a gradient, max_norm, norm_type) as `clip_grad_norm_` uses them,
    after checking that norm_type is a positive number or inf."""
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be a positive number or inf, got {norm_type}")
    return gradient_holders("clip_grad_norm_", parameters), float(max_norm), norm_type


@replaceable("clip_grad_norm_")
def clip_grad_norm_(
    parameters: Parameters,
    max_norm: float,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale all gradients together so that their total p-norm is at most `max_norm`:

        total = (Σ over all entries of all gradients |g|^p)^(1/p)   (p = inf: max |g|)
        every g ← g · min(1, max_norm / (total + 1e−6))

    Returns `total` (before clipping) as a 0-d tensor, as `torch.nn.utils.clip_grad_norm_`;
    0 when no parameter has a gradient. `norm_type` may be float("inf") or "inf".
    Raises RuntimeError when error_if_nonfinite and total is NaN or ±inf.
    """
    holders, max_norm, norm_type = clip_arguments(parameters, max_norm, norm_type)
    if not holders:
        return Tensor.make(np.zeros(1), ())  # as PyTorch: a 0-d zero
    # BEGIN SOLUTION 5.4
    grads = [h.grad.numpy().astype(np.float64) for h in holders]
    if norm_type == np.inf:
        norms = np.array([np.max(np.abs(g)) if g.size else 0.0 for g in grads])
        total = float(np.max(norms))
    else:
        norms = np.array([np.sum(np.abs(g) ** norm_type) ** (1.0 / norm_type) for g in grads])
        total = float(np.sum(norms**norm_type) ** (1.0 / norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = min(max_norm / (total + 1e-6), 1.0)
    for h, g in zip(holders, grads):
        set_grad(h, g * coef)
    return holders[0].grad.new_tensor(total)
    # END SOLUTION 5.4


def clip_grad_value_(parameters: Parameters, clip_value: float) -> None:
    """Clamp every entry of every gradient into [−clip_value, clip_value], as
    `torch.nn.utils.clip_grad_value_`."""
    clip_value = float(clip_value)
    holders = gradient_holders("clip_grad_value_", parameters)
    # BEGIN SOLUTION 5.4
    for h in holders:
        set_grad(h, np.clip(h.grad.numpy(), -clip_value, clip_value))
    # END SOLUTION 5.4
