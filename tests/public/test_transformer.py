"""Task 6.5: the transformer layers (`TransformerEncoderLayer`, `TransformerDecoderLayer`,
post-norm and pre-norm), their stacks, `Transformer` and the causal mask.

Values against the layers written out in NumPy (float64, PyTorch's parameter layout) and
the gradients of the inputs and of every parameter against central differences of them,
for both norm orders, both layouts, unbatched inputs, causal, bool and padding masks; the
residual structure from the layer's own sub-modules; central differences of the layers
themselves; causality; float32; dropout; errors. (The project's own suite also compares
with PyTorch's layers: test_transformer_torch.py, not shipped.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.activation import GELU
from minitorch.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    _detect_is_causal_mask,
    feed_forward,
    generate_square_subsequent_mask,
)
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_5

D, H, F = 8, 2, 12  # d_model, heads, feed-forward size of the small layers
D_SMALL, F_SMALL = 4, 6  # … of the stacks checked against NumPy (every parameter: keep them few)


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _randomise(module: nn.Module, seed: int = 0) -> None:
    """Give every parameter random values (zero biases and unit LayerNorm gains would hide
    a missing bias or gain)."""
    rng = np.random.default_rng(seed)
    module.load_state_dict({k: rng.standard_normal(v.shape) * 0.5 for k, v in module.state_dict().items()})


def _stream(shape: tuple[int, ...], seed: int) -> tuple[minitorch.Tensor, np.ndarray]:
    x = _rand(*shape, seed=seed)
    return minitorch.tensor(x, requires_grad=True), x


def _layout(batch_first: bool, batched: bool, b: int, s: int) -> tuple[int, ...]:
    if not batched:
        return (s, D)
    return (b, s, D) if batch_first else (s, b, D)


# ---------------------------------------------------------------------------------------
# The layers written out in NumPy (batch-first [B, S, d]; `p` holds a state_dict)


def _numpy_layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """(x − μ) / √(σ² + ε) · weight + bias over the last dimension (σ² biased)."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


_erf = np.vectorize(math.erf)


def _numpy_activation(name: str, x: np.ndarray) -> np.ndarray:
    """relu(x) = max(x, 0); gelu(x) = x Φ(x) = x (1 + erf(x / √2)) / 2."""
    return np.maximum(x, 0.0) if name == "relu" else 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _numpy_attention(
    p: dict, prefix: str, x: np.ndarray, mem: np.ndarray, attn_mask=None, key_padding_mask=None
) -> np.ndarray:
    """Multi-head attention (H heads) of x [B, L, d] to mem [B, S, d] with the parameters
    `prefix`.… (in_proj_weight = [W_q; W_k; W_v]). Masks as MultiheadAttention's: a bool one
    is True where a query may NOT attend, a float one is added to the scores."""
    w, b = p[prefix + ".in_proj_weight"], p[prefix + ".in_proj_bias"]
    d_model = w.shape[1]
    head_dim = d_model // H
    batch, L, S = x.shape[0], x.shape[1], mem.shape[1]

    def split(y, n):  # [B, n, d] → [B, H, n, d / H]
        return y.reshape(batch, n, H, head_dim).transpose(0, 2, 1, 3)

    q = split(x @ w[:d_model].T + b[:d_model], L)
    k = split(mem @ w[d_model : 2 * d_model].T + b[d_model : 2 * d_model], S)
    v = split(mem @ w[2 * d_model :].T + b[2 * d_model :], S)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(head_dim)  # [B, H, L, S]
    for mask in (attn_mask, None if key_padding_mask is None else key_padding_mask[:, None, None, :]):
        if mask is not None:
            scores = scores + (np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask)
    e = np.exp(scores - scores.max(-1, keepdims=True))  # (every row keeps a key here)
    weights = e / e.sum(-1, keepdims=True)
    merged = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, L, d_model)
    return merged @ p[prefix + ".out_proj.weight"].T + p[prefix + ".out_proj.bias"]


def _numpy_ffn(p: dict, prefix: str, x: np.ndarray, activation: str) -> np.ndarray:
    """linear2(act(linear1(x)))."""
    hidden = _numpy_activation(activation, x @ p[prefix + "linear1.weight"].T + p[prefix + "linear1.bias"])
    return hidden @ p[prefix + "linear2.weight"].T + p[prefix + "linear2.bias"]


