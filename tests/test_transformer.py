"""Task 6.5: the transformer layers (`TransformerEncoderLayer`, `TransformerDecoderLayer`,
post-norm and pre-norm), their stacks, `Transformer` and the causal mask.

Values and the gradients of the inputs and of every parameter against PyTorch's layers
holding the same weights (float64), for both norm orders, both layouts, unbatched inputs,
causal, bool and padding masks; the residual structure by hand (no PyTorch); central
differences; causality; float32; dropout; errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.activation import GELU
from minitorch.nn.transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
    _detect_is_causal_mask, feed_forward, generate_square_subsequent_mask,
)
from minitorch.testing import grad_check

pytestmark = pytest.mark.task6_5

D, H, F = 8, 2, 12  # d_model, heads, feed-forward size of the small layers


def _torch():
    torch = pytest.importorskip("torch")
    return torch


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _randomise(module: nn.Module, seed: int = 0) -> None:
    """Give every parameter random values (zero biases and unit LayerNorm gains would hide
    a missing bias or gain)."""
    rng = np.random.default_rng(seed)
    module.load_state_dict({k: rng.standard_normal(v.shape) * 0.5 for k, v in module.state_dict().items()})


def _torch_copy(torch, ours: nn.Module, theirs):
    """`theirs` (a torch module of the same structure) in float64 holding `ours`' values."""
    theirs = theirs.double()
    assert list(theirs.state_dict()) == list(ours.state_dict())  # the same names, in the same order
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    return theirs


def _compare_grads(torch, ours: nn.Module, theirs, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert p.value.grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(p.value.grad.numpy(), t_params[name].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)


def _stream(shape: tuple[int, ...], seed: int) -> tuple[minitorch.Tensor, np.ndarray]:
    x = _rand(*shape, seed=seed)
    return minitorch.tensor(x, requires_grad=True), x


def _layout(batch_first: bool, batched: bool, b: int, s: int) -> tuple[int, ...]:
    if not batched:
        return (s, D)
    return (b, s, D) if batch_first else (s, b, D)


# ---------------------------------------------------------------------------------------
# The causal mask


def test_causal_mask_is_minus_infinity_above_the_diagonal() -> None:
    m = generate_square_subsequent_mask(4)
    assert m.shape == (4, 4) and m.dtype == minitorch.float64
    expected = np.array([[0, -np.inf, -np.inf, -np.inf], [0, 0, -np.inf, -np.inf], [0, 0, 0, -np.inf], [0, 0, 0, 0]])
    np.testing.assert_array_equal(m.numpy(), expected)
    assert generate_square_subsequent_mask(3, dtype=minitorch.float32).dtype == minitorch.float32
    np.testing.assert_array_equal(Transformer.generate_square_subsequent_mask(4).numpy(), expected)
    assert generate_square_subsequent_mask(0).shape == (0, 0)
    with pytest.raises(ValueError, match="sz"):
        generate_square_subsequent_mask(-1)


def test_causal_mask_matches_torch() -> None:
    torch = _torch()
    for sz in (1, 5):
        np.testing.assert_array_equal(generate_square_subsequent_mask(sz).numpy(),
                                      torch.nn.Transformer.generate_square_subsequent_mask(sz).double().numpy())


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
@pytest.mark.parametrize("batch_first, batched", [(True, True), (False, True), (False, False)],
                         ids=["batch-first", "seq-first", "unbatched"])
def test_encoder_layer_matches_torch(norm_first: bool, activation: str, batch_first: bool, batched: bool) -> None:
    torch = _torch()
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, activation=activation, batch_first=batch_first,
                                    norm_first=norm_first)
    _randomise(layer)
    t_layer = _torch_copy(torch, layer, torch.nn.TransformerEncoderLayer(
        D, H, F, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first))
    x, x_np = _stream(_layout(batch_first, batched, 3, 5), seed=1)
    t_x = torch.tensor(x_np, requires_grad=True)
    mask = generate_square_subsequent_mask(5)
    out = layer(x, src_mask=mask)
    t_out = t_layer(t_x, src_mask=torch.tensor(mask.numpy()))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rand(*out.shape, seed=2)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, layer, t_layer)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_masks_match_torch(norm_first: bool) -> None:
    """A bool attention mask (True = may NOT attend), a padding mask, the causal hint."""
    torch = _torch()
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=3)
    t_layer = _torch_copy(torch, layer, torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True,
                                                                         norm_first=norm_first))
    x_np = _rand(2, 4, D, seed=4)
    banned = np.array([[0, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    padding = np.array([[0, 0, 0, 1], [0, 0, 1, 1]], dtype=bool)
    cases = [
        ({"src_mask": minitorch.tensor(banned)}, {"src_mask": torch.tensor(banned)}),
        ({"src_key_padding_mask": minitorch.tensor(padding)}, {"src_key_padding_mask": torch.tensor(padding)}),
        ({"src_mask": generate_square_subsequent_mask(4), "is_causal": True},
         {"src_mask": torch.nn.Transformer.generate_square_subsequent_mask(4).double(), "is_causal": True}),
    ]
    for ours, theirs in cases:
        x, t_x = minitorch.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
        for p in layer.parameters():
            p.value.grad = None
        t_layer.zero_grad()
        out, t_out = layer(x, **ours), t_layer(t_x, **theirs)
        np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=str(ours))
        g = _rand(*out.shape, seed=5)
        out.backward(minitorch.tensor(g))
        t_out.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(ours))
        _compare_grads(torch, layer, t_layer)


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
    layer = TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=9)
    mask = generate_square_subsequent_mask(3)
    grad_check(lambda x: layer(x, src_mask=mask), minitorch.tensor(_rand(2, 3, 4, seed=10)))

    def with_weights(x, w1, in_proj):  # the gradients of two parameters, through the layer
        layer.linear1.weight.value, layer.self_attn.in_proj_weight.value = w1, in_proj
        return layer(x, src_mask=mask)

    grad_check(with_weights, minitorch.tensor(_rand(1, 3, 4, seed=11)),
               minitorch.tensor(_rand(6, 4, seed=12)), minitorch.tensor(_rand(12, 4, seed=13)))


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
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    assert [name for name, _ in layer.named_parameters()] == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    assert layer.linear1.weight.value.shape == (F, D) and layer.linear2.weight.value.shape == (D, F)
    assert layer.dropout.p == layer.dropout1.p == layer.dropout2.p == 0.1  # torch's default
    assert layer.norm1.eps == 1e-5 and not layer.norm_first and not layer.self_attn.batch_first
    no_bias = TransformerEncoderLayer(D, H, F, bias=False, layer_norm_eps=1e-6)
    assert [n for n, _ in no_bias.named_parameters()] == [
        "self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight", "linear2.weight",
        "norm1.weight", "norm2.weight"]
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
    layer32 = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True, dtype=minitorch.float32)
    layer32.load_state_dict(layer64.state_dict())
    assert all(p.value.dtype == np.float32 for p in layer32.parameters())
    x = _rand(2, 5, D, seed=19)
    x32 = minitorch.tensor(x, dtype=minitorch.float32, requires_grad=True)
    mask = generate_square_subsequent_mask(5, dtype=minitorch.float32)
    out = layer32(x32, src_mask=mask)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), layer64(minitorch.tensor(x), src_mask=mask).numpy(), rtol=1e-4, atol=1e-5)
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
@pytest.mark.parametrize("batch_first, batched", [(True, True), (False, True), (False, False)],
                         ids=["batch-first", "seq-first", "unbatched"])
