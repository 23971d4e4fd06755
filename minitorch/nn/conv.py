"""Stage A4, tasks 4.1 and 4.2: 1-D and 2-D convolution (as `torch.nn.functional.conv1d/2d`).

A convolution slides a bank of filters over the input. In 1-D, with input x [N, C_in, L],
weight w [C_out, C_in, K] and bias b [C_out]:

    out[n, o, l] = b[o] + Σ_c Σ_k w[o, c, k] · x[n, c, l·stride + k·dilation − padding]

where x is 0 outside 0 … L−1 (zero padding), and

    L_out = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1.

(Like PyTorch, this is a cross-correlation: the filter is not flipped.)

## How it is computed: im2col + one matrix product

For every output position (n, l), copy the C_in·K input values the filter sees into one
row of a matrix, `cols` [N·L_out, C_in·K] ("image to columns", `im2col1d`). Then the whole
convolution is one matrix product with the flattened weight W [C_out, C_in·K]:

    out[(n, l), o] = Σ_j cols[(n, l), j] · W[o, j]        i.e.  out = cols @ Wᵀ

which BLAS computes at close to peak speed. The backward pass is two more products and the
inverse copy:

    ∂L/∂W    = gᵀ @ cols            g = ∂L/∂out as [N·L_out, C_out]
    ∂L/∂cols = g @ W                 then  ∂L/∂x = col2im(∂L/∂cols)
    ∂L/∂b[o] = Σ_{n,l} g[(n, l), o]

`col2im1d` is the adjoint of `im2col1d`: every input value was copied into several rows
of cols (once per filter position that covers it), so its gradient is the *sum* of the
gradients of its copies.

The kernels are Numba-parallel (`prange` over output positions for im2col, over
(sample, channel) planes for col2im, so no two iterations write the same value); the
matrix products are the tensor backend's (stage A3's tiled Numba matmul on the parallel
CPU backend; NumPy's `@` on the others). 2-D is the same with (h, w) positions and
(kh, kw) filter offsets.
"""

from __future__ import annotations

import math
from typing import Optional, Union

import numba
import numpy as np
from numba import prange

from ..autodiff import Context
from ..module import Module, Parameter
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..function import Function
from ..tensor_ops import TensorBackend
from ._kernels import array, check_float, common_dtype, matmul, wrap
from .linear import uniform

IntOr2 = Union[int, tuple[int, int]]
Padding1d = Union[int, str, tuple[int]]
Padding2d = Union[int, str, tuple[int, int]]

__all__ = ["conv1d", "conv2d", "Conv1d", "Conv2d", "im2col1d", "col2im1d", "im2col2d", "col2im2d"]


# ---------------------------------------------------------------------------------------
# ## Task 4.1: conv1d — the kernels


