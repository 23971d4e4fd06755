"""The tensor operations sequence models need, against PyTorch (float64) and central
differences: advanced indexing `x[idx]` (minitorch/indexing.py), `split` / `chunk`
(splitting.py), `where` / `masked_fill` / `tril` / `triu` / `clamp` (selection.py),
`sqrt`, `abs`, `var`, `std`; dtypes as PyTorch infers and promotes them (dtypes.py);
comparisons giving bool tensors outside the graph; `ShapeError` as a RuntimeError;
`nn.Sequential`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pytest

import minitorch
from minitorch.testing import grad_check

pytestmark = pytest.mark.library

BACKENDS = [minitorch.SimpleBackend, minitorch.FastBackend]
SHAPE = (3, 4, 5)


def rand(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def torch_or_skip() -> Any:
    return pytest.importorskip("torch")


def _torch() -> Any:
    """torch, inside the reference lambdas (their tests call torch_or_skip first)."""
    import torch

    return torch


def same_as_torch(
    ours: Callable[..., minitorch.Tensor],
    theirs: Callable[..., Any],
    *arrays: np.ndarray,
    backend: minitorch.TensorBackend = minitorch.SimpleBackend,
) -> None:
    """Values and gradients (random upstream gradient) of ours(*tensors) and theirs(*torch
    tensors) agree in float64."""
    torch = torch_or_skip()
    xs = [minitorch.tensor(a, requires_grad=True, backend=backend) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    assert out.shape == tuple(expected.shape)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rand(out.shape, seed=9)
    out.backward(minitorch.tensor(g, backend=backend))
    expected.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        want = np.zeros(x.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(x.shape) if x.grad is None else x.grad.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---- advanced indexing --------------------------------------------------------------------


def idx(*values: Any) -> minitorch.Tensor:
    return minitorch.tensor(list(values), dtype=minitorch.int64)


# (our key, the same key for NumPy / torch)
ADVANCED_KEYS: list[tuple[str, Callable[[], Any], Callable[[Any], Any]]] = [
    ("x[t]", lambda: idx(2, 0, 2, -1), lambda arr: arr([2, 0, 2, -1])),
    ("x[list]", lambda: [1, 1, 0], lambda arr: [1, 1, 0]),
    ("x[:, t]", lambda: (slice(None), idx(3, 0, 3)), lambda arr: (slice(None), arr([3, 0, 3]))),
    ("x[..., t]", lambda: (Ellipsis, idx(4, 4, 1)), lambda arr: (Ellipsis, arr([4, 4, 1]))),
    ("x[t2d]", lambda: minitorch.tensor([[0, 2], [1, 1]]), lambda arr: arr([[0, 2], [1, 1]])),
    ("x[a, b]", lambda: (idx(0, 2, 2), idx(1, 3, 3)), lambda arr: (arr([0, 2, 2]), arr([1, 3, 3]))),
    (
        "x[a, :, b] (apart)",
        lambda: (idx(0, 2), slice(None), idx(4, 0)),
        lambda arr: (arr([0, 2]), slice(None), arr([4, 0])),
    ),
    (
        "x[:, a, b]",
        lambda: (slice(None), idx(1, 3), idx(0, 4)),
        lambda arr: (slice(None), arr([1, 3]), arr([0, 4])),
    ),
    (
        "x[a[:, None], b] (broadcast)",
        lambda: (minitorch.tensor([[0], [2]]), idx(1, 2, 3)),
        lambda arr: (arr([[0], [2]]), arr([1, 2, 3])),
    ),
    (
        "x[1:, t, ::2]",
        lambda: (slice(1, None), idx(0, 3), slice(None, None, 2)),
        lambda arr: (slice(1, None), arr([0, 3]), slice(None, None, 2)),
    ),
    ("x[None, t]", lambda: (None, idx(1, 0)), lambda arr: (None, arr([1, 0]))),
    ("x[t0d]", lambda: minitorch.tensor(1), lambda arr: arr(1)),
    ("x[[]]", lambda: [], lambda arr: arr([])),
]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", ADVANCED_KEYS, ids=lambda c: c[0])
def test_advanced_indexing_matches_numpy_and_is_a_copy(case: Any, backend: minitorch.TensorBackend) -> None:
    _, ours, theirs = case
    a = np.arange(60.0).reshape(SHAPE)
    x = minitorch.tensor(a, backend=backend)
    got = x[ours()]
    expected = a[theirs(lambda v: np.array(v, dtype=np.int64))]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)
    assert not np.shares_memory(got._tensor._storage, x._tensor._storage)
    np.testing.assert_array_equal((got * 2.0).numpy(), expected * 2.0)  # feeds the kernels


@pytest.mark.parametrize("case", ADVANCED_KEYS, ids=lambda c: c[0])
def test_advanced_indexing_matches_torch_values_and_gradients(case: Any) -> None:
    torch = torch_or_skip()
    _, ours, theirs = case
    same_as_torch(
        lambda t: t[ours()], lambda t: t[theirs(lambda v: torch.tensor(v, dtype=torch.long))], rand(SHAPE)
    )


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", ADVANCED_KEYS[:10], ids=lambda c: c[0])
def test_advanced_indexing_central_difference(case: Any, backend: minitorch.TensorBackend) -> None:
    _, ours, _ = case
    grad_check(lambda t: t[ours()] * 1.5, minitorch.tensor(rand(SHAPE), backend=backend))


def test_repeated_indices_accumulate_their_gradients() -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[idx(0, 2, 0, 0)].backward(minitorch.tensor([1.0, 10.0, 100.0, 1000.0]))
    assert x.grad.tolist() == [1101.0, 0.0, 10.0]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_boolean_mask_indexing(backend: minitorch.TensorBackend) -> None:
    torch = torch_or_skip()
    a = rand((3, 4))
    x = minitorch.tensor(a, backend=backend)
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    rows = [True, False, True]
    np.testing.assert_array_equal(x[rows].numpy(), a[rows])
    np.testing.assert_array_equal(
        x[:, np.array([True, False, False, True])].numpy(), a[:, [True, False, False, True]]
    )
    mask = a > 0
    same_as_torch(lambda t: t[minitorch.tensor(mask)], lambda t: t[torch.tensor(mask)], a, backend=backend)


def test_integer_and_bool_tensors_can_be_indexed() -> None:
    ids = minitorch.tensor([[5, 6, 7], [8, 9, 10]])
    assert ids[:, idx(2, 0)].tolist() == [[7, 5], [10, 8]]
    assert ids[:, idx(2, 0)].dtype == minitorch.int64
    m = minitorch.tensor([True, False, True])
    assert m[idx(1, 2)].tolist() == [False, True]
    assert m[idx(1, 2)].dtype == minitorch.bool_


def test_advanced_indexing_errors() -> None:
    x = minitorch.zeros(2, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[:, idx(0, 3)]
    with pytest.raises(IndexError, match="index -3 is out of bounds for dimension 0 with size 2"):
        x[idx(-3)]
    with pytest.raises(IndexError, match="could not be broadcast together with shapes \\[2\\], \\[3\\]"):
        x[idx(0, 1), idx(0, 1, 2)]
    with pytest.raises(IndexError, match="must be long"):
        x[minitorch.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match="mask \\[3\\] at index 0 does not match"):
        x[minitorch.tensor([True, False, True])]
    with pytest.raises(IndexError, match="too many indices"):
        x[idx(0), idx(0), idx(0)]


# ---- split and chunk --------------------------------------------------------------------


SPLITS = [(4, 0), (2, 1), ([1, 3, 1], 2), (5, -1), (1, 0), ([0, 4], 1), (10, 0)]


@pytest.mark.parametrize("size, dim", SPLITS)
def test_split_matches_torch(size: Any, dim: int) -> None:
    torch = torch_or_skip()
    a = rand(SHAPE)
    x = minitorch.tensor(a)
    ours, theirs = x.split(size, dim), torch.tensor(a).split(size, dim)
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
        assert np.shares_memory(o._tensor._storage, x._tensor._storage) or o.numel() == 0  # views
    assert [o.shape for o in minitorch.split(x, size, dim)] == [tuple(t.shape) for t in theirs]


@pytest.mark.parametrize("chunks, dim", [(2, 0), (3, 0), (4, 1), (2, 2), (5, 1), (7, -1)])
def test_chunk_matches_torch(chunks: int, dim: int) -> None:
    torch = torch_or_skip()
    a = rand(SHAPE)
    ours, theirs = minitorch.chunk(minitorch.tensor(a), chunks, dim), torch.tensor(a).chunk(chunks, dim)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert len(minitorch.zeros(0, 2).chunk(3)) == len(torch.zeros(0, 2).chunk(3))


def test_split_and_chunk_gradients() -> None:
    torch = torch_or_skip()

    def ours(t: minitorch.Tensor) -> minitorch.Tensor:
        i, f, g, o = t.chunk(4, dim=1)
        a, b = t.split([3, 5], dim=1)
        return i.sigmoid() * g.tanh() + o * f * 2.0 + (a.sum(1, keepdim=True) - b.sum(1, keepdim=True))

    def theirs(t: Any) -> Any:
        i, f, g, o = t.chunk(4, dim=1)
        a, b = t.split([3, 5], dim=1)
        return i.sigmoid() * g.tanh() + o * f * 2.0 + (a.sum(1, keepdim=True) - b.sum(1, keepdim=True))

    same_as_torch(ours, theirs, rand((3, 8)))
    grad_check(ours, minitorch.tensor(rand((3, 8))))


def test_split_errors_match_torch() -> None:
    x = minitorch.zeros(5)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        x.split(0)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 5"):
        x.split([2, 2])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        x.chunk(0)
    with pytest.raises(IndexError, match="dimension out of range"):
        x.split(2, dim=1)


# ---- where, masked_fill, tril / triu, clamp, sqrt, abs, var / std ------------------------


ELEMENTWISE: list[tuple[str, Callable[..., Any], Callable[..., Any], list[tuple[int, ...]]]] = [
    (
        "where",
        lambda a, b: minitorch.where(a > b, a, b * 2.0),
        lambda a, b: _torch().where(a > b, a, b * 2.0),
        [(3, 4), (4,)],
    ),
    (
        "where scalar",
        lambda a: minitorch.where(a > 0, a, 0.5),
        lambda a: _torch().where(a > 0, a, 0.5),
        [(2, 3)],
    ),
    ("masked_fill", lambda a: a.masked_fill(a < 0, -1.5), lambda a: a.masked_fill(a < 0, -1.5), [(3, 4)]),
    (
        "masked_fill row mask",
        lambda a, b: a.masked_fill(b.sum(1, keepdim=True) > 0, 0.0) * b,
        lambda a, b: a.masked_fill(b.sum(1, keepdim=True) > 0, 0.0) * b,
        [(4, 3), (4, 3)],
    ),
    ("tril", lambda a: a.tril(), lambda a: a.tril(), [(2, 4, 3)]),
    ("tril(-1)", lambda a: minitorch.tril(a, -1), lambda a: a.tril(-1), [(4, 4)]),
    ("triu(1)", lambda a: a.triu(1), lambda a: a.triu(1), [(3, 5)]),
    ("triu(-2)", lambda a: minitorch.triu(a, diagonal=-2), lambda a: a.triu(diagonal=-2), [(2, 4, 4)]),
    ("clamp", lambda a: a.clamp(-0.5, 0.7), lambda a: a.clamp(-0.5, 0.7), [(4, 5)]),
    ("clamp(min)", lambda a: minitorch.clamp(a, min=0.1), lambda a: a.clamp(min=0.1), [(4, 5)]),
    ("clamp(max) tensor", lambda a, b: a.clamp(max=b), lambda a, b: a.clamp(max=b), [(4, 5), (5,)]),
    ("sqrt", lambda a: (a * a + 0.1).sqrt(), lambda a: (a * a + 0.1).sqrt(), [(3, 4)]),
    ("abs", lambda a: a.abs() * a, lambda a: a.abs() * a, [(3, 4)]),
    ("var()", lambda a: a.var(), lambda a: a.var(), [(3, 4)]),
    ("var(1)", lambda a: a.var(1), lambda a: a.var(1), [(3, 4)]),
    (
        "var(0, unbiased=False, keepdim)",
        lambda a: a.var(0, unbiased=False, keepdim=True),
        lambda a: a.var(0, unbiased=False, keepdim=True),
        [(3, 4)],
    ),
    ("std(-1)", lambda a: a.std(-1), lambda a: a.std(-1), [(3, 4)]),
]


@pytest.mark.parametrize("case", ELEMENTWISE, ids=lambda c: c[0])
def test_selection_and_statistics_match_torch(case: Any) -> None:
    torch_or_skip()
    _, ours, theirs, shapes = case
    arrays = [rand(s, seed=k) for k, s in enumerate(shapes)]
    same_as_torch(ours, theirs, *arrays)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", ELEMENTWISE, ids=lambda c: c[0])
def test_selection_and_statistics_central_difference(case: Any, backend: minitorch.TensorBackend) -> None:
    _, ours, _, shapes = case
    grad_check(ours, *(minitorch.tensor(rand(s, seed=k), backend=backend) for k, s in enumerate(shapes)))


def test_masked_fill_with_minus_infinity_keeps_it() -> None:
    x = minitorch.tensor(rand((3, 3)), requires_grad=True)
    causal = minitorch.ones(3, 3, dtype=minitorch.bool_).triu(1)
    scores = x.masked_fill(causal, float("-inf"))
    values = scores.numpy()
    assert np.all(np.isneginf(values[np.triu_indices(3, 1)])) and not np.any(np.isnan(values))
    scores.exp().sum().backward()  # e^{-inf} = 0: no gradient, no nan, above the diagonal
    assert np.all(x.grad.numpy()[np.triu_indices(3, 1)] == 0.0)
    assert np.isnan(minitorch.where(minitorch.tensor([True]), minitorch.tensor([np.nan]), 1.0).item())


def test_clamp_gradient_flows_inside_the_closed_interval() -> None:
    torch = torch_or_skip()
    a = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    x = minitorch.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    x.clamp(-0.5, 0.5).sum().backward()
    t.clamp(-0.5, 0.5).sum().backward()
    assert x.grad.tolist() == t.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert x.clamp(1.0, 0.0).tolist() == t.clamp(1.0, 0.0).tolist()  # min > max: all max


def test_abs_gradient_is_zero_at_zero_and_nan_stays_nan() -> None:
    x = minitorch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    x.abs().sum().backward()
    assert x.grad.tolist() == [-1.0, 0.0, 1.0]
    assert np.isnan(minitorch.tensor([np.nan]).abs().item())
    assert minitorch.tensor([-3, 4]).abs().tolist() == [3, 4]
    assert minitorch.tensor([-3, 4]).abs().dtype == minitorch.int64


def test_selection_errors() -> None:
    x = minitorch.zeros(2, 3)
    with pytest.raises(RuntimeError, match="bool"):
        minitorch.where(x, x, x)
    with pytest.raises(minitorch.ShapeError, match="do not broadcast"):
        minitorch.where(x > 0, x, minitorch.zeros(4))
    with pytest.raises(RuntimeError, match="does not broadcast to the input's shape \\(2, 3\\)"):
        x.masked_fill(minitorch.zeros(2, 3, 1, dtype=minitorch.bool_), 1.0)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        minitorch.zeros(3).tril()
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        x.clamp()
    with pytest.raises(RuntimeError, match="floating point"):
        minitorch.tensor([1, 2]).var()


# ---- dtypes --------------------------------------------------------------------------------


def test_dtype_inference_as_torch() -> None:
    assert minitorch.tensor([1, 2]).dtype == minitorch.int64
    assert minitorch.tensor(3).dtype == minitorch.int64
    assert minitorch.tensor([True, False]).dtype == minitorch.bool_
    assert minitorch.tensor([1.0, 2]).dtype == minitorch.float64
    assert minitorch.tensor(np.zeros(2, np.float32)).dtype == minitorch.float32
    assert minitorch.tensor(np.zeros(2, np.int32)).dtype == minitorch.int64
    assert minitorch.tensor([1, 2], dtype=float).dtype == minitorch.float64
    assert minitorch.tensor([0, 1], dtype=bool).tolist() == [False, True]
    assert minitorch.from_numpy(np.array([1, 2])).dtype == minitorch.int64
    assert minitorch.from_numpy(np.array([True])).dtype == minitorch.bool_
    assert minitorch.from_numpy(np.zeros(2, np.float32)).dtype == minitorch.float32
    assert minitorch.arange(3).dtype == minitorch.int64
    assert minitorch.arange(0.0, 1.0, 0.5).dtype == minitorch.float64
    assert minitorch.zeros(2, dtype=minitorch.bool_).tolist() == [False, False]
    with pytest.raises(TypeError, match="unsupported dtype"):
        minitorch.tensor([1], dtype=np.int8)


def test_only_floating_tensors_require_gradients() -> None:
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        minitorch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        minitorch.tensor([True]).requires_grad_()


PROMOTION_OPERANDS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("float64[2]", lambda m, dt: m.tensor([1.5, 2.5], dtype=dt.float64)),
    ("float32[2]", lambda m, dt: m.tensor([1.5, 2.5], dtype=dt.float32)),
    ("int64[2]", lambda m, dt: m.tensor([1, 2], dtype=dt.int64)),
    ("bool[2]", lambda m, dt: m.tensor([True, False], dtype=dt.bool)),
    ("float64 0-d", lambda m, dt: m.tensor(2.5, dtype=dt.float64)),
    ("float32 0-d", lambda m, dt: m.tensor(2.5, dtype=dt.float32)),
    ("int64 0-d", lambda m, dt: m.tensor(3, dtype=dt.int64)),
    ("python float", lambda m, dt: 0.5),
    ("python int", lambda m, dt: 3),
    ("python bool", lambda m, dt: True),
]


class _MinitorchDtypes:
    float64, float32, int64, bool = minitorch.float64, minitorch.float32, minitorch.int64, minitorch.bool_


@pytest.mark.parametrize("op", ["add", "mul", "truediv", "lt", "eq"])
def test_type_promotion_matches_torch_with_float64_default(op: str) -> None:
    """Every pair of operand kinds, torch's default dtype set to our default (float64)."""
    torch = torch_or_skip()
    import operator

    fn = getattr(operator, op)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for name_a, make_a in PROMOTION_OPERANDS[:7]:
            for name_b, make_b in PROMOTION_OPERANDS:
                expected = fn(make_a(torch, torch), make_b(torch, torch))
                got = fn(make_a(minitorch, _MinitorchDtypes), make_b(minitorch, _MinitorchDtypes))
                want = np.dtype(str(expected.dtype).replace("torch.", ""))
                assert got.dtype == want, f"{name_a} {op} {name_b}: {got.dtype}, torch gives {want}"
                np.testing.assert_allclose(
                    got.numpy().astype(float), expected.numpy().astype(float), rtol=1e-6
                )
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("number", [0.5, 3, True])
@pytest.mark.parametrize("shape", [(2,), ()])
def test_a_python_number_beside_a_floating_tensor_keeps_the_tensors_dtype(dtype, number, shape) -> None:
    """`Tensor._promote`'s quick path for `x * 2.0` gives what `result_type` says."""
    from minitorch.dtypes import result_type

    x = minitorch.tensor(np.full(shape, 3.0), dtype=dtype)
    assert result_type(x, number) == dtype
    for got, want in [(x * number, 3.0 * number), (number - x, number - 3.0), (x / number, 3.0 / number)]:
        assert got.dtype == dtype and got.shape == x.shape
        np.testing.assert_allclose(got.numpy(), np.full(shape, want, dtype=dtype))


