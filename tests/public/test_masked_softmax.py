"""Task 6.1: `masked_softmax`, the softmax over the positions a query may attend to.

Values and gradients against the formulas written out in NumPy (float64) and by hand; rows
with nothing allowed give zeros (values and gradients, never NaN); float −∞ scores count as
masked; central differences; errors. (The project's own suite also compares with PyTorch:
test_masked_softmax_torch.py, not shipped.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn.masked_softmax import masked_softmax
from minitorch.testing import grad_check

pytestmark = pytest.mark.task6_1


def _case(shape: tuple[int, ...], seed: int = 0, p_masked: float = 0.4):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape) * 3.0
    mask = rng.random(shape) > p_masked
    mask[..., 0, :] = False  # one row with nothing allowed
    return scores, mask


def _numpy_masked_softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The lecture's formula in NumPy, row by row along the last axis:
    α_j = e^{s_j − m} / Σ_{k allowed} e^{s_k − m} (m = the largest allowed score) where j is
    allowed, 0 where it is masked, and 0 for the whole of a row with nothing allowed."""
    out = np.zeros_like(scores)
    for row in np.ndindex(*scores.shape[:-1]):
        allowed = mask[row]
        if allowed.any():
            e = np.exp(scores[row][allowed] - scores[row][allowed].max())
            out[row][allowed] = e / e.sum()
    return out


def _numpy_softmax_backward(weights: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """The softmax's backward pass: ∂L/∂s_j = α_j (g_j − Σ_k α_k g_k) for L = Σ g ⊙ α.
    A masked position (α_j = 0) and an empty row (α = 0) get 0."""
    return weights * (upstream - (weights * upstream).sum(-1, keepdims=True))


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 6), (2, 2, 3, 4)])
def test_values_and_gradients_match_the_formulas_in_numpy(shape) -> None:
    scores, mask = _case(shape)
    upstream = np.random.default_rng(1).standard_normal(shape)
    s = minitorch.tensor(scores, requires_grad=True)
    out = masked_softmax(s, minitorch.tensor(mask))
    (out * minitorch.tensor(upstream)).sum().backward()
    expected = _numpy_masked_softmax(scores, mask)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        s.grad.numpy(), _numpy_softmax_backward(expected, upstream), rtol=1e-10, atol=1e-13
    )


def test_hand_computed_values() -> None:
    """[0, ln 2, ln 3] with the middle one masked: e^0 : e^{ln 3} = 1 : 3."""
    scores = minitorch.tensor(np.array([[0.0, np.log(2.0), np.log(3.0)], [1.0, 1.0, 1.0]]))
    mask = minitorch.tensor(np.array([[True, False, True], [True, True, True]]))
    np.testing.assert_allclose(
        masked_softmax(scores, mask).numpy(), [[0.25, 0.0, 0.75], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-14
    )


def test_rows_sum_to_one_masked_positions_are_zero_and_empty_rows_are_zero() -> None:
    scores, mask = _case((4, 7), seed=2)
    out = masked_softmax(minitorch.tensor(scores), minitorch.tensor(mask)).numpy()
    assert not np.isnan(out).any()
    assert (out[~mask] == 0.0).all(), "a masked position got weight"
    live = mask.any(-1)
    np.testing.assert_allclose(out[live].sum(-1), 1.0, rtol=1e-12)
    assert (out[~live] == 0.0).all(), "a row with nothing allowed must be all zeros"


def test_an_empty_row_has_zero_gradient_and_no_nan() -> None:
    scores = minitorch.tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), requires_grad=True)
    mask = minitorch.tensor(np.array([[True, False, True], [False, False, False]]))
    out = masked_softmax(scores, mask)
    (out * minitorch.tensor(np.array([[1.0, -2.0, 0.5], [3.0, 1.0, 2.0]]))).sum().backward()
    g = scores.grad.numpy()
    assert not np.isnan(g).any()
    assert (g[1] == 0.0).all() and g[0, 1] == 0.0


def test_minus_infinity_scores_are_masked_too_and_a_mask_broadcasts() -> None:
    scores = np.array([[0.5, -np.inf, 1.5], [-np.inf, -np.inf, -np.inf]])
    out = masked_softmax(minitorch.tensor(scores)).numpy()  # no mask: −∞ alone masks
    e = np.exp([0.5 - 1.5, 1.5 - 1.5])
    np.testing.assert_allclose(out[0], [e[0] / e.sum(), 0.0, e[1] / e.sum()], rtol=1e-14)
    assert (out[1] == 0.0).all()
    # a [1, S] mask broadcasts over the rows (a key padding mask for every query)
    big = np.array([[1000.0, 2.0, -1000.0], [3.0, 1000.0, 5.0]])  # large but finite: stable
    out = masked_softmax(minitorch.tensor(big), minitorch.tensor(np.array([[False, True, True]]))).numpy()
    np.testing.assert_allclose(
        out, [[0.0, 1.0, np.exp(-1002.0)], [0.0, 1.0, np.exp(5.0 - 1000.0)]], rtol=1e-14, atol=0.0
    )


def test_other_dimension() -> None:
    scores, mask = _case((3, 4), seed=3)
    along0 = masked_softmax(minitorch.tensor(scores.T), minitorch.tensor(mask.T), dim=0).numpy()
    along1 = masked_softmax(minitorch.tensor(scores), minitorch.tensor(mask), dim=-1).numpy()
    np.testing.assert_allclose(along0, along1.T, rtol=1e-14)


def test_central_differences() -> None:
    scores, mask = _case((3, 4), seed=4, p_masked=0.3)
    m = minitorch.tensor(mask)
    grad_check(lambda s: masked_softmax(s, m), minitorch.tensor(scores))


def test_float32_and_errors() -> None:
    scores, mask = _case((2, 5), seed=5)
    out = masked_softmax(minitorch.tensor(scores.astype(np.float32)), minitorch.tensor(mask))
    assert out.dtype == np.float32
    with pytest.raises(TypeError, match="bool"):
        masked_softmax(minitorch.tensor(scores), minitorch.tensor(mask.astype(np.float64)))