def _numpy_encoder_layer(
    p: dict,
    prefix: str,
    x: np.ndarray,
    norm_first: bool,
    activation: str = "relu",
    src_mask=None,
    src_key_padding_mask=None,
) -> np.ndarray:
    """Post-norm: x = LN₁(x + SA(x)); x = LN₂(x + FFN(x)). Pre-norm: x = x + SA(LN₁(x)); x = x + FFN(LN₂(x))."""

    def norm(i, y):
        return _numpy_layer_norm(y, p[f"{prefix}norm{i}.weight"], p[f"{prefix}norm{i}.bias"])

    def sa(y):
        return _numpy_attention(p, prefix + "self_attn", y, y, src_mask, src_key_padding_mask)

    if norm_first:
        x = x + sa(norm(1, x))
        return x + _numpy_ffn(p, prefix, norm(2, x), activation)
    x = norm(1, x + sa(x))
    return norm(2, x + _numpy_ffn(p, prefix, x, activation))


def _numpy_decoder_layer(
    p: dict,
    prefix: str,
    x: np.ndarray,
    memory: np.ndarray,
    norm_first: bool,
    activation: str = "relu",
    tgt_mask=None,
    memory_key_padding_mask=None,
) -> np.ndarray:
    """As the encoder layer, with cross-attention to memory (CA) between the two sub-layers."""

    def norm(i, y):
        return _numpy_layer_norm(y, p[f"{prefix}norm{i}.weight"], p[f"{prefix}norm{i}.bias"])

    def sa(y):
        return _numpy_attention(p, prefix + "self_attn", y, y, tgt_mask)

    def ca(y):
        return _numpy_attention(p, prefix + "multihead_attn", y, memory, None, memory_key_padding_mask)

    if norm_first:
        x = x + sa(norm(1, x))
        x = x + ca(norm(2, x))
        return x + _numpy_ffn(p, prefix, norm(3, x), activation)
    x = norm(1, x + sa(x))
    x = norm(2, x + ca(x))
    return norm(3, x + _numpy_ffn(p, prefix, x, activation))


def _batch_first(x: np.ndarray, batch_first: bool) -> np.ndarray:
    """[B, S, d] from the layout asked ([S, B, d], or [S, d] unbatched: a batch of one)."""
    if x.ndim == 2:
        return x[None]
    return x if batch_first else x.swapaxes(0, 1)


def _from_batch_first(y: np.ndarray, like: np.ndarray, batch_first: bool) -> np.ndarray:
    """Back to the layout of `like`."""
    if like.ndim == 2:
        return y[0]
    return y if batch_first else y.swapaxes(0, 1)


def _check_against_numpy(
    module: nn.Module, inputs: list[minitorch.Tensor], out: minitorch.Tensor, numpy_forward, seed: int
) -> None:
    """`out` (the module on `inputs`) against numpy_forward(params, *input arrays); then the
    gradients of the inputs and of every parameter, for a random upstream gradient, against
    central differences of numpy_forward."""
    names = [name for name, _ in module.named_parameters()]
    params = {name: p.value.numpy() for name, p in module.named_parameters()}
    arrays = [x.numpy() for x in inputs]
    np.testing.assert_allclose(out.numpy(), numpy_forward(params, *arrays), rtol=1e-10, atol=1e-12)
    for x in inputs:
        x.grad = None
    for p in module.parameters():
        p.value.grad = None
    g = _rand(*out.shape, seed=seed)
    out.backward(minitorch.tensor(g))

    def f(*values):
        return numpy_forward(dict(zip(names, values[len(arrays) :])), *values[: len(arrays)])

    expected = numpy_gradients(f, arrays + [params[n] for n in names], g)
    got = [(f"input {k}", x.grad) for k, x in enumerate(inputs)]
    got += [(name, p.value.grad) for name, p in module.named_parameters()]
    for (name, grad), exp in zip(got, expected):
        assert grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(grad.numpy(), exp, rtol=1e-6, atol=1e-8, err_msg=name)


