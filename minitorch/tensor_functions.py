"""Stage A2: the elementary differentiable tensor functions (tasks 2.3 and 2.4).

Each is a `Function` (see `function.py`): a `forward` computed with the tensor's backend
(`a.backend.add_zip(a, b)`, …) and a `backward` that turns ∂L/∂out into ∂L/∂input for
every input. If an input was broadcast, the gradient that backward returns has the
broadcast shape; the framework sums it back to the input's shape (`Tensor.chain_rule`).

`Tensor`'s methods (`a + b`, `a.sum(1)`, `a @ b`, …) call these functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .autodiff import Context
from .function import Function
from .tensor_data import ShapeError, TensorData, shape_broadcast, view_strides

if TYPE_CHECKING:
    from .tensor import Tensor


def _grad_like(ctx_shape: tuple[int, ...], grad: "Tensor") -> "Tensor":
    """Expand `grad` (broadcastable to ctx_shape) to a fresh tensor of shape ctx_shape."""
    return grad.backend.id_map(grad, grad.new_zeros(ctx_shape))


def _size(shape: Sequence[int]) -> int:
    return math.prod(shape)


# ---------------------------------------------------------------------------------------
# ## Task 2.3 (forward) and Task 2.4 (backward): the elementary functions


class Neg(Function):
    """out = −a."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        return a.backend.neg_map(a)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = −∂L/∂out."""
        # BEGIN SOLUTION 2.4
        return (grad_output.backend.neg_map(grad_output),)
        # END SOLUTION 2.4


class Inv(Function):
    """out = 1 / a."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a)
        return a.backend.inv_map(a)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = −∂L/∂out / a²."""
        # BEGIN SOLUTION 2.4
        (a,) = ctx.saved_values
        return (grad_output.backend.inv_back_zip(a, grad_output),)
        # END SOLUTION 2.4


class Add(Function):
    """out = a + b (broadcasting)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        return a.backend.add_zip(a, b)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", "Tensor"]:
        """∂L/∂a = ∂L/∂out, ∂L/∂b = ∂L/∂out (summed back to each shape by the framework)."""
        # BEGIN SOLUTION 2.4
        return grad_output, grad_output
        # END SOLUTION 2.4


class Mul(Function):
    """out = a · b (element-wise, broadcasting)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a, b)
        return a.backend.mul_zip(a, b)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", "Tensor"]:
        """∂L/∂a = ∂L/∂out · b, ∂L/∂b = ∂L/∂out · a."""
        # BEGIN SOLUTION 2.4
        a, b = ctx.saved_values
        mul = grad_output.backend.mul_zip
        return mul(grad_output, b), mul(grad_output, a)
        # END SOLUTION 2.4


class Sigmoid(Function):
    """out = σ(a) = 1 / (1 + e^{−a})."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        out = a.backend.sigmoid_map(a)
        ctx.save_for_backward(out)
        return out
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out · σ(a) · (1 − σ(a))."""
        # BEGIN SOLUTION 2.4
        (s,) = ctx.saved_values
        b = grad_output.backend
        one_minus_s = b.add_zip(b.neg_map(s), s.new_ones(()))
        return (b.mul_zip(grad_output, b.mul_zip(s, one_minus_s)),)
        # END SOLUTION 2.4


class ReLU(Function):
    """out = max(0, a)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a)
        return a.backend.relu_map(a)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out where a > 0, else 0."""
        # BEGIN SOLUTION 2.4
        (a,) = ctx.saved_values
        return (grad_output.backend.relu_back_zip(a, grad_output),)
        # END SOLUTION 2.4


class Tanh(Function):
    """out = tanh(a)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        out = a.backend.tanh_map(a)
        ctx.save_for_backward(out)
        return out
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out · (1 − tanh²(a))."""
        # BEGIN SOLUTION 2.4
        (t,) = ctx.saved_values
        b = grad_output.backend
        one = t.new_ones(())
        return (b.mul_zip(grad_output, b.add_zip(one, b.neg_map(b.mul_zip(t, t)))),)
        # END SOLUTION 2.4


class Log(Function):
    """out = ln(a)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a)
        return a.backend.log_map(a)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out / a."""
        # BEGIN SOLUTION 2.4
        (a,) = ctx.saved_values
        return (grad_output.backend.log_back_zip(a, grad_output),)
        # END SOLUTION 2.4


