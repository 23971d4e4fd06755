"""Stage A1, tasks 1.2 and 1.3: Scalar forward (operators, functions) and backward (chain rule).

Task 1.3's tests call `chain_rule` one node at a time, so they need nothing of task 1.4: each
function's derivatives are checked by hand and against central differences of its own
forward. The derivatives of whole expressions (`derivative_check`, which runs `backward`)
need backpropagation too, so they are marked task1_4. PyTorch's values and derivatives for
the same expressions are checked in test_scalar_torch.py (not part of a release).
"""

from __future__ import annotations

import math
from typing import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import Scalar, central_difference, derivative_check, operators
from minitorch.scalar import ScalarHistory
from minitorch.scalar_functions import EQ, LT, Add, Exp, Inv, Log, Mul, Neg, ReLU, ScalarFunction, Sigmoid
from strategies import (
    assert_close,
    fast,
    moderate_floats,
    nonzero_floats,
    small_floats,
    small_positive_floats,
)

# ---- the functions under test ----------------------------------------------------------
# (name, Scalar function, float reference, strategy for valid inputs). Inputs of relu stay
# away from its kink at 0, where central differences are meaningless.

away_from_zero = nonzero_floats

ONE_ARG: list[tuple[str, Callable, Callable, st.SearchStrategy]] = [
    ("neg", lambda a: -a, lambda a: -a, small_floats),
    ("add_const", lambda a: a + 2.5, lambda a: a + 2.5, small_floats),
    ("radd_const", lambda a: 2.5 + a, lambda a: 2.5 + a, small_floats),
    ("sub_const", lambda a: a - 2.5, lambda a: a - 2.5, small_floats),
    ("rsub_const", lambda a: 2.5 - a, lambda a: 2.5 - a, small_floats),
    ("mul_const", lambda a: a * 3.0, lambda a: a * 3.0, small_floats),
    ("rmul_const", lambda a: 3.0 * a, lambda a: 3.0 * a, small_floats),
    ("div_const", lambda a: a / 4.0, lambda a: a / 4.0, small_floats),
    ("rdiv_const", lambda a: 4.0 / a, lambda a: 4.0 / a, nonzero_floats),
    ("square", lambda a: a * a, lambda a: a * a, small_floats),
    ("cube", lambda a: a * a * a, lambda a: a * a * a, moderate_floats),
    ("log", lambda a: a.log(), math.log, small_positive_floats),
    ("exp", lambda a: a.exp(), math.exp, moderate_floats),
    ("sigmoid", lambda a: a.sigmoid(), operators.sigmoid, small_floats),
    ("relu", lambda a: a.relu(), operators.relu, away_from_zero),
    ("log_relu_shift", lambda a: (a + 100.5).relu().log(), lambda a: math.log(a + 100.5), small_floats),
    ("exp_neg", lambda a: (-a).exp(), lambda a: math.exp(-a), moderate_floats),
    (
        "sigmoid_chain",
        lambda a: (a * 2.0 + 1.0).sigmoid() * a,
        lambda a: operators.sigmoid(2 * a + 1) * a,
        moderate_floats,
    ),
]

TWO_ARG: list[tuple[str, Callable, Callable, st.SearchStrategy, st.SearchStrategy]] = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, small_floats, small_floats),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, small_floats, small_floats),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, small_floats, small_floats),
    ("div", lambda a, b: a / b, lambda a, b: a / b, small_floats, nonzero_floats),
    ("mul_add", lambda a, b: a * b + a, lambda a, b: a * b + a, small_floats, small_floats),
    (
        "log_mul",
        lambda a, b: (a * b).log(),
        lambda a, b: math.log(a * b),
        small_positive_floats,
        small_positive_floats,
    ),
    (
        "sigmoid_sub",
        lambda a, b: (a - b).sigmoid(),
        lambda a, b: operators.sigmoid(a - b),
        small_floats,
        small_floats,
    ),
    (
        "exp_div",
        lambda a, b: (a / b).exp(),
        lambda a, b: math.exp(a / b),
        moderate_floats,
        st.floats(2.0, 10.0),
    ),
]

ONE_IDS = [c[0] for c in ONE_ARG]
TWO_IDS = [c[0] for c in TWO_ARG]
upstream = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)


# ## Task 1.2: forward


@pytest.mark.task1_2
@pytest.mark.parametrize("name, fn, ref, values", ONE_ARG, ids=ONE_IDS)
@fast
@given(data=st.data())
def test_one_arg_forward(name, fn, ref, values, data) -> None:
    a = data.draw(values, label="a")
    out = fn(Scalar(a))
    assert isinstance(out, Scalar), f"{name} returned {type(out).__name__}, not a Scalar"
    assert_close(out.data, ref(a), rtol=1e-9, atol=1e-9)


@pytest.mark.task1_2
@pytest.mark.parametrize("name, fn, ref, values_a, values_b", TWO_ARG, ids=TWO_IDS)
@fast
@given(data=st.data())
def test_two_arg_forward(name, fn, ref, values_a, values_b, data) -> None:
    a = data.draw(values_a, label="a")
    b = data.draw(values_b, label="b")
    out = fn(Scalar(a), Scalar(b))
    assert isinstance(out, Scalar)
    assert_close(out.data, ref(a, b), rtol=1e-9, atol=1e-9)


