r"""Stage A5: recurrent layers over whole sequences — `unroll` (task 5.1) and the stacked,
bidirectional `RNN`, `LSTM` and `GRU` layers (task 5.4), as in `torch.nn`.

Unrolling. A cell maps (x_t, state_{t−1}) to state_t. Over a sequence x_1 … x_T the
network is the cell applied T times, each step feeding the next:

    state_t = step(x_t, state_{t−1})          output_t = h_t (the hidden part of state_t)

`unroll` runs that loop and stacks the h_t into outputs [T, B, H]; with `reverse=True` it
runs t = T … 1 (the backward direction of a bidirectional layer) but still stores h_t at
position t. Backpropagation through time needs nothing new: the unrolled loop is an
ordinary graph of tensor operations, T cells deep, and `backward()` walks it (iteratively,
so any length works).

A layer. `RNN`/`LSTM`/`GRU(input_size, hidden_size, num_layers, …)` stack `num_layers`
recurrent layers: layer 0 reads the input x [T, B, I], layer l > 0 reads the outputs of
layer l − 1. A bidirectional layer runs two independent recurrences over its input, one
forward in time and one backward, and concatenates their outputs on the feature dimension:

    output_t = [h→_t ; h←_t]                 [B, 2H]

Dropout (probability `dropout`, training mode only) is applied to the outputs of every
layer except the last. Shapes, with D = 2 if bidirectional else 1 and L = num_layers:

    input   [T, B, I]  ([B, T, I] with batch_first; [T, I] without a batch)
    h_0     [L·D, B, H]  (zeros if not given; for the LSTM a pair (h_0, c_0))
    output  [T, B, D·H]  (the last layer's h_t for every t; [B, T, D·H] with batch_first)
    h_n     [L·D, B, H]  (the final state of each layer and direction, in the order
                          layer 0 forward, layer 0 backward, layer 1 forward, …)

Speed. The input's share of every step, x_t W_ihᵀ + b_ih, does not depend on the
recurrence: each layer computes it for all T steps with one matrix product before its loop
([T, B, I] @ [I, G·H]); the loop only adds h_{t−1} W_hhᵀ. Every step of every layer goes
through one method, `cell_step`. `cell_step`, `unroll` and `time_steps` may be replaced by
faster versions that compute the same (`minitorch.fast_paths`); `LayerStep` says which
cell and weights a step runs, so that a whole layer's sequence can be one operation.

Parameters (torch names and shapes, so a PyTorch state_dict loads): for layer k and
direction suffix s ("" forward, "_reverse" backward), with G = 1 (RNN), 4 (LSTM: i, f, g,
o), 3 (GRU: r, z, n), weight_ih_l{k}{s} [G·H, I_k] (I_0 = input_size, I_k = D·H after),
weight_hh_l{k}{s} [G·H, H], bias_ih_l{k}{s} and bias_hh_l{k}{s} [G·H], all drawn from
U(−1/√H, 1/√H).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Callable, Optional, Sequence, Union

from ..fast_paths import replaceable
from ..joining import cat, stack
from ..module import Module
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .dropout import dropout
from .gru import gru_step
from .linear import uniform
from .lstm import lstm_step
from .rnn import check_nonlinearity, rnn_step
from .validation import check_float

__all__ = ["unroll", "time_steps", "RNNBase", "RNN", "LSTM", "GRU"]

#: The recurrent state: one tensor (RNN, GRU) or a pair (h, c) (LSTM).
State = Union[Tensor, tuple[Tensor, Tensor]]


@replaceable("time_steps")
def time_steps(x: Tensor) -> list[Tensor]:
    """x [T, ...] as the list of its T views x[0], …, x[T − 1] (as `torch.unbind(x)`).

    Why not `[x[t] for t in range(T)]`: the backward pass of a view x[t] is a zero tensor of
    x's full shape with the gradient written into row t, so T views cost T full-size
    tensors — O(T²) work for one sequence. Halving first (x[:T/2] and x[T/2:], then their
    halves, …) gives the same views for O(T log T): each level of halving costs one x.
    """
    steps: list[Tensor] = []
    pending = [x]
    while pending:
        piece = pending.pop()
        n = piece.shape[0]
        if n == 1:
            steps.append(piece[0])
            continue
        half = n // 2
        pending.append(piece[half:])
        pending.append(piece[:half])  # popped first: the steps come out in time order
    return steps


@replaceable("unroll")
def unroll(
    step: Callable[[Tensor, State], State],
    inputs: Union[Tensor, Sequence[Tensor]],
    state: State,
    reverse: bool = False,
) -> tuple[Tensor, State]:
    """Run a recurrence over a sequence: state_t = step(x_t, state_{t−1}).

    inputs: [T, B, I] (or the list of its T steps [B, I]); state: the initial state, a
    tensor [B, H] or a pair (h, c). Returns (outputs [T, B, H], final state) where
    outputs[t] is the h of the state after step t (the first element of a pair). With
    reverse=True the steps run t = T−1, …, 0 — outputs[t] is still the state after
    reading x_t, and the final state is the one after x_0.
    """
    xs = time_steps(inputs) if isinstance(inputs, Tensor) else list(inputs)
    if not xs:
        raise ValueError("unroll: the sequence is empty (T = 0)")
    # BEGIN SOLUTION 5.1
    outputs: list[Optional[Tensor]] = [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        state = step(xs[t], state)
        outputs[t] = state[0] if isinstance(state, tuple) else state
    return stack(outputs, dim=0), state
    # END SOLUTION 5.1


def select_state(state: State, k: int) -> State:
    """Entry k of a stacked state: h[k] (or the pair (h[k], c[k]))."""
    if isinstance(state, tuple):
        return tuple(s[k] for s in state)
    return state[k]


def stack_states(states: Sequence[State]) -> State:
    """Stack per-layer states [B, H] into [K, B, H] (pairs stack element-wise)."""
    if isinstance(states[0], tuple):
        return tuple(stack([s[j] for s in states], dim=0) for j in range(len(states[0])))
    return stack(list(states), dim=0)


class LayerStep:
    """The step of one layer and direction of a recurrent layer, for `unroll`:
    ``step(x_proj_t, state)`` is ``cell.cell_step(x_proj_t, state, w_hh, b_hh)``.

    A plain function would do for `unroll`; this object also says *which* cell and weights
    it runs, so that a faster `unroll` can run a layer's whole sequence as one operation."""

    def __init__(self, cell: "RNNBase", w_hh: Tensor, b_hh: Optional[Tensor]) -> None:
        self.cell, self.w_hh, self.b_hh = cell, w_hh, b_hh

    def __call__(self, x_proj_t: Tensor, state: State) -> State:
        return self.cell.cell_step(x_proj_t, state, self.w_hh, self.b_hh)


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters, the checks and the loop over layers
    and directions (as PyTorch's RNNBase). Subclasses say how many gate blocks G their
    weights stack and implement `cell_step`."""

    gates: int = 1  # G: blocks of H rows stacked in the weights
    state_size: int = 1  # tensors in the state: 1 (h), 2 for the LSTM (h, c)

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        for what, value in (
            ("input_size", input_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name}: {what} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name}: {what} must be greater than zero, got {value}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
            raise ValueError(
                f"{name}: dropout should be a number in range [0, 1] representing the probability "
                f"of an element being zeroed, got {dropout!r}"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                UserWarning,
                stacklevel=3,
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        bound = 1.0 / math.sqrt(hidden_size)
        rows = self.gates * hidden_size
        self._weight_names: list[tuple[str, ...]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            for direction in range(self.num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                names = [f"weight_ih{suffix}", f"weight_hh{suffix}"]
                self.add_parameter(names[0], uniform((rows, layer_input), bound, dtype, backend))
                self.add_parameter(names[1], uniform((rows, hidden_size), bound, dtype, backend))
                if bias:
                    names += [f"bias_ih{suffix}", f"bias_hh{suffix}"]
                    self.add_parameter(names[2], uniform((rows,), bound, dtype, backend))
                    self.add_parameter(names[3], uniform((rows,), bound, dtype, backend))
                self._weight_names.append(tuple(names))

    # ---- the pieces `_run_layers` uses ----------------------------------------------------

    def layer_weights(
        self, layer: int, direction: int
    ) -> tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """(w_ih, w_hh, b_ih, b_hh) of one layer and direction (0 forward, 1 backward) as
        tensors; the biases are None when the layer has no bias."""
        names = self._weight_names[layer * self.num_directions + direction]
        values = [getattr(self, n).value for n in names]
        if len(values) == 2:
            values += [None, None]
        return values[0], values[1], values[2], values[3]

    def cell_step(self, x_proj: Tensor, state: State, w_hh: Tensor, b_hh: Optional[Tensor]) -> State:
        """One time step from the input's share x_proj = x_t W_ihᵀ + b_ih [B, G·H] and the
        previous state; every step of every layer goes through here."""
        raise NotImplementedError(f"{type(self).__name__} must implement cell_step")

    def step_function(self, layer: int, direction: int) -> "LayerStep":
        """The step of one layer and direction for `unroll`: step(x_proj_t, state) → the next
        state, where x_proj_t = x_t W_ihᵀ + b_ih is that step's input already projected."""
        _, w_hh, _, b_hh = self.layer_weights(layer, direction)
        return LayerStep(self, w_hh, b_hh)

    def _run_layers(self, x: Tensor, hx: State) -> tuple[Tensor, State]:
        """The stacked (and bidirectional) recurrence, time-major.

        x [T, B, I]; hx the initial states [L·D, B, H] (a pair for the LSTM), entry
        k = layer·D + direction for each layer and direction (`select_state(hx, k)`).
        For each layer, for each direction:

            x_proj = layer_input W_ihᵀ + b_ih                 [T, B, G·H], one matmul
            out, final = unroll(self.step_function(layer, direction), x_proj, state_k,
                                reverse=(direction == 1))

        The layer's output is its directions' outputs concatenated on the last dimension
        ([T, B, D·H]); dropout(p = self.dropout, only when self.training) is applied to
        it unless it is the last layer; it is the next layer's input. Returns (the last
        layer's output [T, B, D·H], the final states stacked in order k: `stack_states`).
        """
        # BEGIN SOLUTION 5.4
        finals: list[State] = []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                w_ih, _, b_ih, _ = self.layer_weights(layer, direction)
                x_proj = layer_input @ w_ih.transpose(0, 1)  # all T steps in one product
                if b_ih is not None:
                    x_proj = x_proj + b_ih
                state = select_state(hx, layer * self.num_directions + direction)
                out, final = unroll(
                    self.step_function(layer, direction), x_proj, state, reverse=direction == 1
                )
                outputs.append(out)
                finals.append(final)
            layer_input = outputs[0] if len(outputs) == 1 else cat(outputs, dim=2)
            if layer < self.num_layers - 1:
                layer_input = dropout(layer_input, self.dropout, self.training)
        return layer_input, stack_states(finals)
        # END SOLUTION 5.4

    # ---- forward: checks and layouts around `_run_layers` ---------------------------------

    def _state_parts(self, hx: State) -> tuple[Tensor, ...]:
        """The tensors of a given initial state: (h_0,) — or (h_0, c_0) for the LSTM."""
        name = type(self).__name__
        if self.state_size == 1:
            if not isinstance(hx, Tensor):
                raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
            return (hx,)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"{name}: hx must be a pair (h_0, c_0) of tensors, got {type(hx).__name__}")
        return tuple(hx)

    def _check_input(self, input: Tensor) -> bool:
        """PyTorch's checks of the input; returns whether it has a batch dimension."""
        name = type(self).__name__
        check_float(name, input=input)
        if input.dims not in (2, 3):
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dims}D instead (shape {input.shape})"
            )
        if input.shape[-1] != self.input_size:
            raise ShapeError(
                f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]} (input shape {input.shape})"
            )
        batched = input.dims == 3
        length = input.shape[1 if batched and self.batch_first else 0]
        if length == 0:
            raise ValueError(
                f"{name}: Expected sequence length to be larger than 0 (input shape {input.shape})"
            )
        return batched

    def _check_state(self, parts: tuple[Tensor, ...], batched: bool, batch: int) -> None:
        """Each state tensor must be [L·D, B, H] ([L·D, H] without a batch)."""
        name = type(self).__name__
        layers = self.num_layers * self.num_directions
        expected = (layers, batch, self.hidden_size) if batched else (layers, self.hidden_size)
        for k, h in enumerate(parts):
            what = "hx" if len(parts) == 1 else f"hx[{k}]"
            check_float(name, **{what: h})
            if h.dims != len(expected):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise ShapeError(
                    f"{name}: For {kind} input, {what} should also be {len(expected)}-D but got "
                    f"{h.dims}-D tensor (shape {h.shape})"
                )
            if h.shape != expected:
                raise ShapeError(f"{name}: Expected {what} size {expected}, got {h.shape}")

    def forward(self, input: Tensor, hx: Optional[State] = None) -> tuple[Tensor, State]:
        """input [T, B, I] ([B, T, I] with batch_first, [T, I] unbatched), hx the initial
        state (zeros when None) → (output [T, B, D·H], h_n [L·D, B, H]) as PyTorch."""
        batched = self._check_input(input)
        parts = None if hx is None else self._state_parts(hx)
        if batched:
            x = input.transpose(0, 1) if self.batch_first else input  # time-major [T, B, I]
        else:
            x = input.unsqueeze(1)  # [T, 1, I]
        batch = x.shape[1]
        if parts is None:
            zeros = x.new_zeros((self.num_layers * self.num_directions, batch, self.hidden_size))
            parts = (zeros,) * self.state_size
        else:
            self._check_state(parts, batched, batch)
            if not batched:
                parts = tuple(h.unsqueeze(1) for h in parts)
        state: State = parts if len(parts) > 1 else parts[0]
        output, final = self._run_layers(x, state)
        if not batched:
            output = output.squeeze(1)
            final = tuple(h.squeeze(1) for h in final) if isinstance(final, tuple) else final.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1).contiguous()
        return output, final

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """A multi-layer Elman RNN, as `torch.nn.RNN` (h_t = act(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh),
    act = tanh or relu). forward(input, h_0 = zeros) → (output, h_n); see the module docstring."""

    gates = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        check_nonlinearity("RNN", nonlinearity)
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype, backend
        )
        self.nonlinearity = nonlinearity

    def cell_step(self, x_proj: Tensor, state: State, w_hh: Tensor, b_hh: Optional[Tensor]) -> State:
        return rnn_step(x_proj, state, w_hh, b_hh, self.nonlinearity)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class LSTM(RNNBase):
    """A multi-layer LSTM, as `torch.nn.LSTM` (gate order i, f, g, o; see `lstm.py`).

    forward(input, (h_0, c_0) = zeros) → (output, (h_n, c_n)), h_n and c_n [L·D, B, H].
    (PyTorch's `proj_size` is not supported.)
    """

    gates = 4
    state_size = 2

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype, backend
        )

    @replaceable("LSTM.cell_step")
    def cell_step(self, x_proj: Tensor, state: State, w_hh: Tensor, b_hh: Optional[Tensor]) -> State:
        return lstm_step(x_proj, state, w_hh, b_hh)


class GRU(RNNBase):
    """A multi-layer GRU, as `torch.nn.GRU` (gate order r, z, n, PyTorch's formulation; see
    `gru.py`). forward(input, h_0 = zeros) → (output, h_n)."""

    gates = 3

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype, backend
        )

    @replaceable("GRU.cell_step")
    def cell_step(self, x_proj: Tensor, state: State, w_hh: Tensor, b_hh: Optional[Tensor]) -> State:
        return gru_step(x_proj, state, w_hh, b_hh)
