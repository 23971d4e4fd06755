"""Tasks 5.1–5.4: the RNN, LSTM and GRU cells, `unroll`, and the stacked / bidirectional
layers, checked without PyTorch.

The oracle is NumPy: each cell's equations from the lecture, written out below gate by gate
in PyTorch's weight layout (LSTM rows i, f, g, o; GRU rows r, z, n), a loop of those cells
for `unroll` and for the layers, and a hand-written backpropagation through time for a
2000-step RNN. Gradients are checked by central differences: `grad_check` entry by entry
for the cells, and for the layers one random direction per tensor (`check_layer_gradients`).
Also: the order in which `unroll` runs the steps, the cell and layer modules' parameters
(PyTorch's names, shapes and initialisation), dropout between layers, and the errors.
(The project's own suite also compares all of this with PyTorch: `test_recurrent_torch.py`.)
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.gru import gru_cell
from minitorch.nn.lstm import lstm_cell
from minitorch.nn.recurrent import time_steps, unroll
from minitorch.nn.rnn import rnn_cell, rnn_step
from minitorch.testing import grad_check

RTOL, ATOL = 1e-9, 1e-11
CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]


def _mt(a: np.ndarray, backend=None) -> minitorch.Tensor:
    return minitorch.tensor(a, backend=backend).requires_grad_(True)


def _close(
    got: minitorch.Tensor, expected: np.ndarray, what: str, rtol: float = RTOL, atol: float = ATOL
) -> None:
    assert got is not None, f"{what}: missing"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol, err_msg=what)


# ---- NumPy references: the lecture's equations ----------------------------------------------


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def numpy_rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh") -> np.ndarray:
    """h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), act = tanh or relu (a missing bias is 0)."""
    pre = x @ w_ih.T + h @ w_hh.T
    if b_ih is not None:
        pre = pre + b_ih + b_hh
    return np.tanh(pre) if nonlinearity == "tanh" else np.maximum(pre, 0.0)


def numpy_lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple[np.ndarray, np.ndarray]:
    """The LSTM with PyTorch's layout: the rows of the weights are the blocks i, f, g, o.

    i = σ(x W_iiᵀ + b_ii + h W_hiᵀ + b_hi)      input gate
    f = σ(x W_ifᵀ + b_if + h W_hfᵀ + b_hf)      forget gate
    g = tanh(x W_igᵀ + b_ig + h W_hgᵀ + b_hg)   candidate cell C̃
    o = σ(x W_ioᵀ + b_io + h W_hoᵀ + b_ho)      output gate
    c' = f ⊙ c + i ⊙ g          h' = o ⊙ tanh(c')
    """
    if b_ih is None:
        b_ih = b_hh = np.zeros(w_ih.shape[0])
    W_ii, W_if, W_ig, W_io = np.split(w_ih, 4)
    W_hi, W_hf, W_hg, W_ho = np.split(w_hh, 4)
    b_ii, b_if, b_ig, b_io = np.split(b_ih, 4)
    b_hi, b_hf, b_hg, b_ho = np.split(b_hh, 4)
    i = sigmoid(x @ W_ii.T + b_ii + h @ W_hi.T + b_hi)
    f = sigmoid(x @ W_if.T + b_if + h @ W_hf.T + b_hf)
    g = np.tanh(x @ W_ig.T + b_ig + h @ W_hg.T + b_hg)
    o = sigmoid(x @ W_io.T + b_io + h @ W_ho.T + b_ho)
    c_next = f * c + i * g
    return o * np.tanh(c_next), c_next


def numpy_gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None) -> np.ndarray:
    """The GRU as PyTorch computes it: the rows of the weights are the blocks r, z, n.

    r = σ(x W_irᵀ + b_ir + h W_hrᵀ + b_hr)              reset gate
    z = σ(x W_izᵀ + b_iz + h W_hzᵀ + b_hz)              update gate
    n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn))     candidate (reset after the product)
    h' = (1 − z) ⊙ n + z ⊙ h
    """
    if b_ih is None:
        b_ih = b_hh = np.zeros(w_ih.shape[0])
    W_ir, W_iz, W_in = np.split(w_ih, 3)
    W_hr, W_hz, W_hn = np.split(w_hh, 3)
    b_ir, b_iz, b_in = np.split(b_ih, 3)
    b_hr, b_hz, b_hn = np.split(b_hh, 3)
    r = sigmoid(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
    z = sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    n = np.tanh(x @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
    return (1 - z) * n + z * h


# ---- the cells against NumPy, gradients by central differences ------------------------------

CELL_SHAPES = [  # (batch or None for unbatched, input size, hidden size)
    pytest.param(3, 4, 5, id="B3-I4-H5"),
    pytest.param(1, 1, 1, id="B1-I1-H1"),
    pytest.param(2, 6, 3, id="B2-I6-H3"),
    pytest.param(None, 4, 3, id="unbatched"),
]

CELL_KINDS = [  # each cell under its task's marker
    pytest.param("rnn", marks=pytest.mark.task5_1),
    pytest.param("lstm", marks=pytest.mark.task5_2),
    pytest.param("gru", marks=pytest.mark.task5_3),
]


def _cell_arrays(
    kind: str, batch, i_size: int, h_size: int, bias: bool, seed: int = 0
) -> dict[str, np.ndarray]:
    """Random float64 arguments of a cell by name: x, h (and c for the LSTM), w_ih, w_hh,
    and with `bias` b_ih, b_hh."""
    gates = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    arrays = {
        "x": rng.standard_normal(lead + (i_size,)),
        "h": rng.standard_normal(lead + (h_size,)),
        "w_ih": rng.standard_normal((gates * h_size, i_size)) * 0.5,
        "w_hh": rng.standard_normal((gates * h_size, h_size)) * 0.5,
    }
    if kind == "lstm":
        arrays["c"] = rng.standard_normal(lead + (h_size,))
    if bias:
        arrays["b_ih"] = rng.standard_normal(gates * h_size)
        arrays["b_hh"] = rng.standard_normal(gates * h_size)
    return arrays


def _minitorch_cell(kind: str, args: dict, nonlinearity: str = "tanh") -> tuple[minitorch.Tensor, ...]:
    """The student's cell on tensors named as in `_cell_arrays`: (h',) or (h', c')."""
    b_ih, b_hh = args.get("b_ih"), args.get("b_hh")
    if kind == "rnn":
        return (rnn_cell(args["x"], args["h"], args["w_ih"], args["w_hh"], b_ih, b_hh, nonlinearity),)
    if kind == "lstm":
        return lstm_cell(args["x"], (args["h"], args["c"]), args["w_ih"], args["w_hh"], b_ih, b_hh)
    return (gru_cell(args["x"], args["h"], args["w_ih"], args["w_hh"], b_ih, b_hh),)


def _numpy_cell(kind: str, a: dict, nonlinearity: str = "tanh") -> tuple[np.ndarray, ...]:
    """The NumPy reference on the arrays of `_cell_arrays`: (h',) or (h', c')."""
    b_ih, b_hh = a.get("b_ih"), a.get("b_hh")
    if kind == "rnn":
        return (numpy_rnn_cell(a["x"], a["h"], a["w_ih"], a["w_hh"], b_ih, b_hh, nonlinearity),)
    if kind == "lstm":
        return numpy_lstm_cell(a["x"], a["h"], a["c"], a["w_ih"], a["w_hh"], b_ih, b_hh)
    return (numpy_gru_cell(a["x"], a["h"], a["w_ih"], a["w_hh"], b_ih, b_hh),)


def _check_cell_gradients(kind: str, arrays: dict, nonlinearity: str = "tanh", backend=None) -> None:
    """Every input's gradient (x, h, c, weights, biases) against central differences."""
    names = list(arrays)

    def cell(*tensors):
        outs = _minitorch_cell(kind, dict(zip(names, tensors)), nonlinearity)
        return outs[0] if len(outs) == 1 else minitorch.cat(list(outs), dim=-1)  # LSTM: [h', c']

    grad_check(cell, *(_mt(a, backend) for a in arrays.values()))


def _check_cell(
    kind: str, batch, i_size: int, h_size: int, bias: bool, nonlinearity="tanh", backend=None
) -> None:
    arrays = _cell_arrays(kind, batch, i_size, h_size, bias)
    outs = _minitorch_cell(kind, {k: _mt(a, backend) for k, a in arrays.items()}, nonlinearity)
    expected = _numpy_cell(kind, arrays, nonlinearity)
    assert len(outs) == len(expected), f"{kind}: {len(outs)} outputs, expected {len(expected)}"
    for k, (got, exp) in enumerate(zip(outs, expected)):
        _close(got, exp, f"{kind} output {k}")
    _check_cell_gradients(kind, arrays, nonlinearity, backend)


@pytest.mark.task5_1
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_rnn_cell_matches_numpy(batch, i_size, h_size, bias, nonlinearity) -> None:
    _check_cell("rnn", batch, i_size, h_size, bias, nonlinearity)


@pytest.mark.task5_2
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_lstm_cell_matches_numpy(batch, i_size, h_size, bias) -> None:
    _check_cell("lstm", batch, i_size, h_size, bias)


@pytest.mark.task5_3
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_gru_cell_matches_numpy(batch, i_size, h_size, bias) -> None:
    _check_cell("gru", batch, i_size, h_size, bias)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("kind", CELL_KINDS)
def test_cells_on_each_cpu_backend(kind, backend) -> None:
    _check_cell(kind, 2, 3, 4, True, backend=backend)


@pytest.mark.parametrize("kind", CELL_KINDS)
def test_cell_central_differences(kind) -> None:
    _check_cell_gradients(kind, _cell_arrays(kind, 2, 3, 2, True, seed=5))


@pytest.mark.task5_2
def test_lstm_gates_by_hand() -> None:
    """One unit, no input weights: the gates are σ or tanh of the biases alone.
    Biases (i, f, g, o) = (0, ln 3, 0, 0): i = o = ½, f = σ(ln 3) = ¾, g = 0, so
    c' = ¾ c and h' = ½ tanh(¾ c)."""
    x, h, c = minitorch.tensor([[0.0]]), minitorch.tensor([[0.5]]), minitorch.tensor([[2.0]])
    w_ih, w_hh = minitorch.zeros(4, 1), minitorch.zeros(4, 1)
    b_ih, b_hh = minitorch.tensor([0.0, np.log(3.0), 0.0, 0.0]), minitorch.zeros(4)
    h_next, c_next = lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    np.testing.assert_allclose(c_next.numpy(), [[1.5]], rtol=1e-12)
    np.testing.assert_allclose(h_next.numpy(), [[0.5 * np.tanh(1.5)]], rtol=1e-12)


@pytest.mark.task5_3
def test_gru_gates_by_hand() -> None:
    """One unit, no input weights, W_hh = (0, 0, 1) so that W_hn h = h. Biases: b_hz = ln 3
    gives z = ¾; b_hr = 0 gives r = ½; b_in = 1, b_hn = 2 so n = tanh(1 + ½ (h + 2)).
    With h = 1: n = tanh(2.5), h' = ¼ n + ¾ · 1. The reset gate multiplies b_hn too."""
    x, h = minitorch.tensor([[0.0]]), minitorch.tensor([[1.0]])
    w_ih, w_hh = minitorch.zeros(3, 1), minitorch.tensor([[0.0], [0.0], [1.0]])
    b_ih, b_hh = minitorch.tensor([0.0, 0.0, 1.0]), minitorch.tensor([0.0, np.log(3.0), 2.0])
    h_next = gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)
    np.testing.assert_allclose(h_next.numpy(), [[0.25 * np.tanh(2.5) + 0.75]], rtol=1e-12)