@pytest.mark.task1_2
@fast
@given(small_floats, small_floats)
def test_comparisons(a: float, b: float) -> None:
    x, y = Scalar(a), Scalar(b)
    for out, expected in [
        (x < y, a < b),
        (x > y, a > b),
        (x == y, a == b),
        (x == x, True),
        (x < b, a < b),
        (a < y, a < b),
        (x > b, a > b),
        (x == a, True),
    ]:
        assert isinstance(out, Scalar)
        assert out.data == (1.0 if expected else 0.0)


@pytest.mark.task1_2
def test_floats_on_either_side() -> None:
    x = Scalar(4.0)
    assert (x + 1).data == 5.0 and (1 + x).data == 5.0
    assert (x - 1).data == 3.0 and (1 - x).data == -3.0
    assert (x * 2).data == 8.0 and (2 * x).data == 8.0
    assert (x / 2).data == 2.0 and (2 / x).data == 0.5
    assert (-x).data == -4.0


@pytest.mark.task1_2
def test_history_records_the_graph() -> None:
    x, y = Scalar(2.0), Scalar(3.0)
    z = x * y
    assert z.history is not None
    assert z.history.last_fn is Mul
    assert z.history.inputs[0] is x and z.history.inputs[1] is y
    assert not z.is_leaf() and not z.is_constant()
    assert z.parents[0] is x and z.parents[1] is y


@pytest.mark.task1_2
def test_leaves_and_constants() -> None:
    x = Scalar(1.0)
    assert x.is_leaf() and not x.is_constant() and x.requires_grad
    assert x.history == ScalarHistory()
    c = Scalar(1.0, history=None)
    assert c.is_constant() and not c.is_leaf() and not c.requires_grad
    # Python numbers mixed in become constants with no history
    z = x + 2.0
    const = z.history.inputs[1]
    assert isinstance(const, Scalar) and const.history is None and const.data == 2.0
    # a function of constants only is a constant
    assert (c * 3.0).history is None
    assert (c + c).is_constant()
    x.requires_grad_(False)
    assert x.is_constant()
    x.requires_grad_()
    assert x.is_leaf()


@pytest.mark.task1_2
def test_unique_ids() -> None:
    xs = [Scalar(1.0) for _ in range(10)]
    ids = {x.unique_id for x in xs} | {(xs[0] + xs[1]).unique_id}
    assert len(ids) == 11


