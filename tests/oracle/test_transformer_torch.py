"""Task 6.5: the transformer layers, their stacks, `Transformer` and the causal mask against
PyTorch (the project's own suite; not shipped): values and the gradients of the inputs and
of every parameter against PyTorch's layers holding the same weights (float64), for both
norm orders, both layouts, unbatched inputs, causal, bool and padding masks. The torch-free
tests are in test_transformer.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    generate_square_subsequent_mask,
)
from test_transformer import D, F, H, _layout, _rand, _randomise, _stream

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.task6_5


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
        np.testing.assert_allclose(
            p.value.grad.numpy(), t_params[name].grad.numpy(), rtol=rtol, atol=atol, err_msg=name
        )


def _match_torch(out, t_out, inputs, ours: nn.Module, theirs, seed: int, err_msg: str = "") -> None:
    """The same output; after the backward pass of the same random upstream gradient (drawn
    from `seed`), the same gradient of every input (`inputs`: pairs (ours, torch's)) and of
    every parameter."""
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=err_msg)
    g = _rand(*out.shape, seed=seed)
    out.backward(minitorch.tensor(g))
    t_out.backward(torch.tensor(g))
    for x, t_x in inputs:
        np.testing.assert_allclose(x.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=err_msg)
    _compare_grads(torch, ours, theirs)


def test_causal_mask_matches_torch() -> None:
    for sz in (1, 5):
        np.testing.assert_array_equal(
            generate_square_subsequent_mask(sz).numpy(),
            torch.nn.Transformer.generate_square_subsequent_mask(sz).double().numpy(),
        )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize(
    "batch_first, batched",
    [(True, True), (False, True), (False, False)],
    ids=["batch-first", "seq-first", "unbatched"],
)
def test_encoder_layer_matches_torch(
    norm_first: bool, activation: str, batch_first: bool, batched: bool
) -> None:
    layer = TransformerEncoderLayer(
        D, H, F, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first
    )
    _randomise(layer)
    t_layer = _torch_copy(
        torch,
        layer,
        torch.nn.TransformerEncoderLayer(
            D, H, F, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first
        ),
    )
    x, x_np = _stream(_layout(batch_first, batched, 3, 5), seed=1)
    t_x = torch.tensor(x_np, requires_grad=True)
    mask = generate_square_subsequent_mask(5)
    out = layer(x, src_mask=mask)
    t_out = t_layer(t_x, src_mask=torch.tensor(mask.numpy()))
    _match_torch(out, t_out, [(x, t_x)], layer, t_layer, seed=2)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_masks_match_torch(norm_first: bool) -> None:
    """A bool attention mask (True = may NOT attend), a padding mask, the causal hint."""
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomise(layer, seed=3)
    t_layer = _torch_copy(
        torch,
        layer,
        torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first),
    )
    x_np = _rand(2, 4, D, seed=4)
    banned = np.array([[0, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    padding = np.array([[0, 0, 0, 1], [0, 0, 1, 1]], dtype=bool)
    cases = [
        ({"src_mask": minitorch.tensor(banned)}, {"src_mask": torch.tensor(banned)}),
        (
            {"src_key_padding_mask": minitorch.tensor(padding)},
            {"src_key_padding_mask": torch.tensor(padding)},
        ),
        (
            {"src_mask": generate_square_subsequent_mask(4), "is_causal": True},
            {"src_mask": torch.nn.Transformer.generate_square_subsequent_mask(4).double(), "is_causal": True},
        ),
    ]
    for ours, theirs in cases:
        x, t_x = minitorch.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
        for p in layer.parameters():
            p.value.grad = None
        t_layer.zero_grad()
        out, t_out = layer(x, **ours), t_layer(t_x, **theirs)
        _match_torch(out, t_out, [(x, t_x)], layer, t_layer, seed=5, err_msg=str(ours))


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize(
    "batch_first, batched",
    [(True, True), (False, True), (False, False)],
    ids=["batch-first", "seq-first", "unbatched"],
)
def test_decoder_layer_matches_torch(norm_first: bool, batch_first: bool, batched: bool) -> None:
    layer = TransformerDecoderLayer(
        D, H, F, dropout=0.0, activation="gelu", batch_first=batch_first, norm_first=norm_first
    )
    _randomise(layer, seed=21)
    t_layer = _torch_copy(
        torch,
        layer,
        torch.nn.TransformerDecoderLayer(
            D, H, F, dropout=0.0, activation="gelu", batch_first=batch_first, norm_first=norm_first
        ),
    )
    tgt, tgt_np = _stream(_layout(batch_first, batched, 2, 4), seed=22)
    memory, memory_np = _stream(_layout(batch_first, batched, 2, 6), seed=23)
    t_tgt, t_memory = torch.tensor(tgt_np, requires_grad=True), torch.tensor(memory_np, requires_grad=True)
    padding = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1]], dtype=bool)
    padding = padding if batched else padding[0]
    mask = generate_square_subsequent_mask(4)
    out = layer(
        tgt, memory, tgt_mask=mask, memory_key_padding_mask=minitorch.tensor(padding), tgt_is_causal=True
    )
    t_out = t_layer(
        t_tgt,
        t_memory,
        tgt_mask=torch.tensor(mask.numpy()),
        memory_key_padding_mask=torch.tensor(padding),
        tgt_is_causal=True,
    )
    _match_torch(out, t_out, [(tgt, t_tgt), (memory, t_memory)], layer, t_layer, seed=24)


def test_encoder_stack_copies_the_layer_and_matches_torch() -> None:
    layer = TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True)
    stack = TransformerEncoder(layer, 3, norm=nn.LayerNorm(D))
    assert len(stack.layers) == 3 and stack.num_layers == 3
    assert stack.layers[0] is not layer and stack.layers[0] is not stack.layers[1]
    np.testing.assert_array_equal(
        stack.layers[2].linear1.weight.value.numpy(), layer.linear1.weight.value.numpy()
    )
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight  # copies, not shared
    _randomise(stack, seed=31)
    t_layer = torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=True)
    t_stack = _torch_copy(
        torch,
        stack,
        torch.nn.TransformerEncoder(t_layer, 3, norm=torch.nn.LayerNorm(D), enable_nested_tensor=False),
    )
    x, x_np = _stream((2, 5, D), seed=32)
    t_x = torch.tensor(x_np, requires_grad=True)
    mask = generate_square_subsequent_mask(5)
    out = stack(x, mask=mask)  # is_causal detected from the mask
    t_out = t_stack(t_x, mask=torch.tensor(mask.numpy()))
    _match_torch(out, t_out, [(x, t_x)], stack, t_stack, seed=33)


def test_decoder_stack_matches_torch() -> None:
    stack = TransformerDecoder(TransformerDecoderLayer(D, H, F, dropout=0.0), 2)
    _randomise(stack, seed=34)
    t_stack = _torch_copy(
        torch, stack, torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, H, F, 0.0), 2)
    )
    tgt, tgt_np = _stream((4, 2, D), seed=35)
    memory, memory_np = _stream((3, 2, D), seed=36)
    t_tgt, t_memory = torch.tensor(tgt_np, requires_grad=True), torch.tensor(memory_np, requires_grad=True)
    out = stack(tgt, memory, tgt_mask=generate_square_subsequent_mask(4))
    t_out = t_stack(
        t_tgt, t_memory, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4).double()
    )
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_allclose(tgt.grad.numpy(), t_tgt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(memory.grad.numpy(), t_memory.grad.numpy(), rtol=1e-10, atol=1e-12)
    _compare_grads(torch, stack, t_stack)


def test_transformer_loads_a_torch_state_dict_and_matches_torch() -> None:
    torch.manual_seed(0)
    t_model = torch.nn.Transformer(D, H, 1, 2, F, dropout=0.0, batch_first=True).double()
    model = Transformer(D, H, 1, 2, F, dropout=0.0, batch_first=True)
    assert list(model.state_dict()) == list(t_model.state_dict())
    model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    src, src_np = _stream((2, 5, D), seed=37)
    tgt, tgt_np = _stream((2, 3, D), seed=38)
    t_src, t_tgt = torch.tensor(src_np, requires_grad=True), torch.tensor(tgt_np, requires_grad=True)
    padding = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    out = model(
        src,
        tgt,
        tgt_mask=Transformer.generate_square_subsequent_mask(3),
        src_key_padding_mask=minitorch.tensor(padding),
        memory_key_padding_mask=minitorch.tensor(padding),
    )
    t_out = t_model(
        t_src,
        t_tgt,
        tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3).double(),
        src_key_padding_mask=torch.tensor(padding),
        memory_key_padding_mask=torch.tensor(padding),
    )
    _match_torch(out, t_out, [(src, t_src), (tgt, t_tgt)], model, t_model, seed=39)