@numba.njit(parallel=True, cache=True)
def im2col1d(x: np.ndarray, cols: np.ndarray, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
    """Fill cols [N, L_out, C·K] from x [N, C, L]:

        cols[n, l, c·K + k] = x[n, c, l·stride + k·dilation − padding]   (0 outside 0 … L−1)

    `padding` is the number of zeros before position 0 (those after the end follow from
    L_out = cols.shape[1]). Parallel over the N·L_out rows of cols.
    """
    # BEGIN SOLUTION 4.1
    n_batch, channels, length = x.shape
    l_out = cols.shape[1]
    for row in prange(n_batch * l_out):
        n = row // l_out
        l = row % l_out
        start = l * stride - padding
        for c in range(channels):
            for k in range(kernel_size):
                pos = start + k * dilation
                if pos >= 0 and pos < length:
                    cols[n, l, c * kernel_size + k] = x[n, c, pos]
                else:
                    cols[n, l, c * kernel_size + k] = 0.0
    # END SOLUTION 4.1


@numba.njit(parallel=True, cache=True)
def col2im1d(cols: np.ndarray, x: np.ndarray, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
    """The adjoint of `im2col1d`: overwrite x [N, C, L] with the sums

        x[n, c, p] = Σ_{(l, k): l·stride + k·dilation − padding = p} cols[n, l, c·K + k]

    Parallel over the N·C (sample, channel) rows of x: each iteration writes only its own
    row, so the additions never race.
    """
    # BEGIN SOLUTION 4.1
    n_batch, channels, length = x.shape
    l_out = cols.shape[1]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for p in range(length):
            x[n, c, p] = 0.0
        for l in range(l_out):
            start = l * stride - padding
            for k in range(kernel_size):
                pos = start + k * dilation
                if pos >= 0 and pos < length:
                    x[n, c, pos] += cols[n, l, c * kernel_size + k]
    # END SOLUTION 4.1


def _out_size(size: int, before: int, after: int, kernel: int, stride: int, dilation: int) -> int:
    """⌊(size + before + after − dilation·(kernel − 1) − 1) / stride⌋ + 1."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


class Conv1dFun(Function):
    """out = conv1d(input, weight, bias) with stride, padding (before, after) and dilation."""

    @staticmethod
    def forward(
        ctx: Context, input: Tensor, weight: Tensor, bias: Optional[Tensor],
        stride: int, padding: tuple[int, int], dilation: int,
    ) -> Tensor:
        """input [N, C_in, L], weight [C_out, C_in, K], bias [C_out] or None → [N, C_out, L_out].

        Shapes were checked by `conv1d`. Save for backward what the three gradients need.
        """
        dtype = common_dtype(input, weight, bias)
        x, w = array(input, dtype), array(weight, dtype)
        b = None if bias is None else array(bias, dtype)
        n, c_in, length = x.shape
        c_out, _, k = w.shape
        l_out = _out_size(length, padding[0], padding[1], k, stride, dilation)
        # BEGIN SOLUTION 4.1
        cols = np.empty((n, l_out, c_in * k), dtype=dtype)
        im2col1d(x, cols, k, stride, padding[0], dilation)
        w2 = w.reshape(c_out, c_in * k)
        out = matmul(cols.reshape(n * l_out, c_in * k), w2.T, input)  # [N·L_out, C_out]
        if b is not None:
            out += b
        out = out.reshape(n, l_out, c_out).transpose(0, 2, 1)  # [N, C_out, L_out]
        ctx.save_for_backward(cols, w2, x.shape, k, stride, padding, dilation, input, weight, bias)
        # END SOLUTION 4.1
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        """From g = ∂L/∂out [N, C_out, L_out]: ∂L/∂input, ∂L/∂weight, ∂L/∂bias (see module doc)."""
        # BEGIN SOLUTION 4.1
        cols, w2, x_shape, k, stride, padding, dilation, input, weight, bias = ctx.saved_values
        n, l_out, ck = cols.shape
        c_out = w2.shape[0]
        g = array(grad_output, cols.dtype)
        g_t = g.transpose(1, 0, 2).reshape(c_out, n * l_out)  # gᵀ [C_out, N·L_out]
        grad_weight = matmul(g_t, cols.reshape(n * l_out, ck), grad_output).reshape(weight.shape)
        grad_input = None
        if input.requires_grad:
            g_rows = g.transpose(0, 2, 1).reshape(n * l_out, c_out)  # g [N·L_out, C_out]
            grad_cols = matmul(g_rows, w2, grad_output).reshape(n, l_out, ck)
            grad_x = np.empty(x_shape, dtype=cols.dtype)
            col2im1d(grad_cols, grad_x, k, stride, padding[0], dilation)
            grad_input = wrap(grad_x, input, input.dtype)
        grad_bias = None if bias is None else wrap(g.sum(axis=(0, 2)), bias, bias.dtype)
        return grad_input, wrap(grad_weight, weight, weight.dtype), grad_bias, None, None, None
        # END SOLUTION 4.1


# ---------------------------------------------------------------------------------------
# ## Task 4.2: conv2d — the kernels


@numba.njit(parallel=True, cache=True)
def im2col2d(
    x: np.ndarray, cols: np.ndarray, kh: int, kw: int, out_w: int,
    stride_h: int, stride_w: int, pad_h: int, pad_w: int, dil_h: int, dil_w: int,
) -> None:
    """Fill cols [N, OH·OW, C·KH·KW] from x [N, C, H, W]:

        cols[n, i·OW + j, (c·KH + a)·KW + b] = x[n, c, i·sh + a·dh − ph, j·sw + b·dw − pw]

    (0 where the position falls in the padding). Parallel over the N·OH·OW rows of cols.
    """
    # BEGIN SOLUTION 4.2
    n_batch, channels, height, width = x.shape
    positions = cols.shape[1]
    for row in prange(n_batch * positions):
        n = row // positions
        pos = row % positions
        i = pos // out_w
        j = pos % out_w
        top = i * stride_h - pad_h
        left = j * stride_w - pad_w
        col = 0
        for c in range(channels):
            for a in range(kh):
                y = top + a * dil_h
                for b in range(kw):
                    z = left + b * dil_w
                    if y >= 0 and y < height and z >= 0 and z < width:
                        cols[n, pos, col] = x[n, c, y, z]
                    else:
                        cols[n, pos, col] = 0.0
                    col += 1
    # END SOLUTION 4.2


@numba.njit(parallel=True, cache=True)
def col2im2d(
    cols: np.ndarray, x: np.ndarray, kh: int, kw: int, out_w: int,
    stride_h: int, stride_w: int, pad_h: int, pad_w: int, dil_h: int, dil_w: int,
) -> None:
    """The adjoint of `im2col2d`: overwrite x [N, C, H, W] with the sum, over every copy of
    x[n, c, y, z] in cols, of that copy's value. Parallel over the N·C planes of x."""
    # BEGIN SOLUTION 4.2
    n_batch, channels, height, width = x.shape
    positions = cols.shape[1]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for y in range(height):
            for z in range(width):
                x[n, c, y, z] = 0.0
        for pos in range(positions):
            i = pos // out_w
            j = pos % out_w
            top = i * stride_h - pad_h
            left = j * stride_w - pad_w
            for a in range(kh):
                y = top + a * dil_h
                if y < 0 or y >= height:
                    continue
                for b in range(kw):
                    z = left + b * dil_w
                    if z >= 0 and z < width:
                        x[n, c, y, z] += cols[n, pos, (c * kh + a) * kw + b]
    # END SOLUTION 4.2


class Conv2dFun(Function):
    """out = conv2d(input, weight, bias) with per-axis stride, padding and dilation."""

    @staticmethod
    def forward(
        ctx: Context, input: Tensor, weight: Tensor, bias: Optional[Tensor],
        stride: tuple[int, int], padding: tuple[int, int, int, int], dilation: tuple[int, int],
    ) -> Tensor:
        """input [N, C_in, H, W], weight [C_out, C_in, KH, KW] → [N, C_out, OH, OW].

        `padding` is (top, bottom, left, right); shapes were checked by `conv2d`.
        """
        dtype = common_dtype(input, weight, bias)
        x, w = array(input, dtype), array(weight, dtype)
        b = None if bias is None else array(bias, dtype)
        n, c_in, height, width = x.shape
        c_out, _, kh, kw = w.shape
        oh = _out_size(height, padding[0], padding[1], kh, stride[0], dilation[0])
        ow = _out_size(width, padding[2], padding[3], kw, stride[1], dilation[1])
        geometry = (kh, kw, ow, stride[0], stride[1], padding[0], padding[2], dilation[0], dilation[1])
        # BEGIN SOLUTION 4.2
        ck = c_in * kh * kw
        cols = np.empty((n, oh * ow, ck), dtype=dtype)
        im2col2d(x, cols, *geometry)
        w2 = w.reshape(c_out, ck)
        out = matmul(cols.reshape(n * oh * ow, ck), w2.T, input)  # [N·OH·OW, C_out]
        if b is not None:
            out += b
        out = out.reshape(n, oh, ow, c_out).transpose(0, 3, 1, 2)  # [N, C_out, OH, OW]
        ctx.save_for_backward(cols, w2, x.shape, geometry, input, weight, bias)
        # END SOLUTION 4.2
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        """From g = ∂L/∂out [N, C_out, OH, OW]: ∂L/∂input, ∂L/∂weight, ∂L/∂bias."""
        # BEGIN SOLUTION 4.2
        cols, w2, x_shape, geometry, input, weight, bias = ctx.saved_values
        n, positions, ck = cols.shape
        c_out = w2.shape[0]
        g = array(grad_output, cols.dtype)
        g_t = g.transpose(1, 0, 2, 3).reshape(c_out, n * positions)  # gᵀ [C_out, N·OH·OW]
        grad_weight = matmul(g_t, cols.reshape(n * positions, ck), grad_output).reshape(weight.shape)
        grad_input = None
        if input.requires_grad:
            g_rows = g.transpose(0, 2, 3, 1).reshape(n * positions, c_out)  # g [N·OH·OW, C_out]
            grad_cols = matmul(g_rows, w2, grad_output).reshape(n, positions, ck)
            grad_x = np.empty(x_shape, dtype=cols.dtype)
            col2im2d(grad_cols, grad_x, *geometry)
            grad_input = wrap(grad_x, input, input.dtype)
        grad_bias = None if bias is None else wrap(g.sum(axis=(0, 2, 3)), bias, bias.dtype)
        return grad_input, wrap(grad_weight, weight, weight.dtype), grad_bias, None, None, None
        # END SOLUTION 4.2


# ---------------------------------------------------------------------------------------
# The functional forms: argument checks, then the Functions


def _positive(name: str, what: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: {what} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def _tuple(name: str, what: str, value: Union[int, tuple], n: int, minimum: int) -> tuple[int, ...]:
    """An int or an n-tuple of ints, as an n-tuple (each ≥ minimum)."""
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise ValueError(f"{name}: {what} must be an int or a tuple of {n} ints, got {value!r}")
        return tuple(_positive(name, what, v, minimum) for v in value)
    return (_positive(name, what, value, minimum),) * n


def _same_padding(name: str, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]) -> list[int]:
    """padding='same': (before, after) per axis so that the output keeps the input's size.

    As PyTorch: the total dilation·(K − 1) is split with the extra zero (if odd) after.
    """
    if any(s != 1 for s in stride):
        raise ValueError(f"{name}: padding='same' needs stride 1, got stride {stride}")
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out += [total // 2, total - total // 2]
    return out


def _check_bias(name: str, bias: Optional[Tensor], c_out: int) -> None:
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{name}: bias must have shape ({c_out},) (one per output channel), got {bias.shape}")


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: int = 1,
    padding: Padding1d = 0,
    dilation: int = 1,
    groups: int = 1,
) -> Tensor:
    r"""1-D convolution (cross-correlation) as `torch.nn.functional.conv1d`.

        out[n, o, l] = bias[o] + Σ_c Σ_k weight[o, c, k] · input[n, c, l·stride + k·dilation − padding]

    Args:
        input: [N, C_in, L] (a batch; unbatched 2-D input is not supported).
        weight: [C_out, C_in, K].
        bias: [C_out] or None.
        stride, dilation: ints ≥ 1.
        padding: zeros added on both sides (int ≥ 0), or 'valid' (0) or 'same' (output
            length L; stride 1 only).
        groups: only 1 is supported.

    Returns:
        [N, C_out, L_out] with L_out = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1.
    """
    name = "conv1d"
    check_float(name, input=input, weight=weight, bias=bias)
    if groups != 1:
        raise NotImplementedError(f"{name}: only groups=1 is supported, got groups={groups}")
    if input.dims != 3:
        raise ShapeError(f"{name}: input must be 3-D [N, C_in, L], got shape {input.shape}"
                         + (" (add a batch dimension with .unsqueeze(0))" if input.dims == 2 else ""))
    if weight.dims != 3:
        raise ShapeError(f"{name}: weight must be 3-D [C_out, C_in, K], got shape {weight.shape}")
    n, c_in, length = input.shape
    c_out, w_in, k = weight.shape
    if w_in != c_in:
        raise ShapeError(
            f"{name}: input has {c_in} channels (shape {input.shape}) but weight expects {w_in} "
            f"(shape {weight.shape})"
        )
    _check_bias(name, bias, c_out)
    (s,) = _tuple(name, "stride", stride, 1, 1)
    (d,) = _tuple(name, "dilation", dilation, 1, 1)
    if padding == "valid":
        pads = [0, 0]
    elif padding == "same":
        pads = _same_padding(name, (k,), (d,), (s,))
    elif isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int, 'valid' or 'same', got {padding!r}")
    else:
        pads = list(_tuple(name, "padding", padding, 1, 0)) * 2
    span = d * (k - 1) + 1
    if length + pads[0] + pads[1] < span:
        raise ShapeError(
            f"{name}: the kernel (size {k}, dilation {d}, spanning {span}) is larger than the "
            f"padded input (length {length} + padding {pads[0]}+{pads[1]}); input {input.shape}, weight {weight.shape}"
        )
    return Conv1dFun.apply(input, weight, bias, s, (pads[0], pads[1]), d)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: IntOr2 = 1,
    padding: Padding2d = 0,
    dilation: IntOr2 = 1,
    groups: int = 1,
) -> Tensor:
    r"""2-D convolution (cross-correlation) as `torch.nn.functional.conv2d`.

        out[n, o, i, j] = bias[o] + Σ_c Σ_a Σ_b weight[o, c, a, b] ·
                          input[n, c, i·sh + a·dh − ph, j·sw + b·dw − pw]

    Args:
        input: [N, C_in, H, W]; weight: [C_out, C_in, KH, KW]; bias: [C_out] or None.
        stride, dilation: int or (h, w) pair, ≥ 1.
        padding: int or (h, w) pair ≥ 0 (zeros on both sides of each axis), 'valid' or 'same'.
        groups: only 1 is supported.

    Returns:
        [N, C_out, OH, OW], OH = ⌊(H + 2·ph − dh·(KH − 1) − 1) / sh⌋ + 1 (OW likewise).
    """
    name = "conv2d"
    check_float(name, input=input, weight=weight, bias=bias)
    if groups != 1:
        raise NotImplementedError(f"{name}: only groups=1 is supported, got groups={groups}")
    if input.dims != 4:
        raise ShapeError(f"{name}: input must be 4-D [N, C_in, H, W], got shape {input.shape}"
                         + (" (add a batch dimension with .unsqueeze(0))" if input.dims == 3 else ""))
    if weight.dims != 4:
        raise ShapeError(f"{name}: weight must be 4-D [C_out, C_in, KH, KW], got shape {weight.shape}")
    n, c_in, height, width = input.shape
    c_out, w_in, kh, kw = weight.shape
    if w_in != c_in:
        raise ShapeError(
            f"{name}: input has {c_in} channels (shape {input.shape}) but weight expects {w_in} "
            f"(shape {weight.shape})"
        )
    _check_bias(name, bias, c_out)
    s = _tuple(name, "stride", stride, 2, 1)
    d = _tuple(name, "dilation", dilation, 2, 1)
    if padding == "valid":
        pads = [0, 0, 0, 0]
    elif padding == "same":
        pads = _same_padding(name, (kh, kw), d, s)
    elif isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        ph, pw = _tuple(name, "padding", padding, 2, 0)
        pads = [ph, ph, pw, pw]
    for axis, size, k, dd, before, after in (("height", height, kh, d[0], pads[0], pads[1]),
                                             ("width", width, kw, d[1], pads[2], pads[3])):
        span = dd * (k - 1) + 1
        if size + before + after < span:
            raise ShapeError(
                f"{name}: along the {axis}, the kernel (size {k}, dilation {dd}, spanning {span}) is "
                f"larger than the padded input ({size} + padding {before}+{after}); "
                f"input {input.shape}, weight {weight.shape}"
            )
    return Conv2dFun.apply(input, weight, bias, s, tuple(pads), d)


# ---------------------------------------------------------------------------------------
# The layers


class _ConvNd(Module):
    """Shared constructor of Conv1d and Conv2d: parameters `weight` [C_out, C_in, *kernel]
    and `bias` [C_out], both U(−1/√fan_in, 1/√fan_in) with fan_in = C_in · Π kernel (PyTorch's
    default initialisation)."""

    _dims = 0

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: tuple[int, ...],
        stride: tuple[int, ...], padding: Union[str, tuple[int, ...]], dilation: tuple[int, ...],
        groups: int, bias: bool, padding_mode: str, dtype, backend: Optional[TensorBackend],
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if in_channels <= 0 or out_channels <= 0:
            raise ValueError(f"{name}({in_channels}, {out_channels}, …): channel counts must be positive")
        if groups != 1:
            raise NotImplementedError(f"{name}: only groups=1 is supported, got groups={groups}")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.groups, self.padding_mode = groups, padding_mode
        fan_in = in_channels * int(np.prod(kernel_size))
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = Parameter(uniform((out_channels, in_channels) + kernel_size, bound, dtype, backend))
        self.bias = Parameter(uniform((out_channels,), bound, dtype, backend)) if bias else None

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding not in (0, (0,) * self._dims, "valid"):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """A bank of 1-D filters, as `torch.nn.Conv1d`: [N, C_in, L] → [N, C_out, L_out].

    Parameters: `weight` [out_channels, in_channels, kernel_size], `bias` [out_channels].
    """

    _dims = 1

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple[int]],
        stride: Union[int, tuple[int]] = 1, padding: Padding1d = 0, dilation: Union[int, tuple[int]] = 1,
        groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
        dtype=None, backend: Optional[TensorBackend] = None,
    ) -> None:
        name = "Conv1d"
        pad = padding if isinstance(padding, str) else _tuple(name, "padding", padding, 1, 0)
        super().__init__(
            in_channels, out_channels, _tuple(name, "kernel_size", kernel_size, 1, 1),
            _tuple(name, "stride", stride, 1, 1), pad, _tuple(name, "dilation", dilation, 1, 1),
            groups, bias, padding_mode, dtype, backend,
        )

    def forward(self, input: Tensor) -> Tensor:
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        bias = None if self.bias is None else self.bias.value
        return conv1d(input, self.weight.value, bias, self.stride[0], padding, self.dilation[0])


class Conv2d(_ConvNd):
    """A bank of 2-D filters, as `torch.nn.Conv2d`: [N, C_in, H, W] → [N, C_out, OH, OW].

    Parameters: `weight` [out_channels, in_channels, KH, KW], `bias` [out_channels].
    """

    _dims = 2

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: IntOr2,
        stride: IntOr2 = 1, padding: Padding2d = 0, dilation: IntOr2 = 1,
        groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
        dtype=None, backend: Optional[TensorBackend] = None,
    ) -> None:
        name = "Conv2d"
        pad = padding if isinstance(padding, str) else _tuple(name, "padding", padding, 2, 0)
        super().__init__(
            in_channels, out_channels, _tuple(name, "kernel_size", kernel_size, 2, 1),
            _tuple(name, "stride", stride, 2, 1), pad, _tuple(name, "dilation", dilation, 2, 1),
            groups, bias, padding_mode, dtype, backend,
        )

    def forward(self, input: Tensor) -> Tensor:
        bias = None if self.bias is None else self.bias.value
        return conv2d(input, self.weight.value, bias, self.stride, self.padding, self.dilation)