# ---------------------------------------------------------------------------------------
# The causal mask


def test_causal_mask_is_minus_infinity_above_the_diagonal() -> None:
    m = generate_square_subsequent_mask(4)
    assert m.shape == (4, 4) and m.dtype == minitorch.float64
    expected = np.array(
        [[0, -np.inf, -np.inf, -np.inf], [0, 0, -np.inf, -np.inf], [0, 0, 0, -np.inf], [0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(m.numpy(), expected)
    assert generate_square_subsequent_mask(3, dtype=minitorch.float32).dtype == minitorch.float32
    np.testing.assert_array_equal(Transformer.generate_square_subsequent_mask(4).numpy(), expected)
    assert generate_square_subsequent_mask(0).shape == (0, 0)
    with pytest.raises(ValueError, match="sz"):
        generate_square_subsequent_mask(-1)


def test_a_causal_mask_is_detected_as_pytorch_does() -> None:
    causal = generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(causal, None, 4) is True
    assert _detect_is_causal_mask(minitorch.tensor(np.triu(np.ones((4, 4), bool), 1)), None, 4) is True
    assert _detect_is_causal_mask(causal, None, 5) is False  # another size
    assert _detect_is_causal_mask(minitorch.zeros(4, 4), None, 4) is False
    assert _detect_is_causal_mask(None, None, 4) is False
    assert _detect_is_causal_mask(minitorch.zeros(4, 4), True, 4) is True  # an explicit hint wins
    assert _detect_is_causal_mask(causal, False, 4) is False


# ---------------------------------------------------------------------------------------
# The encoder layer


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize(
    "batch_first, batched",
    [(True, True), (False, True), (False, False)],
    ids=["batch-first", "seq-first", "unbatched"],
)
def test_encoder_layer_matches_numpy(
    norm_first: bool, activation: str, batch_first: bool, batched: bool
) -> None:
    """Values, and the gradients of the input and of every parameter, against the layer
    written out in NumPy (and central differences of it)."""
    layer = TransformerEncoderLayer(
        D, H, F, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first
    )
    _randomise(layer)
    x, _ = _stream(_layout(batch_first, batched, 3, 5), seed=1)
    mask = generate_square_subsequent_mask(5)
    out = layer(x, src_mask=mask)

    def numpy_layer(p, x):
        y = _numpy_encoder_layer(p, "", _batch_first(x, batch_first), norm_first, activation, mask.numpy())
        return _from_batch_first(y, x, batch_first)

    _check_against_numpy(layer, [x], out, numpy_layer, seed=2)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_masks_match_numpy(norm_first: bool) -> None:
    """A bool attention mask (True = may NOT attend), a padding mask, the causal hint."""
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=3)
    x_np = _rand(2, 4, D, seed=4)
    banned = np.array([[0, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    padding = np.array([[0, 0, 0, 1], [0, 0, 1, 1]], dtype=bool)
    causal = generate_square_subsequent_mask(4)
    cases = [  # (the layer's arguments, the NumPy layer's)
        ({"src_mask": minitorch.tensor(banned)}, {"src_mask": banned}),
        ({"src_key_padding_mask": minitorch.tensor(padding)}, {"src_key_padding_mask": padding}),
        ({"src_mask": causal, "is_causal": True}, {"src_mask": causal.numpy()}),
    ]
    for ours, numpy_masks in cases:
        x = minitorch.tensor(x_np, requires_grad=True)
        out = layer(x, **ours)

        def numpy_layer(p, x):
            return _numpy_encoder_layer(p, "", x, norm_first, "relu", **numpy_masks)

        _check_against_numpy(layer, [x], out, numpy_layer, seed=5)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_is_the_residual_blocks_of_its_sub_layers(norm_first: bool) -> None:
    """The forward pass written out from the layer's own sub-modules (no PyTorch needed)."""
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=6)
    x = minitorch.tensor(_rand(2, 5, D, seed=7))
    mask = generate_square_subsequent_mask(5)

    def attend(h):
        return layer.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]

    def ffn(h):
        return layer.linear2(layer.linear1(h).relu())

    if norm_first:
        h = x + attend(layer.norm1(x))
        expected = h + ffn(layer.norm2(h))
    else:
        h = layer.norm1(x + attend(x))
        expected = layer.norm2(h + ffn(h))
    np.testing.assert_allclose(layer(x, src_mask=mask).numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_feed_forward_is_linear_activation_linear() -> None:
    lin1, lin2 = nn.Linear(D, F), nn.Linear(F, D)
    x = minitorch.tensor(_rand(3, 4, D, seed=8))
    out = feed_forward(x, lin1, lin2, lambda h: h.tanh(), lambda h: h)
    w1, b1 = lin1.weight.value.numpy(), lin1.bias.value.numpy()
    w2, b2 = lin2.weight.value.numpy(), lin2.bias.value.numpy()
    expected = np.tanh(x.numpy() @ w1.T + b1) @ w2.T + b2
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    # the dropout acts on the hidden layer, after the activation
    dropped = feed_forward(x, lin1, lin2, lambda h: h.tanh() + 1.0, lambda h: h * 0.0)
    np.testing.assert_allclose(dropped.numpy(), np.broadcast_to(b2, (3, 4, D)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_central_differences(norm_first: bool) -> None:
    layer = TransformerEncoderLayer(
        4, 2, 6, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
    )
    _randomise(layer, seed=9)
    mask = generate_square_subsequent_mask(3)
    grad_check(lambda x: layer(x, src_mask=mask), minitorch.tensor(_rand(2, 3, 4, seed=10)))

    def with_weights(x, w1, in_proj):  # the gradients of two parameters, through the layer
        layer.linear1.weight.update(w1)  # the perturbed values of a central difference
        layer.self_attn.in_proj_weight.update(in_proj)
        return layer(x, src_mask=mask)

    # the parameters themselves are the inputs: backward's gradient lands on them
    layer.linear1.weight.update(minitorch.tensor(_rand(6, 4, seed=12)))
    layer.self_attn.in_proj_weight.update(minitorch.tensor(_rand(12, 4, seed=13)))
    grad_check(
        with_weights,
        minitorch.tensor(_rand(1, 3, 4, seed=11)),
        layer.linear1.weight,
        layer.self_attn.in_proj_weight,
    )


def test_encoder_layer_with_a_causal_mask_does_not_look_ahead() -> None:
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True)
    _randomise(layer, seed=14)
    x = _rand(2, 6, D, seed=15)
    changed = x.copy()
    changed[:, 4:] = _rand(2, 2, D, seed=16)  # change the last two positions
    mask = generate_square_subsequent_mask(6)
    a = layer(minitorch.tensor(x), src_mask=mask, is_causal=True).numpy()
    b = layer(minitorch.tensor(changed), src_mask=mask, is_causal=True).numpy()
    np.testing.assert_allclose(a[:, :4], b[:, :4], rtol=1e-13, atol=1e-13)
    assert not np.allclose(a[:, 4:], b[:, 4:])


def test_encoder_layer_parameters_and_sub_modules_have_torch_names() -> None:
    layer = TransformerEncoderLayer(D, H, F)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn",
        "linear1",
        "dropout",
        "linear2",
        "norm1",
        "norm2",
        "dropout1",
        "dropout2",
    ]
    assert [name for name, _ in layer.named_parameters()] == [
        "self_attn.in_proj_weight",
        "self_attn.in_proj_bias",
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
    ]
    assert layer.linear1.weight.value.shape == (F, D) and layer.linear2.weight.value.shape == (D, F)
    assert layer.dropout.p == layer.dropout1.p == layer.dropout2.p == 0.1  # torch's default
    assert layer.norm1.eps == 1e-5 and not layer.norm_first and not layer.self_attn.batch_first
    no_bias = TransformerEncoderLayer(D, H, F, bias=False, layer_norm_eps=1e-6)
    assert [n for n, _ in no_bias.named_parameters()] == [
        "self_attn.in_proj_weight",
        "self_attn.out_proj.weight",
        "linear1.weight",
        "linear2.weight",
        "norm1.weight",
        "norm2.weight",
    ]
    assert no_bias.norm2.eps == 1e-6


def test_encoder_layer_takes_a_module_or_a_function_as_activation() -> None:
    x = minitorch.tensor(_rand(2, 3, D, seed=17))
    reference = TransformerEncoderLayer(D, H, F, dropout=0.0, activation="gelu", batch_first=True)
    for activation in (GELU(), nn.functional.gelu):
        layer = TransformerEncoderLayer(D, H, F, dropout=0.0, activation=activation, batch_first=True)
        layer.load_state_dict(reference.state_dict())
        np.testing.assert_allclose(layer(x).numpy(), reference(x).numpy(), rtol=1e-13, atol=1e-13)
    tanh = TransformerEncoderLayer(D, H, F, dropout=0.0, activation=lambda h: h.tanh(), batch_first=True)
    tanh.load_state_dict(reference.state_dict())
    assert not np.allclose(tanh(x).numpy(), reference(x).numpy())


def test_encoder_layer_float32() -> None:
    layer64 = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True)
    _randomise(layer64, seed=18)
    layer32 = TransformerEncoderLayer(
        D, H, F, dropout=0.0, batch_first=True, norm_first=True, dtype=minitorch.float32
    )
    layer32.load_state_dict(layer64.state_dict())
    assert all(p.value.dtype == np.float32 for p in layer32.parameters())
    x = _rand(2, 5, D, seed=19)
    x32 = minitorch.tensor(x, dtype=minitorch.float32, requires_grad=True)
    mask = generate_square_subsequent_mask(5, dtype=minitorch.float32)
    out = layer32(x32, src_mask=mask)
    assert out.dtype == np.float32
    np.testing.assert_allclose(
        out.numpy(), layer64(minitorch.tensor(x), src_mask=mask).numpy(), rtol=1e-4, atol=1e-5
    )
    out.sum().backward()
    assert x32.grad.dtype == np.float32 and layer32.linear1.weight.value.grad.dtype == np.float32


def test_encoder_layer_dropout_only_in_training() -> None:
    layer = TransformerEncoderLayer(D, H, F, dropout=0.5, batch_first=True)
    x = minitorch.tensor(_rand(2, 5, D, seed=20))
    minitorch.manual_seed(1)
    a = layer(x).numpy()
    b = layer(x).numpy()
    assert not np.allclose(a, b)  # different masks
    layer.eval()
    assert not layer.self_attn.training and not layer.dropout1.training
    plain = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True)
    plain.load_state_dict(layer.state_dict())
    np.testing.assert_allclose(layer(x).numpy(), plain(x).numpy(), rtol=1e-13, atol=1e-13)


def test_encoder_layer_errors() -> None:
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        TransformerEncoderLayer(D, H, activation="tanh")
    layer = TransformerEncoderLayer(D, H, F, batch_first=True)
    with pytest.raises(RuntimeError, match=r"TransformerEncoderLayer.*d_model = 8.*\(2, 3, 5\)"):
        layer(minitorch.tensor(_rand(2, 3, 5)))
    with pytest.raises(RuntimeError, match=r"TransformerEncoderLayer.*2-D.*3-D.*\(8,\)"):
        layer(minitorch.tensor(_rand(8)))
    with pytest.raises(TypeError, match="TransformerEncoderLayer: src"):
        layer(minitorch.tensor(np.ones((2, 3, D), dtype=np.int64)))
    with pytest.raises(AssertionError, match="divisible"):
        TransformerEncoderLayer(D, 3)


# ---------------------------------------------------------------------------------------
# The decoder layer


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize(
    "batch_first, batched",
    [(True, True), (False, True), (False, False)],
    ids=["batch-first", "seq-first", "unbatched"],
)
def test_decoder_layer_matches_numpy(norm_first: bool, batch_first: bool, batched: bool) -> None:
    """Values, and the gradients of tgt, memory and every parameter, against the layer
    written out in NumPy (and central differences of it)."""
    layer = TransformerDecoderLayer(
        D, H, F, dropout=0.0, activation="gelu", batch_first=batch_first, norm_first=norm_first
    )
    _randomise(layer, seed=21)
    tgt, _ = _stream(_layout(batch_first, batched, 2, 4), seed=22)
    memory, _ = _stream(_layout(batch_first, batched, 2, 6), seed=23)
    padding = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1]], dtype=bool)
    padding = padding if batched else padding[0]
    mask = generate_square_subsequent_mask(4)
    out = layer(
        tgt, memory, tgt_mask=mask, memory_key_padding_mask=minitorch.tensor(padding), tgt_is_causal=True
    )

    def numpy_layer(p, tgt, memory):
        y = _numpy_decoder_layer(
            p,
            "",
            _batch_first(tgt, batch_first),
            _batch_first(memory, batch_first),
            norm_first,
            "gelu",
            tgt_mask=mask.numpy(),
            memory_key_padding_mask=padding.reshape(-1, 6),
        )
        return _from_batch_first(y, tgt, batch_first)

    _check_against_numpy(layer, [tgt, memory], out, numpy_layer, seed=24)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_is_the_residual_blocks_of_its_sub_layers(norm_first: bool) -> None:
    layer = TransformerDecoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=25)
    x, memory = minitorch.tensor(_rand(2, 3, D, seed=26)), minitorch.tensor(_rand(2, 5, D, seed=27))
    mask = generate_square_subsequent_mask(3)

    def self_attend(h):
        return layer.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]

    def cross_attend(h):
        return layer.multihead_attn(h, memory, memory, need_weights=False)[0]

    def ffn(h):
        return layer.linear2(layer.linear1(h).relu())

    if norm_first:
        h = x + self_attend(layer.norm1(x))
        h = h + cross_attend(layer.norm2(h))
        expected = h + ffn(layer.norm3(h))
    else:
        h = layer.norm1(x + self_attend(x))
        h = layer.norm2(h + cross_attend(h))
        expected = layer.norm3(h + ffn(h))
    np.testing.assert_allclose(
        layer(x, memory, tgt_mask=mask).numpy(), expected.numpy(), rtol=1e-12, atol=1e-12
    )


