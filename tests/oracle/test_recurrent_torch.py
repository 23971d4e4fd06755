"""Tasks 5.1–5.4 against PyTorch (the project's own oracle; not shipped to students, whose
public tests in `test_recurrent.py` use NumPy references and central differences instead):
the RNN, LSTM and GRU cells (values and every gradient in float64, batched and unbatched,
with and without bias, on each CPU backend), cell modules loading PyTorch state dicts,
`unroll` against torch.nn.RNN (including a 2000-step backward), and the stacked /
bidirectional layers over a grid of options, PyTorch state dicts both ways, dropout between
layers and the float32 fast-backend layer."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.gru import gru_cell
from minitorch.nn.lstm import lstm_cell
from minitorch.nn.recurrent import unroll
from minitorch.nn.rnn import rnn_cell, rnn_step
from test_recurrent import ATOL, CELL_KINDS, CELL_SHAPES, CPU_BACKENDS, LAYER_GRID, RTOL, _mt

torch = pytest.importorskip("torch")


def _tt(a: np.ndarray):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def _close(got: minitorch.Tensor, expected, what: str) -> None:
    assert got is not None, f"{what}: no gradient"
    exp = expected.detach().numpy() if hasattr(expected, "detach") else expected
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=RTOL, atol=ATOL, err_msg=what)


# ---- the cells against torch ------------------------------------------------------------


def _cell_case(kind: str, batch, i_size: int, h_size: int, bias: bool, seed: int = 0, backend=None):
    """Random float64 arguments of a cell, as (minitorch tensors, torch tensors)."""
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
    mt = {k: _mt(v, backend) for k, v in arrays.items()}
    tt = {k: _tt(v) for k, v in arrays.items()}
    return mt, tt


def _call_cell(kind: str, args: dict, lib, nonlinearity: str = "tanh"):
    """The cell through `lib` (minitorch's functions or torch's modules' functional ops)."""
    b_ih, b_hh = args.get("b_ih"), args.get("b_hh")
    if lib == "minitorch":
        if kind == "rnn":
            return (rnn_cell(args["x"], args["h"], args["w_ih"], args["w_hh"], b_ih, b_hh, nonlinearity),)
        if kind == "lstm":
            return lstm_cell(args["x"], (args["h"], args["c"]), args["w_ih"], args["w_hh"], b_ih, b_hh)
        return (gru_cell(args["x"], args["h"], args["w_ih"], args["w_hh"], b_ih, b_hh),)
    unbatched = args["x"].dim() == 1  # torch's functional cells want a batch: add one
    x, h = (args[k].unsqueeze(0) if unbatched else args[k] for k in ("x", "h"))
    if kind == "rnn":
        fn = torch.rnn_tanh_cell if nonlinearity == "tanh" else torch.rnn_relu_cell
        outs = (fn(x, h, args["w_ih"], args["w_hh"], b_ih, b_hh),)
    elif kind == "lstm":
        c = args["c"].unsqueeze(0) if unbatched else args["c"]
        outs = torch.lstm_cell(x, (h, c), args["w_ih"], args["w_hh"], b_ih, b_hh)
    else:
        outs = (torch.gru_cell(x, h, args["w_ih"], args["w_hh"], b_ih, b_hh),)
    return tuple(o.squeeze(0) if unbatched else o for o in outs)


def _check_cell_against_torch(
    kind: str, batch, i_size: int, h_size: int, bias: bool, nonlinearity="tanh", backend=None
):
    mt, tt = _cell_case(kind, batch, i_size, h_size, bias, backend=backend)
    outs = _call_cell(kind, mt, "minitorch", nonlinearity)
    t_outs = _call_cell(kind, tt, "torch", nonlinearity)
    rng = np.random.default_rng(1)
    loss, t_loss = 0.0, 0.0
    for k, (o, t) in enumerate(zip(outs, t_outs)):
        _close(o, t, f"{kind} output {k}")
        g = rng.standard_normal(o.shape)
        loss = (o * minitorch.tensor(g, backend=o.backend)).sum() + loss
        t_loss = (t * torch.tensor(g)).sum() + t_loss
    loss.backward()
    t_loss.backward()
    for name in mt:
        _close(mt[name].grad, tt[name].grad, f"{kind}: gradient of {name}")


@pytest.mark.task5_1
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_rnn_cell_matches_torch(batch, i_size, h_size, bias, nonlinearity) -> None:
    _check_cell_against_torch("rnn", batch, i_size, h_size, bias, nonlinearity)


@pytest.mark.task5_2
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_lstm_cell_matches_torch(batch, i_size, h_size, bias) -> None:
    _check_cell_against_torch("lstm", batch, i_size, h_size, bias)


@pytest.mark.task5_3
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, i_size, h_size", CELL_SHAPES)
def test_gru_cell_matches_torch(batch, i_size, h_size, bias) -> None:
    _check_cell_against_torch("gru", batch, i_size, h_size, bias)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("kind", CELL_KINDS)
def test_cells_on_each_cpu_backend(kind, backend) -> None:
    _check_cell_against_torch(kind, 2, 3, 4, True, backend=backend)


@pytest.mark.parametrize(
    "cls, torch_name",
    [
        pytest.param(nn.RNNCell, "RNNCell", marks=pytest.mark.task5_1),
        pytest.param(nn.LSTMCell, "LSTMCell", marks=pytest.mark.task5_2),
        pytest.param(nn.GRUCell, "GRUCell", marks=pytest.mark.task5_3),
    ],
)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_cell_modules_load_torch_state_dicts(cls, torch_name, batched) -> None:
    torch.manual_seed(0)
    t_cell = getattr(torch.nn, torch_name)(3, 4).double()
    cell = cls(3, 4)
    assert [n for n, _ in cell.named_parameters()] == list(t_cell.state_dict())
    for name, p in cell.named_parameters():
        assert p.value.shape == tuple(t_cell.state_dict()[name].shape), name
    cell.load_state_dict(t_cell.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 3) if batched else (3,))
    out, t_out = cell(minitorch.tensor(x)), t_cell(torch.tensor(x))  # hx = None: zeros
    if isinstance(out, tuple):
        for a, b in zip(out, t_out):
            _close(a, b, f"{torch_name} with hx=None")
    else:
        _close(out, t_out, f"{torch_name} with hx=None")