def test_integer_arithmetic_stays_integer() -> None:
    ids = minitorch.tensor([3, 5, 7])
    assert (ids + 1).tolist() == [4, 6, 8] and (ids + 1).dtype == minitorch.int64
    assert (ids * 2 - ids).tolist() == [3, 5, 7]
    assert (-ids).tolist() == [-3, -5, -7] and (-ids).dtype == minitorch.int64
    assert ids.sum().item() == 15 and isinstance(ids.sum().item(), int)
    assert ids.max().item() == 7 and ids.max().dtype == minitorch.int64
    assert (ids / 2).tolist() == [1.5, 2.5, 3.5]
    assert (ids**2).tolist() == [9, 25, 49] and (ids**2).dtype == minitorch.int64
    assert ids.contiguous().dtype == minitorch.int64 and ids.T.contiguous().dtype == minitorch.int64
    with pytest.raises(RuntimeError, match="bool"):
        -minitorch.tensor([True])


def test_a_mask_keeps_a_float32_tensor_float32() -> None:
    x = minitorch.tensor(np.ones((2, 3), np.float32))
    assert (x * (x > 0)).dtype == minitorch.float32
    assert (x * (x > 0) * 2.0).dtype == minitorch.float32
    assert minitorch.where(x > 0, x, 0.0).dtype == minitorch.float32


