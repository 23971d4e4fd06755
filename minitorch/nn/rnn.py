r"""Stage A5, task 5.1: the Elman RNN cell, as `torch.nn.RNNCell`.

The lecture writes one step of a recurrent network with one weight matrix acting on the
previous state and the input stacked:

    h_t = tanh(W [h_{t−1}; x_t] + b)        W [H, H + I],  h [H],  x_t [I],  b [H]

Splitting W column-wise into the block that sees h and the block that sees x,
W = [W_hh | W_ih], gives the same product as two:

    h_t = tanh(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh)      W_ih [H, I],  W_hh [H, H]

(PyTorch keeps two biases b_ih and b_hh; only their sum matters.) The split is what makes
RNNs fast: x_t W_ihᵀ + b_ih does not depend on the recurrence, so a layer computes it for
all T time steps with one large matrix product before the loop, and only h_{t−1} W_hhᵀ
stays inside the loop. That is why the code has two functions:

* `rnn_step(x_proj, hx, w_hh, b_hh)` — one step given the input's share
  x_proj = x_t W_ihᵀ + b_ih [B, H]; the layers (`recurrent.py`) call this one;
* `rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh)` — the whole cell, as PyTorch's: it
  projects the input and takes one step.

Shapes: input [B, I] (or [I] without a batch), hx [B, H] (or [H]), output h' like hx.
`nonlinearity="relu"` replaces tanh by max(0, ·), as in PyTorch.

This file also holds what the three cells share: `check_cell` (argument checks with
errors that name the cell and the shapes) and `RNNCellBase` (the parameters: weight_ih
[G·H, I], weight_hh [G·H, H], bias_ih [G·H], bias_hh [G·H] for G gate blocks — 1 here, 4
for the LSTM, 3 for the GRU — all drawn from U(−1/√H, 1/√H) as PyTorch does).
"""

from __future__ import annotations

import math
from typing import Optional

from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .linear import uniform
from .validation import check_float

__all__ = ["rnn_cell", "rnn_step", "RNNCell", "RNNCellBase", "check_cell", "NONLINEARITIES"]

#: The activations an Elman RNN may use (PyTorch's choices).
NONLINEARITIES = ("tanh", "relu")


def check_nonlinearity(name: str, nonlinearity: str) -> None:
    """Raise PyTorch's ValueError for an activation other than "tanh" or "relu"."""
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"{name}: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")


def check_cell(
    name: str,
    input: Tensor,
    hx: tuple[Tensor, ...],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor],
    b_hh: Optional[Tensor],
    gates: int,
) -> bool:
    """Check the arguments of a cell function; return whether the input has a batch dimension.

    `hx` holds the state tensors (one for RNN/GRU, h and c for the LSTM); `gates` is the
    number G of H-sized blocks stacked in the weights. Errors name the cell and the shapes.
    """
    check_float(name, input=input, w_ih=w_ih, w_hh=w_hh, b_ih=b_ih, b_hh=b_hh)
    for k, h in enumerate(hx):
        check_float(name, **{"hx" if len(hx) == 1 else f"hx[{k}]": h})
    if w_hh.dims != 2 or w_hh.shape[0] != gates * w_hh.shape[1]:
        raise ShapeError(f"{name}: w_hh must have shape [{gates}·H, H], got {w_hh.shape}")
    hidden = w_hh.shape[1]
    if w_ih.dims != 2 or w_ih.shape[0] != gates * hidden:
        raise ShapeError(
            f"{name}: w_ih must have shape [{gates}·H, I] = [{gates * hidden}, I], got {w_ih.shape}"
        )
    for bname, b in (("b_ih", b_ih), ("b_hh", b_hh)):
        if b is not None and b.shape != (gates * hidden,):
            raise ShapeError(f"{name}: {bname} must have shape ({gates * hidden},), got {b.shape}")
    if input.dims not in (1, 2):
        raise ValueError(
            f"{name}: Expected input to be 1D or 2D, got {input.dims}D instead (shape {input.shape})"
        )
    if input.shape[-1] != w_ih.shape[1]:
        raise ShapeError(
            f"{name}: input has inconsistent input_size: got {input.shape[-1]}, expected {w_ih.shape[1]} "
            f"(input shape {input.shape}, w_ih shape {w_ih.shape})"
        )
    expected = input.shape[:-1] + (hidden,)
    for k, h in enumerate(hx):
        what = "hx" if len(hx) == 1 else f"hx[{k}]"
        if h.shape != expected:
            raise ShapeError(
                f"{name}: {what} must have shape {expected} for input of shape {input.shape} "
                f"and hidden size {hidden}, got {h.shape}"
            )
    return input.dims == 2