def test_decoder_layer_central_differences() -> None:
    for norm_first in (False, True):
        layer = TransformerDecoderLayer(4, 2, 6, dropout=0.0, batch_first=True, norm_first=norm_first)
        _randomise(layer, seed=28)
        mask = generate_square_subsequent_mask(3)
        grad_check(
            lambda tgt, memory: layer(tgt, memory, tgt_mask=mask),
            minitorch.tensor(_rand(2, 3, 4, seed=29)),
            minitorch.tensor(_rand(2, 2, 4, seed=30)),
        )


def test_decoder_layer_names_and_errors() -> None:
    layer = TransformerDecoderLayer(D, H, F, batch_first=True)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn",
        "multihead_attn",
        "linear1",
        "dropout",
        "linear2",
        "norm1",
        "norm2",
        "norm3",
        "dropout1",
        "dropout2",
        "dropout3",
    ]
    with pytest.raises(RuntimeError, match=r"TransformerDecoderLayer.*memory.*\(2, 3, 5\)"):
        layer(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(2, 3, 5)))
    with pytest.raises(RuntimeError, match=r"TransformerDecoderLayer.*batched.*\(2, 3, 8\).*\(3, 8\)"):
        layer(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(3, D)))


# ---------------------------------------------------------------------------------------
# The stacks and the whole Transformer


