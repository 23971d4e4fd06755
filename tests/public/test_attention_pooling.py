"""Attention pooling (task 6.1): values against the lecture's formulas written in NumPy
(float64) and every gradient against central differences of them, padding masks (a fully
padded row gives zero weights, a zero output and no NaN anywhere), central differences of
the layer itself, float32, errors. (The project's own suite also compares with PyTorch:
test_attention_pooling_torch.py, not shipped.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

pytestmark = pytest.mark.task6_1

RTOL, ATOL = 1e-10, 1e-12
CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _padding(lengths: list[int], t: int) -> np.ndarray:
    """key_padding_mask [B, T]: True at the positions past each row's length."""
    return np.arange(t)[None, :] >= np.asarray(lengths)[:, None]


def _numpy_pooling(values: np.ndarray, weight: np.ndarray, pad) -> tuple[np.ndarray, np.ndarray]:
    """The lecture's formulas in NumPy (rows with a real token only)."""
    s = values @ weight
    if pad is not None:
        s = np.where(pad, -np.inf, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    a = e / e.sum(-1, keepdims=True)
    return np.einsum("bt,btd->bd", a, values), a


def _close(got: minitorch.Tensor, expected, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert got is not None, f"{what}: no gradient"
    exp = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert got.shape == tuple(exp.shape), f"{what}: shape {got.shape}, expected {tuple(exp.shape)}"
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("lengths", [None, [5, 2, 1, 4]])
def test_values_and_gradients_match_numpy(backend, lengths) -> None:
    """Both outputs against the NumPy formulas; the gradients of values and weight (through
    both outputs, with random upstream gradients) against central differences of them."""
    v, w = _rand(4, 5, 3), _rand(3, seed=1)
    pad = _padding(lengths, 5) if lengths is not None else None
    mv = minitorch.tensor(v, backend=backend, requires_grad=True)
    mw = minitorch.tensor(w, backend=backend, requires_grad=True)
    mask = minitorch.tensor(pad, backend=backend) if pad is not None else None
    pooled, weights = F.attention_pooling(mv, mw, mask)
    exp_pooled, exp_weights = _numpy_pooling(v, w, pad)
    _close(pooled, exp_pooled, "pooled")
    _close(weights, exp_weights, "weights")
    g1, g2 = _rand(4, 3, seed=2), _rand(4, 5, seed=3)
    (
        (pooled * minitorch.tensor(g1, backend=backend)).sum()
        + (weights * minitorch.tensor(g2, backend=backend)).sum()
    ).backward()

    def both(values, weight):  # [B, D + T]: the two outputs side by side
        return np.concatenate(_numpy_pooling(values, weight, pad), axis=-1)

    exp_v_grad, exp_w_grad = numpy_gradients(both, [v, w], np.concatenate([g1, g2], axis=-1))
    _close(mv.grad, exp_v_grad, "values.grad", rtol=1e-6, atol=1e-8)
    _close(mw.grad, exp_w_grad, "weight.grad", rtol=1e-6, atol=1e-8)


def test_values_match_the_formulas_in_numpy() -> None:
    v, w = _rand(3, 6, 4), _rand(4, seed=1)
    pad = _padding([6, 3, 1], 6)
    pooled, weights = F.attention_pooling(minitorch.tensor(v), minitorch.tensor(w), minitorch.tensor(pad))
    exp_pooled, exp_weights = _numpy_pooling(v, w, pad)
    _close(pooled, exp_pooled, "pooled")
    _close(weights, exp_weights, "weights")


def test_weights_sum_to_one_and_padding_gets_nothing() -> None:
    v, w = _rand(4, 7, 3) * 4.0, _rand(3, seed=1)
    pad = _padding([7, 4, 2, 1], 7)
    mv = minitorch.tensor(v, requires_grad=True)
    _, weights = F.attention_pooling(mv, minitorch.tensor(w), minitorch.tensor(pad))
    a = weights.numpy()
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    assert np.all(a[pad] == 0.0) and np.all(a[~pad] > 0.0)
    # what sits at a padded position changes nothing, and gets no gradient
    v2 = np.where(pad[..., None], 1e3 * _rand(4, 7, 3, seed=5), v)
    pooled1, _ = F.attention_pooling(mv, minitorch.tensor(w), minitorch.tensor(pad))
    pooled2, _ = F.attention_pooling(minitorch.tensor(v2), minitorch.tensor(w), minitorch.tensor(pad))
    np.testing.assert_allclose(pooled1.numpy(), pooled2.numpy(), rtol=1e-12, atol=1e-12)
    pooled1.sum().backward()
    assert np.all(mv.grad.numpy()[pad] == 0.0)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_fully_padded_row_gives_zeros_and_no_nan(backend) -> None:
    v, w = _rand(3, 4, 2), _rand(2, seed=1)
    pad = _padding([4, 0, 2], 4)  # row 1 is all padding
    mv = minitorch.tensor(v, backend=backend, requires_grad=True)
    mw = minitorch.tensor(w, backend=backend, requires_grad=True)
    pooled, weights = F.attention_pooling(mv, mw, minitorch.tensor(pad, backend=backend))
    assert np.all(weights.numpy()[1] == 0.0) and np.all(pooled.numpy()[1] == 0.0)
    g1, g2 = _rand(3, 2, seed=2), _rand(3, 4, seed=3)
    (
        (pooled * minitorch.tensor(g1, backend=backend)).sum()
        + (weights * minitorch.tensor(g2, backend=backend)).sum()
    ).backward()
    assert np.all(np.isfinite(mv.grad.numpy())) and np.all(np.isfinite(mw.grad.numpy()))
    assert np.all(mv.grad.numpy()[1] == 0.0)
    # the other rows are computed as without the empty one
    keep = [0, 2]
    mv2 = minitorch.tensor(v[keep], requires_grad=True)
    mw2 = minitorch.tensor(w, requires_grad=True)
    p2, a2 = F.attention_pooling(mv2, mw2, minitorch.tensor(pad[keep]))
    _close(pooled, np.insert(p2.numpy(), 1, 0.0, axis=0), "pooled")
    ((p2 * minitorch.tensor(g1[keep])).sum() + (a2 * minitorch.tensor(g2[keep])).sum()).backward()
    _close(mv.grad, np.insert(mv2.grad.numpy(), 1, 0.0, axis=0), "values.grad")
    _close(mw.grad, mw2.grad, "weight.grad")


@pytest.mark.parametrize("lengths", [None, [3, 1]])
def test_central_differences(lengths) -> None:
    pad = minitorch.tensor(_padding(lengths, 3)) if lengths is not None else None
    v, w = minitorch.tensor(_rand(2, 3, 4)), minitorch.tensor(_rand(4, seed=1))

    def both(values, weight):
        pooled, weights = F.attention_pooling(values, weight, pad)
        return minitorch.cat([pooled, weights], dim=-1)

    grad_check(both, v, w)


def test_unbatched_input_matches_a_batch_of_one() -> None:
    v, w, pad = _rand(5, 3), _rand(3, seed=1), _padding([3], 5)[0]
    pooled, weights = F.attention_pooling(minitorch.tensor(v), minitorch.tensor(w), minitorch.tensor(pad))
    exp_pooled, exp_weights = _numpy_pooling(v[None], w, pad[None])
    _close(pooled, exp_pooled[0], "pooled")
    _close(weights, exp_weights[0], "weights")


def test_module_parameter_initialisation_and_float32() -> None:
    minitorch.manual_seed(0)
    layer = nn.AttentionPooling(16)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    w = layer.weight.value.numpy()
    assert w.shape == (16,) and w.dtype == np.float64
    assert (
        np.all(np.abs(w) <= 1.0 / math.sqrt(16)) and w.std() > 0.05
    )  # U(−1/√D, 1/√D), as a Linear(D, 1) row
    layer32 = nn.AttentionPooling(3, dtype=minitorch.float32)
    layer32.load_state_dict({"weight": np.array([0.5, -1.0, 2.0])})
    v, pad = _rand(2, 4, 3), _padding([4, 2], 4)
    pooled, weights = layer32(minitorch.tensor(v, dtype=minitorch.float32), minitorch.tensor(pad))
    assert pooled.dtype == np.float32 and weights.dtype == np.float32
    exp_pooled, exp_weights = _numpy_pooling(v, np.array([0.5, -1.0, 2.0]), pad)
    _close(pooled, exp_pooled, "pooled float32", rtol=1e-5, atol=1e-6)
    _close(weights, exp_weights, "weights float32", rtol=1e-5, atol=1e-6)


def test_module_matches_the_functional_form_and_trains() -> None:
    layer = nn.AttentionPooling(3)
    v = minitorch.tensor(_rand(2, 4, 3), requires_grad=True)
    pooled, weights = layer(v)
    exp_pooled, exp_weights = F.attention_pooling(v, layer.weight.value)
    _close(pooled, exp_pooled.numpy(), "pooled")
    _close(weights, exp_weights.numpy(), "weights")
    pooled.sum().backward()
    assert layer.weight.value.grad is not None and layer.weight.value.grad.shape == (3,)
    assert "embed_dim=3" in repr(layer)


def test_errors_name_the_function_and_the_shapes() -> None:
    v, w = minitorch.tensor(_rand(2, 4, 3)), minitorch.tensor(_rand(3))
    with pytest.raises(ValueError, match=r"attention_pooling: weight must have shape \(3,\).*got \(4,\)"):
        F.attention_pooling(v, minitorch.tensor(_rand(4)))
    with pytest.raises(ValueError, match=r"attention_pooling: values must have shape \[B, T, D\].*\(3,\)"):
        F.attention_pooling(minitorch.tensor(_rand(3)), w)
    with pytest.raises(
        ValueError, match=r"attention_pooling: key_padding_mask must have shape \(2, 4\), got \(2, 3\)"
    ):
        F.attention_pooling(v, w, minitorch.tensor(np.zeros((2, 3), dtype=bool)))
    with pytest.raises(TypeError, match=r"attention_pooling: key_padding_mask must be a bool tensor"):
        F.attention_pooling(v, w, minitorch.tensor(np.zeros((2, 4))))
    with pytest.raises(TypeError, match=r"attention_pooling: values must be a float32 or float64 tensor"):
        F.attention_pooling(minitorch.tensor(np.zeros((2, 4, 3), dtype=np.int64)), w)
    with pytest.raises(
        ValueError, match=r"AttentionPooling\(3\): values must have shape \[B, T, 3\].*\(2, 4, 5\)"
    ):
        nn.AttentionPooling(3)(minitorch.tensor(_rand(2, 4, 5)))
    with pytest.raises(ValueError, match=r"AttentionPooling: embed_dim must be a positive integer"):
        nn.AttentionPooling(0)
