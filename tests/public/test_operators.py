"""Stage A0, tasks 0.1 and 0.2: scalar operators and the higher-order list functions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import operators
from minitorch.operators import (
    add,
    addLists,
    eq,
    exp,
    id,
    inv,
    inv_back,
    is_close,
    log,
    log_back,
    lt,
    map,
    max,
    mul,
    neg,
    negList,
    prod,
    reduce,
    relu,
    relu_back,
    sigmoid,
    sum,
    zipWith,
)
from strategies import (
    assert_close,
    fast,
    float_lists,
    moderate_floats,
    nonzero_floats,
    small_floats,
    small_positive_floats,
)


def numeric_derivative(f, x: float, eps: float = 1e-6) -> float:
    """(f(x + ε) − f(x − ε)) / 2ε, written here so task 0.1 does not depend on task 1.1."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# ## Task 0.1: operators


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_same_as_python(x: float, y: float) -> None:
    assert_close(mul(x, y), x * y)
    assert_close(add(x, y), x + y)
    assert_close(neg(x), -x)
    assert_close(max(x, y), x if x > y else y)
    assert id(x) == x
    if abs(x) > 1e-5:
        assert_close(inv(x), 1.0 / x)


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_comparisons_return_floats(x: float, y: float) -> None:
    for value in (lt(x, y), eq(x, y), is_close(x, y)):
        assert isinstance(value, float) and value in (0.0, 1.0)
    assert lt(x, y) == (1.0 if x < y else 0.0)
    assert eq(x, y) == (1.0 if x == y else 0.0)
    assert eq(x, x) == 1.0
    assert lt(x, x) == 0.0


@pytest.mark.task0_1
@fast
@given(small_floats)
def test_relu(x: float) -> None:
    if x > 0:
        assert relu(x) == x
    else:
        assert relu(x) == 0.0
    assert relu(x) >= 0.0


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_relu_back(x: float, d: float) -> None:
    if x > 0:
        assert relu_back(x, d) == d
    if x < 0:
        assert relu_back(x, d) == 0.0


@pytest.mark.task0_1
def test_relu_back_at_zero_is_zero() -> None:
    # The subgradient at the kink: PyTorch uses 0 too.
    assert relu_back(0.0, 5.0) == 0.0


@pytest.mark.task0_1
@fast
@given(small_floats)
def test_sigmoid(x: float) -> None:
    s = sigmoid(x)
    assert 0.0 <= s <= 1.0
    assert_close(sigmoid(-x), 1.0 - s, atol=1e-9)
    assert_close(s, 1.0 / (1.0 + math.exp(-x)), atol=1e-9)


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_sigmoid_is_increasing(x: float, y: float) -> None:
    if x < y:
        assert sigmoid(x) <= sigmoid(y)


@pytest.mark.task0_1
def test_sigmoid_known_values() -> None:
    assert sigmoid(0.0) == 0.5
    assert_close(sigmoid(2.0), 0.8807970779778823, atol=1e-12)
    assert_close(sigmoid(-2.0), 0.11920292202211755, atol=1e-12)


@pytest.mark.task0_1
@pytest.mark.parametrize("x", [1000.0, -1000.0, 1e308, -1e308])
def test_sigmoid_stable_for_large_inputs(x: float) -> None:
    s = sigmoid(x)  # no OverflowError from e^{-x}
    assert s == (1.0 if x > 0 else 0.0)
    assert not math.isnan(s)


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats, small_floats)
def test_transitive_lt(a: float, b: float, c: float) -> None:
    if lt(a, b) and lt(b, c):
        assert lt(a, c) == 1.0


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_symmetric(x: float, y: float) -> None:
    assert mul(x, y) == mul(y, x)
    assert add(x, y) == add(y, x)
    assert eq(x, y) == eq(y, x)
    assert max(x, y) == max(y, x)


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats, small_floats)
def test_distribute(x: float, y: float, z: float) -> None:
    assert_close(mul(z, add(x, y)), add(mul(z, x), mul(z, y)), rtol=1e-9, atol=1e-9)


@pytest.mark.task0_1
@fast
@given(small_floats)
def test_neg_is_involution(x: float) -> None:
    assert neg(neg(x)) == x
    assert add(x, neg(x)) == 0.0


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_is_close(x: float, y: float) -> None:
    assert is_close(x, x) == 1.0
    assert is_close(x, y) == (1.0 if abs(x - y) < 1e-2 else 0.0)


@pytest.mark.task0_1
@fast
@given(small_positive_floats)
def test_log_exp_inverse(x: float) -> None:
    assert_close(exp(log(x)), x, rtol=1e-9)
    assert_close(log(exp(math.log(x))), math.log(x), atol=1e-9)
    assert_close(log(x), math.log(x))


@pytest.mark.task0_1
@fast
@given(moderate_floats)
def test_exp(x: float) -> None:
    assert_close(exp(x), math.exp(x), rtol=1e-12)
    assert exp(x) > 0.0


