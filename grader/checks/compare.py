"""Comparing answers: an expected value (from the reference) with a got value (from the
student's child), and short descriptions of values for feedback.

`diff` compares type first, then dtype and shape, then the numbers (a NaN or ±inf where
the reference has a finite number is a mismatch) and returns what differs, for the
student, or None. Parent side only.

Python numbers compare by kind first (`number_kind`: bool, int or float; a NumPy scalar
counts as the Python number its ``.item()`` gives, so ``np.float64`` is a float): where
the reference returns the float 1.0, the bool True or the int 1 is a wrong type ("expected
the float 1.0, got the bool True"), as ``isinstance(lt(1.0, 2.0), float)`` is False in the
public tests. A bool matters: a comparison's 1.0 / 0.0 is arithmetic downstream, and NumPy
refuses to subtract arrays of bools. One exception, because it is harmless and what the
handout's own formulas write: the int 0 where the reference returns the float 0.0
(``max(0, x)``, ``d if x > 0 else 0``, the sum of [] as Python's ``sum([])``) is accepted,
and `int_zero_note` says so in the feedback instead of costing points. Lists and tuples are
both sequences here; a check that needs a list says so itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from grader.sandbox.answers import ArrayVal, BadTensor, NpScalar, ObjectVal, TensorVal

__all__ = [
    "F32",
    "Shown",
    "Tol",
    "describe",
    "diff",
    "diff_arrays",
    "fmt_array",
    "int_zero_note",
    "is_number",
    "kind_name",
    "num_text",
    "number_kind",
    "relative_difference",
]


def describe(v: Any) -> str:
    """A short description of a value for feedback."""
    if isinstance(v, TensorVal):
        return f"tensor of shape {v.array.shape}, dtype {v.array.dtype}: {fmt_array(v.array)}"
    if isinstance(v, ArrayVal):
        return f"{v.type} of shape {v.array.shape}: {fmt_array(v.array)}"
    if isinstance(v, NpScalar):
        return f"{v.type}({v.value!r})"
    if isinstance(v, ObjectVal):
        return f"an object of type {v.type}" + (f" ({v.repr})" if v.repr else "")
    if isinstance(v, BadTensor):
        return f"a broken tensor ({v.why})"
    if isinstance(v, float):
        return num_text(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe(x) for x in v[:8]) + (", …" if len(v) > 8 else "")
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def num_text(x: float) -> str:
    """A float in at most 10 significant digits, still looking like a float ("2.0")."""
    text = f"{x:.10g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def kind_name(v: Any) -> str:
    if isinstance(v, TensorVal):
        return "a Tensor"
    if isinstance(v, ArrayVal):
        return f"a {v.type}"
    if isinstance(v, ObjectVal):
        return f"an object of type {v.type}"
    if isinstance(v, BadTensor):
        return "a broken Tensor"
    if isinstance(v, NpScalar):
        return f"a {v.type}"
    return f"a {type(v).__name__}"


def fmt_array(a: np.ndarray) -> str:
    if a.ndim == 0:
        return f"{a.item()!r}"
    return np.array2string(a, precision=6, separator=", ", threshold=40, edgeitems=3).replace("\n", " ")


def is_number(v: Any) -> bool:
    return (type(v) in (int, float, bool)) or (
        isinstance(v, NpScalar) and type(v.value) in (int, float, bool)
    )


def number_kind(v: Any) -> Optional[str]:
    """ "bool", "int" or "float" for a Python or NumPy number, None for anything else."""
    value = v.value if isinstance(v, NpScalar) else v
    return {bool: "bool", int: "int", float: "float"}.get(type(value))


def _plain(v: Any) -> Any:
    """The Python number behind `v` (a NumPy scalar's ``.item()``)."""
    return v.value if isinstance(v, NpScalar) else v


def _num(v: Any) -> float:
    return float(_plain(v))


class Shown(str):
    """Text that feedback shows as it is: `inputs_text` writes ``repr()`` of each input, and
    a described graph or module tree reads better without quotes."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Tol:
    """|got − expected| ≤ atol + rtol · |expected| (per element)."""

    rtol: float = 1e-6
    atol: float = 1e-8


F32 = Tol(rtol=1e-4, atol=1e-5)


def _shown(v: Any) -> str:
    value = v.value if isinstance(v, NpScalar) else v
    return num_text(value) if type(value) is float else repr(value)


def diff(expected: Any, got: Any, tol: Tol = Tol(), strict_bool: bool = True) -> Optional[str]:
    """None when `got` matches `expected`, else what differs (for the student).

    With `strict_bool` (the default) a Python number must also be of the reference's kind
    (see the module docstring); without it any number matches any number by value.
    """
    if isinstance(expected, TensorVal):
        if isinstance(got, BadTensor):
            return f"returned a broken Tensor: {got.why}"
        if not isinstance(got, TensorVal):
            return f"expected a Tensor, got {kind_name(got)}"
        return diff_arrays(expected.array, got.array, tol)
    if isinstance(expected, ArrayVal):
        if not isinstance(got, ArrayVal):
            return f"expected a numpy.ndarray, got {kind_name(got)}"
        if got.type != "numpy.ndarray":
            return f"expected a plain numpy.ndarray, got the subclass {got.type}"
        return diff_arrays(expected.array, got.array, tol)
    want = number_kind(expected)
    if want is not None:
        have = number_kind(got)
        if have is None:
            return f"expected the {want} {_shown(expected)}, got {kind_name(got)}" + (
                "" if isinstance(got, ObjectVal) else f" ({describe(got)[:60]})"
            )
        if strict_bool and have != want and not _int_zero(expected, got):
            why = (
                " (a comparison's 1.0 / 0.0 is used in arithmetic, and NumPy refuses to subtract bools)"
                if (want, have) == ("float", "bool")
                else ""
            )
            return f"expected the {want} {_shown(expected)}, got the {have} {_shown(got)}{why}"
        if strict_bool and want == "bool":
            return None if _num(got) == _num(expected) else f"expected {_shown(expected)}, got {_shown(got)}"
        return _diff_numbers(expected, got, tol)
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"expected a sequence of {len(expected)} items, got {kind_name(got)}"
        if len(got) != len(expected):
            return f"expected {len(expected)} items, got {len(got)}: {describe(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            d = diff(e, g, tol, strict_bool)
            if d:
                return f"item {i}: {d}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected a dict, got {kind_name(got)}"
        if set(expected) != set(got):
            return f"expected keys {sorted(expected)}, got {sorted(got)}"
        for k in expected:
            d = diff(expected[k], got[k], tol, strict_bool)
            if d:
                return f"[{k!r}]: {d}"
        return None
    if isinstance(expected, ObjectVal):
        if not isinstance(got, ObjectVal) or got.type != expected.type:
            return f"expected an object of type {expected.type}, got {kind_name(got)}"
        return None
    if expected is None:
        return None if got is None else f"expected None, got {describe(got)}"
    if isinstance(expected, str):
        return None if got == expected else f"expected {expected!r}, got {describe(got)}"
    raise TypeError(f"cannot compare a value of type {type(expected).__name__}")


def _int_zero(expected: Any, got: Any) -> bool:
    """The int 0 where the reference returns the float 0.0 (see the module docstring)."""
    return (
        number_kind(expected) == "float"
        and _plain(expected) == 0.0
        and number_kind(got) == "int"
        and _plain(got) == 0
    )


def int_zero_note(expected: Any, got: Any) -> Optional[str]:
    """ "returned the int 0 where …" when `got` (or an item of it) is an accepted int 0, else None."""
    if _int_zero(expected, got):
        return (
            "returned the int 0 where the reference returns the float 0.0: accepted (0 == 0.0), "
            "but write 0.0 so that every result is a float"
        )
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return next((n for e, g in zip(expected, got) if (n := int_zero_note(e, g))), None)
    if isinstance(expected, dict) and isinstance(got, dict):
        return next((n for k in expected if k in got and (n := int_zero_note(expected[k], got[k]))), None)
    return None


def _diff_numbers(expected: Any, got: Any, tol: Tol) -> Optional[str]:
    """Two Python (or NumPy) numbers by value: exactly when neither is a float, within `tol`
    otherwise; each is shown in its own type ("expected 3, got 4", "expected 2.5, got 3")."""
    if "float" in (number_kind(expected), number_kind(got)):
        if diff_arrays(np.asarray(_num(expected)), np.asarray(_num(got)), tol) is None:
            return None
    elif _plain(expected) == _plain(got):  # ints and bools exactly, however large
        return None
    return f"value: expected {_shown(expected)}, got {_shown(got)}"


def _element_text(x: Any, dtype: np.dtype) -> str:
    """One array element in its array's type: True, 3, 2.5 (floats as `num_text`)."""
    if dtype.kind == "b":
        return str(bool(x))
    if dtype.kind in "iu":
        return str(int(x))
    return num_text(float(x))


def diff_arrays(e: np.ndarray, g: np.ndarray, tol: Tol) -> Optional[str]:
    """Compare dtype, then shape, then values (NaN and ±inf must match the reference)."""
    if e.ndim > 0 or g.ndim > 0:
        if g.dtype != e.dtype:
            return f"dtype {g.dtype}, expected {e.dtype}"
        if g.shape != e.shape:
            return f"shape {g.shape}, expected {e.shape}"
    if e.size == 0:
        return None
    if e.dtype.kind in "biu" and g.dtype.kind in "biu":
        bad = e != g
    else:
        ef, gf = e.astype(np.float64), g.astype(np.float64)
        e_nan, g_nan = np.isnan(ef), np.isnan(gf)
        e_inf, g_inf = np.isinf(ef), np.isinf(gf)
        finite = ~(e_nan | e_inf) & ~(g_nan | g_inf)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(gf - ef) <= tol.atol + tol.rtol * np.abs(ef)
        bad = (e_nan != g_nan) | (e_inf & (gf != ef)) | (g_inf & ~e_inf) | (finite & ~close)
    if not np.any(bad):
        return None
    # the element shown is the one furthest off (relative difference), not the first: a
    # mistake that normalisation nearly erases in one element shows plainly in another
    furthest = np.where(bad, _relative(e, g), -1.0)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(furthest)), bad.shape)) if bad.ndim else ()
    ev, gv = e[idx] if idx else e.reshape(()), g[idx] if idx else g.reshape(())
    where = f" at index {idx}" if idx else ""
    count = int(np.count_nonzero(bad))
    more = f" ({count} of {bad.size} values differ)" if bad.size > 1 else ""
    return f"value{where}: expected {_element_text(ev, e.dtype)}, got {_element_text(gv, g.dtype)}{more}"


