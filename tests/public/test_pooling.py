"""Task 4.3: max/average pooling (1-D, 2-D) and max-over-time pooling — values and gradients
against a NumPy definition (loops over the windows, and their backward) on every CPU backend
and over generated windows, strides and paddings; central differences; ties; a clear error
on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.nn import functional as F
from minitorch.testing import grad_check
from tensor_strategies import to_minitorch

pytestmark = pytest.mark.task4_3
CHECK = settings(max_examples=25, deadline=None)


def _pool2d_numpy(
    x: np.ndarray,
    g: np.ndarray,
    kind: str,
    kernel,
    stride=None,
    padding=(0, 0),
    dilation=(1, 1),
    count_include_pad: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The definition by loops over the windows of x [N, C, H, W], and its backward for the
    upstream gradient g [N, C, OH, OW]: returns (out, ∂L/∂x).

    Window (i, j) holds the positions (i·sh + a·dh − ph, j·sw + b·dw − pw) that fall inside x
    (padding never wins a max and adds zeros to a sum), taken in row-major order (a, b).
    max: out = the largest value; ∂L/∂out goes to its first position.
    avg: out = Σ / divisor with divisor KH·KW (count_include_pad) or the number inside x;
         ∂L/∂out / divisor goes to every position inside x.
    """
    n, c, h, w = x.shape
    (kh, kw), (ph, pw), (dh, dw) = kernel, padding, dilation
    sh, sw = kernel if stride is None else stride
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out, grad = np.zeros((n, c, oh, ow)), np.zeros_like(x)
    for i, j in np.ndindex(oh, ow):
        window = [(i * sh + a * dh - ph, j * sw + b * dw - pw) for a in range(kh) for b in range(kw)]
        inside = [(y, z) for y, z in window if 0 <= y < h and 0 <= z < w]
        values = np.stack([x[:, :, y, z] for y, z in inside], axis=-1)  # [N, C, positions]
        if kind == "max":
            out[:, :, i, j] = values.max(axis=-1)
            first = values.argmax(axis=-1)  # NumPy's argmax is the first maximum
            for m, k in np.ndindex(n, c):
                y, z = inside[first[m, k]]
                grad[m, k, y, z] += g[m, k, i, j]
        else:
            divisor = kh * kw if count_include_pad else len(inside)
            out[:, :, i, j] = values.sum(axis=-1) / divisor
            for y, z in inside:
                grad[:, :, y, z] += g[:, :, i, j] / divisor
    return out, grad


def _check_against_numpy(
    fn, x: np.ndarray, rng: np.random.Generator, permuted: bool = False, expected=None, **kwargs
) -> None:
    """fn(x, **kwargs) and its gradient for a random upstream gradient equal `expected(g)`,
    which returns (out, ∂L/∂x); the input is stored permuted (non-contiguous) if asked."""
    order = tuple(reversed(range(x.ndim))) if permuted else tuple(range(x.ndim))
    X = to_minitorch(x, order).requires_grad_(True)
    out = fn(X, **kwargs)
    g = rng.standard_normal(out.shape)
    want, want_grad = expected(g)
    assert out.shape == want.shape, f"output shape {out.shape}, expected {want.shape}"
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    out.backward(minitorch.tensor(g))
    assert X.grad is not None
    np.testing.assert_allclose(X.grad.numpy(), want_grad, rtol=1e-12, atol=1e-12)


@st.composite
def pool2d_cases(draw):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = draw(st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(1, 3))))
    padding = (draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2)))
    h = draw(st.integers(max(1, kh - 2 * padding[0]), kh + 4))
    w = draw(st.integers(max(1, kw - 2 * padding[1]), kw + 4))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, w)
    return shape, (kh, kw), stride, padding, draw(st.booleans()), draw(st.integers(0, 2**31 - 1))


@CHECK
@given(pool2d_cases())
def test_max_pool2d_matches_the_definition(case) -> None:
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    _check_against_numpy(
        F.max_pool2d,
        x,
        rng,
        permuted,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        expected=lambda g: _pool2d_numpy(x, g, "max", kernel, stride, padding),
    )