def rnn_step(
    x_proj: Tensor,
    hx: Tensor,
    w_hh: Tensor,
    b_hh: Optional[Tensor] = None,
    nonlinearity: str = "tanh",
) -> Tensor:
    """One RNN step given the input's share x_proj = x_t W_ihᵀ + b_ih:

        h' = act(x_proj + hx W_hhᵀ + b_hh)        x_proj [B, H], hx [B, H], w_hh [H, H] → h' [B, H]

    `act` is tanh or relu; a missing b_hh counts as 0. The layers call this once per time
    step with arguments they have checked, so it checks nothing itself.
    """
    # BEGIN SOLUTION 5.1
    pre = x_proj + hx @ w_hh.transpose(0, 1)
    if b_hh is not None:
        pre = pre + b_hh
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()
    # END SOLUTION 5.1


def rnn_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor] = None,
    b_hh: Optional[Tensor] = None,
    nonlinearity: str = "tanh",
) -> Tensor:
    """One step of an Elman RNN, as `torch.nn.RNNCell` computes it:

        h' = act(input W_ihᵀ + b_ih + hx W_hhᵀ + b_hh)

    input [B, I], hx [B, H], w_ih [H, I], w_hh [H, H], b_ih and b_hh [H] (or None) → h' [B, H].
    Without a batch: input [I], hx [H] → [H]. Write it as the input projection
    x_proj = input W_ihᵀ + b_ih followed by `rnn_step`.
    """
    check_nonlinearity("rnn_cell", nonlinearity)
    if not check_cell("rnn_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh, gates=1):
        return rnn_cell(input.unsqueeze(0), hx.unsqueeze(0), w_ih, w_hh, b_ih, b_hh, nonlinearity).squeeze(0)
    # BEGIN SOLUTION 5.1
    x_proj = input @ w_ih.transpose(0, 1)
    if b_ih is not None:
        x_proj = x_proj + b_ih
    return rnn_step(x_proj, hx, w_hh, b_hh, nonlinearity)
    # END SOLUTION 5.1


class RNNCellBase(Module):
    """What the three cell modules share: sizes and the parameters, as PyTorch's RNNCellBase.

    Parameters (G = `gates` blocks of H rows, in the cell's gate order): weight_ih
    [G·H, input_size], weight_hh [G·H, hidden_size], and with `bias` bias_ih, bias_hh
    [G·H]; all start as U(−1/√H, 1/√H).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        gates: int,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if input_size <= 0 or hidden_size <= 0:
            raise ValueError(
                f"{name}({input_size}, {hidden_size}): input_size and hidden_size must be positive"
            )
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        bound = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = Parameter(uniform((gates * hidden_size, input_size), bound, dtype, backend))
        self.weight_hh = Parameter(uniform((gates * hidden_size, hidden_size), bound, dtype, backend))
        if bias:
            self.bias_ih = Parameter(uniform((gates * hidden_size,), bound, dtype, backend))
            self.bias_hh = Parameter(uniform((gates * hidden_size,), bound, dtype, backend))
        else:
            self.bias_ih = None
            self.bias_hh = None

    def _weights(self) -> tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """(w_ih, w_hh, b_ih, b_hh) as tensors (the biases None without bias)."""
        b_ih = self.bias_ih.value if self.bias_ih is not None else None
        b_hh = self.bias_hh.value if self.bias_hh is not None else None
        return self.weight_ih.value, self.weight_hh.value, b_ih, b_hh

    def _check_forward(self, input: Tensor, hx: tuple[Optional[Tensor], ...]) -> None:
        """PyTorch's module-level checks: a 1-D or 2-D input of `input_size` features, and
        state tensors (None: not given) of shape input.shape[:-1] + (hidden_size,)."""
        name = type(self).__name__
        check_float(name, input=input)
        if input.dims not in (1, 2):
            raise ValueError(
                f"{name}: Expected input to be 1D or 2D, got {input.dims}D instead (shape {input.shape})"
            )
        if input.shape[-1] != self.input_size:
            raise ShapeError(
                f"{name}: input has inconsistent input_size: got {input.shape[-1]}, expected {self.input_size} "
                f"(input shape {input.shape})"
            )
        expected = input.shape[:-1] + (self.hidden_size,)
        for k, h in enumerate(hx):
            what = "hx" if len(hx) == 1 else f"hx[{k}]"
            if h is None:
                continue
            check_float(name, **{what: h})
            if h.shape != expected:
                raise ShapeError(
                    f"{name}: {what} must have shape {expected} for input of shape {input.shape}, got {h.shape}"
                )

    def _zeros(self, input: Tensor) -> Tensor:
        """The default state: zeros [B, H] (or [H] for an input without a batch)."""
        return input.new_zeros(input.shape[:-1] + (self.hidden_size,))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        return s


class RNNCell(RNNCellBase):
    """An Elman RNN cell, as `torch.nn.RNNCell(input_size, hidden_size, bias, nonlinearity)`.

    forward(input [B, I] or [I], hx [B, H] or [H] = zeros) → h' of hx's shape (see `rnn_cell`).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        check_nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, dtype, backend)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self._check_forward(input, (hx,))
        if hx is None:
            hx = self._zeros(input)
        return rnn_cell(input, hx, *self._weights(), nonlinearity=self.nonlinearity)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s
