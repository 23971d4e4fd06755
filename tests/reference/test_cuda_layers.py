"""The layers of stages A5–A6 and the picking / joining ops on the CUDA backend, compared
with the fast backend (issue 31): the recurrent layers, attention with masks, LayerNorm,
cross-entropy's options, and where / cat / stack / gather / indexing.

On the fast backend most of these run fused kernels of `minitorch.accel`; on CUDA they are
composed from the backend's ops (maps, zips, reductions, matmul and the CUDA twins), so
the comparison also checks that the composed and the fused versions agree. Tiny shapes:
on Numba's simulator every GPU thread is a Python thread.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from numba import cuda

import minitorch
import minitorch.nn.functional as F
from minitorch import nn
from minitorch.backends import CudaBackend, FastBackend
from minitorch.tensor_ops import TensorBackend

pytestmark = [
    pytest.mark.library,
    pytest.mark.skipif(not cuda.is_available(), reason="no GPU and NUMBA_ENABLE_CUDASIM is off"),
    pytest.mark.usefixtures("quick_thread_switches"),  # the simulator's barriers (conftest.py)
]

Build = Callable[[TensorBackend], tuple[minitorch.Module, list[np.ndarray], Callable[..., minitorch.Tensor]]]


def _outputs_and_grads(build: Build, backend: TensorBackend) -> dict[str, np.ndarray]:
    """Build the module (seeded) on `backend`, run it on the float inputs, backpropagate a
    fixed upstream gradient; every output, input gradient and parameter gradient."""
    minitorch.manual_seed(0)
    module, arrays, run = build(backend)
    inputs = [minitorch.tensor(a, backend=backend, requires_grad=True) for a in arrays]
    out = run(module, *inputs)
    g = np.random.default_rng(9).standard_normal(out.shape)
    out.backward(minitorch.tensor(g, backend=backend))
    found = {"output": out.numpy()}
    found.update({f"input {i}": x.grad.numpy() for i, x in enumerate(inputs) if x.grad is not None})
    found.update({f"grad {k}": p.grad.numpy() for k, p in module.named_parameters() if p.grad is not None})
    return found


def _same_on_both(build: Build) -> None:
    on_cuda, on_fast = _outputs_and_grads(build, CudaBackend), _outputs_and_grads(build, FastBackend)
    assert on_cuda.keys() == on_fast.keys()
    for key, want in on_fast.items():
        np.testing.assert_allclose(on_cuda[key], want, rtol=1e-10, atol=1e-12, err_msg=key)


def _normal(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


class _Nothing(minitorch.Module):
    """No parameters: for the functions below."""


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_two_layers_bidirectional(kind: str) -> None:
    def build(backend):
        layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True, backend=backend)
        return layer, [_normal(2, 3, 3)], lambda m, x: m(x)[0]

    _same_on_both(build)


def test_gru_cell_steps() -> None:
    def build(backend):
        cell = nn.GRUCell(3, 4, backend=backend)

        def run(m, x, h):
            for t in range(x.shape[0]):
                h = m(x[t], h)
            return h

        return cell, [_normal(3, 2, 3), _normal(2, 4, seed=2)], run

    _same_on_both(build)


@pytest.mark.parametrize("masks", ["none", "causal", "padding"])
def test_multihead_attention(masks: str) -> None:
    def build(backend):
        attention = nn.MultiheadAttention(8, 2, batch_first=True, backend=backend)

        def run(m, q, kv):
            kwargs = {}
            if masks == "causal":
                kwargs["attn_mask"] = minitorch.tensor(np.triu(np.ones((3, 4), bool), 1), backend=backend)
            if masks == "padding":
                padding = np.array([[False, False, True, True], [False, False, False, True]])
                kwargs["key_padding_mask"] = minitorch.tensor(padding, backend=backend)
            out, weights = m(q, kv, kv, **kwargs)
            return out + weights.sum() * 0.5

        return attention, [_normal(2, 3, 8), _normal(2, 4, 8, seed=2)], run

    _same_on_both(build)


def test_transformer_encoder_layer_pre_norm_and_layer_norm() -> None:
    def build(backend):
        layer = nn.TransformerEncoderLayer(
            8, 2, 12, 0.0, activation="gelu", batch_first=True, norm_first=True, backend=backend
        )
        return (
            layer,
            [_normal(2, 3, 8)],
            lambda m, x: m(
                x, is_causal=True, src_mask=nn.Transformer.generate_square_subsequent_mask(3, backend=backend)
            ),
        )

    _same_on_both(build)


@pytest.mark.parametrize("options", [{}, {"label_smoothing": 0.1}, {"ignore_index": 2, "reduction": "sum"}])
def test_cross_entropy(options: dict) -> None:
    def build(backend):
        target = minitorch.tensor([0, 2, 1, 2], dtype=np.int64, backend=backend)
        return _Nothing(), [_normal(4, 3)], lambda m, x: F.cross_entropy(x, target, **options)

    _same_on_both(build)


def test_where_cat_stack_gather_and_indexing() -> None:
    def build(backend):
        def run(m, a, b):
            picked = minitorch.where(a > b, a, b * 2.0)
            joined = minitorch.cat([picked, a.masked_fill(b > 0.5, -1.0)], dim=1)
            stacked = minitorch.stack([joined, joined.tril()], dim=0)
            index = minitorch.tensor([[0, 2, 1, 0, 3, 5]] * 3, dtype=np.int64, backend=backend)
            rows = minitorch.tensor([2, 0, 2], dtype=np.int64, backend=backend)
            return stacked.gather(2, index.view(1, 3, 6)) + stacked[:, rows]

        return _Nothing(), [_normal(3, 3), _normal(3, 3, seed=2)], run

    _same_on_both(build)


def test_additive_attention_and_attention_pooling_with_padding() -> None:
    padding = np.array([[False, False, True], [False, False, False]])

    def build(backend):
        module = minitorch.Module()
        module.additive = nn.AdditiveAttention(4, 5, 6, backend=backend)
        module.pool = nn.AttentionPooling(5, backend=backend)

        def run(m, query, keys):
            mask = minitorch.tensor(padding, backend=backend)
            context, weights = m.additive(query, keys, key_padding_mask=mask)
            pooled, _ = m.pool(keys, key_padding_mask=mask)
            return context + pooled + weights.sum()

        return module, [_normal(2, 4), _normal(2, 3, 5, seed=2)], run

    _same_on_both(build)


def test_dropout_draws_the_same_mask_on_both_backends() -> None:
    def build(backend):
        return nn.Dropout(0.5), [_normal(4, 5)], lambda m, x: m(x) * 1.0

    _same_on_both(build)


OPTIMIZERS = {
    "SGD": lambda params: minitorch.optim.SGD(params, lr=0.1),
    "SGD momentum, decay": lambda params: minitorch.optim.SGD(
        params, lr=0.1, momentum=0.9, weight_decay=0.01
    ),
    "SGD nesterov": lambda params: minitorch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True),
    "Adam L2": lambda params: minitorch.optim.Adam(params, lr=0.1, weight_decay=0.1),
    "AdamW": lambda params: minitorch.optim.AdamW(params, lr=0.1, weight_decay=0.1),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_optimizer_steps_on_cuda(optimizer: str, dtype: type) -> None:
    """Three steps: the same parameters and the same optimizer state (the GPU kernels of
    optim/on_gpu.py run the CPU kernels' arithmetic; the state comes back for state_dict)."""
    found, states = {}, {}
    for backend in (CudaBackend, FastBackend):
        minitorch.manual_seed(0)
        layer = nn.Linear(4, 3, backend=backend, dtype=dtype)
        opt = OPTIMIZERS[optimizer](layer.parameters())
        x = minitorch.tensor(_normal(5, 4).astype(dtype), backend=backend)
        for _ in range(3):
            opt.zero_grad()
            (layer(x) ** 2).sum().backward()
            opt.step()
        found[backend.name] = {k: p.numpy() for k, p in layer.named_parameters()}
        states[backend.name] = opt.state_dict()["state"]
    # float32: the two backends sum the forward and backward passes in different orders,
    # and three steps of lr 0.1 carry those roundings into the parameters
    tolerance = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=1e-6)
    for key, want in found["fast"].items():
        assert found["cuda"][key].dtype == dtype
        np.testing.assert_allclose(found["cuda"][key], want, err_msg=key, **tolerance)
    assert states["cuda"].keys() == states["fast"].keys()
    for index, state in states["fast"].items():
        for name, want in state.items():
            np.testing.assert_allclose(
                states["cuda"][index][name], want, err_msg=f"{index} {name}", **tolerance
            )