# ---- unroll -------------------------------------------------------------------------------


@pytest.mark.task5_1
def test_unroll_gradients_match_torch_rnn() -> None:
    """unroll(rnn_step) over a projected sequence = torch.nn.RNN, values and gradients."""
    rng = np.random.default_rng(2)
    x, h0 = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 4))
    w_ih, w_hh, b = (
        rng.standard_normal((4, 3)) * 0.5,
        rng.standard_normal((4, 4)) * 0.5,
        rng.standard_normal(4),
    )
    X, H0, W_ih, W_hh, B = (_mt(a) for a in (x, h0, w_ih, w_hh, b))
    outputs, h_n = unroll(lambda x_t, h: rnn_step(x_t, h, W_hh), X @ W_ih.transpose(0, 1) + B, H0)
    t_rnn = torch.nn.RNN(3, 4, bias=True).double()
    t_rnn.load_state_dict(
        {
            "weight_ih_l0": torch.tensor(w_ih),
            "weight_hh_l0": torch.tensor(w_hh),
            "bias_ih_l0": torch.tensor(b),
            "bias_hh_l0": torch.zeros(4, dtype=torch.float64),
        }
    )
    tx, th0 = _tt(x), _tt(h0)
    t_out, t_hn = t_rnn(tx, th0[None])
    _close(outputs, t_out, "outputs")
    _close(h_n, t_hn[0], "final state")
    g = rng.standard_normal(outputs.shape)
    (outputs * minitorch.tensor(g)).sum().backward()
    (t_out * torch.tensor(g)).sum().backward()
    _close(X.grad, tx.grad, "gradient of the inputs")
    _close(H0.grad, th0.grad, "gradient of h0")
    _close(W_hh.grad, t_rnn.weight_hh_l0.grad, "gradient of w_hh")


def _rnn_forward_backward(
    length: int, seed: int = 0
) -> tuple[nn.RNN, minitorch.Tensor, minitorch.Tensor, minitorch.Tensor]:
    rng = np.random.default_rng(seed)
    rnn = nn.RNN(2, 3)
    x, h0 = _mt(rng.standard_normal((length, 1, 2))), _mt(rng.standard_normal((1, 1, 3)))
    out, h_n = rnn(x, h0)
    (out.sum() + h_n.sum()).backward()
    return rnn, x, h0, out


@pytest.mark.task5_1
def test_a_2000_step_sequence_backpropagates() -> None:
    """No RecursionError, and the gradients through 2000 steps are right. (Time is not
    asserted — no wall-clock thresholds in tests; `bench/` measures speed.)"""
    rnn, x, h0, out = _rnn_forward_backward(2000)
    t_rnn = torch.nn.RNN(2, 3).double()
    t_rnn.load_state_dict({k: torch.tensor(v) for k, v in rnn.state_dict().items()})
    tx, th0 = _tt(x.numpy()), _tt(h0.numpy())
    t_out, t_hn = t_rnn(tx, th0)
    (t_out.sum() + t_hn.sum()).backward()
    _close(out, t_out, "outputs of 2000 steps")
    _close(x.grad, tx.grad, "input gradient over 2000 steps")
    _close(h0.grad, th0.grad, "h0 gradient over 2000 steps")


# ---- the layers against torch ---------------------------------------------------------


def _layers(mode: str, size: tuple[int, int], **kwargs):
    """A minitorch layer and the torch layer with the same weights (float64)."""
    if mode.startswith("RNN"):
        kwargs["nonlinearity"] = "relu" if mode == "RNN_RELU" else "tanh"
    name = mode.split("_")[0]
    torch.manual_seed(0)
    t_layer = getattr(torch.nn, name)(*size, **kwargs).double()
    layer = getattr(nn, name)(*size, **kwargs)
    assert list(layer.state_dict()) == list(t_layer.state_dict())
    layer.load_state_dict(t_layer.state_dict())
    return layer, t_layer