@CHECK
@given(pool2d_cases(), st.booleans())
def test_avg_pool2d_matches_the_definition(case, count_include_pad: bool) -> None:
    shape, kernel, stride, padding, permuted, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    _check_against_numpy(
        F.avg_pool2d,
        x,
        rng,
        permuted,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        count_include_pad=count_include_pad,
        expected=lambda g: _pool2d_numpy(
            x, g, "avg", kernel, stride, padding, count_include_pad=count_include_pad
        ),
    )


def test_max_pool2d_dilation_matches_the_definition() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 7, 8))
    _check_against_numpy(
        F.max_pool2d,
        x,
        rng,
        kernel_size=(3, 2),
        stride=(2, 1),
        padding=1,
        dilation=(1, 2),
        expected=lambda g: _pool2d_numpy(x, g, "max", (3, 2), (2, 1), (1, 1), (1, 2)),
    )


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), (3, 2, 1), (4, 1, 2)])
def test_pool1d_matches_the_definition(kernel: int, stride, padding: int) -> None:
    """1-D pooling of [N, C, L] is 2-D pooling of [N, C, 1, L] with a 1 × K window."""
    rng = np.random.default_rng(kernel)
    x = rng.standard_normal((2, 3, 9))

    def as_2d(kind: str):
        def expected(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            stride_2d = None if stride is None else (1, stride)
            out, grad = _pool2d_numpy(
                x[:, :, None, :], g[:, :, None, :], kind, (1, kernel), stride_2d, (0, padding)
            )
            return out[:, :, 0, :], grad[:, :, 0, :]

        return expected

    _check_against_numpy(
        F.max_pool1d, x, rng, kernel_size=kernel, stride=stride, padding=padding, expected=as_2d("max")
    )
    _check_against_numpy(
        F.avg_pool1d, x, rng, kernel_size=kernel, stride=stride, padding=padding, expected=as_2d("avg")
    )


def test_max_over_time_is_the_max_along_the_sentence() -> None:
    """out[n, c] = max_l x[n, c, l]; the gradient goes to that position (input stored permuted)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 7))

    def expected(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad = np.zeros_like(x)
        n, c = np.indices(g.shape)
        grad[n, c, x.argmax(axis=2)] = g
        return x.max(axis=2), grad

    _check_against_numpy(F.max_over_time, x, rng, permuted=True, expected=expected)


def test_max_over_time_gradient_goes_to_first_maximum() -> None:
    x = minitorch.tensor([[[1.0, 5.0, 5.0, 2.0], [3.0, 3.0, 3.0, 3.0]]], requires_grad=True)
    out = F.max_over_time(x)
    assert out.shape == (1, 2) and out.numpy().tolist() == [[5.0, 3.0]]
    out.backward(minitorch.tensor([[2.0, 7.0]]))
    assert x.grad is not None
    assert x.grad.numpy().tolist() == [[[0.0, 2.0, 0.0, 0.0], [7.0, 0.0, 0.0, 0.0]]]


def test_max_pool2d_ties_send_the_gradient_to_the_first_maximum() -> None:
    """With ties inside a window, the gradient goes to the first maximum in row-major order.

    x = 1 1 0     2 × 2 windows, stride 1:   top-left     [1 1; 1 1] → max 1 at (0, 0)
        1 1 2                                top-right    [1 0; 1 2] → max 2 at (1, 2)
        2 2 2                                bottom-left  [1 1; 2 2] → max 2 at (2, 0)
                                             bottom-right [1 2; 2 2] → max 2 at (1, 2)
    """
    x = minitorch.tensor([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]]], requires_grad=True)
    out = F.max_pool2d(x, kernel_size=2, stride=1)
    assert out.numpy().tolist() == [[[[1.0, 2.0], [2.0, 2.0]]]]
    out.backward(minitorch.tensor([[[[1.0, 10.0], [100.0, 1000.0]]]]))
    assert x.grad is not None
    assert x.grad.numpy().tolist() == [[[[1.0, 0.0, 0.0], [0.0, 0.0, 1010.0], [100.0, 0.0, 0.0]]]]


@pytest.mark.parametrize("fn", [F.max_pool2d, F.avg_pool2d])
def test_pool2d_central_differences(fn) -> None:
    rng = np.random.default_rng(3)
    # distinct values, well separated, so the argmax is stable under ±ε
    x = rng.permutation(60).reshape(1, 3, 4, 5) * 0.1
    grad_check(lambda t: fn(t, (2, 3), (1, 2), (1, 1)), minitorch.tensor(x))


CPU_BACKENDS = [
    pytest.param(minitorch.SimpleBackend, id="simple"),
    pytest.param(minitorch.FastBackend, id="fast"),
]


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_pooling_matches_the_definition_on_each_backend(backend) -> None:
    """Values against NumPy; gradients: max sends g to the window's first maximum, avg
    (count_include_pad=False) spreads g over the window's positions inside x."""
    rng = np.random.default_rng(5)
    x = np.round(rng.standard_normal((2, 2, 5, 6)) * 2) / 2  # ties
    k, s, p = (3, 2), (2, 2), (1, 1)
    for kind, fn in (("max", F.max_pool2d), ("avg", F.avg_pool2d)):
        X = to_minitorch(x, (3, 2, 1, 0), backend).requires_grad_(True)
        out = fn(X, k, s, p) if kind == "max" else fn(X, k, s, p, count_include_pad=False)
        g = rng.standard_normal(out.shape)
        want, want_grad = _pool2d_numpy(x, g, kind, k, s, p, count_include_pad=False)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, err_msg=kind)
        out.backward(minitorch.tensor(g, backend=backend))
        assert X.grad is not None
        np.testing.assert_allclose(
            X.grad.numpy(), want_grad, rtol=1e-12, atol=1e-15, err_msg=f"{kind} gradient"
        )
    grad_check(lambda t: F.avg_pool1d(t, 3, 2, 1), minitorch.tensor(x[:, :, 0], backend=backend))
    grad_check(
        lambda t: F.max_pool1d(t, 2, 1),
        minitorch.tensor(rng.permutation(12).reshape(1, 2, 6) * 0.1, backend=backend),
    )