@pytest.mark.parametrize("norm_type", [2.0, 3.0, float("inf")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clip_grad_norm_on_cuda(norm_type: float, dtype: type) -> None:
    """The gradients clipped on the GPU (composed of the backend's operations) are those
    clipped on the CPU; so is the total returned."""
    found = {}
    for backend in (CudaBackend, FastBackend):
        params = [minitorch.tensor(np.zeros(shape, dtype=dtype), backend=backend) for shape in [(3, 4), (5,)]]
        for seed, p in enumerate(params):
            p.grad = minitorch.tensor(_normal(*p.shape, seed=seed).astype(dtype), backend=backend)
        total = nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type)
        assert total.backend is backend and total.dtype == dtype and total.shape == ()
        found[backend.name] = [total.item()] + [p.grad.numpy() for p in params]
        assert all(p.grad.dtype == dtype and p.grad.backend is backend for p in params)
    tolerance = dict(rtol=1e-12) if dtype == np.float64 else dict(rtol=1e-6)
    for got, want in zip(found["cuda"], found["fast"]):
        np.testing.assert_allclose(got, want, **tolerance)


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the simulator's inf · 0
def test_clip_grad_norm_on_cuda_refuses_a_nonfinite_total_when_asked() -> None:
    p = minitorch.tensor(np.zeros(3), backend=CudaBackend)
    p.grad = minitorch.tensor([1.0, float("inf"), 2.0], backend=CudaBackend)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    total = nn.utils.clip_grad_norm_([p], 1.0)  # without the check: every entry scaled by 0 or NaN
    assert total.item() == float("inf")
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, np.nan, 0.0])