def _compare_layers(layer, t_layer, x: np.ndarray, hx, seed: int = 3) -> None:
    """Same output and final state, and the same gradients of input, initial state and every
    parameter for a random upstream gradient of the output and the final state."""
    X, tX = _mt(x), _tt(x)
    if hx is None:
        H, tH = None, None
    elif isinstance(hx, tuple):
        H, tH = tuple(_mt(a) for a in hx), tuple(_tt(a) for a in hx)
    else:
        H, tH = _mt(hx), _tt(hx)
    out, state = layer(X, H)
    t_out, t_state = t_layer(tX, tH)
    states = state if isinstance(state, tuple) else (state,)
    t_states = t_state if isinstance(t_state, tuple) else (t_state,)
    _close(out, t_out, "output")
    for k, (s, t) in enumerate(zip(states, t_states)):
        _close(s, t, f"final state {k}")
    rng = np.random.default_rng(seed)
    loss, t_loss = 0.0, 0.0
    for a, b in [(out, t_out)] + list(zip(states, t_states)):
        g = rng.standard_normal(a.shape)
        loss = (a * minitorch.tensor(g)).sum() + loss
        t_loss = (b * torch.tensor(g)).sum() + t_loss
    loss.backward()
    t_loss.backward()
    _close(X.grad, tX.grad, "input gradient")
    if H is not None:
        for k, (h, t) in enumerate(
            zip(H if isinstance(H, tuple) else (H,), tH if isinstance(tH, tuple) else (tH,))
        ):
            _close(h.grad, t.grad, f"initial state {k} gradient")
    t_params = dict(t_layer.named_parameters())
    for name, p in layer.named_parameters():
        _close(p.value.grad, t_params[name].grad, f"gradient of {name}")


@pytest.mark.task5_4
@pytest.mark.parametrize("mode, num_layers, bidirectional, batch_first, with_hx, bias", LAYER_GRID)
def test_layers_match_torch(mode, num_layers, bidirectional, batch_first, with_hx, bias) -> None:
    layer, t_layer = _layers(
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
    _compare_layers(layer, t_layer, x, hx)


@pytest.mark.task5_4
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_layers_match_torch(mode, batch_first) -> None:
    layer, t_layer = _layers(mode, (3, 2), num_layers=2, bidirectional=True, batch_first=batch_first)
    rng = np.random.default_rng(4)
    x, h = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    _compare_layers(layer, t_layer, x, (h, h * 0.5) if mode == "LSTM" else h)
    out, state = layer(minitorch.tensor(x))  # hx None: zeros [L·D, H]
    assert out.shape == (4, 4)
    assert (state[0] if mode == "LSTM" else state).shape == (4, 2)


@pytest.mark.task5_4
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_state_dicts_round_trip_with_torch(mode) -> None:
    layer = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    t_layer = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    t_layer.load_state_dict({k: torch.tensor(v) for k, v in layer.state_dict().items()})  # minitorch → torch
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    out, _ = layer(minitorch.tensor(x))
    np.testing.assert_allclose(
        out.numpy(), t_layer(torch.tensor(x))[0].detach().numpy(), rtol=RTOL, atol=ATOL
    )
    fresh = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    fresh.load_state_dict(t_layer.state_dict())  # torch → minitorch
    np.testing.assert_allclose(fresh(minitorch.tensor(x))[0].numpy(), out.numpy(), rtol=RTOL, atol=ATOL)
    for name, p in layer.named_parameters():
        bound = 1 / np.sqrt(4)
        assert np.abs(p.value.numpy()).max() <= bound, f"{name} not within U(−1/√H, 1/√H)"
    assert layer.weight_ih_l1_reverse.value.shape == (layer.gates * 4, 8)


@pytest.mark.task5_4
def test_dropout_acts_between_layers_only_in_training() -> None:
    minitorch.manual_seed(0)
    layer, t_layer = _layers("LSTM", (3, 4), num_layers=2, dropout=0.5)
    x = np.random.default_rng(0).standard_normal((6, 2, 3))
    layer.eval()
    t_layer.eval()
    _compare_layers(layer, t_layer, x, None)  # evaluation: no dropout at all
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
def test_float32_fast_backend_layer() -> None:
    """The configuration of the language model in float32 on the fast backend: shapes,
    dtypes, and close to the float64 result."""
    _, t_layer = _layers("LSTM", (5, 6), batch_first=True)
    layer = nn.LSTM(5, 6, batch_first=True, dtype=minitorch.float32, backend=minitorch.FastBackend)
    layer.load_state_dict(t_layer.state_dict())
    x = np.random.default_rng(0).standard_normal((3, 7, 5))
    out, (h, c) = layer(minitorch.tensor(x, dtype=minitorch.float32, backend=minitorch.FastBackend))
    assert out.dtype == np.float32 and out.shape == (3, 7, 6) and h.shape == c.shape == (1, 3, 6)
    np.testing.assert_allclose(
        out.numpy(), t_layer(torch.tensor(x))[0].detach().numpy(), rtol=1e-4, atol=1e-5
    )