@pytest.mark.parametrize(
    "cls, kind",
    [
        pytest.param(nn.RNNCell, "rnn", marks=pytest.mark.task5_1),
        pytest.param(nn.LSTMCell, "lstm", marks=pytest.mark.task5_2),
        pytest.param(nn.GRUCell, "gru", marks=pytest.mark.task5_3),
    ],
)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_cell_modules_match_numpy(cls, kind, batched) -> None:
    """PyTorch's parameter names and shapes ([G·H, I], [G·H, H], [G·H], [G·H]); a state dict
    of NumPy arrays loads; hx=None means a zero state."""
    gates = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    cell = cls(3, 4)
    shapes = {
        "weight_ih": (gates * 4, 3),
        "weight_hh": (gates * 4, 4),
        "bias_ih": (gates * 4,),
        "bias_hh": (gates * 4,),
    }
    assert [n for n, _ in cell.named_parameters()] == list(shapes)
    for name, p in cell.named_parameters():
        assert p.value.shape == shapes[name], name
    rng = np.random.default_rng(0)
    weights = {name: rng.standard_normal(shape) * 0.5 for name, shape in shapes.items()}
    cell.load_state_dict(weights)
    x = rng.standard_normal((2, 3) if batched else (3,))
    zeros = np.zeros(x.shape[:-1] + (4,))
    arrays = {
        "x": x,
        "h": zeros,
        "w_ih": weights["weight_ih"],
        "w_hh": weights["weight_hh"],
        "b_ih": weights["bias_ih"],
        "b_hh": weights["bias_hh"],
    }
    if kind == "lstm":
        arrays["c"] = zeros
    expected = _numpy_cell(kind, arrays)
    out = cell(minitorch.tensor(x))  # hx = None: zeros
    outs = out if isinstance(out, tuple) else (out,)
    for k, (got, exp) in enumerate(zip(outs, expected)):
        _close(got, exp, f"{cls.__name__} with hx=None, output {k}")