class Exp(Function):
    """out = e^a."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        out = a.backend.exp_map(a)
        ctx.save_for_backward(out)
        return out
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out · e^a."""
        # BEGIN SOLUTION 2.4
        (out,) = ctx.saved_values
        return (grad_output.backend.mul_zip(grad_output, out),)
        # END SOLUTION 2.4


class Pow(Function):
    """out = a^p for a Python number p."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", p: float) -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a, p)
        exponent = a.new_full((), p)
        return a.backend.pow_zip(a, exponent)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        """∂L/∂a = ∂L/∂out · p · a^{p−1}."""
        # BEGIN SOLUTION 2.4
        a, p = ctx.saved_values
        b = grad_output.backend
        exponent = a.new_full((), p - 1.0)
        scale = a.new_full((), p)
        return b.mul_zip(grad_output, b.mul_zip(scale, b.pow_zip(a, exponent))), None
        # END SOLUTION 2.4


class Sum(Function):
    """out = Σ_dim a, keeping `dim` with size 1 (Tensor.sum drops it unless keepdim)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", dim: int) -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a.shape)
        return a.backend.add_reduce(a, dim)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        """∂L/∂a[…, i, …] = ∂L/∂out[…, 0, …] for every i: the gradient is copied along dim."""
        # BEGIN SOLUTION 2.4
        (shape,) = ctx.saved_values
        return _grad_like(shape, grad_output), None
        # END SOLUTION 2.4


class Max(Function):
    """out = max_dim a, keeping `dim` with size 1.

    Ties, as in PyTorch: with `first_only` (what `Tensor.max(dim)` uses) the gradient goes
    to the first maximal element along `dim`, the one `indices` names; otherwise (`max()`
    over everything, `amax`) it is split evenly among the tied maxima.
    """

    @staticmethod
    def forward(ctx: Context, a: "Tensor", dim: int, first_only: bool) -> "Tensor":
        out = a.backend.max_reduce(a, dim)
        if first_only:
            values = a.numpy()
            first = np.expand_dims(np.argmax(values, axis=dim), dim)
            share = np.zeros_like(values)
            np.put_along_axis(share, first, 1.0, axis=dim)
            ctx.save_for_backward(a.new_tensor(share))
        else:
            is_max = a.backend.eq_zip(a, out)
            count = a.backend.add_reduce(is_max, dim)
            ctx.save_for_backward(a.backend.mul_zip(is_max, a.backend.inv_map(count)))
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None, None]:
        (share,) = ctx.saved_values
        return grad_output.backend.mul_zip(share, grad_output), None, None


class LT(Function):
    """out = 1.0 where a < b else 0.0 (no gradient)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        return a.backend.lt_zip(a, b)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple[None, None]:
        return None, None


class EQ(Function):
    """out = 1.0 where a == b else 0.0 (no gradient)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        return a.backend.eq_zip(a, b)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple[None, None]:
        return None, None


class IsClose(Function):
    """out = 1.0 where |a − b| < 1e-2 else 0.0 (no gradient)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        return a.backend.is_close_zip(a, b)

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple[None, None]:
        return None, None


class Abs(Function):
    """out = |a| = max(a, −a) (nan stays nan)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        ctx.save_for_backward(a)
        return a.backend.max_zip(a, a.backend.neg_map(a))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        """∂L/∂a = ∂L/∂out · sign(a), with sign(0) = 0 (PyTorch's subgradient)."""
        (a,) = ctx.saved_values
        b = grad_output.backend
        zero = a.new_zeros(())
        sign = b.add_zip(b.lt_zip(zero, a), b.neg_map(b.lt_zip(a, zero)))
        return (b.mul_zip(grad_output, sign),)


class Permute(Function):
    """out = a with dimensions reordered (a view: no data moves)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", order: tuple[int, ...]) -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(order)
        return a._view(a._tensor.permute(*order))
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        """Undo the permutation: dimension order[k] of a is dimension k of out."""
        # BEGIN SOLUTION 2.4
        (order,) = ctx.saved_values
        inverse = [0] * len(order)
        for k, o in enumerate(order):
            inverse[o] = k
        return grad_output._view(grad_output._tensor.permute(*inverse)), None
        # END SOLUTION 2.4


class View(Function):
    """out = a's storage seen with another shape: row-major when a is contiguous, else with
    the strides of PyTorch's rule (`tensor_data.view_strides`), where they exist."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", shape: tuple[int, ...]) -> "Tensor":
        ctx.save_for_backward(a.shape)
        # `Tensor.view` checked that the sizes agree; a contiguous storage read row-major.
        if a._tensor.is_contiguous():
            return a._view(TensorData.row_major(a._tensor._buffer, shape))
        strides = view_strides(a.shape, a._tensor.strides, shape)
        if strides is None:
            raise ShapeError(
                f"view({shape}): view size is not compatible with input tensor's size and stride (shape "
                f"{a.shape}, strides {a._tensor.strides}: at least one dimension spans across two contiguous "
                f"subspaces). Use .reshape(...) instead, or call .contiguous() first"
            )
        return a._view(TensorData(a._tensor._buffer, shape, strides))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        (shape,) = ctx.saved_values
        g = grad_output.contiguous()
        return g._view(TensorData.row_major(g._tensor._buffer, shape)), None