def test_encoder_stack_copies_the_layer_and_matches_numpy() -> None:
    layer = TransformerEncoderLayer(D_SMALL, H, F_SMALL, dropout=0.0, batch_first=True, norm_first=True)
    stack = TransformerEncoder(layer, 3, norm=nn.LayerNorm(D_SMALL))
    assert len(stack.layers) == 3 and stack.num_layers == 3
    assert stack.layers[0] is not layer and stack.layers[0] is not stack.layers[1]
    np.testing.assert_array_equal(
        stack.layers[2].linear1.weight.value.numpy(), layer.linear1.weight.value.numpy()
    )
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight  # copies, not shared
    assert list(stack.state_dict())[:1] == ["layers.0.self_attn.in_proj_weight"]
    assert list(stack.state_dict())[-2:] == ["norm.weight", "norm.bias"]
    _randomise(stack, seed=31)
    x, _ = _stream((2, 5, D_SMALL), seed=32)
    mask = generate_square_subsequent_mask(5)
    out = stack(x, mask=mask)  # is_causal detected from the mask

    def numpy_stack(p, x):
        for i in range(3):
            x = _numpy_encoder_layer(p, f"layers.{i}.", x, True, "relu", mask.numpy())
        return _numpy_layer_norm(x, p["norm.weight"], p["norm.bias"])

    _check_against_numpy(stack, [x], out, numpy_stack, seed=33)