@pytest.mark.task0_1
def test_edge_values_follow_pytorch() -> None:
    assert log(0.0) == -math.inf
    assert math.isnan(log(-1.0))
    assert exp(1000.0) == math.inf
    assert exp(-1000.0) == 0.0
    assert inv(0.0) == math.inf
    assert inv(-0.0) == -math.inf


@pytest.mark.task0_1
@fast
@given(small_positive_floats, small_floats)
def test_log_back(x: float, d: float) -> None:
    assert_close(log_back(x, d), d * numeric_derivative(math.log, x), rtol=1e-4, atol=1e-4)


@pytest.mark.task0_1
@fast
@given(nonzero_floats, small_floats)
def test_inv_back(x: float, d: float) -> None:
    assert_close(inv_back(x, d), d * numeric_derivative(lambda v: 1.0 / v, x), rtol=1e-4, atol=1e-4)


@pytest.mark.task0_1
@fast
@given(small_floats, small_floats)
def test_sigmoid_back(x: float, d: float) -> None:
    expected = d * numeric_derivative(sigmoid, x)
    assert_close(operators.sigmoid_back(x, d), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.task0_1
@pytest.mark.parametrize("fn", [mul, add, neg, lt, eq, max, is_close, sigmoid, relu, log, exp, inv])
def test_operators_return_float(fn) -> None:
    args = (2.0, 3.0) if fn.__code__.co_argcount == 2 else (2.0,)
    assert isinstance(fn(*args), float), f"{fn.__name__}{args} returned {type(fn(*args)).__name__}"


# ## Task 0.2: map / zipWith / reduce


@pytest.mark.task0_2
@fast
@given(float_lists())
def test_map(ls: list[float]) -> None:
    assert map(neg)(ls) == [-x for x in ls]
    assert map(lambda x: 2 * x)(ls) == [2 * x for x in ls]
    assert map(neg)([]) == []


@pytest.mark.task0_2
@fast
@given(float_lists(), float_lists())
def test_zip_with(a: list[float], b: list[float]) -> None:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    assert zipWith(add)(a, b) == [x + y for x, y in zip(a, b)]
    assert zipWith(lambda x, y: x - y)(a, b) == [x - y for x, y in zip(a, b)]


@pytest.mark.task0_2
def test_zip_with_different_lengths_raises() -> None:
    with pytest.raises(ValueError, match=r"zipWith.*\b3\b.*\b2\b"):
        zipWith(add)([1.0, 2.0, 3.0], [1.0, 2.0])


@pytest.mark.task0_2
def test_reduce_order_and_start() -> None:
    # reduce(fn, x0)([x1, x2, x3]) = fn(x3, fn(x2, fn(x1, x0))): a non-commutative fn shows the order.
    assert reduce(lambda x, acc: x - acc, 0.0)([1.0, 2.0, 3.0]) == 3.0 - (2.0 - (1.0 - 0.0))
    assert reduce(add, 5.0)([]) == 5.0
    assert reduce(mul, 2.0)([3.0]) == 6.0


@pytest.mark.task0_2
@fast
@given(float_lists())
def test_reduce_accepts_any_iterable(ls: list[float]) -> None:
    assert_close(reduce(add, 0.0)(iter(ls)), math.fsum(ls), atol=1e-9)


@pytest.mark.task0_2
@fast
@given(float_lists(), float_lists())
def test_sum_distribute(ls1: list[float], ls2: list[float]) -> None:
    """sum(a) + sum(b) = sum(a + b) (element-wise), on equal-length lists."""
    n = min(len(ls1), len(ls2))
    ls1, ls2 = ls1[:n], ls2[:n]
    assert_close(sum(ls1) + sum(ls2), sum(addLists(ls1, ls2)), atol=1e-9)


@pytest.mark.task0_2
@fast
@given(float_lists())
def test_sum(ls: list[float]) -> None:
    assert_close(sum(ls), math.fsum(ls), atol=1e-9)


@pytest.mark.task0_2
@fast
@given(float_lists(max_size=6))
def test_prod(ls: list[float]) -> None:
    assert_close(prod(ls), math.prod(ls), rtol=1e-9, atol=1e-9)


@pytest.mark.task0_2
def test_empty_lists() -> None:
    assert sum([]) == 0.0
    assert prod([]) == 1.0
    assert negList([]) == []
    assert addLists([], []) == []


@pytest.mark.task0_2
@fast
@given(float_lists())
def test_neg_list(ls: list[float]) -> None:
    out = negList(ls)
    assert len(out) == len(ls)
    for x, y in zip(ls, out):
        assert y == -x


@pytest.mark.task0_2
@fast
@given(st.lists(st.tuples(small_floats, small_floats), max_size=10))
def test_add_lists(pairs: list[tuple[float, float]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    out = addLists(a, b)
    assert out == [x + y for x, y in pairs]