class Copy(Function):
    """out = a copied into a fresh contiguous tensor (same dtype)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        return a.backend.id_map(a, a.new_zeros(a.shape))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor"]:
        return (grad_output,)


def batched_matmul(a: "Tensor", b: "Tensor") -> "Tensor":
    """a @ b for a [..., n, k] and b [..., k, m] with broadcast batch dimensions (no autograd).

    Batch dimensions are flattened to one so the backend kernel sees 3-D tensors
    [B, n, k] @ [B, k, m]; an operand whose batch is all 1s is passed with batch 1 and the
    kernel broadcasts it (stride 0); one broadcast in only some dimensions is expanded first.
    """
    # Each shape read once: every operation passes here, and a 64 × 64 product spent as long
    # in this function's attribute reads and views as in its kernel.
    a_data, b_data = a._tensor, b._tensor
    a_shape, b_shape = a_data.shape, b_data.shape
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a_shape} and {b_shape} do not align "
            f"(a's last size {a_shape[-1]} ≠ b's second-to-last size {b_shape[-2]})"
        )
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    batch = a_batch if a_batch == b_batch else shape_broadcast(a_batch, b_batch)
    n, k, m = a_shape[-2], a_shape[-1], b_shape[-1]

    def as_3d(t: "Tensor", rows: int, cols: int) -> "Tensor":
        data = t._tensor
        st = data.strides
        if _size(data.shape[:-2]) == 1:
            # A strided view with batch 1; the kernels take any strides, so e.g. a
            # transposed weight Wᵀ is multiplied in place rather than copied first.
            return t._view(TensorData.view_of(data._buffer, (1, rows, cols), (0, st[-2], st[-1])))
        if data.shape[:-2] != batch:
            t = _grad_like(batch + (rows, cols), t)  # expand the partly broadcast batch
            data = t._tensor
            st = data.strides
        if all(st[i] == st[i + 1] * data.shape[i + 1] for i in range(len(batch) - 1)):
            # The batch dimensions merge into one (each steps over the next whole): a view
            # [B, rows, cols] with any strides in the last two, e.g. a transposed aᵀ in a
            # backward pass, is multiplied in place rather than copied first.
            return t._view(
                TensorData(data._buffer, (_size(batch), rows, cols), (st[len(batch) - 1], st[-2], st[-1]))
            )
        return t.contiguous().view(_size(batch), rows, cols)

    if _size(b_batch) == 1 and _size(a_batch) > 1 and a_data.is_contiguous():
        # One matrix b for a whole batch of contiguous a (a linear layer on [B, T, k]):
        # the batch's rows are one [B·T, k] matrix, so one big product replaces B small ones.
        rows = _size(a_shape[:-1])
        out = a.backend.matrix_multiply(
            a._view(TensorData.view_of(a_data._buffer, (1, rows, k), (0, k, 1))), as_3d(b, k, m)
        )
    else:
        out = a.backend.matrix_multiply(as_3d(a, n, k), as_3d(b, k, m))
    data = out._tensor
    if data.is_contiguous() and isinstance(data._buffer, np.ndarray) and data._buffer.size == data.size:
        # The backend's fresh row-major [B, n, m], seen as batch + (n, m) (no graph node).
        return out._view(TensorData.row_major(data._buffer, batch + (n, m)))
    return out.view(*(batch + (n, m)))


class MatMul(Function):
    """out = a @ b for a [..., n, k], b [..., k, m] (batch dimensions broadcast)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", b: "Tensor") -> "Tensor":
        # BEGIN SOLUTION 2.3
        ctx.save_for_backward(a, b)
        return batched_matmul(a, b)
        # END SOLUTION 2.3

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", "Tensor"]:
        """∂L/∂a = ∂L/∂out @ bᵀ  [..., n, k];  ∂L/∂b = aᵀ @ ∂L/∂out  [..., k, m]."""
        # BEGIN SOLUTION 2.4
        a, b = ctx.saved_values
        grad_a = batched_matmul(grad_output, b.transpose(-1, -2))
        if b.dims == 2 and a.dims > 2:
            # One matrix b serves the whole batch, so ∂L/∂b = Σ_batch aᵀ @ ∂L/∂out: fold the
            # batch into the inner dimension, ONE product [k, N·n] @ [N·n, m], instead of
            # N products and a sum over them (a linear layer applied to [N, n, k] inputs).
            k, m = b.shape
            grad_b = batched_matmul(a.reshape(-1, k).transpose(0, 1), grad_output.reshape(-1, m))
        else:
            grad_b = batched_matmul(a.transpose(-1, -2), grad_output)
        return grad_a, grad_b
        # END SOLUTION 2.4