@pytest.mark.task1_2
@pytest.mark.parametrize(
    "fn, args, expected",
    [
        (Add, (1.0, 2.0), 3.0),
        (Mul, (2.0, 3.0), 6.0),
        (Neg, (2.0,), -2.0),
        (Inv, (4.0,), 0.25),
        (Log, (math.e,), 1.0),
        (Exp, (0.0,), 1.0),
        (Sigmoid, (0.0,), 0.5),
        (ReLU, (-1.0,), 0.0),
        (LT, (1.0, 2.0), 1.0),
        (EQ, (1.0, 2.0), 0.0),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_scalar_functions_apply(fn: type[ScalarFunction], args, expected: float) -> None:
    out = fn.apply(*(Scalar(a) for a in args))
    assert isinstance(out, Scalar)
    assert_close(out.data, expected, atol=1e-12)
    assert out.history.last_fn is fn


@pytest.mark.task1_2
def test_stable_at_extremes() -> None:
    assert Scalar(1000.0).sigmoid().data == 1.0
    assert Scalar(-1000.0).sigmoid().data == 0.0
    assert Scalar(0.0).log().data == -math.inf


# ## Task 1.3: backward


# One step of the chain rule for each function: (function, strategies for its inputs).
# Inputs of ReLU stay away from its kink at 0, where central differences are meaningless.
FUNCTIONS: list[tuple[type[ScalarFunction], tuple[st.SearchStrategy, ...]]] = [
    (Add, (small_floats, small_floats)),
    (Mul, (small_floats, small_floats)),
    (Neg, (small_floats,)),
    (Inv, (nonzero_floats,)),
    (Log, (small_positive_floats,)),
    (Exp, (moderate_floats,)),
    (Sigmoid, (small_floats,)),
    (ReLU, (away_from_zero,)),
]


@pytest.mark.task1_3
@pytest.mark.parametrize("fn, strategies", FUNCTIONS, ids=[f.__name__ for f, _ in FUNCTIONS])
@fast
@given(data=st.data())
def test_chain_rule_matches_central_difference(fn: type[ScalarFunction], strategies, data) -> None:
    """out = f(x₁, …, xₙ): chain_rule(d) pairs each xᵢ with d · ∂f/∂xᵢ, and
    ∂f/∂xᵢ ≈ (f(…, xᵢ + ε, …) − f(…, xᵢ − ε, …)) / 2ε (task 1.1) on f's own forward."""
    values = [data.draw(s, label=f"x{i}") for i, s in enumerate(strategies)]
    d = data.draw(upstream, label="d_output")
    inputs = [Scalar(v) for v in values]
    pairs = list(fn.apply(*inputs).chain_rule(d))
    assert len(pairs) == len(inputs), f"{fn.__name__}: {len(pairs)} pairs for {len(inputs)} inputs"

    def f_float(*xs: float) -> float:
        return fn.apply(*xs).data

    for i, (inp, derivative) in enumerate(pairs):
        assert inp is inputs[i], f"{fn.__name__}: pair {i} holds the wrong input"
        expected = d * central_difference(f_float, *values, arg=i)
        assert_close(derivative, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.task1_3
@fast
@given(small_floats, small_floats)
def test_comparisons_have_zero_derivative(a: float, b: float) -> None:
    x, y = Scalar(a), Scalar(b)
    for out in (x < y, x == y, x > y):
        assert [d for _, d in out.chain_rule(1.0)] == [0.0, 0.0]


@pytest.mark.task1_3
def test_chain_rule_pairs_inputs_with_derivatives() -> None:
    x, y = Scalar(2.0), Scalar(3.0)
    z = x * y
    pairs = list(z.chain_rule(5.0))
    assert len(pairs) == 2
    assert pairs[0][0] is x and pairs[0][1] == 15.0
    assert pairs[1][0] is y and pairs[1][1] == 10.0
    w = (x + 1.0).log()
    (inp, d), (const, d_const) = w.history.inputs[0].chain_rule(1.0)  # the Add node
    assert inp is x and d == 1.0 and const.is_constant()


@pytest.mark.task1_3
@pytest.mark.parametrize(
    "fn, args, d, expected",
    [
        (Add, (1.0, 2.0), 2.0, (2.0, 2.0)),
        (Mul, (2.0, 3.0), 2.0, (6.0, 4.0)),
        (Neg, (2.0,), 2.0, (-2.0,)),
        (Inv, (4.0,), 2.0, (-2.0 / 16.0,)),
        (Log, (4.0,), 2.0, (0.5,)),
        (Exp, (0.0,), 2.0, (2.0,)),
        (Sigmoid, (0.0,), 2.0, (0.5,)),
        (ReLU, (-1.0,), 2.0, (0.0,)),
        (ReLU, (1.0,), 2.0, (2.0,)),
        (LT, (1.0, 2.0), 2.0, (0.0, 0.0)),
        (EQ, (1.0, 1.0), 2.0, (0.0, 0.0)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_backward_of_each_function(fn: type[ScalarFunction], args, d: float, expected) -> None:
    out = fn.apply(*(Scalar(a) for a in args))
    got = [g for _, g in out.chain_rule(d)]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_close(g, e, atol=1e-12)


@pytest.mark.task1_3
def test_backward_returning_wrong_count_is_a_clear_error() -> None:
    class Broken(ScalarFunction):
        @staticmethod
        def forward(ctx, a: float, b: float) -> float:
            return a + b

        @staticmethod
        def backward(ctx, d_output: float) -> float:
            return d_output

    with pytest.raises(ValueError, match=r"Broken\.backward returned 1 derivative\(s\) for 2 input"):
        Broken.apply(Scalar(1.0), Scalar(2.0)).chain_rule(1.0)


# ## Task 1.4: the derivatives of whole expressions
# `derivative_check` runs `backward` (backpropagation, task 1.4) through every function's
# chain rule (task 1.3) and compares each input's derivative with a central difference.


@pytest.mark.task1_4
@pytest.mark.parametrize("name, fn, ref, values", ONE_ARG, ids=ONE_IDS)
@fast
@given(data=st.data())
def test_one_arg_derivative(name, fn, ref, values, data) -> None:
    a = data.draw(values, label="a")
    d = data.draw(upstream, label="d_output")
    fn.__name__ = name
    derivative_check(fn, Scalar(a), d_output=d)


@pytest.mark.task1_4
@pytest.mark.parametrize("name, fn, ref, values_a, values_b", TWO_ARG, ids=TWO_IDS)
@fast
@given(data=st.data())
def test_two_arg_derivative(name, fn, ref, values_a, values_b, data) -> None:
    a = data.draw(values_a, label="a")
    b = data.draw(values_b, label="b")
    d = data.draw(upstream, label="d_output")
    fn.__name__ = name
    derivative_check(fn, Scalar(a), Scalar(b), d_output=d)


@pytest.mark.task1_4
def test_derivative_check_reports_a_wrong_derivative() -> None:
    class BadSquare(ScalarFunction):
        @staticmethod
        def forward(ctx, a: float) -> float:
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, d_output: float) -> float:
            (a,) = ctx.saved_values
            return a * d_output  # should be 2a

    def bad_square(x: Scalar) -> Scalar:
        return BadSquare.apply(x)

    with pytest.raises(AssertionError, match=r"bad_square.*argument 0.*expected 6.*got 3"):
        derivative_check(bad_square, Scalar(3.0))


@pytest.mark.task1_3
def test_exported_names() -> None:
    assert minitorch.Scalar is Scalar and minitorch.derivative_check is derivative_check
    assert minitorch.ScalarFunction is ScalarFunction
