"""Stage A2: `Tensor`, an n-dimensional array with reverse-mode autodiff.

A tensor is a `TensorData` (storage, shape, strides), a backend that computes on it, and
— when it takes part in a gradient computation — a `History`: the function that made it,
that function's saved context and its inputs. The methods follow PyTorch's names, argument
order and defaults, so PyTorch serves as the test oracle.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import device_memory, inplace
from . import tensor_functions as F
from .autodiff import backpropagate
from .dtypes import DEFAULT_FLOAT, bool_, canonical_dtype, int64, is_floating, result_type
from .function import History, no_grad
from .indexing import getitem
from .selection import clamp, masked_fill, tril, triu
from .splitting import chunk, split
from .tensor_data import ShapeError, TensorData, normalize_shape, view_strides

if TYPE_CHECKING:
    from .tensor_ops import TensorBackend

TensorLike = Union[float, int, "Tensor"]

_ids = itertools.count()


class MaxResult(NamedTuple):
    """What `Tensor.max(dim)` returns, as in PyTorch."""

    values: "Tensor"
    indices: "Tensor"


class Tensor:
    """An n-dimensional array of numbers with autograd."""

    history: Optional[History]
    grad: Optional["Tensor"]
    _tensor: TensorData

    def __init__(
        self,
        v: TensorData,
        history: Optional[History] = None,
        name: Optional[str] = None,
        backend: Optional["TensorBackend"] = None,
    ):
        if backend is None:
            from .backends import get_default_backend

            backend = get_default_backend()
        self._tensor = v
        self.history = history
        self.backend = backend
        self.grad = None
        self.unique_id = next(_ids)
        self.name = name if name is not None else str(self.unique_id)

    @staticmethod
    def make(
        storage: np.ndarray,
        shape: Sequence[int],
        strides: Optional[Sequence[int]] = None,
        backend: Optional["TensorBackend"] = None,
    ) -> "Tensor":
        """A tensor over an existing 1-D storage array (no copy)."""
        return Tensor(TensorData(storage, tuple(shape), strides), backend=backend)

    def _view(self, data: TensorData) -> "Tensor":
        """A new tensor over `data` — typically this tensor's storage seen with another shape
        or strides (a permuted or reshaped view) — on this tensor's backend, with no history."""
        return Tensor(data, backend=self.backend)

    # ---- new tensors like this one (PyTorch's `Tensor.new_*`) ---------------------------

    def new_tensor(self, data: Any, dtype: Any = None) -> "Tensor":
        """A tensor holding a copy of `data`, with self's dtype (unless given) and backend."""
        array = np.array(data, dtype=self.dtype if dtype is None else canonical_dtype(dtype), order="C")
        return Tensor.make(array.reshape(-1), array.shape, backend=self.backend)

    def new_full(self, size: Sequence[int], fill_value: float, dtype: Any = None) -> "Tensor":
        """A tensor of shape `size` filled with `fill_value`, with self's dtype and backend."""
        size = normalize_shape((size,))
        dtype = self.dtype if dtype is None else canonical_dtype(dtype)
        if type(fill_value) is int and fill_value == 0:  # new_zeros: calloc'd, often no memset
            storage = np.zeros(math.prod(size), dtype=dtype)  # (32k float32: 1.0 µs, np.full 2.7)
        else:
            storage = np.full(math.prod(size), fill_value, dtype=dtype)
        if self.backend.cuda:  # a GPU copy, when one is needed, is filled there (nothing sent)
            device_memory.filled(storage, fill_value)
        return Tensor.make(storage, size, backend=self.backend)

    def new_zeros(self, *size: Any, dtype: Any = None) -> "Tensor":
        """A tensor of zeros of shape `size` (`new_zeros(2, 3)` or `new_zeros((2, 3))`), with
        self's dtype (unless given) and backend."""
        return self.new_full(*_size_and_dtype(size, dtype, 0))

    def new_ones(self, *size: Any, dtype: Any = None) -> "Tensor":
        """A tensor of ones of shape `size`, as `new_zeros`."""
        return self.new_full(*_size_and_dtype(size, dtype, 1))

    # ---- properties ------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._tensor.shape

    @property
    def dims(self) -> int:
        return self._tensor.dims

    @property
    def dtype(self) -> np.dtype:
        return self._tensor._buffer.dtype  # (TensorData.dtype, one property call less)

    def dim(self) -> int:
        return self._tensor.dims

    def size(self, dim: Optional[int] = None) -> Union[int, tuple[int, ...]]:
        """The shape, or the size of one dimension (as `torch.Tensor.size`)."""
        if dim is None:
            return self.shape
        return self.shape[self._dim(dim)]

    def numel(self) -> int:
        return self._tensor.size

    def tuple(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(storage, shape, strides): the arrays a kernel works on. For a kernel of the CUDA
        backend the storage as it is: its launcher finds the values' copy in GPU memory
        (`device_memory`), which may be newer than the host's."""
        data = self._tensor
        if self.backend.cuda:
            return (data._buffer, data._shape, data._strides)
        return data.tuple()

    def _dim(self, dim: int) -> int:
        """A dimension index, negative counting from the end; checked."""
        n = max(self.dims, 1)
        if not -n <= dim < n:
            raise IndexError(f"dimension {dim} is out of range for a tensor of shape {self.shape}")
        return dim % n

    # ---- autograd ---------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self.history is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        """`x.requires_grad = True` is `x.requires_grad_(True)` (leaves only, as PyTorch)."""
        if self.history is not None and self.history.last_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables")
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Make this tensor a leaf that accumulates a gradient in `.grad` (in place)."""
        if requires_grad and not is_floating(self.dtype):
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients, not {self.dtype}"
            )
        self.history = History() if requires_grad else None
        return self

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares storage, needs no gradient)."""
        return Tensor(self._tensor, backend=self.backend)

    def is_leaf(self) -> bool:
        return self.history is not None and self.history.last_fn is None

    def __deepcopy__(self, memo: dict) -> "Tensor":
        """`copy.deepcopy(t)` (and of a module holding t): a new tensor with its own storage
        and its own identity — backpropagation tells tensors apart by `unique_id`, so a copy
        that kept it would receive the original's gradient. As in PyTorch, only tensors
        created by the user (leaves, or constants) can be copied; `.grad` is copied too."""
        if self.history is not None and self.history.last_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol: "
                f"this one was computed by {self.history.last_fn.__name__}; copy t.detach() instead"
            )
        data = self._tensor
        out = Tensor(TensorData(data._storage.copy(), data.shape, data.strides), backend=self.backend)
        memo[id(self)] = out
        if self.history is not None:
            out.history = History()
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    def is_constant(self) -> bool:
        return self.history is None

    @property
    def parents(self) -> Iterable["Tensor"]:
        assert self.history is not None
        return [x for x in self.history.inputs if isinstance(x, Tensor)]

    def accumulate_derivative(self, x: "Tensor") -> None:
        """Add x to `.grad` (leaves only)."""
        if x.shape != self.shape:
            raise ShapeError(f"gradient of shape {x.shape} for a tensor of shape {self.shape}")
        x = x.detach()
        self.grad = x if self.grad is None else self.grad + x

    def chain_rule(self, d_output: "Tensor") -> Iterable[tuple["Tensor", "Tensor"]]:
        """Call the last function's backward; pair each tensor input with its gradient."""
        h = self.history
        assert h is not None and h.last_fn is not None and h.ctx is not None
        inplace.check_saved(h.last_fn.__name__, h.ctx.ran_at, h.ctx.saved_values)
        grads = h.last_fn.backward(h.ctx, d_output)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(h.inputs):
            raise RuntimeError(
                f"{h.last_fn.__name__}.backward returned {len(grads)} gradients for {len(h.inputs)} inputs"
            )
        out = []
        for inp, g in zip(h.inputs, grads):
            if not isinstance(inp, Tensor) or inp.is_constant():
                continue
            if g is None:
                continue
            out.append((inp, reduce_to_shape(g, inp.shape, h.last_fn.__name__)))
        return out

    def backward(self, grad: Optional["Tensor"] = None) -> None:
        """Backpropagate from this tensor, accumulating into the leaves' `.grad`.

        `grad` is ∂L/∂self; it may be omitted only when self holds a single value (then 1).
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward(): this tensor does not require grad and has no grad_fn — "
                "call .requires_grad_() on the leaves before computing it"
            )
        if grad is None:
            if self.numel() != 1:
                raise RuntimeError(
                    f"backward(): grad can be implicitly created only for scalar outputs, but this "
                    f"tensor has shape {self.shape}; call .sum() first or pass backward(grad) with "
                    f"a tensor of shape {self.shape}"
                )
            grad = self.new_ones(self.shape)
        elif not isinstance(grad, Tensor) or grad.shape != self.shape:
            got = grad.shape if isinstance(grad, Tensor) else type(grad).__name__
            raise ShapeError(f"backward(grad): grad must be a tensor of shape {self.shape}, got {got}")
        with no_grad():
            backpropagate(self, grad.detach())

    def zero_grad_(self) -> None:
        self.grad = None

    # ---- conversion -------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the values."""
        return self._tensor.to_numpy()

    def item(self) -> Union[float, int, bool]:
        if self.numel() != 1:
            raise ValueError(f"item(): the tensor has {self.numel()} elements (shape {self.shape}), not 1")
        return self.numpy().reshape(-1)[0].item()  # a Python float, int or bool

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        dtype = "" if self.dtype == np.float64 else f", dtype={self.dtype}"
        return f"tensor({self._tensor.to_string()}{dtype}{grad})"

    def __float__(self) -> float:
        return float(self.item())

    def __len__(self) -> int:
        if self.dims == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                "use .all() or .item()"
            )
        return bool(self.item())

    __hash__ = object.__hash__  # tensors are hashed by identity (== is element-wise)

    def __getitem__(self, key: Any) -> "Tensor":
        """Basic indexing as in PyTorch — ints, slices with a positive step, `...`, None:
        a view sharing this tensor's storage, differentiable (see `indexing.py`)."""
        return getitem(self, key)

    def __iter__(self) -> Iterator["Tensor"]:
        """The sub-tensors along dimension 0 (views), as iterating a torch.Tensor."""
        if self.dims == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- arithmetic -------------------------------------------------------------------
    #
    # dtypes follow PyTorch's promotion (`dtypes.result_type`: bool < int64 < float32 <
    # float64, Python numbers and 0-d tensors count only when they raise the category).
    # Operands are converted to the result's dtype first, so the kernels compute in it.
    # The kernels compute in floating point, so an integer or bool result (int64 + int64,
    # mask * mask) is computed in float64 and converted back: exact for |values| < 2⁵³.

    def _ensure(self, b: TensorLike, dtype: Any = None) -> "Tensor":
        """Turn a Python number into a 0-d tensor of `dtype` (self's if None) on self's backend."""
        if isinstance(b, Tensor):
            return b
        if isinstance(b, (int, float, np.number, np.bool_)):
            return self.new_tensor(b, dtype=self.dtype if dtype is None else dtype)
        raise TypeError(f"unsupported operand type {type(b).__name__} for a tensor operation")

    def _promote(self, b: TensorLike, floating: bool = False) -> tuple["Tensor", "Tensor", np.dtype]:
        """(self, b, dtype): both operands converted to their result dtype; with `floating`
        (true division, float functions) an integer or bool result becomes the default float."""
        if isinstance(b, Tensor) and b.dtype == self.dtype and (is_floating(self.dtype) or not floating):
            return self, b, self.dtype  # the common case, quickly
        if type(b) in (float, int, bool) and is_floating(self.dtype):
            # a Python number beside a floating tensor (`x * 2.0`): the tensor's dtype, as
            # result_type would say, without its walk and two no-op conversions
            return self, self.new_tensor(b, dtype=self.dtype), self.dtype
        dtype = result_type(self, b)
        if floating and not is_floating(dtype):
            dtype = DEFAULT_FLOAT
        return self.to(dtype), self._ensure(b, dtype).to(dtype), dtype

    @staticmethod
    def _as(out: "Tensor", dtype: np.dtype) -> "Tensor":
        """A kernel's floating result converted to the integer / bool result dtype.
        A floating result is returned as the Function made it: a wrong dtype from a
        Function's forward must show (it is a bug, not something to paper over)."""
        return out if out.dtype == dtype or is_floating(dtype) else out.to(dtype)

    def __add__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        return self._as(F.Add.apply(a, b), dtype)

    def __radd__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        return self._as(F.Add.apply(b, a), dtype)

    def __sub__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        _no_bool_minus(dtype)
        return self._as(F.Add.apply(a, F.Neg.apply(b)), dtype)

    def __rsub__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        _no_bool_minus(dtype)
        return self._as(F.Add.apply(b, F.Neg.apply(a)), dtype)

    def __mul__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        return self._as(F.Mul.apply(a, b), dtype)

    def __rmul__(self, b: TensorLike) -> "Tensor":
        a, b, dtype = self._promote(b)
        return self._as(F.Mul.apply(b, a), dtype)

    def __truediv__(self, b: TensorLike) -> "Tensor":
        """True division: the result is floating even for integer operands (as PyTorch)."""
        a, b, _ = self._promote(b, floating=True)
        return F.Mul.apply(a, F.Inv.apply(b))

    def __rtruediv__(self, b: TensorLike) -> "Tensor":
        a, b, _ = self._promote(b, floating=True)
        return F.Mul.apply(b, F.Inv.apply(a))

    def __neg__(self) -> "Tensor":
        _no_bool_minus(self.dtype)
        return self._as(F.Neg.apply(self), self.dtype)

    def __pow__(self, p: float) -> "Tensor":
        if isinstance(p, Tensor):
            raise TypeError("tensor ** tensor is not supported: the exponent must be a Python number")
        dtype = result_type(self, p)
        a = self.to(dtype) if is_floating(dtype) else self
        out = F.Mul.apply(a, a) if p == 2 else F.Pow.apply(a, float(p))
        return self._as(out, dtype)

    def __matmul__(self, b: "Tensor") -> "Tensor":
        return matmul(self, b)

    # ---- comparisons and logic: bool tensors, outside the graph -------------------------
    #
    # The kernels (task 2.3's LT and EQ) give 1.0 / 0.0; the result is converted to a bool
    # tensor. Comparisons have no gradient: the result never requires one, so calling
    # backward() through it raises, as in PyTorch.

    def _compare(self, b: TensorLike, fn: type[F.Function], swap: bool = False) -> "Tensor":
        """fn(self, b) (or fn(b, self)) as 1.0 / 0.0 in float, operands promoted, detached."""
        a, b, _ = self._promote(b)
        a, b = a.detach(), b.detach()
        return fn.apply(b, a) if swap else fn.apply(a, b)

    def __lt__(self, b: TensorLike) -> "Tensor":
        return self._compare(b, F.LT).to(bool_)

    def __gt__(self, b: TensorLike) -> "Tensor":
        return self._compare(b, F.LT, swap=True).to(bool_)

    def __le__(self, b: TensorLike) -> "Tensor":
        return (self._compare(b, F.LT) + self._compare(b, F.EQ)).to(bool_)

    def __ge__(self, b: TensorLike) -> "Tensor":
        return (self._compare(b, F.LT, swap=True) + self._compare(b, F.EQ)).to(bool_)

    def __eq__(self, b: TensorLike) -> "Tensor":  # type: ignore[override]
        return self._compare(b, F.EQ).to(bool_)

    def __ne__(self, b: TensorLike) -> "Tensor":  # type: ignore[override]
        return self._compare(b, F.EQ)._compare(0.0, F.EQ).to(bool_)

    lt, gt, le, ge, eq, ne = __lt__, __gt__, __le__, __ge__, __eq__, __ne__

    def is_close(self, b: TensorLike) -> "Tensor":
        """True where |self − b| < 1e-2 (a loose test for unit tests)."""
        return self._compare(b, F.IsClose).to(bool_)

    def _logical(self, b: TensorLike, name: str) -> "Tensor":
        b = self._ensure(b, bool_)
        if self.dtype != bool_ or b.dtype != bool_:
            raise TypeError(f"{name}: only bool tensors are supported, got {self.dtype} and {b.dtype}")
        return b

    def __and__(self, b: TensorLike) -> "Tensor":
        """Element-wise and of bool tensors (masks)."""
        return self._as(F.Mul.apply(self, self._logical(b, "&")), bool_)

    def __or__(self, b: TensorLike) -> "Tensor":
        """Element-wise or of bool tensors (masks)."""
        return self._as(F.Add.apply(self, self._logical(b, "|")), bool_)

    def __xor__(self, b: TensorLike) -> "Tensor":
        """Element-wise exclusive or of bool tensors."""
        return self != self._logical(b, "^")

    def __invert__(self) -> "Tensor":
        """~mask: element-wise not of a bool tensor."""
        self._logical(True, "~")
        return self == False  # noqa: E712  (element-wise)

    logical_not = __invert__

    # ---- element-wise functions -------------------------------------------------------

    def _floating(self) -> "Tensor":
        """Self, or a copy in the default float for an integer / bool tensor (float functions)."""
        return self if is_floating(self.dtype) else self.to(DEFAULT_FLOAT)

    def exp(self) -> "Tensor":
        return F.Exp.apply(self._floating())

    def log(self) -> "Tensor":
        return F.Log.apply(self._floating())

    def sigmoid(self) -> "Tensor":
        return F.Sigmoid.apply(self._floating())

    def relu(self) -> "Tensor":
        return self._as(F.ReLU.apply(self), self.dtype)

    def tanh(self) -> "Tensor":
        return F.Tanh.apply(self._floating())

    def sqrt(self) -> "Tensor":
        """√x = x^½; ∂/∂x = 1 / (2√x) (inf at 0, nan below, as PyTorch)."""
        return F.Pow.apply(self._floating(), 0.5)

    def abs(self) -> "Tensor":
        """|x|; ∂/∂x = sign(x), 0 at x = 0 (PyTorch's convention)."""
        return self._as(F.Abs.apply(self), self.dtype)

    __abs__ = abs

    def clamp(self, min: Optional[TensorLike] = None, max: Optional[TensorLike] = None) -> "Tensor":
        """Values limited to [min, max] (see `selection.clamp`)."""
        return clamp(self, min, max)

    clip = clamp

    def masked_fill(self, mask: "Tensor", value: TensorLike) -> "Tensor":
        """A copy with `value` where `mask` is True (see `selection.masked_fill`)."""
        return masked_fill(self, mask, value)

    def tril(self, diagonal: int = 0) -> "Tensor":
        """The lower triangle of the last two dimensions, zero above (see `selection.tril`)."""
        return tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> "Tensor":
        """The upper triangle of the last two dimensions, zero below (see `selection.triu`)."""
        return triu(self, diagonal)

    # ---- reductions -------------------------------------------------------------------

    def _reduce(self, fn: type[F.Function], dim: Optional[int], keepdim: bool, *extra: Any) -> "Tensor":
        if dim is None:
            flat = self.contiguous().view(self.numel())
            out = fn.apply(flat, 0, *extra)
            return out.view(*([1] * self.dims)) if keepdim else out.view()
        dim = self._dim(dim)
        if self.dims == 0:
            return self
        out = fn.apply(self, dim, *extra)
        if keepdim:
            return out
        shape = self.shape[:dim] + self.shape[dim + 1 :]
        if out.history is None and out._tensor.is_contiguous():  # View's forward, with nothing to record
            return out._view(TensorData.row_major(out._tensor._buffer, shape))
        return F.View.apply(out, shape)

    def sum(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """Σ over `dim` (all elements when None), dropping it unless keepdim. Integer and
        bool tensors sum to int64 (as PyTorch: `(pred == y).sum()` counts)."""
        out = self._reduce(F.Sum, dim, keepdim)
        return out if is_floating(self.dtype) else self._as(out, int64)

    def mean(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """Average over `dim` (all elements when None); floating tensors only (as PyTorch)."""
        self._need_floating("mean")
        count = self.numel() if dim is None else self.shape[self._dim(dim)]
        return self.sum(dim, keepdim) * (1.0 / count)

    def var(
        self,
        dim: Optional[int] = None,
        unbiased: bool = True,
        keepdim: bool = False,
        *,
        correction: Optional[int] = None,
    ) -> "Tensor":
        """Variance over `dim` (all elements when None), as `torch.var`:

            var = Σ (x − x̄)² / (N − c),   c = 1 (unbiased, Bessel's correction) or 0

        `correction` (PyTorch's newer name) overrides `unbiased` when given.
        """
        self._need_floating("var")
        c = (1 if unbiased else 0) if correction is None else correction
        count = self.numel() if dim is None else self.shape[self._dim(dim)]
        centred = self - self.mean(dim, keepdim=True)
        scale = 1.0 / (count - c) if count > c else float("nan")  # no degrees of freedom: nan
        return (centred * centred).sum(dim, keepdim) * scale

    def std(
        self,
        dim: Optional[int] = None,
        unbiased: bool = True,
        keepdim: bool = False,
        *,
        correction: Optional[int] = None,
    ) -> "Tensor":
        """Standard deviation √var over `dim` (as `torch.std`)."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def _need_floating(self, name: str) -> None:
        if not is_floating(self.dtype):
            raise RuntimeError(
                f"{name}(): could not infer output dtype. Input dtype must be a floating point "
                f"dtype, got {self.dtype} (convert with .double() or .float() first)"
            )

    def max(self, dim: Optional[int] = None, keepdim: bool = False) -> Union["Tensor", MaxResult]:
        """max() → the largest element; max(dim) → (values, indices) as in PyTorch.

        Indices (int64) point at the first maximal element, and so does the gradient of
        `values`; `max()` over all elements splits it evenly among tied maxima (as PyTorch).
        """
        if dim is None:
            return self._as(self._reduce(F.Max, None, keepdim, False), self.dtype)
        values = self._as(self._reduce(F.Max, dim, keepdim, True), self.dtype)
        d = self._dim(dim)
        indices = np.argmax(self.numpy(), axis=d) if self.dims else np.zeros((), np.int64)
        if keepdim and self.dims:
            indices = np.expand_dims(indices, d)
        return MaxResult(values, self.new_tensor(indices, dtype=np.int64))

    def amax(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """Maximum over `dim`; the gradient is split evenly among tied maxima (torch.amax)."""
        return self._as(self._reduce(F.Max, dim, keepdim, False), self.dtype)

    def all(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """True where every element (over `dim`, or all of them) is non-zero: a bool tensor,
        0-d without `dim` (`bool(t.all())` and `t.all().item()` give a Python bool)."""
        nonzero = self.numpy() != 0
        if dim is None:
            return self.new_tensor(np.all(nonzero), dtype=bool_)
        return self.new_tensor(np.all(nonzero, axis=self._dim(dim), keepdims=keepdim), dtype=bool_)

    def any(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """True where some element (over `dim`, or of all) is non-zero: a bool tensor."""
        nonzero = self.numpy() != 0
        if dim is None:
            return self.new_tensor(np.any(nonzero), dtype=bool_)
        return self.new_tensor(np.any(nonzero, axis=self._dim(dim), keepdims=keepdim), dtype=bool_)

    # ---- splitting ----------------------------------------------------------------------

    def split(self, split_size_or_sections: Union[int, Sequence[int]], dim: int = 0) -> tuple["Tensor", ...]:
        """Views of consecutive pieces along `dim` (see `splitting.split`)."""
        return split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple["Tensor", ...]:
        """`chunks` views of (nearly) equal size along `dim` (see `splitting.chunk`)."""
        return chunk(self, chunks, dim)

    # ---- shape ------------------------------------------------------------------------

    def permute(self, *dims: Any) -> "Tensor":
        order = tuple(self._dim(d) for d in normalize_shape(dims))
        return F.Permute.apply(self, order)

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        order = list(range(self.dims))
        a, b = self._dim(dim0), self._dim(dim1)
        order[a], order[b] = order[b], order[a]
        return F.Permute.apply(self, tuple(order))

    @property
    def T(self) -> "Tensor":
        """The tensor with its dimensions reversed (matrix transpose for 2-D)."""
        return F.Permute.apply(self, tuple(reversed(range(self.dims))))

    def _infer_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if shape.count(-1) > 1:
            raise ShapeError(f"only one dimension can be -1, got {shape}")
        if any(s < -1 for s in shape):
            raise ShapeError(f"negative size in shape {shape}")
        known = math.prod(s for s in shape if s != -1)
        if -1 in shape:
            if known == 0 or self.numel() % known:
                raise ShapeError(f"shape {shape} is invalid for a tensor of {self.numel()} elements")
            shape = tuple(self.numel() // known if s == -1 else s for s in shape)
        if math.prod(shape) != self.numel():
            raise ShapeError(
                f"shape {shape} is invalid for a tensor of shape {self.shape} ({self.numel()} elements)"
            )
        return shape

    def view(self, *shape: Any) -> "Tensor":
        """The same storage with another shape. A contiguous tensor can take any shape of its
        size; another one only a shape that merges or splits dimensions within its evenly
        strided runs (PyTorch's rule, `tensor_data.view_strides`); else a ShapeError."""
        return F.View.apply(self, self._infer_shape(normalize_shape(shape)))

    def reshape(self, *shape: Any) -> "Tensor":
        """`view` when possible, else a contiguous copy viewed."""
        shape = self._infer_shape(normalize_shape(shape))
        data = self._tensor
        viewable = data.is_contiguous() or view_strides(self.shape, data.strides, shape) is not None
        return F.View.apply(self if viewable else self.contiguous(), shape)

    def contiguous(self) -> "Tensor":
        """Self if already contiguous, else a contiguous copy."""
        if self._tensor.is_contiguous():
            return self
        return F.Copy.apply(self)

    def unsqueeze(self, dim: int) -> "Tensor":
        """Insert a dimension of size 1 at `dim`."""
        n = self.dims + 1
        if not -n <= dim < n:
            raise IndexError(f"unsqueeze: dimension {dim} out of range for shape {self.shape}")
        dim %= n
        shape = list(self.shape)
        shape.insert(dim, 1)
        return self.reshape(*shape)

    def squeeze(self, dim: Optional[int] = None) -> "Tensor":
        """Remove dimensions of size 1 (only `dim`, if given)."""
        if dim is None:
            shape = [s for s in self.shape if s != 1]
        else:
            d = self._dim(dim)
            shape = [s for k, s in enumerate(self.shape) if not (k == d and s == 1)]
        return self.reshape(*shape)

    def expand(self, *shape: Any) -> "Tensor":
        """A copy of self broadcast to `shape` (gradients sum back)."""
        target = normalize_shape(shape)
        return self + self.new_zeros(target)

    # ---- helpers used by nn -----------------------------------------------------------

    def zeros(self, shape: Optional[Sequence[int]] = None) -> "Tensor":
        return self.new_zeros(self.shape if shape is None else tuple(shape))

    def float(self) -> "Tensor":
        return self.to(np.float32)

    def double(self) -> "Tensor":
        return self.to(np.float64)

    def long(self) -> "Tensor":
        return self.to(int64)

    def bool(self) -> "Tensor":
        return self.to(bool_)

    # ---- PyTorch's conveniences, each written with the operations above -----------------

    def clone(self) -> "Tensor":
        """A copy in storage of its own; the gradient flows back to self (`Copy`)."""
        return F.Copy.apply(self)

    def type_as(self, other: "Tensor") -> "Tensor":
        """`self.to(other.dtype)`."""
        return self.to(other.dtype)

    def t(self) -> "Tensor":
        """The transpose of a matrix; a 0-d or 1-d tensor is returned as it is (as PyTorch)."""
        if self.dims > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.dims}D (use transpose(dim0, dim1))"
            )
        return self.transpose(0, 1) if self.dims == 2 else self

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        """Dimensions start_dim … end_dim merged into one: [2, 3, 4].flatten(1) → [2, 12]."""
        if self.dims == 0:
            return self.reshape(1)
        start, end = self._dim(start_dim), self._dim(end_dim)
        if start > end:
            raise RuntimeError(
                f"flatten() has invalid args: start_dim ({start_dim}) cannot come after end_dim ({end_dim})"
            )
        merged = int(np.prod(self.shape[start : end + 1], dtype=np.int64))
        return self.reshape(*self.shape[:start], merged, *self.shape[end + 1 :])

    def narrow(self, dim: int, start: int, length: int) -> "Tensor":
        """Elements start … start + length − 1 along `dim`: a view, as `self[..., start:start + length]`."""
        d = self._dim(dim)
        size = self.shape[d]
        if not -size <= start <= size:
            raise IndexError(
                f"narrow(): start out of range (expected to be in range of [{-size}, {size}], but got {start})"
            )
        start = start % size if start < 0 else start
        if length < 0 or start + length > size:
            raise RuntimeError(
                f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size})."
            )
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def min(self, dim: Optional[int] = None, keepdim: bool = False) -> Union["Tensor", MaxResult]:
        """min() → the smallest element; min(dim) → (values, indices): the max of −self, negated."""
        if dim is None:
            return -((-self).max())
        values, indices = (-self).max(dim, keepdim)
        return MaxResult(-values, indices)

    def argmax(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """The index (int64) of the first largest element, over all elements (of the
        flattened tensor) or along `dim`. Not differentiable."""
        return self._arg(np.argmax, dim, keepdim)

    def argmin(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """The index (int64) of the first smallest element (see `argmax`)."""
        return self._arg(np.argmin, dim, keepdim)

    def _arg(self, fn: Any, dim: Optional[int], keepdim: bool) -> "Tensor":
        values = self.numpy()
        if dim is None:
            index = np.asarray(fn(values), dtype=np.int64)
            return self.new_tensor(index.reshape((1,) * self.dims) if keepdim else index, dtype=np.int64)
        if self.dims == 0:
            return self.new_tensor(np.zeros((), np.int64), dtype=np.int64)
        d = self._dim(dim)
        index = fn(values, axis=d).astype(np.int64)
        return self.new_tensor(np.expand_dims(index, d) if keepdim else index, dtype=np.int64)

    def softmax(self, dim: int) -> "Tensor":
        """`nn.functional.softmax(self, dim)`."""
        from .nn.softmax import softmax  # nn is built on this class

        return softmax(self, dim)

    def log_softmax(self, dim: int) -> "Tensor":
        """`nn.functional.log_softmax(self, dim)`."""
        from .nn.softmax import log_softmax

        return log_softmax(self, dim)

    def norm(self, p: Union[float, str] = 2, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        """The p-norm along `dim` (of all elements when None): (Σ |x|^p)^{1/p}; p = inf is
        the largest |x| (its gradient split among ties, as `amax`). `F.Norm` for finite p ≥ 1."""
        if p == "fro":
            p = 2
        if not isinstance(p, (int, float)) or isinstance(p, bool) or p < 1:
            raise RuntimeError(f"norm(): p must be a number ≥ 1, inf or 'fro', got {p!r}")
        x = self._floating()
        if math.isinf(p):
            return x.abs().amax(dim, keepdim)
        axis = None if dim is None else self._dim(dim)
        return F.Norm.apply(x, float(p), axis, keepdim)

    def gather(self, dim: int, index: "Tensor") -> "Tensor":
        """`gathering.gather(self, dim, index)`."""
        from .gathering import gather

        return gather(self, dim, index)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
        """`gathering.topk`: (values, indices) of the k largest along `dim`."""
        from .gathering import topk

        return topk(self, k, dim, largest, sorted)

    # ---- in place (`inplace.py`: refused where autograd would be fooled) ------------------

    @property
    def data(self) -> "Tensor":
        """The same storage outside the graph (`detach()`): where in-place updates of a
        parameter go, as in PyTorch (`p.data.mul_(0.5)`)."""
        return self.detach()

    @data.setter
    def data(self, value: "Tensor") -> None:
        """Make this tensor hold `value`'s storage, shape and backend, keeping its place in the
        graph (a parameter stays the same object)."""
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._tensor, self.backend = value._tensor, value.backend

    def __setitem__(self, key: Any, value: Any) -> None:
        """`x[key] = value` in place (`inplace.setitem`)."""
        inplace.setitem(self, key, value)

    def fill_(self, value: Union[bool, int, float]) -> "Tensor":
        return inplace.update("fill_", self, lambda x, _: value, keep_kind=False)

    def zero_(self) -> "Tensor":
        return inplace.update("zero_", self, lambda x, _: 0, keep_kind=False)

    def copy_(self, src: "Tensor") -> "Tensor":
        """Copy `src`'s values (broadcast, converted to this tensor's dtype) into this tensor."""
        return inplace.update("copy_", self, lambda x, s: s, src, keep_kind=False)

    def add_(self, other: Any, alpha: float = 1) -> "Tensor":
        """self ← self + alpha · other."""
        return inplace.update("add_", self, lambda x, o: x + alpha * o if alpha != 1 else x + o, other)

    def sub_(self, other: Any, alpha: float = 1) -> "Tensor":
        """self ← self − alpha · other."""
        return inplace.update("sub_", self, lambda x, o: x - alpha * o if alpha != 1 else x - o, other)

    def mul_(self, other: Any) -> "Tensor":
        return inplace.update("mul_", self, lambda x, o: x * o, other)

    def div_(self, other: Any) -> "Tensor":
        if not is_floating(self.dtype):
            raise RuntimeError(
                f"div_: result type float can't be cast to the desired output type {self.dtype}"
            )
        return inplace.update("div_", self, lambda x, o: x / o, other)

    def clamp_(self, min: Optional[float] = None, max: Optional[float] = None) -> "Tensor":  # noqa: A002
        return inplace.update("clamp_", self, lambda x, _: np.clip(x, min, max), keep_kind=False)

    def masked_fill_(self, mask: "Tensor", value: float) -> "Tensor":
        """Where `mask` (bool, broadcast) is True, the value `value`."""
        return inplace.update("masked_fill_", self, lambda x, m: np.where(m, value, x), mask, keep_kind=False)

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> "Tensor":
        from .rng import generator

        return inplace.update(
            "uniform_", self, lambda x, _: generator().uniform(a, b, x.shape), keep_kind=False
        )

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> "Tensor":
        from .rng import generator

        return inplace.update(
            "normal_", self, lambda x, _: generator().normal(mean, std, x.shape), keep_kind=False
        )

    # ---- sines --------------------------------------------------------------------------

    def sin(self) -> "Tensor":
        return F.Sin.apply(self._floating())

    def cos(self) -> "Tensor":
        return F.Cos.apply(self._floating())

    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """A copy with another dtype and/or on another device, as PyTorch's `to`:

            x.to(minitorch.float32)     x.to("cuda")     x.to("cuda", minitorch.float32)
            x.to(other)                 (other's device and dtype)    x.to(device=…, dtype=…)

        Self when nothing changes. Differentiable between float types and across devices
        (the gradient is converted and moved back); to int64 truncates towards zero, to
        bool tests ≠ 0 (integers and bools carry no gradient)."""
        device, dtype = _to_arguments(args, kwargs)
        out = self
        if device is not None:
            from .device import backend_for, device_of

            backend = backend_for(device)
            if device_of(backend) != device_of(self.backend):
                out = F.Move.apply(out, backend)
        if dtype is None:
            return out
        dtype = canonical_dtype(dtype)
        if dtype == out.dtype:
            return out
        if not is_floating(dtype):  # integers and bools carry no gradient
            return F.Cast.apply(out.detach(), dtype)
        return F.Cast.apply(out, dtype)

    @property
    def device(self) -> Any:
        """The device this tensor computes on: cpu, or cuda:0 for the CUDA backend."""
        from .device import device_of

        return device_of(self.backend)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def cpu(self) -> "Tensor":
        """`to("cpu")`: self when already on the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Tensor":
        """`to("cuda")`: self when already on the GPU."""
        return self.to("cuda" if device is None else device)


def _to_arguments(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(device, dtype) of a call `to(*args, **kwargs)` (see `Tensor.to`)."""
    from .device import device as Device

    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument {next(iter(kwargs))!r}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, Device)):
            device = arg
        elif arg is not None:
            dtype = arg
    return device, dtype


def _no_bool_minus(dtype: np.dtype) -> None:
    if dtype == bool_:
        raise RuntimeError(
            "subtracting or negating bool tensors is not supported: for a mask use ~mask "
            "(not) or a ^ b (exclusive or)"
        )


def reduce_to_shape(grad: Tensor, shape: tuple[int, ...], fn_name: str = "") -> Tensor:
    """Sum a gradient of a broadcast shape back to the operand's shape.

    If the forward broadcast `a` (shape `shape`) to a larger shape, every copy of an element
    of `a` received a gradient; the element's gradient is their sum. So: sum over the leading
    dimensions `a` lacks, then (keeping the dimension) over those where `a` has size 1.
    """
    if grad.shape == tuple(shape):
        return grad
    # BEGIN SOLUTION 2.2
    extra = grad.dims - len(shape)
    if extra < 0:
        raise ShapeError(
            f"{fn_name}.backward returned a gradient of shape {grad.shape} for an input of shape {shape}"
        )
    for _ in range(extra):
        grad = F.Sum.apply(grad, 0).view(*grad.shape[1:])
    for k, size in enumerate(shape):
        if size == 1 and grad.shape[k] != 1:
            grad = F.Sum.apply(grad, k)
    # END SOLUTION 2.2
    if grad.shape != tuple(shape):
        raise ShapeError(
            f"{fn_name}.backward returned a gradient of shape {grad.shape} that does not "
            f"broadcast to its input's shape {tuple(shape)}"
        )
    return grad


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """PyTorch's `a @ b`: 1-D @ 1-D is a dot product, 1-D operands are treated as a row
    (left) or column (right) vector and that dimension is removed from the result, ≥ 2-D
    operands multiply their last two dimensions and broadcast the rest."""
    if not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected a tensor, got {type(b).__name__}")
    if a.dims == 0 or b.dims == 0:
        raise ShapeError(f"matmul: both operands need at least 1 dimension, got {a.shape} and {b.shape}")
    a2 = a.unsqueeze(0) if a.dims == 1 else a
    b2 = b.unsqueeze(-1) if b.dims == 1 else b
    out = F.MatMul.apply(a2, b2)
    if b.dims == 1:
        out = out.squeeze(-1)
    if a.dims == 1:
        out = out.squeeze(-2 if b.dims > 1 else -1)
    return out


def _size_and_dtype(size: tuple, dtype: Any, fill: float) -> tuple[tuple[int, ...], float, Any]:
    """(shape, fill, dtype) for `new_zeros(*size, dtype=…)`. PyTorch takes the sizes as
    separate ints or as one sequence; the kit's own code also writes `new_zeros(shape, dtype)`,
    a sequence then a dtype, which is read as such."""
    if len(size) == 2 and isinstance(size[0], (tuple, list)) and dtype is None:
        return tuple(size[0]), fill, size[1]
    return normalize_shape(size), fill, dtype
