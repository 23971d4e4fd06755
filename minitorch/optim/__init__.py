"""Optimizers (SGD, Adam, AdamW) and learning-rate schedules, with PyTorch's update rules.

An optimizer holds the parameters (`Parameter` objects whose `.value` is a tensor, or leaf
tensors that require grad, as PyTorch allows) in
*parameter groups*, each with its own settings (`lr`, `weight_decay`, …), and, after
`loss.backward()`, `step()` moves each parameter against its gradient:

    optimizer = AdamW([{"params": weights, "weight_decay": 0.01},
                       {"params": biases_and_norms, "weight_decay": 0.0}], lr=3e-4)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)

No graph is recorded: each parameter is updated in place, in its own storage (every tensor
that shares it sees the new values), by ONE Numba kernel call that reads the gradient and
updates the state (momentum buffer; Adam's m and v) and the parameter in a single pass over
the elements. Written with NumPy, the same update would be ten whole-array operations, each
reading and writing every element again and allocating a temporary.

The kernels follow `torch.optim`'s single-tensor code operation by operation (the same
formulas in the same order), so a float64 run agrees with PyTorch to rounding (~1e-15).
Arithmetic is float64 also for float32 parameters (their state is kept in float32).

Files: `optimizer` (the base class: parameter groups, state_dict), `sgd`, `adam` (Adam and
AdamW), `lr_scheduler`.
"""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