@pytest.mark.task5_1
def test_cell_init_and_no_bias() -> None:
    minitorch.manual_seed(0)
    cell = nn.LSTMCell(3, 25)
    w = cell.weight_hh.value.numpy()
    assert w.shape == (100, 25)
    bound = 1 / np.sqrt(25)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound  # U(−1/√H, 1/√H)
    assert [n for n, _ in nn.GRUCell(3, 4, bias=False).named_parameters()] == ["weight_ih", "weight_hh"]
    assert "nonlinearity=relu" in repr(nn.RNNCell(2, 3, nonlinearity="relu"))


@pytest.mark.task5_1
def test_cell_errors_name_the_cell_and_the_shapes() -> None:
    x, h = minitorch.zeros(2, 3), minitorch.zeros(2, 4)
    w_ih, w_hh = minitorch.zeros(4, 3), minitorch.zeros(4, 4)
    with pytest.raises(RuntimeError, match=r"rnn_cell: input has inconsistent input_size: got 5, expected 3"):
        rnn_cell(minitorch.zeros(2, 5), h, w_ih, w_hh)
    with pytest.raises(RuntimeError, match=r"rnn_cell: hx must have shape \(2, 4\).*got \(3, 4\)"):
        rnn_cell(x, minitorch.zeros(3, 4), w_ih, w_hh)
    with pytest.raises(RuntimeError, match=r"lstm_cell: w_hh must have shape \[4·H, H\], got \(4, 4\)"):
        lstm_cell(x, (h, h), w_ih, w_hh)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        rnn_cell(x, h, w_ih, w_hh, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"GRUCell: Expected input to be 1D or 2D, got 3D"):
        nn.GRUCell(3, 4)(minitorch.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match=r"LSTMCell: input has inconsistent input_size: got 2, expected 3"):
        nn.LSTMCell(3, 4)(minitorch.zeros(5, 2))
    with pytest.raises(RuntimeError, match=r"RNNCell: hx must have shape \(5, 4\).*got \(5, 3\)"):
        nn.RNNCell(3, 4)(minitorch.zeros(5, 3), minitorch.zeros(5, 3))