# ---- comparisons, all / any ---------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_comparisons_give_bool_tensors_outside_the_graph(backend: minitorch.TensorBackend) -> None:
    a, b = rand((3, 4)), rand((4,), seed=1)
    a[0, :2] = b[:2]  # some ties
    x = minitorch.tensor(a, requires_grad=True, backend=backend)
    y = minitorch.tensor(b, backend=backend)
    for ours, theirs in [
        (x < y, a < b),
        (x > y, a > b),
        (x <= y, a <= b),
        (x >= y, a >= b),
        (x == y, a == b),
        (x != y, a != b),
        (x.lt(0.0), a < 0),
        (x.ge(0.0), a >= 0),
        (~(x > 0), ~(a > 0)),
        ((x > 0) & (x < 1), (a > 0) & (a < 1)),
        ((x > 1) | (x < -1), (a > 1) | (a < -1)),
        ((x > 0) ^ (y > 0), (a > 0) ^ (b > 0)),
    ]:
        assert ours.dtype == minitorch.bool_
        assert not ours.requires_grad
        np.testing.assert_array_equal(ours.numpy(), theirs)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x < y).sum().backward()


def test_comparison_results_mix_with_float_tensors() -> None:
    torch = torch_or_skip()
    a, b = rand((4, 3)), rand((4, 3), seed=1)
    same_as_torch(
        lambda x, y: (x < y) * x + (x == y) * y - (x >= 0.0) * x * y,
        lambda x, y: (x < y) * x + (x == y) * y - (x >= 0.0) * x * y,
        a,
        b,
    )
    labels, pred = minitorch.tensor([0, 2, 1, 1]), minitorch.tensor([0, 1, 1, 1])
    correct = (pred == labels).sum()
    assert correct.dtype == minitorch.int64 and correct.item() == 3
    assert (pred == labels).float().mean().item() == 0.75
    assert torch.tensor([0, 1, 1, 1]).eq(torch.tensor([0, 2, 1, 1])).sum().item() == 3


