"""minitorch: a PyTorch-like deep-learning library in Python + Numba, built in stages.

A0 operators and modules · A1 scalar autodiff · A2 tensors · A3 fast backends ·
A4 convolution · A5 recurrent networks · A6 attention.
"""

from typing import Any

from . import wide_vectors  # first, before anything imports Numba: 512-bit vectors on Intel CPUs

from . import operators
from .autodiff import Context, backpropagate, central_difference, topological_sort
from .module import Module, Parameter
from .scalar import Scalar, ScalarFunction, derivative_check
from .tensor_data import IndexingError, ShapeError, TensorData, shape_broadcast
from . import dtypes
from .dtypes import bool_, float32, float64, int64, promote_types, result_type
from .tensor_ops import SimpleOps, TensorBackend, TensorOps
from .function import Function, grad_enabled, no_grad
from .tensor import Tensor
from .constructors import arange, from_numpy, ones, rand, randn, tensor, zeros
from .rng import manual_seed
from .joining import cat, stack
from .splitting import chunk, split
from .selection import clamp, masked_fill, tril, triu, where
from .containers import ModuleDict, ModuleList, Sequential
from .backends import (
    CudaBackend,
    FastBackend,
    SimpleBackend,
    get_default_backend,
    set_default_backend,
)
from . import optim, datasets, nn
from .serialization import load, save
from . import autograd, cuda
from .device import device

# PyTorch's free functions (`minitorch.exp(x)`, `minitorch.softmax(x, 1)`, …) and the
# constructors beside them (`zeros_like`, `full`, `eye`, `linspace`)
from .free_functions import (
    abs,
    argmax,
    argmin,
    bmm,
    clone,
    cos,
    eye,
    exp,
    flatten,
    full,
    full_like,
    gather,
    is_tensor,
    linspace,
    log,
    log_softmax,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    multinomial,
    narrow,
    norm,
    numel,
    ones_like,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sin,
    softmax,
    sqrt,
    squeeze,
    std,
    sum,
    t,
    tanh,
    topk,
    transpose,
    unsqueeze,
    var,
    zeros_like,
)

__version__ = "0.1.0"

#: What `from minitorch import *` gives: every public name but those that would shadow
#: Python's own functions in the importing file (`minitorch.sum`, `.max`, … stay reachable
#: as attributes, as NumPy does it).
__all__ = [
    name
    for name in dir()
    if not name.startswith("_") and name not in ("abs", "max", "min", "pow", "sum", "Any")
]


def __getattr__(name: str) -> Any:
    """PyTorch's other dtype names, `minitorch.float` (float32), `.double`, `.long` and
    `.bool`, and a clear error for the dtypes minitorch lacks (`dtypes.torch_alias`).
    Answered here rather than bound as names, so that `from minitorch import *` never
    shadows Python's own `float` and `bool`."""
    return dtypes.torch_alias(name)
