"""The fused LSTM and GRU steps (`minitorch/accel/fused_recurrent.py`): the same values and
gradients as the composed `lstm_step` / `gru_step` of tasks 5.2 and 5.3 (float64 and float32,
with and without bias, batch 1 and larger, non-contiguous states, both CPU backends, the
parallel forward kernels), one graph node per step, the cases left to the composed path,
central differences, torch's LSTMCell / GRUCell, and whole stacked bidirectional layers.
The LSTM's whole-sequence node (`LSTMSequence`, what an LSTM layer runs): central
differences in both directions, and the same numbers as the fused steps."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minitorch
from minitorch import fast_paths, nn
from minitorch.nn.gru import gru_step
from minitorch.nn.lstm import lstm_step
from minitorch.nn.recurrent import LayerStep
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

from minitorch.accel import fused_recurrent as fused  # noqa: E402

CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-5)}
GATES = {"lstm": 4, "gru": 3}


def _rand(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _case(kind: str, batch: int, hidden: int, bias: bool, seed: int = 0) -> dict[str, np.ndarray]:
    """Random arguments of one step (plus the weights of the loss), as float64 arrays."""
    g = GATES[kind] * hidden
    arrays = {
        "x_proj": _rand(batch, g, seed=seed) * 1.5,
        "h": _rand(batch, hidden, seed=seed + 1),
        "w_hh": _rand(g, hidden, seed=seed + 2) * 0.7,
        "dh": _rand(batch, hidden, seed=seed + 3),
    }
    if kind == "lstm":
        arrays["c"] = _rand(batch, hidden, seed=seed + 4) * 2.0
        arrays["dc"] = _rand(batch, hidden, seed=seed + 5)
    if bias:
        arrays["b_hh"] = _rand(g, seed=seed + 6)
    return arrays


def _leaf(
    a: np.ndarray, dtype, backend, transposed: bool = False
) -> tuple[minitorch.Tensor, minitorch.Tensor]:
    """(leaf, the tensor fed to the step): with `transposed` the leaf holds aᵀ and the step
    gets its transpose — a's values, non-contiguous."""
    if not transposed:
        t = minitorch.tensor(a.astype(dtype), requires_grad=True, backend=backend)
        return t, t
    t = minitorch.tensor(np.ascontiguousarray(a.T).astype(dtype), requires_grad=True, backend=backend)
    view = t.transpose(0, 1)
    assert not view._tensor.is_contiguous()
    return t, view


def _run(
    kind: str, arrays: dict, dtype, composed: bool, backend=None, strided: bool = False, use: str = "both"
) -> tuple[list, object]:
    """Values and gradients of one step on one path: [h', (c'), ∂x_proj, ∂h, (∂c), ∂W_hh, (∂b_hh)].

    The loss is Σ h' ⊙ dh (+ Σ c' ⊙ dc for the LSTM; `use` = "h" or "c" keeps one term only).
    `strided` feeds non-contiguous h and c (and x_proj)."""
    names = (
        ["x_proj", "h"]
        + (["c"] if kind == "lstm" else [])
        + ["w_hh"]
        + (["b_hh"] if "b_hh" in arrays else [])
    )
    leaves, fed = {}, {}
    for n in names:
        leaves[n], fed[n] = _leaf(arrays[n], dtype, backend, transposed=strided and n in ("x_proj", "h", "c"))
    b = fed.get("b_hh")
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        if kind == "lstm":
            step = lstm_step if composed else fused.lstm_step
            h_next, c_next = step(fed["x_proj"], (fed["h"], fed["c"]), fed["w_hh"], b)
            loss = None
            if use in ("both", "h"):
                loss = (h_next * minitorch.tensor(arrays["dh"].astype(dtype), backend=backend)).sum()
            if use in ("both", "c"):
                term = (c_next * minitorch.tensor(arrays["dc"].astype(dtype), backend=backend)).sum()
                loss = term if loss is None else loss + term
            outputs = [h_next, c_next]
        else:
            step = gru_step if composed else fused.gru_step
            h_next = step(fed["x_proj"], fed["h"], fed["w_hh"], b)
            loss = (h_next * minitorch.tensor(arrays["dh"].astype(dtype), backend=backend)).sum()
            outputs = [h_next]
        loss.backward()
    grads = [leaves[n].grad.numpy() for n in names]
    grads = [g.T if leaves[n] is not fed[n] else g for n, g in zip(names, grads)]  # back to a's layout
    return [o.numpy() for o in outputs] + grads, outputs[0]