def test_all_and_any_give_0d_bool_tensors() -> None:
    t = minitorch.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert t.all().shape == () and t.all().dtype == minitorch.bool_
    assert t.all().item() is False and t.any().item() is True
    assert bool((t >= 0).all()) and not bool((t > 5).any())
    assert t.all(1).tolist() == [False, True] and t.any(0, keepdim=True).tolist() == [[True, True]]
    assert minitorch.tensor([np.nan]).all().item() is True  # nan is non-zero, as in torch


# ---- ShapeError ----------------------------------------------------------------------------


def test_broadcast_failure_is_a_runtime_error_naming_both_shapes() -> None:
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(4,\)") as info:
        minitorch.zeros(2, 3) + minitorch.zeros(4)
    assert isinstance(info.value, minitorch.ShapeError) and isinstance(info.value, ValueError)


# ---- nn.Sequential -------------------------------------------------------------------------


class Double(minitorch.Module):
    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return x * 2.0


def test_sequential_as_torch() -> None:
    torch = torch_or_skip()
    nn = minitorch.nn
    model = nn.Sequential(nn.Linear(3, 4), Double(), nn.Linear(4, 2))
    reference = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Identity(), torch.nn.Linear(4, 2)
    ).double()
    assert list(model.state_dict()) == list(reference.state_dict())
    model.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    x = rand((5, 3))
    expected = reference[2](reference[0](torch.tensor(x)) * 2.0)
    np.testing.assert_allclose(model(minitorch.tensor(x)).numpy(), expected.detach().numpy(), rtol=1e-12)
    assert len(model) == 3 and isinstance(model[1], Double) and isinstance(model[-1], nn.Linear)
    assert [type(m).__name__ for m in model] == ["Linear", "Double", "Linear"]
    head = model[:2]
    assert (
        isinstance(head, nn.Sequential)
        and len(head) == 2
        and list(head.state_dict()) == ["0.weight", "0.bias"]
    )
    model.append(Double())
    assert len(model) == 4 and list(dict(model.named_children())) == ["0", "1", "2", "3"]
    model[1] = nn.Linear(4, 4)
    assert list(dict(model.named_children())) == ["0", "1", "2", "3"]  # replaced in place
    assert minitorch.Sequential is nn.Sequential


def test_sequential_from_an_ordered_dict() -> None:
    nn = minitorch.nn
    model = nn.Sequential(OrderedDict([("embed", nn.Linear(2, 3)), ("out", nn.Linear(3, 1))]))
    assert list(model.state_dict()) == ["embed.weight", "embed.bias", "out.weight", "out.bias"]
    assert model.out is model[1]
    assert model(minitorch.zeros(4, 2)).shape == (4, 1)
    with pytest.raises(IndexError, match="out of range for a Sequential of length 2"):
        model[2]
