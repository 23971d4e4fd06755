"""Hidden checks of task 5.3: GRU cell."""

from __future__ import annotations

from ..base import CheckContext, check
from .cells import _cell_equivalence, _cell_gradcheck


@check("5.3", "gru_cell", kind="equivalence")
def gru_cell(ctx: CheckContext) -> None:
    """gru_cell: h' and the gradients of the input, the state, the weights and the biases,
    against the reference (gate order r, z, n; r ⊙ (W_hn h + b_hn)), float32 included."""
    _cell_equivalence(ctx, "gru", ("cell",))


@check("5.3", "gru_step", kind="equivalence")
def gru_step(ctx: CheckContext) -> None:
    """gru_step, the step the layers call on a precomputed x W_ihᵀ + b_ih, with and without b_hh."""
    _cell_equivalence(ctx, "gru", ("step",))


@check("5.3", "gru_module", kind="equivalence")
def gru_module(ctx: CheckContext) -> None:
    """GRUCell with given weights, with hx=None (zeros) and a given state, batched or not."""
    _cell_equivalence(ctx, "gru", ("module",))


@check("5.3", "gru_cell_gradcheck", kind="gradient")
def gru_cell_gradcheck(ctx: CheckContext) -> None:
    """gru_cell: backward against central differences of the student's forward."""
    _cell_gradcheck(ctx, "gru")