def _compare(got: list, expected: list, dtype) -> None:
    for k, (a, e) in enumerate(zip(got, expected)):
        assert a.dtype == np.dtype(dtype), f"entry {k}: dtype {a.dtype}"
        assert a.shape == e.shape, f"entry {k}: shape {a.shape} vs {e.shape}"
        np.testing.assert_allclose(a, e, err_msg=f"entry {k}", **TOL[dtype])


# ---- fused vs composed, one step -----------------------------------------------------------

SHAPES = [
    pytest.param(1, 1, id="B1-H1"),
    pytest.param(1, 7, id="B1-H7"),
    pytest.param(4, 5, id="B4-H5"),
    pytest.param(32, 192, id="B32-H192-parallel"),  # B·G·H ≥ PARALLEL_MIN: the parallel forward
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("batch, hidden", SHAPES)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_step_matches_composed(kind, batch, hidden, bias, dtype) -> None:
    arrays = _case(kind, batch, hidden, bias)
    got, out = _run(kind, arrays, dtype, composed=False)
    expected, _ = _run(kind, arrays, dtype, composed=True)
    node = out.history.last_fn if kind == "gru" else out.history.inputs[0].history.last_fn
    assert node is (fused.GRUStep if kind == "gru" else fused.LSTMStep), "the fused node was not recorded"
    _compare(got, expected, dtype)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_non_contiguous_inputs_on_both_backends(kind, dtype, backend) -> None:
    arrays = _case(kind, 3, 4, bias=True, seed=10)
    got, _ = _run(kind, arrays, dtype, composed=False, backend=backend, strided=True)
    expected, _ = _run(kind, arrays, dtype, composed=True, backend=backend, strided=True)
    _compare(got, expected, dtype)
    plain, _ = _run(kind, arrays, dtype, composed=False, backend=backend)
    _compare(got, plain, dtype)


@pytest.mark.parametrize("compile_", ["serial", "parallel"])
@pytest.mark.parametrize("hidden", [1, 7])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_serial_and_parallel_kernels(kind, hidden, compile_, monkeypatch) -> None:
    """Every kernel in each of its compiles (the threshold moved to force one), with more
    threads than rows and widths that fill no SIMD register."""
    monkeypatch.setattr(fused, "PARALLEL_MIN", 1 if compile_ == "parallel" else 1 << 62)
    arrays = _case(kind, 5, hidden, bias=True, seed=50)
    got, _ = _run(kind, arrays, np.float64, composed=False)
    expected, _ = _run(kind, arrays, np.float64, composed=True)
    _compare(got, expected, np.float64)


@pytest.mark.parametrize("use", ["h", "c"])
def test_lstm_one_output_used(use) -> None:
    """Only h' (or only c') reaches the loss: the other half's gradient is absent, not zero-filled wrongly."""
    arrays = _case("lstm", 3, 4, bias=True, seed=20)
    got, _ = _run("lstm", arrays, np.float64, composed=False, use=use)
    expected, _ = _run("lstm", arrays, np.float64, composed=True, use=use)
    _compare(got, expected, np.float64)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_only_some_inputs_need_gradients(kind) -> None:
    """A constant h (the zero initial state) and a frozen W_hh get no gradient; the rest are right."""
    arrays = _case(kind, 2, 3, bias=True, seed=30)
    results = []
    for composed in (False, True):
        x = minitorch.tensor(arrays["x_proj"], requires_grad=True)
        h = minitorch.tensor(arrays["h"])
        w = minitorch.tensor(arrays["w_hh"])
        b = minitorch.tensor(arrays["b_hh"], requires_grad=True)
        with fast_paths.plain_only() if composed else contextlib.nullcontext():
            if kind == "lstm":
                c = minitorch.tensor(arrays["c"], requires_grad=True)
                h_next, c_next = (lstm_step if composed else fused.lstm_step)(x, (h, c), w, b)
                (h_next.sum() + (c_next * c_next).sum()).backward()
                grads = [x.grad, c.grad, b.grad]
            else:
                (gru_step if composed else fused.gru_step)(x, h, w, b).sum().backward()
                grads = [x.grad, b.grad]
        assert h.grad is None and w.grad is None
        results.append([g.numpy() for g in grads])
    _compare(results[0], results[1], np.float64)


def test_no_graph_without_gradients() -> None:
    arrays = _case("lstm", 2, 3, bias=True)
    args = [minitorch.tensor(arrays[n]) for n in ("x_proj", "h", "c", "w_hh", "b_hh")]
    h_next, c_next = fused.lstm_step(args[0], (args[1], args[2]), args[3], args[4])
    assert not h_next.requires_grad and not c_next.requires_grad
    with minitorch.no_grad():
        x = minitorch.tensor(arrays["x_proj"], requires_grad=True)
        h_next, _ = fused.lstm_step(x, (args[1], args[2]), args[3], args[4])
    assert not h_next.requires_grad


# ---- central differences --------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_lstm_grad_check(bias) -> None:
    a = _case("lstm", 2, 3, bias)
    inputs = [minitorch.tensor(a[n]) for n in ("x_proj", "h", "c", "w_hh")]
    if bias:
        inputs.append(minitorch.tensor(a["b_hh"]))

    def f(x_proj, h, c, w_hh, b_hh=None):
        h_next, c_next = fused.lstm_step(x_proj, (h, c), w_hh, b_hh)
        return minitorch.stack([h_next, c_next])

    grad_check(f, *inputs)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_gru_grad_check(bias) -> None:
    a = _case("gru", 2, 3, bias)
    inputs = [minitorch.tensor(a[n]) for n in ("x_proj", "h", "w_hh")]
    if bias:
        inputs.append(minitorch.tensor(a["b_hh"]))

    def f(x_proj, h, w_hh, b_hh=None):
        return fused.gru_step(x_proj, h, w_hh, b_hh)

    grad_check(f, *inputs)


# ---- torch's cells -----------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_matches_torch_cells(kind, bias) -> None:
    """torch.nn.LSTMCell / GRUCell with input size G·H, W_ih = I and b_ih = 0 compute the step
    from x_proj (as its input) — so every gradient, ∂x_proj included, is torch's."""
    torch = pytest.importorskip("torch")
    batch, hidden = 3, 4
    a = _case(kind, batch, hidden, bias, seed=40)
    g = GATES[kind] * hidden
    cell = (torch.nn.LSTMCell if kind == "lstm" else torch.nn.GRUCell)(
        g, hidden, bias=bias, dtype=torch.float64
    )
    with torch.no_grad():
        cell.weight_ih.copy_(torch.eye(g, dtype=torch.float64))
        cell.weight_hh.copy_(torch.tensor(a["w_hh"]))
        if bias:
            cell.bias_ih.zero_()
            cell.bias_hh.copy_(torch.tensor(a["b_hh"]))
    tx = torch.tensor(a["x_proj"], requires_grad=True)
    th = torch.tensor(a["h"], requires_grad=True)
    got, _ = _run(kind, a, np.float64, composed=False)
    if kind == "lstm":
        tc = torch.tensor(a["c"], requires_grad=True)
        h_next, c_next = cell(tx, (th, tc))
        ((h_next * torch.tensor(a["dh"])).sum() + (c_next * torch.tensor(a["dc"])).sum()).backward()
        expected = [h_next, c_next, tx.grad, th.grad, tc.grad]
    else:
        h_next = cell(tx, th)
        (h_next * torch.tensor(a["dh"])).sum().backward()
        expected = [h_next, tx.grad, th.grad]
    expected += [cell.weight_hh.grad] + ([cell.bias_hh.grad] if bias else [])
    _compare(got, [e.detach().numpy() for e in expected], np.float64)


# ---- whole layers ------------------------------------------------------------------------------


def _layer_run(kind: str, dtype, composed: bool, batch_first: bool, seed: int = 0) -> list[np.ndarray]:
    """Output, final state and the gradients of every parameter, the input and the initial
    state of a 2-layer bidirectional layer (same parameters on both paths)."""
    T, B, I, H = 5, 3, 4, 6
    minitorch.manual_seed(seed)
    layer = (nn.LSTM if kind == "lstm" else nn.GRU)(
        I, H, num_layers=2, bidirectional=True, batch_first=batch_first, dtype=dtype
    )
    x = minitorch.tensor(
        _rand(*((B, T, I) if batch_first else (T, B, I)), seed=seed + 1).astype(dtype), requires_grad=True
    )
    states = [
        minitorch.tensor(_rand(4, B, H, seed=seed + 2 + k).astype(dtype), requires_grad=True)
        for k in range(2 if kind == "lstm" else 1)
    ]
    with fast_paths.plain_only() if composed else contextlib.nullcontext():
        out, final = layer(x, tuple(states) if kind == "lstm" else states[0])
        finals = list(final) if kind == "lstm" else [final]
        loss = (out * minitorch.tensor(_rand(*out.shape, seed=seed + 5).astype(dtype))).sum()
        for k, f in enumerate(finals):
            loss = loss + (f * minitorch.tensor(_rand(*f.shape, seed=seed + 6 + k).astype(dtype))).sum()
        loss.backward()
    values = [out.numpy()] + [f.numpy() for f in finals] + [x.grad.numpy()] + [s.grad.numpy() for s in states]
    return values + [p.value.grad.numpy() for _, p in layer.named_parameters()]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_stacked_bidirectional_layer_fused_vs_composed(kind, dtype) -> None:
    for batch_first in (False, True):
        got = _layer_run(kind, dtype, composed=False, batch_first=batch_first)
        expected = _layer_run(kind, dtype, composed=True, batch_first=batch_first)
        assert len(got) == len(expected) == 1 + GATES[kind] // 2 + 1 + GATES[kind] // 2 + 2 * 2 * 4
        _compare(got, expected, dtype)


def test_gru_cell_takes_the_fused_step(monkeypatch) -> None:
    """Outside a layer's sequence (a step called on its own), the GRU's cell_step is the fused
    step when it is there, the composed one in `plain_only`."""
    calls = []
    monkeypatch.setattr(fused, "gru_step", lambda *args, real=fused.gru_step: calls.append(1) or real(*args))
    layer = nn.GRU(3, 4)
    _, w_hh, _, b_hh = layer.layer_weights(0, 0)
    x_proj, h = minitorch.tensor(_rand(2, 12, seed=1)), minitorch.tensor(_rand(2, 4, seed=2))
    layer.cell_step(x_proj, h, w_hh, b_hh)
    assert len(calls) == 1
    with fast_paths.plain_only():
        layer.cell_step(x_proj, h, w_hh, b_hh)
    assert len(calls) == 1


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_layer_runs_each_sequence_as_one_node(kind, monkeypatch) -> None:
    """An LSTM (GRU) layer runs each layer and direction as ONE `LSTMSequence`
    (`GRUSequence`) node, never step by step, and the composed steps in `plain_only`."""
    calls, steps = [], []
    step_name, node = ("lstm_step", fused.LSTMSequence) if kind == "lstm" else ("gru_step", fused.GRUSequence)
    monkeypatch.setattr(
        fused, step_name, lambda *args, real=getattr(fused, step_name): steps.append(1) or real(*args)
    )
    real = node.forward
    monkeypatch.setattr(node, "forward", staticmethod(lambda *args: calls.append(args[-1]) or real(*args)))
    layer = (nn.LSTM if kind == "lstm" else nn.GRU)(3, 4, num_layers=2, bidirectional=True)
    x = minitorch.tensor(_rand(6, 2, 3, seed=1), requires_grad=True)
    out, _ = layer(x)
    assert calls == [False, True, False, True] and steps == []  # (layer, direction) in order; reverse flags
    assert out.history is not None
    with fast_paths.plain_only():
        layer(x)
    assert len(calls) == 4 and steps == []


class _DoubledLSTM(nn.LSTM):
    def cell_step(self, x_proj, state, w_hh, b_hh):
        h, c = super().cell_step(x_proj, state, w_hh, b_hh)
        return h * 2.0, c


class _HalvedGRU(nn.GRU):
    def cell_step(self, x_proj, state, w_hh, b_hh):
        return super().cell_step(x_proj, state, w_hh, b_hh) * 0.5


@pytest.mark.parametrize(
    "plain_cls, changed_cls", [(nn.LSTM, _DoubledLSTM), (nn.GRU, _HalvedGRU)], ids=["lstm", "gru"]
)
def test_a_layer_whose_step_is_overridden_runs_its_own_step(plain_cls, changed_cls) -> None:
    """A subclass that changes `cell_step` gets its step, not the whole-sequence node."""
    minitorch.manual_seed(0)
    plain = plain_cls(3, 4)
    changed = changed_cls(3, 4)
    changed.load_state_dict(plain.state_dict())
    x = minitorch.tensor(_rand(5, 2, 3, seed=2))
    out_plain, _ = plain(x)
    out_changed, _ = changed(x)
    assert not np.allclose(out_plain.numpy(), out_changed.numpy())
    with fast_paths.plain_only():
        expected, _ = changed(x)
    np.testing.assert_allclose(out_changed.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def _sequence_case(
    T: int, batch: int, hidden: int, bias: bool, seed: int = 0, kind: str = "lstm"
) -> list[minitorch.Tensor]:
    """[x_proj, h0, (c0,) w_hh, (b_hh)] for `_sequence(kind, …)`."""
    a = _case(kind, batch, hidden, bias, seed=seed)
    x = _rand(T, batch, GATES[kind] * hidden, seed=seed + 20) * 1.5
    state = [a["h"], a["c"]] if kind == "lstm" else [a["h"]]
    tensors = [minitorch.tensor(v) for v in [x, *state, a["w_hh"]]]
    return tensors + ([minitorch.tensor(a["b_hh"])] if bias else [])


def _sequence(reverse: bool, kind: str = "lstm"):
    """f(x_proj, h0, (c0,) w_hh[, b_hh]) → (outputs, final state) stacked, through
    `fused.unroll` with a layer's step (the weights are the arguments, so every one is checked)."""
    if kind == "gru":

        def f(x_proj, h0, w_hh, b_hh=None):
            out, h = fused.unroll(LayerStep(nn.GRU(1, h0.shape[1]), w_hh, b_hh), x_proj, h0, reverse)
            return minitorch.cat([out, h.unsqueeze(0)], dim=0)

        return f

    def f(x_proj, h0, c0, w_hh, b_hh=None):
        out, (h, c) = fused.unroll(LayerStep(nn.LSTM(1, h0.shape[1]), w_hh, b_hh), x_proj, (h0, c0), reverse)
        return minitorch.cat([out, h.unsqueeze(0), c.unsqueeze(0)], dim=0)

    return f


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_sequence_grad_check(bias, reverse, kind) -> None:
    grad_check(_sequence(reverse, kind), *_sequence_case(3, 2, 3, bias, kind=kind))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("T, batch, hidden", [(7, 3, 5), pytest.param(3, 8, 32, id="tiled-prepacked")])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sequence_matches_the_fused_steps(dtype, reverse, T, batch, hidden, kind) -> None:
    """The sequence node computes what T `LSTMStep` (`GRUStep`) nodes compute: the same
    forward numbers (the same product and kernel, bit for bit), the same gradients up to
    rounding (∂W_hh is one product over all steps instead of a sum of T). At B = 8, H = 32
    the recurrent products are large enough for the tiled kernel, so the sequence packs
    W_hh once."""
    results = []
    for whole in (True, False):
        leaves = [
            t.to(minitorch.float32) if dtype == np.float32 else t
            for t in _sequence_case(T, batch, hidden, True, seed=3, kind=kind)
        ]
        for t in leaves:
            t.requires_grad_(True)
        x, state, (w, b) = leaves[0], leaves[1:-2], leaves[-2:]
        cell = nn.LSTM(1, hidden) if kind == "lstm" else nn.GRU(1, hidden)
        start = tuple(state) if kind == "lstm" else state[0]
        if whole:
            out, final = fused.unroll(LayerStep(cell, w, b), x, start, reverse)
        else:
            outs, final = [None] * T, start
            for t in range(T - 1, -1, -1) if reverse else range(T):
                final = (
                    fused.lstm_step(x[t], final, w, b)
                    if kind == "lstm"
                    else fused.gru_step(x[t], final, w, b)
                )
                outs[t] = final[0] if kind == "lstm" else final
            out = minitorch.stack(outs, dim=0)
        finals = list(final) if kind == "lstm" else [final]
        weights = [
            minitorch.tensor(_rand(*v.shape, seed=9 + k).astype(dtype)) for k, v in enumerate([out, *finals])
        ]
        sum((v * wt).sum() for v, wt in zip([out, *finals], weights)).backward()
        results.append([out.numpy()] + [f.numpy() for f in finals] + [t.grad.numpy() for t in leaves])
    whole, steps = results
    outputs = 3 if kind == "lstm" else 2
    for k in range(outputs):
        np.testing.assert_array_equal(whole[k], steps[k])
    _compare(whole[outputs:], steps[outputs:], dtype)


@pytest.mark.parametrize("transposed", [False, True], ids=["W", "W^T"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_right_factor_packed_once_equals_the_backend_product(dtype, transposed) -> None:
    """`_RightFactor` packs b once when the backend would run the tiled kernel, and each
    product is then bit for bit the backend's; on the simple backend it is the backend's."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((128, 32)).astype(dtype)
    for backend, packs in ((minitorch.FastBackend, True), (minitorch.SimpleBackend, False)):
        data = minitorch.tensor(w, backend=backend)._tensor
        b = fused._transposed(data) if transposed else data
        factor = fused._RightFactor(b, 8, backend)
        assert (factor.packed is not None) is packs
        for seed in range(3):
            a = np.random.default_rng(seed).standard_normal((8, b.shape[0])).astype(dtype)
            got = factor.times(a)
            np.testing.assert_array_equal(got, fused._product(fused._rows(a), b, backend))
            tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got, a @ (w.T if transposed else w), **tol)


# ---- what the fused step leaves to the composed one ---------------------------------------------


def test_supports() -> None:
    a = _case("lstm", 2, 3, bias=True)
    x, h, c, w, b = (minitorch.tensor(a[n]) for n in ("x_proj", "h", "c", "w_hh", "b_hh"))
    assert fused.supports(4, x, (h, c), w, b) and fused.supports(4, x, (h, c), w, None)
    f32 = lambda t: t.to(minitorch.float32)  # noqa: E731
    assert fused.supports(4, f32(x), (f32(h), f32(c)), f32(w), f32(b))
    assert not fused.supports(3, x, (h, c), w, b)  # the wrong number of gate blocks
    assert not fused.supports(4, f32(x), (h, c), w, b)  # mixed dtypes: the composed path promotes
    assert not fused.supports(4, x, (h, c), w, f32(b))
    assert not fused.supports(4, x.long(), (h.long(), c.long()), w.long(), b.long())  # not floating
    assert not fused.supports(4, x.unsqueeze(0), (h, c), w, b)  # 3-D
    assert not fused.supports(4, x, (h.unsqueeze(0), c), w, b)
    assert not fused.supports(4, x, (h[:1], c), w, b)  # batch sizes differ
    assert not fused.supports(4, x, (h, c), w, b[:6])
    other = minitorch.tensor(a["h"], backend=minitorch.SimpleBackend)
    assert not fused.supports(4, x, (other, c), w, b)  # two backends


def test_unsupported_cell_step_falls_back() -> None:
    """Mixed dtypes (float32 state, float64 weights) take the composed step, with its promotion."""
    layer = nn.LSTM(2, 3)
    a = _case("lstm", 2, 3, bias=True)
    x = minitorch.tensor(a["x_proj"])
    state = (minitorch.tensor(a["h"]).to(minitorch.float32), minitorch.tensor(a["c"]).to(minitorch.float32))
    w, b = minitorch.tensor(a["w_hh"]), minitorch.tensor(a["b_hh"])
    h_next, c_next = layer.cell_step(x, state, w, b)
    with fast_paths.plain_only():
        h_ref, c_ref = layer.cell_step(x, state, w, b)
    assert h_next.dtype == h_ref.dtype
    np.testing.assert_array_equal(h_next.numpy(), h_ref.numpy())
    np.testing.assert_array_equal(c_next.numpy(), c_ref.numpy())


# ---- time_steps: the T views of a sequence with one gradient buffer ----------------------


def _steps_loss(steps, weights):
    """A loss that uses every step but step 1, each in its own way."""
    total = None
    for t, (s, w) in enumerate(zip(steps, weights)):
        if t == 1:
            continue
        term = (s * w).sum() * (t + 1) + (s * s).sum()
        total = term if total is None else total + term
    return total


@pytest.mark.parametrize("shape", [(5, 3, 4), (2, 6), (7,)])
def test_time_steps_give_the_composed_views_and_gradients(shape) -> None:
    from minitorch.nn.recurrent import time_steps

    rng = np.random.default_rng(5)
    x = minitorch.tensor(rng.standard_normal(shape), requires_grad=True)
    weights = [minitorch.tensor(rng.standard_normal(shape[1:])) for _ in range(shape[0])]
    fused_steps = time_steps(x)
    with fast_paths.plain_only():
        composed_steps = time_steps(x)
    for a, b in zip(fused_steps, composed_steps):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    _steps_loss(fused_steps, weights).backward()
    fused_grad = x.grad.numpy()
    x.grad = None
    _steps_loss(composed_steps, weights).backward()
    np.testing.assert_allclose(fused_grad, x.grad.numpy(), rtol=1e-14)
    assert np.all(fused_grad[1] == 0)  # the unused step gets exactly zero


def test_time_steps_backward_twice_accumulates_and_no_grad_input_gives_plain_views() -> None:
    from minitorch.nn.recurrent import time_steps

    rng = np.random.default_rng(6)
    x = minitorch.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    weights = [minitorch.tensor(rng.standard_normal(3)) for _ in range(4)]
    loss = _steps_loss(time_steps(x), weights)
    loss.backward()
    once = x.grad.numpy()
    loss.backward()  # the same graph again: the buffer was handed on and starts afresh
    np.testing.assert_allclose(x.grad.numpy(), 2 * once, rtol=1e-14)
    plain = minitorch.tensor(rng.standard_normal((3, 2)))
    steps = time_steps(plain)
    assert [s.requires_grad for s in steps] == [False] * 3
    np.testing.assert_array_equal(np.stack([s.numpy() for s in steps]), plain.numpy())


def test_time_steps_pass_a_gradient_check() -> None:
    from minitorch.nn.recurrent import time_steps

    weights = [minitorch.tensor(np.random.default_rng(7).standard_normal(2)) for _ in range(3)]
    x = minitorch.tensor(np.random.default_rng(8).standard_normal((3, 2)), requires_grad=True)
    grad_check(lambda x: _steps_loss(time_steps(x), weights), x)