class Cast(Function):
    """out = a converted to another dtype; the gradient is converted back."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", dtype: np.dtype) -> "Tensor":
        ctx.save_for_backward(a.dtype)
        return _converted(a, dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        (dtype,) = ctx.saved_values
        return _converted(grad_output, dtype), None


def _converted(a: "Tensor", dtype: np.dtype) -> "Tensor":
    """a's values as `dtype`, as NumPy converts them (to an integer: towards zero; to bool:
    ≠ 0). On the GPU the copy kernel converts as it writes, so the values stay there."""
    if a.backend.cuda:
        out = a.new_zeros(a.shape, dtype=dtype)
        a.backend.id_map(a, out)
        return out
    return a.new_tensor(a.numpy(), dtype=dtype)


class Move(Function):
    """out = a's values on another backend (`Tensor.to(device)`); the gradient moves back."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor", backend: Any) -> "Tensor":
        ctx.save_for_backward(a.backend)
        values = np.array(a.numpy(), order="C")
        return type(a).make(values.reshape(-1), values.shape, backend=backend)

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None]:
        (backend,) = ctx.saved_values
        values = np.array(grad_output.numpy(), order="C")
        return type(grad_output).make(values.reshape(-1), values.shape, backend=backend), None


class Sin(Function):
    """out = sin(a);  ∂L/∂a = ∂L/∂out · cos(a). (Computed with NumPy on the values: sines
    are for positional encodings, made once, not for the kernels of a training step.)"""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        ctx.save_for_backward(a)
        return a.new_tensor(np.sin(a.numpy()))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> "Tensor":
        (a,) = ctx.saved_values
        return grad_output * a.new_tensor(np.cos(a.numpy()))


class Cos(Function):
    """out = cos(a);  ∂L/∂a = −∂L/∂out · sin(a) (NumPy, as `Sin`)."""

    @staticmethod
    def forward(ctx: Context, a: "Tensor") -> "Tensor":
        ctx.save_for_backward(a)
        return a.new_tensor(np.cos(a.numpy()))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> "Tensor":
        (a,) = ctx.saved_values
        return grad_output * a.new_tensor(-np.sin(a.numpy()))


class Norm(Function):
    r"""out = ‖a‖_p along `dim` (all elements when None) = (Σ |a|^p)^{1/p}, for p ≥ 1 finite.

        ∂‖a‖_p/∂a = sign(a) · |a|^{p−1} / ‖a‖_p^{p−1}          (0 where ‖a‖_p = 0)

    The last convention is PyTorch's: at a = 0 the norm has no derivative, and 0 is the
    subgradient that keeps training going. (NumPy on the values, as `Sin`.)
    """

    @staticmethod
    def forward(ctx: Context, a: "Tensor", p: float, dim: Any, keepdim: bool) -> "Tensor":
        x = a.numpy()
        norm = np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1.0 / p)
        ctx.save_for_backward(a, norm, p, dim, keepdim)
        return a.new_tensor(norm if keepdim else np.squeeze(norm, axis=dim))

    @staticmethod
    def backward(ctx: Context, grad_output: "Tensor") -> tuple["Tensor", None, None, None]:
        a, norm, p, dim, keepdim = ctx.saved_values
        x = a.numpy()
        g = grad_output.numpy()
        if not keepdim:
            g = np.expand_dims(g, dim) if dim is not None else g.reshape(norm.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(norm > 0, g / norm ** (p - 1), 0.0)
        return a.new_tensor(np.sign(x) * np.abs(x) ** (p - 1) * scale), None, None, None
