r"""Stage A5, task 5.2: the LSTM cell (Hochreiter & Schmidhuber, 1997), as `torch.nn.LSTMCell`.

The lecture's LSTM keeps a cell state C next to the hidden state h and controls it with
three gates, each a sigmoid of the stacked [h_{t−1}; x_t]:

    f_t = σ(W_f [h_{t−1}; x_t] + b_f)          forget gate        [H]
    i_t = σ(W_i [h_{t−1}; x_t] + b_i)          input gate         [H]
    o_t = σ(W_o [h_{t−1}; x_t] + b_o)          output gate        [H]
    C̃_t = tanh(W_C [h_{t−1}; x_t] + b_C)       candidate cell     [H]
    C_t = f_t ⊙ C_{t−1} + i_t ⊙ C̃_t            new cell state     [H]
    h_t = o_t ⊙ tanh(C_t)                      new hidden state   [H]

As for the RNN (`rnn.py`), each W splits into a block for x and a block for h, and the four
gates are computed by one matrix product each: PyTorch stacks the four blocks of rows in
the order i, f, g, o (g is the candidate C̃), so

    gates = x W_ihᵀ + b_ih + h W_hhᵀ + b_hh      W_ih [4H, I], W_hh [4H, H] → gates [B, 4H]
    i = σ(gates[:, 0:H])   f = σ(gates[:, H:2H])   g = tanh(gates[:, 2H:3H])   o = σ(gates[:, 3H:4H])
    c' = f ⊙ c + i ⊙ g       h' = o ⊙ tanh(c')

The same order here means a PyTorch state_dict loads unchanged. The additive update of C
is what lets gradients flow over many steps: ∂C_t/∂C_{t−1} = f_t, no matrix product.

* `lstm_step(x_proj, (h, c), w_hh, b_hh)` — one step given the input's share of the gates
  x_proj = x_t W_ihᵀ + b_ih [B, 4H] (the layer computes it for all steps at once);
* `lstm_cell(input, (h, c), w_ih, w_hh, b_ih, b_hh)` — the whole cell, as PyTorch's.
"""

from __future__ import annotations

from typing import Optional

from ..tensor import Tensor
from ..tensor_ops import TensorBackend
from .rnn import RNNCellBase, check_cell

__all__ = ["lstm_cell", "lstm_step", "LSTMCell"]


def lstm_step(
    x_proj: Tensor,
    hx: tuple[Tensor, Tensor],
    w_hh: Tensor,
    b_hh: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step given the input's share of the gates x_proj = x_t W_ihᵀ + b_ih:

        gates = x_proj + h W_hhᵀ + b_hh                       [B, 4H], blocks i, f, g, o
        c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g)        h' = σ(o) ⊙ tanh(c')

    x_proj [B, 4H], hx = (h [B, H], c [B, H]), w_hh [4H, H], b_hh [4H] or None → (h', c').
    Called by the layers once per time step with checked arguments; checks nothing itself.
    """
    # BEGIN SOLUTION 5.2
    h, c = hx
    hidden = h.shape[-1]
    gates = x_proj + h @ w_hh.transpose(0, 1)
    if b_hh is not None:
        gates = gates + b_hh
    i = gates[..., 0:hidden].sigmoid()
    f = gates[..., hidden : 2 * hidden].sigmoid()
    g = gates[..., 2 * hidden : 3 * hidden].tanh()
    o = gates[..., 3 * hidden : 4 * hidden].sigmoid()
    c_next = f * c + i * g
    h_next = o * c_next.tanh()
    return h_next, c_next
    # END SOLUTION 5.2


def lstm_cell(
    input: Tensor,
    hx: tuple[Tensor, Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor] = None,
    b_hh: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step, as `torch.nn.LSTMCell` computes it (gate order i, f, g, o):

        gates = input W_ihᵀ + b_ih + h W_hhᵀ + b_hh
        c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g)        h' = σ(o) ⊙ tanh(c')

    input [B, I], hx = (h [B, H], c [B, H]), w_ih [4H, I], w_hh [4H, H], b_ih and b_hh
    [4H] (or None) → (h' [B, H], c' [B, H]). Without a batch: input [I], h and c [H].
    Write it as the input projection x_proj = input W_ihᵀ + b_ih followed by `lstm_step`.
    """
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"lstm_cell: hx must be a pair (h, c) of tensors, got {type(hx).__name__}")
    h, c = hx
    if not check_cell("lstm_cell", input, (h, c), w_ih, w_hh, b_ih, b_hh, gates=4):
        h_next, c_next = lstm_cell(
            input.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0)), w_ih, w_hh, b_ih, b_hh
        )
        return h_next.squeeze(0), c_next.squeeze(0)
    # BEGIN SOLUTION 5.2
    x_proj = input @ w_ih.transpose(0, 1)
    if b_ih is not None:
        x_proj = x_proj + b_ih
    return lstm_step(x_proj, (h, c), w_hh, b_hh)
    # END SOLUTION 5.2


class LSTMCell(RNNCellBase):
    """An LSTM cell, as `torch.nn.LSTMCell(input_size, hidden_size, bias)`.

    Parameters: weight_ih [4H, I], weight_hh [4H, H], bias_ih, bias_hh [4H] (gate blocks
    i, f, g, o). forward(input [B, I] or [I], hx = (h, c) or None for zeros) → (h', c').
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, dtype, backend)

    def forward(self, input: Tensor, hx: Optional[tuple[Tensor, Tensor]] = None) -> tuple[Tensor, Tensor]:
        if hx is None:
            self._check_forward(input, ())
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"LSTMCell: hx must be a pair (h, c) of tensors, got {type(hx).__name__}")
            self._check_forward(input, tuple(hx))
        return lstm_cell(input, tuple(hx), *self._weights())
