r"""Parameter initialisation (`minitorch.nn.init`, as `torch.nn.init`): fill a tensor in place.

Every function overwrites the values of the tensor it is given (a Tensor, or a `Parameter`,
whose held tensor is filled) and returns what it was given, so a model's own code runs
unchanged:

    nn.init.xavier_uniform_(self.proj.weight)
    nn.init.zeros_(self.proj.bias)

The write bypasses autograd, as PyTorch's `torch.no_grad()` inside these functions does:
initialising is not part of the model. Random values come from minitorch's generator
(`manual_seed`).

The scaled initialisations keep the variance of activations (forward) or of gradients
(backward) about the same from layer to layer. For a weight [fan_out, fan_in, k…] (a
Linear's [out, in], a Conv1d's [out, in, k]) with receptive field r = Π k:

    fan_in = in · r,   fan_out = out · r

    xavier (Glorot & Bengio, 2010):   std = gain · √(2 / (fan_in + fan_out))
    kaiming (He et al., 2015):        std = gain / √fan        (fan = fan_in or fan_out)

and the uniform variants draw from U(−√3·std, √3·std), which has that std. The `gain`
undoes the shrinking of the nonlinearity that follows (`calculate_gain`: tanh 5/3,
relu √2, leaky_relu(a) √(2 / (1 + a²)), linear and sigmoid 1).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np

from .. import inplace
from ..module import Parameter
from ..rng import generator as _generator
from ..tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
]

Target = Union[Tensor, Parameter]

_LINEAR = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def _tensor_of(name: str, target: Target, need_float: bool = True) -> Tensor:
    t = target.value if isinstance(target, Parameter) else target
    if not isinstance(t, Tensor):
        raise TypeError(
            f"nn.init.{name}: expected a minitorch Tensor or a Parameter holding one, got {type(t).__name__}"
        )
    if need_float and not np.issubdtype(t.dtype, np.floating):
        raise TypeError(f"nn.init.{name}: the tensor must be float32 or float64, got dtype {t.dtype}")
    return t


def _fill(name: str, target: Target, values: Any, need_float: bool = True) -> Target:
    """Write `values` (broadcast to the tensor's shape) into the tensor's own storage, through
    its strides, so that every view of it, and an optimizer holding it, sees the new values."""
    t = _tensor_of(name, target, need_float)
    inplace.strided(t)[...] = values
    inplace.mark_written(t._tensor._storage)
    return target


def _shape(name: str, target: Target) -> tuple[int, ...]:
    return tuple(_tensor_of(name, target).shape)


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The gain for `nonlinearity` (module docstring); `param` is leaky_relu's negative slope (0.01 if None)."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(name: str, target: Target) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight [out, in, k…] (module docstring)."""
    shape = _shape(name, target)
    if len(shape) < 2:
        raise ValueError(
            f"nn.init.{name}: Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _no_generator(name: str, generator: Any) -> None:
    if generator is not None:
        raise ValueError(
            f"nn.init.{name}: generator= is not supported; minitorch has one generator, seeded by manual_seed"
        )


# ---- plain fills -------------------------------------------------------------------------


def uniform_(tensor: Target, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Target:
    """Fill with samples of U(a, b)."""
    _no_generator("uniform_", generator)
    return _fill("uniform_", tensor, _generator().uniform(a, b, _shape("uniform_", tensor)))


def normal_(tensor: Target, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Target:
    """Fill with samples of N(mean, std²)."""
    _no_generator("normal_", generator)
    return _fill("normal_", tensor, _generator().normal(mean, std, _shape("normal_", tensor)))


def trunc_normal_(
    tensor: Target,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Any = None,
) -> Target:
    """Fill with samples of N(mean, std²) conditioned on [a, b] (absolute bounds, as in
    PyTorch): samples outside are drawn again until every one lies inside."""
    _no_generator("trunc_normal_", generator)
    if not a < b:
        raise ValueError(f"nn.init.trunc_normal_: the bounds must satisfy a < b, got a={a}, b={b}")
    shape = _shape("trunc_normal_", tensor)
    values = _generator().normal(mean, std, shape)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = _generator().normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return _fill("trunc_normal_", tensor, values)


def constant_(tensor: Target, val: float) -> Target:
    """Fill with `val` (any dtype)."""
    return _fill("constant_", tensor, val, need_float=False)


def ones_(tensor: Target) -> Target:
    """Fill with 1 (any dtype)."""
    return _fill("ones_", tensor, 1, need_float=False)


def zeros_(tensor: Target) -> Target:
    """Fill with 0 (any dtype)."""
    return _fill("zeros_", tensor, 0, need_float=False)


def eye_(tensor: Target) -> Target:
    """Fill a 2-D tensor with the identity (ones on the diagonal, as many as fit)."""
    shape = _shape("eye_", tensor)
    if len(shape) != 2:
        raise ValueError(f"nn.init.eye_: Only tensors with 2 dimensions are supported (got shape {shape})")
    return _fill("eye_", tensor, np.eye(*shape))


# ---- scaled for depth ----------------------------------------------------------------------


def xavier_uniform_(tensor: Target, gain: float = 1.0, generator: Any = None) -> Target:
    """Glorot uniform: U(−√3·std, √3·std), std = gain · √(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Target, gain: float = 1.0, generator: Any = None) -> Target:
    """Glorot normal: N(0, std²), std = gain · √(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(name: str, tensor: Target, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _fans(name, tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Target,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Target:
    """He uniform: U(−√3·std, √3·std), std = gain / √fan (`a`: leaky_relu's negative slope)."""
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Target,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Target:
    """He normal: N(0, std²), std = gain / √fan."""
    return normal_(tensor, 0.0, _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Target, gain: float = 1.0, generator: Any = None) -> Target:
    """A (semi-)orthogonal matrix, times `gain` (Saxe et al., 2013): the tensor seen as
    [rows = size(0), cols = the rest] gets orthonormal rows (rows ≤ cols) or columns.
    Q of the QR decomposition of a Gaussian matrix, each column's sign fixed by R's
    diagonal so that Q is uniformly distributed."""
    _no_generator("orthogonal_", generator)
    shape = _shape("orthogonal_", tensor)
    if len(shape) < 2:
        raise ValueError(
            f"nn.init.orthogonal_: Only tensors with 2 or more dimensions are supported (got shape {shape})"
        )
    rows, cols = shape[0], math.prod(shape[1:])
    flat = _generator().standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill("orthogonal_", tensor, gain * q.reshape(shape))