def test_decoder_layer_matches_torch(norm_first: bool, batch_first: bool, batched: bool) -> None:
    torch = _torch()
    layer = TransformerDecoderLayer(D, H, F, dropout=0.0, activation="gelu", batch_first=batch_first,
                                    norm_first=norm_first)
    _randomise(layer, seed=21)
    t_layer = _torch_copy(torch, layer, torch.nn.TransformerDecoderLayer(
        D, H, F, dropout=0.0, activation="gelu", batch_first=batch_first, norm_first=norm_first))
    tgt, tgt_np = _stream(_layout(batch_first, batched, 2, 4), seed=22)
    memory, memory_np = _stream(_layout(batch_first, batched, 2, 6), seed=23)
    t_tgt, t_memory = torch.tensor(tgt_np, requires_grad=True), torch.tensor(memory_np, requires_grad=True)
    padding = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1]], dtype=bool)
    padding = padding if batched else padding[0]
    mask = generate_square_subsequent_mask(4)
    out = layer(tgt, memory, tgt_mask=mask, memory_key_padding_mask=minitorch.tensor(padding), tgt_is_causal=True)
    t_out = t_layer(t_tgt, t_memory, tgt_mask=torch.tensor(mask.numpy()), memory_key_padding_mask=torch.tensor(padding),
                    tgt_is_causal=True)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rand(*out.shape, seed=24)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(tgt.grad.numpy(), t_tgt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(memory.grad.numpy(), t_memory.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, layer, t_layer)


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
    np.testing.assert_allclose(layer(x, memory, tgt_mask=mask).numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_decoder_layer_central_differences() -> None:
    for norm_first in (False, True):
        layer = TransformerDecoderLayer(4, 2, 6, dropout=0.0, batch_first=True, norm_first=norm_first)
        _randomise(layer, seed=28)
        mask = generate_square_subsequent_mask(3)
        grad_check(lambda tgt, memory: layer(tgt, memory, tgt_mask=mask),
                   minitorch.tensor(_rand(2, 3, 4, seed=29)), minitorch.tensor(_rand(2, 2, 4, seed=30)))


def test_decoder_layer_names_and_errors() -> None:
    layer = TransformerDecoderLayer(D, H, F, batch_first=True)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "norm3",
        "dropout1", "dropout2", "dropout3"]
    with pytest.raises(RuntimeError, match=r"TransformerDecoderLayer.*memory.*\(2, 3, 5\)"):
        layer(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(2, 3, 5)))
    with pytest.raises(RuntimeError, match=r"TransformerDecoderLayer.*batched.*\(2, 3, 8\).*\(3, 8\)"):
        layer(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(3, D)))