def test_max_pool_of_a_window_of_minus_infinity_points_inside_the_input() -> None:
    """A window holding only −inf has max −inf and (like PyTorch) its gradient goes to its
    first position inside x, never outside the input."""
    x = minitorch.tensor([[[[-np.inf, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]]]], requires_grad=True)
    out = F.max_pool2d(x, 2, stride=1, padding=1)  # out [1, 1, 3, 4]
    assert out.numpy()[0, 0, 0, 0] == -np.inf and out.numpy()[0, 0, 1, 3] == 2.0
    out.sum().backward()
    assert x.grad is not None
    # the windows seeing only −inf send their gradient to (0, 0) or (1, 0), as PyTorch does
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[4.0, 0.0, 2.0], [2.0, 0.0, 4.0]])


def test_max_pool2d_float32_keeps_dtype() -> None:
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5)).astype(np.float32)
    out = F.max_pool2d(minitorch.tensor(x, dtype=minitorch.float32), 2)
    assert out.dtype == np.float32
    # 2 × 2 windows, stride 2: the last row and column of the 5 × 5 plane are left out
    expected = x[:, :, :4, :4].reshape(2, 2, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize(
    "fn,shape,kwargs,message",
    [
        (F.max_pool2d, (2, 3, 5), {"kernel_size": 2}, "max_pool2d: input must be 4-D"),
        (F.avg_pool2d, (1, 1, 3, 3), {"kernel_size": 4}, "larger than the padded input"),
        (F.max_pool2d, (1, 1, 5, 5), {"kernel_size": 2, "padding": 2}, "at most half the window"),
        (F.max_pool1d, (2, 5), {"kernel_size": 2}, "max_pool1d: input must be 3-D"),
        (F.max_over_time, (2, 5), {}, "max_over_time: input must be 3-D"),
        (F.max_pool2d, (1, 1, 4, 4), {"kernel_size": 0}, "kernel_size must be an integer ≥ 1"),
    ],
)
def test_pooling_errors(fn, shape, kwargs, message) -> None:
    with pytest.raises((ValueError, minitorch.ShapeError)) as info:
        fn(minitorch.zeros(*shape), **kwargs)
    assert message in str(info.value)