# ---- unroll -------------------------------------------------------------------------------


@pytest.mark.task5_1
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_unroll_runs_the_steps_in_order(reverse) -> None:
    rng = np.random.default_rng(0)
    xs, h0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 3))
    seen = []

    def step(x_t, h):  # h' = 0.5 h + x_t, recording the order of the inputs
        seen.append(x_t.numpy())
        return h * 0.5 + x_t

    outputs, final = unroll(step, minitorch.tensor(xs), minitorch.tensor(h0), reverse=reverse)
    order = list(range(5))[::-1] if reverse else list(range(5))
    for got, t in zip(seen, order):
        np.testing.assert_array_equal(got, xs[t])
    expected, h = np.zeros((5, 2, 3)), h0
    for t in order:
        h = 0.5 * h + xs[t]
        expected[t] = h
    assert outputs.shape == (5, 2, 3)
    np.testing.assert_allclose(outputs.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(final.numpy(), expected[order[-1]], rtol=1e-12)


@pytest.mark.task5_1
def test_unroll_with_a_pair_state_outputs_the_first_element() -> None:
    xs = minitorch.tensor(np.arange(12.0).reshape(4, 1, 3))
    state = (minitorch.zeros(1, 3), minitorch.zeros(1, 3))

    def step(x_t, s):  # h counts the inputs, c sums them
        h, c = s
        return h + 1.0, c + x_t

    outputs, (h, c) = unroll(step, xs, state)
    np.testing.assert_array_equal(outputs.numpy()[:, 0, 0], [1, 2, 3, 4])
    np.testing.assert_array_equal(h.numpy(), np.full((1, 3), 4.0))
    np.testing.assert_array_equal(c.numpy(), np.arange(12.0).reshape(4, 3).sum(0, keepdims=True))


def _unrolled_rnn(x, h0, w_ih, w_hh, b_ih, b_hh, nonlinearity="tanh", reverse=False):
    """An RNN layer out of task 5.1's pieces: project all inputs at once, then unroll rnn_step."""
    x_proj = x @ w_ih.transpose(0, 1) + b_ih
    return unroll(lambda x_t, h: rnn_step(x_t, h, w_hh, b_hh, nonlinearity), x_proj, h0, reverse=reverse)


@pytest.mark.task5_1
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_unroll_of_rnn_step_matches_a_numpy_loop(reverse, nonlinearity) -> None:
    """unroll(rnn_step) = the NumPy cell applied step after step; every gradient (inputs,
    h0, both weights, both biases) by central differences."""
    rng = np.random.default_rng(2)
    x, h0 = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 4))
    w_ih, w_hh = rng.standard_normal((4, 3)) * 0.5, rng.standard_normal((4, 4)) * 0.5
    b_ih, b_hh = rng.standard_normal(4), rng.standard_normal(4)
    outputs, h_n = _unrolled_rnn(*(_mt(a) for a in (x, h0, w_ih, w_hh, b_ih, b_hh)), nonlinearity, reverse)
    expected, h = np.zeros((6, 2, 4)), h0
    for t in range(5, -1, -1) if reverse else range(6):
        h = numpy_rnn_cell(x[t], h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
        expected[t] = h
    _close(outputs, expected, "outputs")
    _close(h_n, h, "final state")
    grad_check(
        lambda *args: _unrolled_rnn(*args, nonlinearity, reverse)[0],
        *(_mt(a) for a in (x[:3], h0, w_ih, w_hh, b_ih, b_hh)),
    )


@pytest.mark.task5_1
def test_time_steps_are_the_views_and_gradients_add_up() -> None:
    x = _mt(np.arange(7 * 2.0).reshape(7, 2))
    steps = time_steps(x)
    assert len(steps) == 7
    for t, s in enumerate(steps):
        np.testing.assert_array_equal(s.numpy(), x.numpy()[t])
    weights = np.arange(1.0, 8.0)
    sum(s * float(w) for s, w in zip(steps, weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat(weights[:, None], 2, axis=1))


def numpy_rnn_bptt(x, h0, w_ih, w_hh, b_ih, b_hh):
    """A tanh RNN over x [T, B, I] and backpropagation through time by hand, for the loss
    L = Σ_t Σ h_t + Σ h_T (the sum of all outputs plus the final state).

    Forward:  h_t = tanh(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh)
    Backward, t = T … 1, with dh the gradient reaching h_t (1 from its output, plus what
    flows back from step t + 1; the final state adds 1 at t = T):
        dpre = dh ⊙ (1 − h_t²)                          (tanh' = 1 − tanh²)
        dx_t = dpre W_ih   dW_ih += dpreᵀ x_t   dW_hh += dpreᵀ h_{t−1}   db += Σ_batch dpre
        dh   = dpre W_hh                                 (the gradient reaching h_{t−1})
    Returns (outputs [T, B, H], dx, dh0, dW_ih, dW_hh, db) (db is the same for both biases).
    """
    T = x.shape[0]
    hs = [h0]
    for t in range(T):
        hs.append(np.tanh(x[t] @ w_ih.T + b_ih + hs[-1] @ w_hh.T + b_hh))
    dx, dw_ih, dw_hh, db = np.zeros_like(x), np.zeros_like(w_ih), np.zeros_like(w_hh), np.zeros_like(b_ih)
    dh = np.ones_like(h0)  # from the final state h_T
    for t in range(T - 1, -1, -1):
        dh = dh + 1.0  # from output t
        dpre = dh * (1 - hs[t + 1] ** 2)
        dx[t] = dpre @ w_ih
        dw_ih += dpre.T @ x[t]
        dw_hh += dpre.T @ hs[t]
        db += dpre.sum(0)
        dh = dpre @ w_hh
    return np.stack(hs[1:]), dx, dh, dw_ih, dw_hh, db


@pytest.mark.task5_1
def test_a_2000_step_sequence_backpropagates() -> None:
    """No RecursionError, and the values and gradients through 2000 steps are those of the
    NumPy loop and its hand-written backward pass. (Time is not asserted — no wall-clock
    thresholds in tests; `bench/` measures speed.)"""
    rng = np.random.default_rng(0)
    x, h0 = rng.standard_normal((2000, 1, 2)), rng.standard_normal((1, 3))
    bound = 1 / np.sqrt(3)  # PyTorch's initialisation U(−1/√H, 1/√H)
    w_ih, w_hh = rng.uniform(-bound, bound, (3, 2)), rng.uniform(-bound, bound, (3, 3))
    b_ih, b_hh = rng.uniform(-bound, bound, 3), rng.uniform(-bound, bound, 3)
    X, H0, W_ih, W_hh, B_ih, B_hh = (_mt(a) for a in (x, h0, w_ih, w_hh, b_ih, b_hh))
    out, h_n = _unrolled_rnn(X, H0, W_ih, W_hh, B_ih, B_hh)
    (out.sum() + h_n.sum()).backward()
    expected, dx, dh0, dw_ih, dw_hh, db = numpy_rnn_bptt(x, h0, w_ih, w_hh, b_ih, b_hh)
    _close(out, expected, "outputs of 2000 steps")
    _close(X.grad, dx, "input gradient over 2000 steps")
    _close(H0.grad, dh0, "h0 gradient over 2000 steps")
    _close(W_ih.grad, dw_ih, "w_ih gradient over 2000 steps")
    _close(W_hh.grad, dw_hh, "w_hh gradient over 2000 steps")
    _close(B_ih.grad, db, "b_ih gradient over 2000 steps")
    _close(B_hh.grad, db, "b_hh gradient over 2000 steps")


# ---- the layers against NumPy ---------------------------------------------------------------


def numpy_layer(
    mode: str,
    weights: dict,
    x: np.ndarray,
    hx=None,
    num_layers: int = 1,
    bidirectional: bool = False,
    batch_first: bool = False,
):
    """A stacked, bidirectional recurrent layer in NumPy (evaluation: no dropout).

    mode: "RNN" (tanh), "RNN_RELU", "LSTM" or "GRU"; weights: PyTorch's names
    (weight_ih_l{k}{s}, …, s = "" or "_reverse"); x [T, B, I] ([B, T, I] with batch_first,
    [T, I] unbatched); hx: h_0 [L·D, B, H] (a pair for the LSTM) or None for zeros.

    Layer k, direction d: the cell over t = 0 … T−1 (d = 0) or T−1 … 0 (d = 1) from state
    entry k·D + d, writing h_t at position t. A layer's output concatenates its directions'
    outputs on the features and is the next layer's input. Returns (output, h_n), with
    h_n = (h_n, c_n) for the LSTM, in the layout of the input.
    """
    D = 2 if bidirectional else 1
    batched = x.ndim == 3
    if not batched:  # one sequence: a batch of one
        x = x[:, None]
        hx = None if hx is None else tuple(s[:, None] for s in hx) if isinstance(hx, tuple) else hx[:, None]
    elif batch_first:
        x = x.transpose(1, 0, 2)
    T, B = x.shape[:2]
    H = weights["weight_hh_l0"].shape[1]
    if hx is None:
        h0 = c0 = np.zeros((num_layers * D, B, H))
    elif mode == "LSTM":
        h0, c0 = hx
    else:
        h0, c0 = hx, np.zeros_like(hx)
    layer_input, h_n, c_n = x, [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(D):
            suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
            w_ih, w_hh = weights["weight_ih" + suffix], weights["weight_hh" + suffix]
            b_ih, b_hh = weights.get("bias_ih" + suffix), weights.get("bias_hh" + suffix)
            h, c = h0[layer * D + direction], c0[layer * D + direction]
            out = np.zeros((T, B, H))
            for t in range(T - 1, -1, -1) if direction == 1 else range(T):
                if mode == "LSTM":
                    h, c = numpy_lstm_cell(layer_input[t], h, c, w_ih, w_hh, b_ih, b_hh)
                elif mode == "GRU":
                    h = numpy_gru_cell(layer_input[t], h, w_ih, w_hh, b_ih, b_hh)
                else:
                    act = "relu" if mode == "RNN_RELU" else "tanh"
                    h = numpy_rnn_cell(layer_input[t], h, w_ih, w_hh, b_ih, b_hh, act)
                out[t] = h
            outputs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_input = np.concatenate(outputs, axis=2)
    output, h_n, c_n = layer_input, np.stack(h_n), np.stack(c_n)
    if not batched:
        output, h_n, c_n = output[:, 0], h_n[:, 0], c_n[:, 0]
    elif batch_first:
        output = output.transpose(1, 0, 2)
    return output, ((h_n, c_n) if mode == "LSTM" else h_n)


def _make_layer(mode: str, size: tuple[int, int], seed: int = 0, **kwargs):
    """A minitorch layer (float64) with seeded random weights."""
    if mode.startswith("RNN"):
        kwargs["nonlinearity"] = "relu" if mode == "RNN_RELU" else "tanh"
    minitorch.manual_seed(seed)
    return getattr(nn, mode.split("_")[0])(*size, **kwargs)


def _as_tensors(hx):
    """A NumPy initial state (an array, a pair or None) as minitorch tensors."""
    if hx is None:
        return None
    return tuple(minitorch.tensor(a) for a in hx) if isinstance(hx, tuple) else minitorch.tensor(hx)


def _results(out, state) -> list:
    """(output, h_n) or (output, (h_n, c_n)) as a flat list [output, h_n(, c_n)]."""
    return [out, *(state if isinstance(state, tuple) else (state,))]


def _compare_with_numpy(layer, mode: str, x: np.ndarray, hx, rtol: float = RTOL, atol: float = ATOL) -> None:
    """The layer's output and final state(s) against `numpy_layer` with its weights."""
    got = _results(*layer(minitorch.tensor(x), _as_tensors(hx)))
    expected = _results(
        *numpy_layer(
            mode, layer.state_dict(), x, hx, layer.num_layers, layer.bidirectional, layer.batch_first
        )
    )
    names = ["output", "h_n", "c_n"]
    assert len(got) == len(expected)
    for name, a, b in zip(names, got, expected):
        _close(a, b, name, rtol, atol)


def check_layer_gradients(layer, x: np.ndarray, hx, seed: int = 3, epsilon: float = 1e-6) -> None:
    """Every gradient of a layer — the input, the initial state(s), each parameter —
    against central differences, one random direction v per tensor θ_k:

        L = Σ_j Σ results_j ⊙ g_j          (results: output, h_n (, c_n); random g_j)
        ⟨∂L/∂θ_k, v⟩ ≈ Σ_j Σ (results_j(θ_k + εv) − results_j(θ_k − εv)) ⊙ g_j / 2ε

    A wrong entry of ∂L/∂θ_k changes the left side (for a random v); one pair of forward
    passes per tensor instead of one per entry (grad_check) keeps it fast.
    """
    rng = np.random.default_rng(seed)
    params = dict(layer.named_parameters())
    states = [] if hx is None else list(hx) if isinstance(hx, tuple) else [hx]
    values = {
        "input": x,
        **{f"hx[{k}]": s for k, s in enumerate(states)},
        **{name: p.value.numpy() for name, p in params.items()},
    }

    def run(arrays: dict, requires_grad: bool) -> tuple[list, dict]:
        """The layer's results on `arrays`, and the tensors they were read from."""
        tensors = {name: (_mt(a) if requires_grad else minitorch.tensor(a)) for name, a in arrays.items()}
        for name, p in params.items():
            p.update(tensors[name])
        h = [tensors[f"hx[{k}]"] for k in range(len(states))]
        state = None if not h else tuple(h) if isinstance(hx, tuple) else h[0]
        return _results(*layer(tensors["input"], state)), tensors

    results, tensors = run(values, requires_grad=True)
    gs = [rng.standard_normal(r.shape) for r in results]
    loss = 0.0
    for r, g in zip(results, gs):
        loss = (r * minitorch.tensor(g)).sum() + loss
    loss.backward()
    for name, value in values.items():
        grad = tensors[name].grad
        assert grad is not None, f"{name} received no gradient"
        v = rng.standard_normal(value.shape)
        with minitorch.no_grad():
            up, _ = run({**values, name: value + epsilon * v}, requires_grad=False)
            down, _ = run({**values, name: value - epsilon * v}, requires_grad=False)
        expected = sum(float(np.sum((a.numpy() - b.numpy()) * g)) for a, b, g in zip(up, down, gs)) / (
            2 * epsilon
        )
        got = float(np.sum(grad.numpy() * v))
        assert np.isclose(got, expected, rtol=1e-6, atol=1e-8), (
            f"gradient of {name} (shape {value.shape}) in a random direction: backward gives {got:.10g}, "
            f"central difference gives {expected:.10g}"
        )
    for name, p in params.items():  # leave the layer with its weights
        p.update(minitorch.tensor(values[name]))


# (mode, num_layers, bidirectional, batch_first, with hx, bias): every option on and off for
# every layer type, two layers with both directions included.
LAYER_GRID = [
    (mode, *options)
    for mode in ("RNN", "RNN_RELU", "LSTM", "GRU")
    for options in [
        (1, False, False, False, True),
        (1, True, True, True, True),
        (2, False, True, True, False),
        (2, True, False, False, True),
        (2, True, True, True, False),
    ]
]


@pytest.mark.task5_4
@pytest.mark.parametrize("mode, num_layers, bidirectional, batch_first, with_hx, bias", LAYER_GRID)
def test_layers_match_numpy(mode, num_layers, bidirectional, batch_first, with_hx, bias) -> None:
    layer = _make_layer(
        mode, (3, 4), num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias
    )
    rng = np.random.default_rng(1)
    T, B = 5, 2
    x = rng.standard_normal((B, T, 3) if batch_first else (T, B, 3))
    hx = None
    if with_hx:
        shape = (num_layers * (2 if bidirectional else 1), B, 4)
        hx = (
            (rng.standard_normal(shape), rng.standard_normal(shape))
            if mode == "LSTM"
            else rng.standard_normal(shape)
        )
    _compare_with_numpy(layer, mode, x, hx)
    check_layer_gradients(layer, x, hx)


@pytest.mark.task5_4
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_layers_match_numpy(mode, batch_first) -> None:
    layer = _make_layer(mode, (3, 2), num_layers=2, bidirectional=True, batch_first=batch_first)
    rng = np.random.default_rng(4)
    x, h = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    hx = (h, h * 0.5) if mode == "LSTM" else h
    _compare_with_numpy(layer, mode, x, hx)
    check_layer_gradients(layer, x, hx)
    out, state = layer(minitorch.tensor(x))  # hx None: zeros [L·D, H]
    assert out.shape == (4, 4)
    assert (state[0] if mode == "LSTM" else state).shape == (4, 2)
    _compare_with_numpy(layer, mode, x, None)


def _torch_names(num_layers: int, bidirectional: bool, bias: bool = True) -> list[str]:
    """PyTorch's parameter names, in its order: per layer, forward then "_reverse"."""
    names = []
    for layer in range(num_layers):
        for suffix in [""] + (["_reverse"] if bidirectional else []):
            kinds = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
            names += [f"{kind}_l{layer}{suffix}" for kind in kinds]
    return names


@pytest.mark.task5_4
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_state_dicts_use_torch_names_and_round_trip(mode) -> None:
    """The parameters have PyTorch's names, shapes and initialisation U(−1/√H, 1/√H); a
    state dict loads into a fresh layer, which then computes the same function."""
    gates = {"RNN": 1, "LSTM": 4, "GRU": 3}[mode]
    layer = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    state = layer.state_dict()
    assert list(state) == _torch_names(2, True)
    for name, value in state.items():
        inputs = 3 if name.startswith("weight_ih_l0") else 8  # layer 1 reads both directions: 2·H
        expected = (gates * 4,) if name.startswith("bias") else (gates * 4, 4 if "_hh_" in name else inputs)
        assert value.shape == expected, name
        assert np.abs(value).max() <= 1 / np.sqrt(4), f"{name} not within U(−1/√H, 1/√H)"
    assert layer.weight_ih_l1_reverse.value.shape == (layer.gates * 4, 8)
    assert list(getattr(nn, mode)(3, 4, num_layers=2, bias=False).state_dict()) == _torch_names(
        2, False, bias=False
    )
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    out, _ = layer(minitorch.tensor(x))
    fresh = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    fresh.load_state_dict(state)
    np.testing.assert_allclose(fresh(minitorch.tensor(x))[0].numpy(), out.numpy(), rtol=RTOL, atol=ATOL)
    _compare_with_numpy(fresh, mode, x, None)


@pytest.mark.task5_4
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_h_n_is_the_last_output_of_each_direction(mode, batch_first) -> None:
    layer = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = minitorch.tensor(np.random.default_rng(0).standard_normal((2, 5, 3) if batch_first else (5, 2, 3)))
    out, state = layer(x)
    h_n = (state[0] if mode == "LSTM" else state).numpy()
    o = out.numpy()
    if batch_first:
        o = o.transpose(1, 0, 2)
    assert o.shape == (5, 2, 8) and h_n.shape == (4, 2, 4)
    np.testing.assert_array_equal(o[-1, :, :4], h_n[2])  # last layer, forward: after the last step
    np.testing.assert_array_equal(o[0, :, 4:], h_n[3])  # last layer, backward: after the first step


@pytest.mark.task5_4
def test_dropout_acts_between_layers_only_in_training() -> None:
    layer = _make_layer("LSTM", (3, 4), num_layers=2, dropout=0.5)
    x = np.random.default_rng(0).standard_normal((6, 2, 3))
    layer.eval()
    _compare_with_numpy(layer, "LSTM", x, None)  # evaluation: no dropout at all
    check_layer_gradients(layer, x, None)
    _, (eval_h, eval_c) = layer(minitorch.tensor(x))
    layer.train()
    minitorch.manual_seed(1)
    out, (h, c) = layer(minitorch.tensor(x))
    # layer 0's own states are not dropped; layer 1 reads dropped inputs
    np.testing.assert_array_equal(h.numpy()[0], eval_h.numpy()[0])
    np.testing.assert_array_equal(c.numpy()[0], eval_c.numpy()[0])
    assert not np.allclose(h.numpy()[1], eval_h.numpy()[1])
    minitorch.manual_seed(1)
    np.testing.assert_array_equal(layer(minitorch.tensor(x))[0].numpy(), out.numpy())  # seeded: repeatable
    # dropout=1 zeroes layer 1's input: layer 1 then computes as from a zero input
    layer.dropout = 1.0
    out1, _ = layer(minitorch.tensor(x))
    single = nn.LSTM(4, 4)
    single.load_state_dict({k.replace("_l1", "_l0"): v for k, v in layer.state_dict().items() if "_l1" in k})
    np.testing.assert_allclose(out1.numpy(), single(minitorch.zeros(6, 2, 4))[0].numpy(), rtol=1e-12)
    # no dropout after the last layer: a one-layer LSTM ignores it (with PyTorch's warning)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        one = nn.LSTM(3, 4, dropout=1.0)
    one.load_state_dict({k: v for k, v in layer.state_dict().items() if "_l0" in k})
    train_out = one.train()(minitorch.tensor(x))[0].numpy()
    np.testing.assert_array_equal(train_out, one.eval()(minitorch.tensor(x))[0].numpy())


@pytest.mark.task5_4
def test_layer_errors_mirror_torch() -> None:
    lstm = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(
        RuntimeError, match=r"LSTM: input.size\(-1\) must be equal to input_size. Expected 3, got 5"
    ):
        lstm(minitorch.zeros(6, 2, 5))
    with pytest.raises(ValueError, match=r"LSTM: Expected input to be 2D or 3D, got 4D"):
        lstm(minitorch.zeros(1, 6, 2, 3))
    with pytest.raises(RuntimeError, match=r"LSTM: Expected hx\[0\] size \(2, 2, 4\), got \(1, 2, 4\)"):
        lstm(minitorch.zeros(6, 2, 3), (minitorch.zeros(1, 2, 4), minitorch.zeros(2, 2, 4)))
    with pytest.raises(RuntimeError, match=r"LSTM: For batched 3-D input, hx\[1\] should also be 3-D"):
        lstm(minitorch.zeros(6, 2, 3), (minitorch.zeros(2, 2, 4), minitorch.zeros(2, 4)))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a pair"):
        lstm(minitorch.zeros(6, 2, 3), minitorch.zeros(2, 2, 4))
    gru = nn.GRU(3, 4, bidirectional=True, batch_first=True)
    with pytest.raises(RuntimeError, match=r"GRU: Expected hx size \(2, 5, 4\), got \(2, 6, 4\)"):
        gru(minitorch.zeros(5, 6, 3), minitorch.zeros(2, 6, 4))
    with pytest.raises(RuntimeError, match=r"RNN: For unbatched 2-D input, hx should also be 2-D"):
        nn.RNN(3, 4)(minitorch.zeros(6, 3), minitorch.zeros(1, 1, 4))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
    with pytest.raises(ValueError, match="sequence length"):
        nn.RNN(3, 4)(minitorch.zeros(0, 2, 3))
    assert repr(nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)) == (
        "LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)"
    )


@pytest.mark.task5_4
def test_float32_fast_backend_layer() -> None:
    """The configuration of the language model in float32 on the fast backend: shapes,
    dtypes, and close to the float64 NumPy result."""
    reference = _make_layer("LSTM", (5, 6), batch_first=True)
    layer = nn.LSTM(5, 6, batch_first=True, dtype=minitorch.float32, backend=minitorch.FastBackend)
    layer.load_state_dict(reference.state_dict())
    x = np.random.default_rng(0).standard_normal((3, 7, 5))
    out, (h, c) = layer(minitorch.tensor(x, dtype=minitorch.float32, backend=minitorch.FastBackend))
    assert out.dtype == np.float32 and out.shape == (3, 7, 6) and h.shape == c.shape == (1, 3, 6)
    expected, _ = numpy_layer("LSTM", reference.state_dict(), x, batch_first=True)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
