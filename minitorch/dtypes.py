"""The dtypes a tensor can hold, and PyTorch's rules for the dtype of a result.

Four dtypes, stored as NumPy arrays of the same type:

    minitorch.float64   the default floating type (PyTorch's default is float32)
    minitorch.float32
    minitorch.int64     indices, token ids, counts (`tensor([1, 2])`, `arange(5)`)
    minitorch.bool_     masks, the results of comparisons (`a < b`)

Type promotion (`torch.result_type`): the categories are ordered bool < integer < floating.
A binary operation's result takes the higher category of its operands; inside one
category the wider dtype wins (float32 with float64 → float64). Operands of lower
*priority* take part only when they raise the category:

    dimensioned tensors  >  0-d tensors  >  Python numbers

so `x_float32 * 2.5` stays float32, `x_int64 * 2.5` becomes float64 (the default float),
`mask_bool + 1` becomes int64 and `x_float32 + tensor(1.0)` stays float32.

PyTorch's other names work too (`torch_alias`): `minitorch.float` is float32 (as
`torch.float`), `minitorch.double` float64, `minitorch.long` int64, `minitorch.bool` bool_.
The dtypes minitorch lacks (`minitorch.int32`, `.half`, …) raise an error that says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "bool_",
    "float32",
    "float64",
    "int64",
    "DTYPES",
    "canonical_dtype",
    "infer_dtype",
    "is_floating",
    "promote_types",
    "result_type",
    "torch_alias",
]

float64 = np.dtype(np.float64)
float32 = np.dtype(np.float32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

#: The dtypes a tensor can hold.
DTYPES = (float64, float32, int64, bool_)

#: PyTorch's other names of these dtypes.
TORCH_ALIASES = {"float": float32, "double": float64, "long": int64, "bool": bool_}

#: PyTorch's dtypes that minitorch does not have, and what they hold.
NOT_SUPPORTED = {
    "half": "16-bit floats",
    "float16": "16-bit floats",
    "bfloat16": "16-bit brain floats",
    "int": "32-bit integers",
    "int32": "32-bit integers",
    "short": "16-bit integers",
    "int16": "16-bit integers",
    "int8": "8-bit integers",
    "uint8": "8-bit unsigned integers",
    "cfloat": "complex numbers",
    "complex64": "complex numbers",
    "cdouble": "complex numbers",
    "complex128": "complex numbers",
}

#: The default floating dtype (what `tensor([1.5])`, `zeros(2)` and `int_tensor / 2` give).
DEFAULT_FLOAT = float64


def canonical_dtype(dtype: Any) -> np.dtype:
    """`dtype` as one of `DTYPES`; Python's `bool`, `int` and `float` name bool_, int64 and
    float64 (as in `tensor(x, dtype=bool)`). Raises TypeError for anything else."""
    if dtype is bool:
        return bool_
    if dtype is int:
        return int64
    if dtype is float:
        return float64
    try:
        out = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"unsupported dtype {dtype!r}: use minitorch.float64, float32, int64 or bool_") from e
    if out not in DTYPES:
        raise TypeError(f"unsupported dtype {out}: use minitorch.float64, float32, int64 or bool_")
    return out


def infer_dtype(array: np.ndarray) -> np.dtype:
    """The dtype `tensor(data)` gives data converted to `array` (as `torch.tensor`):
    bools → bool_, integers → int64, float32 stays, other floats → float64."""
    kind = array.dtype.kind
    if kind == "b":
        return bool_
    if kind in "iu":
        return int64
    if array.dtype == float32:
        return float32
    if kind == "f":
        return float64
    raise TypeError(f"tensor(): cannot make a tensor from data of dtype {array.dtype}")


def is_floating(dtype: Any) -> bool:
    """Whether `dtype` is a floating type (only those can require gradients)."""
    if dtype is float64 or dtype is float32:  # an array's dtype, as it nearly always is:
        return True  # no conversion (every tensor operation asks, twice; np.dtype() is 0.3 µs)
    return np.dtype(dtype).kind == "f"


def _category(dtype: np.dtype) -> int:
    return {"b": 0, "i": 1, "u": 1, "f": 2}[np.dtype(dtype).kind]


def promote_types(a: Any, b: Any) -> np.dtype:
    """The smallest dtype both `a` and `b` convert to without losing their kind
    (`torch.promote_types`): bool < int64 < float32 < float64."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    order = [bool_, int64, float32, float64]
    return max(a, b, key=lambda d: order.index(d) if d in order else 1)


def _python_dtype(x: Any) -> np.dtype:
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    return DEFAULT_FLOAT


def result_type(*operands: Any) -> np.dtype:
    """The dtype of `op(*operands)` for tensors and Python numbers (`torch.result_type`).

    Dimensioned tensors decide the dtype; a 0-d tensor or a Python number counts only when
    it is of a higher category (bool < integer < floating) than all of them — a Python
    float then gives the default float, a 0-d tensor its own dtype.
    """
    groups: list[list[np.dtype]] = [[], [], []]  # dimensioned, 0-d, Python numbers
    for x in operands:
        if hasattr(x, "_tensor"):
            groups[0 if x.dims > 0 else 1].append(np.dtype(x.dtype))
        else:
            groups[2].append(_python_dtype(x))
    out: np.dtype | None = None
    for group in groups:
        if not group:
            continue
        best = group[0]
        for d in group[1:]:
            best = promote_types(best, d)
        if out is None or _category(best) > _category(out):
            out = best
    assert out is not None, "result_type() needs at least one operand"
    return out


def torch_alias(name: str) -> np.dtype:
    """The dtype PyTorch calls `torch.<name>` (`float` → float32, `long` → int64, …).

    Raises:
        AttributeError: `name` is not one of `TORCH_ALIASES`; for a PyTorch dtype minitorch
            lacks (`int32`, `half`, …) the message says so and names the four it has.
    """
    if name in TORCH_ALIASES:
        return TORCH_ALIASES[name]
    if name in NOT_SUPPORTED:
        raise AttributeError(
            f"minitorch has no dtype {name} (torch.{name}: {NOT_SUPPORTED[name]}); its dtypes are "
            f"float64 (torch.double), float32 (torch.float), int64 (torch.long) and bool_ (torch.bool)"
        )
    raise AttributeError(f"module 'minitorch' has no attribute {name!r}")
