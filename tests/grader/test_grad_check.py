"""Gradient checks without false alarms: `minitorch.testing.grad_check` and the grader's
`CheckContext.gradcheck` (`grader.checks.gradcheck`).

Both difference f's outputs before summing them against the upstream gradient, so a
tensor holding large and small values does not drown the small entries' derivatives in the
rounding of a large sum (issue 12, item 6). These tests pin both halves of that promise:
a correct backward passes on such inputs, and a backward that is wrong by a little, on
the same inputs, still fails. The grader's check runs here with the reference executor
standing in for the student's child (same programs, same wire encoding, no process).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import minitorch
from grader.sandbox.child import protocol
from grader.checks.base import Check, CheckContext, CheckFailed, Services, StudentError
from grader.checks.gradcheck import central_difference
from grader.checks.reference import reference_executor
from grader.sandbox.session import Limits
from minitorch.function import Context, Function
from minitorch.testing import grad_check

library, grader = pytest.mark.library, pytest.mark.grader

BACKEND = minitorch.SimpleBackend


def _tensor(values: list[float]) -> minitorch.Tensor:
    return minitorch.tensor(values, backend=BACKEND)


def _cube(scale: float) -> type[Function]:
    """out = a³ with a backward of scale · 3a² · g (scale 1: correct)."""

    class Cube(Function):
        @staticmethod
        def forward(ctx: Context, a: minitorch.Tensor) -> minitorch.Tensor:
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx: Context, grad_output: minitorch.Tensor) -> tuple[minitorch.Tensor]:
            (a,) = ctx.saved_values
            return (grad_output * a * a * (3.0 * scale),)

    return Cube


MIXED = [
    [0.109375, 63.0],  # the case of the issue: L ≈ 2.5e5, ∂L/∂a_0 ≈ 4.5e-3
    [1e-3, -250.0, 0.5],
    [-0.03125, 1e3],
]


@library
def test_the_issue_example_passes() -> None:
    """The case reported in issue 12: backward 0.0045122906 was compared with a
    "central difference" of 0.0045110937 from the difference of two sums."""
    grad_check(lambda a: a * a * a, _tensor([0.109375, 63.0]))


@library
@pytest.mark.parametrize("values", MIXED)
def test_correct_backward_passes_on_mixed_magnitudes(values: list[float]) -> None:
    grad_check(lambda a: _cube(1.0).apply(a), _tensor(values))
    grad_check(lambda a, b: a * a * b, _tensor(values), _tensor(values[::-1]))


@library
@pytest.mark.parametrize("values", MIXED)
def test_slightly_wrong_backward_fails_on_mixed_magnitudes(values: list[float]) -> None:
    """A backward off by 0.1 % is caught, on the small entries too: the fix did not loosen
    the comparison, it only stopped the noise."""
    with pytest.raises(AssertionError, match="gradient mismatch for input 'a'"):
        grad_check(lambda a: _cube(1.001).apply(a), _tensor(values))


@library
def test_wrong_backward_on_the_small_entry_only_is_caught() -> None:
    """A mistake confined to the small entry (the one the old check could not see)."""

    class SmallWrong(Function):
        @staticmethod
        def forward(ctx: Context, a: minitorch.Tensor) -> minitorch.Tensor:
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx: Context, grad_output: minitorch.Tensor) -> tuple[minitorch.Tensor]:
            (a,) = ctx.saved_values
            bump = minitorch.tensor([1.002, 1.0], backend=BACKEND)  # 0.2 % too large at index 0
            return (grad_output * a * a * bump * 3.0,)

    with pytest.raises(AssertionError, match=r"at index \(0,\)"):
        grad_check(lambda a: SmallWrong.apply(a), _tensor([0.109375, 63.0]))


@library
def test_message_names_the_input_and_both_values() -> None:
    x, w = _tensor([1.0, 2.0]), _tensor([3.0, -4.0])
    with pytest.raises(AssertionError) as info:
        grad_check(lambda x, weight: x * _cube(2.0).apply(weight), x, w)
    text = str(info.value)
    assert "input 'weight'" in text and "index (0,)" in text
    got, expected = map(
        float, re.search(r"backward gives (\S+), central difference gives (\S+)$", text).groups()
    )
    assert got == pytest.approx(2 * expected, rel=1e-6)  # backward 2 · 3w² · g against 3w² · g


@library
def test_unnamed_inputs_fall_back_to_positions() -> None:
    with pytest.raises(AssertionError, match="input 1"):
        grad_check(lambda *xs: xs[0] * _cube(2.0).apply(xs[1]), _tensor([1.0]), _tensor([2.0]))


@library
def test_an_input_without_gradient_is_reported() -> None:
    with pytest.raises(AssertionError, match="input 'b' .* received no gradient"):
        grad_check(lambda a, b: a * 2.0 + b.detach(), _tensor([1.0]), _tensor([2.0]))


# ---------------------------------------------------------------- the grader's gradcheck


def _context() -> CheckContext:
    """A CheckContext whose "child" is the reference executor, through the wire encoding."""
    executor = reference_executor()

    def wire(value: Any) -> Any:
        return protocol.decode(protocol.encode(value)[8:])

    def run_child(programs: list[dict]) -> list[Any]:
        return [wire(executor.run(wire(program))) for program in programs]

    chk = Check("2.4", "a2", "gradcheck_test", "gradient", lambda ctx: None, "")
    return CheckContext(chk, run_child, executor, Services(limits=Limits()))


def _cube_probe(p: Any, t: list[Any]) -> Any:
    return p.op("mul", p.op("mul", t[0], t[0]), t[0])


GRADER_MIXED = [
    np.array([0.109375, 63.0]),
    np.array([0.109375, 1000.0]),
    np.array([[1e-3, -250.0], [0.5, 4e3]]),
]


@grader
def test_central_difference_cancels_the_entries_it_does_not_move() -> None:
    """Only the moved entry contributes; summing first would add ≈ ulp(4e9) / 2ε ≈ 2e-4."""
    eps, x = 1e-6, 0.109375
    big = 4e9
    up, down = np.array([(x + eps) ** 3, big]), np.array([(x - eps) ** 3, big])
    g = np.array([1.0, 1.0])
    assert central_difference(up, down, g, eps) == pytest.approx(3 * x * x, rel=1e-8)
    summed = (float(np.sum(up * g)) - float(np.sum(down * g))) / (2 * eps)  # the old way
    assert abs(summed - 3 * x * x) > 1e-4  # the hazard this function exists for


@grader
@pytest.mark.parametrize("array", GRADER_MIXED, ids=["issue", "1e3", "2x2"])
def test_grader_gradcheck_passes_a_correct_backward_on_mixed_magnitudes(array: np.ndarray) -> None:
    _context().gradcheck("a * a * a", _cube_probe, [array], names=["a"])


@grader
@pytest.mark.parametrize("array", GRADER_MIXED, ids=["issue", "1e3", "2x2"])
def test_grader_gradcheck_fails_a_slightly_wrong_backward(
    array: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mul.backward 0.1 % too large on the same inputs: still caught, the input named."""
    mul = minitorch.tensor_functions.Mul
    correct = mul.backward

    def wrong(ctx: Context, grad_output: minitorch.Tensor) -> tuple[minitorch.Tensor, ...]:
        return tuple(g * 1.001 for g in correct(ctx, grad_output))

    monkeypatch.setattr(mul, "backward", staticmethod(wrong))
    with pytest.raises(CheckFailed) as info:
        _context().gradcheck("a * a * a", _cube_probe, [array], names=["a"])
    assert "central differences of your forward for a:" in info.value.message
    assert (
        "central differences of your forward:" in info.value.details
        and "your backward (a.grad):" in info.value.details
    )


@grader
def test_grader_gradcheck_names_the_call_when_backward_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: Context, grad_output: minitorch.Tensor) -> None:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(minitorch.tensor_functions.Mul, "backward", staticmethod(broken))
    with pytest.raises(StudentError) as info:
        _context().gradcheck(
            "a * b", lambda p, t: p.op("mul", t[0], t[1]), [np.ones(2), np.ones(2)], names=["a", "b"]
        )
    assert info.value.message == "ZeroDivisionError in a * b, then out.backward(g): oops"
    assert "a = [1., 1.]" in info.value.details and "upstream gradient g =" in info.value.details