def _relative(e: np.ndarray, g: np.ndarray) -> np.ndarray:
    """|g − e| / max(|e|, |g|, 1e-12) per element (0 for equal values, at most 2 for a sign
    flip); inf where one side is NaN or infinite and the other is not the same."""
    ef, gf = e.astype(np.float64), g.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.maximum(np.maximum(np.abs(ef), np.abs(gf)), 1e-12)
        rel = np.abs(gf - ef) / scale
    same = (ef == gf) | (np.isnan(ef) & np.isnan(gf))
    return np.where(same, 0.0, np.where(np.isfinite(rel), rel, np.inf))


def relative_difference(expected: Any, got: Any) -> float:
    """How far `got` is from `expected`: the largest relative difference of any number in
    them (`_relative`), through tensors, arrays, numbers, sequences and dicts; inf where
    they differ in type, dtype or shape (as visible as a difference gets)."""
    if isinstance(expected, (TensorVal, ArrayVal)):
        if (
            type(got) is not type(expected)
            or got.array.shape != expected.array.shape
            or got.array.dtype != expected.array.dtype
        ):
            return np.inf
        return float(np.max(_relative(expected.array, got.array), initial=0.0))
    if is_number(expected):
        return (
            float(_relative(np.asarray(_num(expected)), np.asarray(_num(got)))) if is_number(got) else np.inf
        )
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)) and len(expected) == len(got):
        return max((relative_difference(e, g) for e, g in zip(expected, got)), default=0.0)
    if isinstance(expected, dict) and isinstance(got, dict) and set(expected) == set(got):
        return max((relative_difference(expected[k], got[k]) for k in expected), default=0.0)
    return 0.0 if diff(expected, got, strict_bool=False) is None else np.inf
