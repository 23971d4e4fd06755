r"""Stage A5, task 5.3: the GRU cell (Cho et al., 2014), as `torch.nn.GRUCell`.

The lecture's GRU has two gates and no separate cell state. With [a; b] stacking vectors:

    r_t = σ(W_r [h_{t−1}; x_t] + b_r)              reset gate       [H]
    z_t = σ(W_z [h_{t−1}; x_t] + b_z)              update gate      [H]
    h̃_t = tanh(W [r_t ⊙ h_{t−1}; x_t] + b)         candidate        [H]   (reset *before* the product)
    h_t = z_t ⊙ h̃_t + (1 − z_t) ⊙ h_{t−1}                           [H]

PyTorch (and this code) computes a slightly different function, the formulation of
NVIDIA's cuDNN. The weights stack the blocks in the order r, z, n (W_ih [3H, I],
W_hh [3H, H]); with gi = x W_ihᵀ + b_ih and gh = h W_hhᵀ + b_hh, each [B, 3H]:

    r = σ(gi_r + gh_r)      z = σ(gi_z + gh_z)
    n = tanh(gi_n + r ⊙ gh_n)                 = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
    h' = (1 − z) ⊙ n + z ⊙ h

Two differences: the reset gate multiplies W_hn h + b_hn *after* the matrix product, not
h before it; and z weighs the old state where the lecture's z weighs the candidate (the
roles of z and 1 − z swap — only a relabelling, the network learns either). Why apply r
after the product: then h W_hhᵀ for all three blocks is one matrix product per step,
computed before r is known; the lecture's form needs a second product (r ⊙ h) W_hnᵀ that
must wait for r. Both variants train about equally well, but they are different functions:
the code follows PyTorch so that a PyTorch state_dict loads and the outputs match.

* `gru_step(x_proj, h, w_hh, b_hh)` — one step given the input's share gi = x_proj =
  x_t W_ihᵀ + b_ih [B, 3H] (the layer computes it for all steps at once);
* `gru_cell(input, h, w_ih, w_hh, b_ih, b_hh)` — the whole cell, as PyTorch's.
"""

from __future__ import annotations

from typing import Optional

from ..tensor import Tensor
from ..tensor_ops import TensorBackend
from .rnn import RNNCellBase, check_cell

__all__ = ["gru_cell", "gru_step", "GRUCell"]


def gru_step(
    x_proj: Tensor,
    hx: Tensor,
    w_hh: Tensor,
    b_hh: Optional[Tensor] = None,
) -> Tensor:
    """One GRU step given the input's share gi = x_proj = x_t W_ihᵀ + b_ih (blocks r, z, n):

        gh = hx W_hhᵀ + b_hh                                      [B, 3H]
        r = σ(gi_r + gh_r)    z = σ(gi_z + gh_z)    n = tanh(gi_n + r ⊙ gh_n)
        h' = (1 − z) ⊙ n + z ⊙ hx

    x_proj [B, 3H], hx [B, H], w_hh [3H, H], b_hh [3H] or None → h' [B, H]. Called by the
    layers once per time step with checked arguments; checks nothing itself.
    """
    # BEGIN SOLUTION 5.3
    hidden = hx.shape[-1]
    gh = hx @ w_hh.transpose(0, 1)
    if b_hh is not None:
        gh = gh + b_hh
    r = (x_proj[..., 0:hidden] + gh[..., 0:hidden]).sigmoid()
    z = (x_proj[..., hidden : 2 * hidden] + gh[..., hidden : 2 * hidden]).sigmoid()
    n = (x_proj[..., 2 * hidden : 3 * hidden] + r * gh[..., 2 * hidden : 3 * hidden]).tanh()
    return n + z * (hx - n)  # = (1 − z) ⊙ n + z ⊙ hx
    # END SOLUTION 5.3


def gru_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor] = None,
    b_hh: Optional[Tensor] = None,
) -> Tensor:
    """One GRU step, as `torch.nn.GRUCell` computes it (gate order r, z, n):

        r = σ(W_ir x + b_ir + W_hr h + b_hr)     z = σ(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))     h' = (1 − z) ⊙ n + z ⊙ h

    input [B, I], hx [B, H], w_ih [3H, I], w_hh [3H, H], b_ih and b_hh [3H] (or None)
    → h' [B, H]. Without a batch: input [I], hx [H] → [H]. Write it as the input
    projection x_proj = input W_ihᵀ + b_ih followed by `gru_step`.
    """
    if not check_cell("gru_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh, gates=3):
        return gru_cell(input.unsqueeze(0), hx.unsqueeze(0), w_ih, w_hh, b_ih, b_hh).squeeze(0)
    # BEGIN SOLUTION 5.3
    x_proj = input @ w_ih.transpose(0, 1)
    if b_ih is not None:
        x_proj = x_proj + b_ih
    return gru_step(x_proj, hx, w_hh, b_hh)
    # END SOLUTION 5.3


class GRUCell(RNNCellBase):
    """A GRU cell, as `torch.nn.GRUCell(input_size, hidden_size, bias)`.

    Parameters: weight_ih [3H, I], weight_hh [3H, H], bias_ih, bias_hh [3H] (gate blocks
    r, z, n). forward(input [B, I] or [I], hx [B, H] or [H] = zeros) → h' of hx's shape.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, dtype, backend)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self._check_forward(input, (hx,))
        if hx is None:
            hx = self._zeros(input)
        return gru_cell(input, hx, *self._weights())