def test_decoder_stack_matches_numpy() -> None:
    stack = TransformerDecoder(TransformerDecoderLayer(D_SMALL, H, F_SMALL, dropout=0.0), 2)
    _randomise(stack, seed=34)
    tgt, _ = _stream((4, 2, D_SMALL), seed=35)
    memory, _ = _stream((3, 2, D_SMALL), seed=36)
    mask = generate_square_subsequent_mask(4)
    out = stack(tgt, memory, tgt_mask=mask)

    def numpy_stack(p, tgt, memory):
        x, mem = tgt.swapaxes(0, 1), memory.swapaxes(0, 1)  # [S, B, d] → [B, S, d]
        for i in range(2):
            x = _numpy_decoder_layer(p, f"layers.{i}.", x, mem, False, "relu", tgt_mask=mask.numpy())
        return x.swapaxes(0, 1)

    _check_against_numpy(stack, [tgt, memory], out, numpy_stack, seed=37)


def test_transformer_is_the_encoder_then_the_decoder_as_numpy() -> None:
    model = Transformer(D_SMALL, H, 1, 2, F_SMALL, dropout=0.0, batch_first=True)
    names = list(model.state_dict())
    assert names[0] == "encoder.layers.0.self_attn.in_proj_weight" and names[-1] == "decoder.norm.bias"
    assert "decoder.layers.1.multihead_attn.out_proj.bias" in names and "encoder.norm.weight" in names
    _randomise(model, seed=38)
    src, _ = _stream((2, 5, D_SMALL), seed=39)
    tgt, _ = _stream((2, 3, D_SMALL), seed=40)
    padding = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    causal = Transformer.generate_square_subsequent_mask(3)
    out = model(
        src,
        tgt,
        tgt_mask=causal,
        src_key_padding_mask=minitorch.tensor(padding),
        memory_key_padding_mask=minitorch.tensor(padding),
    )

    def numpy_model(p, src, tgt):
        memory = _numpy_encoder_layer(
            p, "encoder.layers.0.", src, False, "relu", src_key_padding_mask=padding
        )
        memory = _numpy_layer_norm(memory, p["encoder.norm.weight"], p["encoder.norm.bias"])
        x = tgt
        for i in range(2):
            x = _numpy_decoder_layer(
                p,
                f"decoder.layers.{i}.",
                x,
                memory,
                False,
                "relu",
                tgt_mask=causal.numpy(),
                memory_key_padding_mask=padding,
            )
        return _numpy_layer_norm(x, p["decoder.norm.weight"], p["decoder.norm.bias"])

    _check_against_numpy(model, [src, tgt], out, numpy_model, seed=41)


def test_transformer_starts_xavier_uniform() -> None:
    minitorch.manual_seed(0)
    model = Transformer(16, 2, 1, 1, 48, dropout=0.0)
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    w = model.encoder.layers[0].linear1.weight.value.numpy()  # [48, 16]
    bound = np.sqrt(6.0 / (16 + 48))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound  # not Linear's 1/√16 = 0.25
    np.testing.assert_allclose(w.std(), bound / np.sqrt(3), rtol=0.15)
    np.testing.assert_array_equal(
        model.encoder.layers[0].linear1.bias.value.numpy() != 0, True
    )  # biases kept
    np.testing.assert_array_equal(model.encoder.norm.weight.value.numpy(), 1.0)


def test_transformer_errors() -> None:
    model = Transformer(D, H, 1, 1, F, batch_first=True)
    with pytest.raises(RuntimeError, match="batch number"):
        model(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(3, 3, D)))
    with pytest.raises(RuntimeError, match="d_model"):
        model(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(2, 3, 4)))
    with pytest.raises(ValueError, match="num_layers"):
        TransformerEncoder(TransformerEncoderLayer(D, H, F), 0)
