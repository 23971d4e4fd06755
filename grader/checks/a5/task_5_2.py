"""Hidden checks of task 5.2: LSTM cell."""

from __future__ import annotations

from ..base import CheckContext, check
from .cells import _cell_equivalence, _cell_gradcheck


@check("5.2", "lstm_cell", kind="equivalence")
def lstm_cell(ctx: CheckContext) -> None:
    """lstm_cell: (h', c') and the gradients of the input, h, c, the weights and the biases,
    against the reference (gate order i, f, g, o), float32 included."""
    _cell_equivalence(ctx, "lstm", ("cell",))


@check("5.2", "lstm_step", kind="equivalence")
def lstm_step(ctx: CheckContext) -> None:
    """lstm_step, the step the layers call on a precomputed x W_ihᵀ + b_ih, with and without b_hh."""
    _cell_equivalence(ctx, "lstm", ("step",))


@check("5.2", "lstm_module", kind="equivalence")
def lstm_module(ctx: CheckContext) -> None:
    """LSTMCell with given weights, with hx=None (zeros) and a given state, batched or not."""
    _cell_equivalence(ctx, "lstm", ("module",))


@check("5.2", "lstm_cell_gradcheck", kind="gradient")
def lstm_cell_gradcheck(ctx: CheckContext) -> None:
    """lstm_cell: backward of h' and c' against central differences of the student's forward."""
    _cell_gradcheck(ctx, "lstm")