# ---------------------------------------------------------------------------------------
# The stacks and the whole Transformer


def test_encoder_stack_copies_the_layer_and_matches_torch() -> None:
    torch = _torch()
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True)
    stack = TransformerEncoder(layer, 3, norm=nn.LayerNorm(D))
    assert len(stack.layers) == 3 and stack.num_layers == 3
    assert stack.layers[0] is not layer and stack.layers[0] is not stack.layers[1]
    np.testing.assert_array_equal(stack.layers[2].linear1.weight.value.numpy(), layer.linear1.weight.value.numpy())
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight  # copies, not shared
    _randomise(stack, seed=31)
    t_layer = torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True)
    t_stack = _torch_copy(torch, stack, torch.nn.TransformerEncoder(t_layer, 3, norm=torch.nn.LayerNorm(D),
                                                                    enable_nested_tensor=False))
    x, x_np = _stream((2, 5, D), seed=32)
    t_x = torch.tensor(x_np, requires_grad=True)
    mask = generate_square_subsequent_mask(5)
    out = stack(x, mask=mask)  # is_causal detected from the mask
    t_out = t_stack(t_x, mask=torch.tensor(mask.numpy()))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rand(*out.shape, seed=33)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, stack, t_stack)


def test_decoder_stack_matches_torch() -> None:
    torch = _torch()
    stack = TransformerDecoder(TransformerDecoderLayer(D, H, F, dropout=0.0), 2)
    _randomise(stack, seed=34)
    t_stack = _torch_copy(torch, stack, torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, H, F, 0.0), 2))
    tgt, tgt_np = _stream((4, 2, D), seed=35)
    memory, memory_np = _stream((3, 2, D), seed=36)
    t_tgt, t_memory = torch.tensor(tgt_np, requires_grad=True), torch.tensor(memory_np, requires_grad=True)
    out = stack(tgt, memory, tgt_mask=generate_square_subsequent_mask(4))
    t_out = t_stack(t_tgt, t_memory, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4).double())
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_allclose(tgt.grad.numpy(), t_tgt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(memory.grad.numpy(), t_memory.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, stack, t_stack)


def test_transformer_loads_a_torch_state_dict_and_matches_torch() -> None:
    torch = _torch()
    torch.manual_seed(0)
    t_model = torch.nn.Transformer(D, H, 1, 2, F, dropout=0.0, batch_first=True).double()
    model = Transformer(D, H, 1, 2, F, dropout=0.0, batch_first=True)
    assert list(model.state_dict()) == list(t_model.state_dict())
    model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    src, src_np = _stream((2, 5, D), seed=37)
    tgt, tgt_np = _stream((2, 3, D), seed=38)
    t_src, t_tgt = torch.tensor(src_np, requires_grad=True), torch.tensor(tgt_np, requires_grad=True)
    padding = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    out = model(src, tgt, tgt_mask=Transformer.generate_square_subsequent_mask(3),
                src_key_padding_mask=minitorch.tensor(padding), memory_key_padding_mask=minitorch.tensor(padding))
    t_out = t_model(t_src, t_tgt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3).double(),
                    src_key_padding_mask=torch.tensor(padding), memory_key_padding_mask=torch.tensor(padding))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rand(*out.shape, seed=39)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(src.grad.numpy(), t_src.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tgt.grad.numpy(), t_tgt.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, model, t_model)


def test_transformer_starts_xavier_uniform() -> None:
    minitorch.manual_seed(0)
    model = Transformer(16, 2, 1, 1, 48, dropout=0.0)
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    w = model.encoder.layers[0].linear1.weight.value.numpy()  # [48, 16]
    bound = np.sqrt(6.0 / (16 + 48))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound  # not Linear's 1/√16 = 0.25
    np.testing.assert_allclose(w.std(), bound / np.sqrt(3), rtol=0.15)
    np.testing.assert_array_equal(model.encoder.layers[0].linear1.bias.value.numpy() != 0, True)  # biases kept
    np.testing.assert_array_equal(model.encoder.norm.weight.value.numpy(), 1.0)


def test_transformer_errors() -> None:
    model = Transformer(D, H, 1, 1, F, batch_first=True)
    with pytest.raises(RuntimeError, match="batch number"):
        model(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(3, 3, D)))
    with pytest.raises(RuntimeError, match="d_model"):
        model(minitorch.tensor(_rand(2, 3, D)), minitorch.tensor(_rand(2, 3, 4)))
    with pytest.raises(ValueError, match="num_layers"):
        TransformerEncoder(TransformerEncoderLayer(D, H, F), 0)
