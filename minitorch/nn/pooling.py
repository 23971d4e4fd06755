"""Stage A4, task 4.3: pooling (as `torch.nn.functional.max_pool2d` / `avg_pool2d`).

Pooling summarises each window of a feature map by one number. With input x [N, C, H, W],
a window of KH × KW, stride (sh, sw) and zero/−∞ padding (ph, pw):

    max_pool2d:  out[n, c, i, j] = max_{a, b} x[n, c, i·sh + a − ph, j·sw + b − pw]
    avg_pool2d:  out[n, c, i, j] = (1 / (KH·KW)) Σ_{a, b} x[n, c, i·sh + a − ph, j·sw + b − pw]

    OH = ⌊(H + 2·ph − KH) / sh⌋ + 1,  OW likewise;   the stride defaults to the kernel size.

Gradients: average pooling spreads ∂L/∂out[i, j] evenly over its window; max pooling sends
all of it to the position that held the maximum (the first one in row-major order when
several tie, as PyTorch's CPU kernel does), remembered in forward as `argmax`.

For text, *max-over-time pooling* (Collobert et al., 2011; Kim, 2014) keeps, for each
feature map [N, C, L], its largest value over the whole sentence: [N, C, L] → [N, C].
It is `max_pool1d` with a window as long as the sentence (written directly with NumPy's
argmax, `MaxOverTime`); 1-D pooling is 2-D pooling of a [N, C, 1, L] map.

Every kernel runs in parallel over the N·C (sample, channel) planes; each iteration reads
and writes only its own plane, so no writes race.
"""

from __future__ import annotations

from typing import Optional, Union

import numba
import numpy as np
from numba import prange

from ..autodiff import Context
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..function import Function
from ._kernels import array, check_float, wrap

IntOr2 = Union[int, tuple[int, int]]

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "max_over_time"]


# ---------------------------------------------------------------------------------------
# ## Task 4.3: the kernels


@numba.njit(parallel=True, cache=True)
def max_pool2d_forward(
    x: np.ndarray, out: np.ndarray, argmax: np.ndarray,
    kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, dh: int, dw: int,
) -> None:
    """out[n, c, i, j] = max over the window of x[n, c] (padding counts as −∞);
    argmax[n, c, i, j] = y·W + z of the first position (y, z) that holds that max.

    x [N, C, H, W]; out and argmax [N, C, OH, OW]; window offsets a·dh, b·dw (dilation).
    """
    # BEGIN SOLUTION 4.3
    n_batch, channels, height, width = x.shape
    out_h, out_w = out.shape[2], out.shape[3]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for i in range(out_h):
            for j in range(out_w):
                best = -np.inf
                best_at = -1
                for a in range(kh):
                    y = i * sh - ph + a * dh
                    if y < 0 or y >= height:
                        continue
                    for b in range(kw):
                        z = j * sw - pw + b * dw
                        if z < 0 or z >= width:
                            continue
                        v = x[n, c, y, z]
                        if v > best or best_at < 0:
                            best = v
                            best_at = y * width + z
                out[n, c, i, j] = best
                argmax[n, c, i, j] = best_at
    # END SOLUTION 4.3


@numba.njit(parallel=True, cache=True)
def max_pool2d_backward(grad_out: np.ndarray, argmax: np.ndarray, grad_in: np.ndarray) -> None:
    """grad_in[n, c] (zeroed here) += grad_out[n, c, i, j] at position argmax[n, c, i, j]."""
    # BEGIN SOLUTION 4.3
    n_batch, channels, height, width = grad_in.shape
    out_h, out_w = grad_out.shape[2], grad_out.shape[3]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for y in range(height):
            for z in range(width):
                grad_in[n, c, y, z] = 0.0
        for i in range(out_h):
            for j in range(out_w):
                at = argmax[n, c, i, j]
                grad_in[n, c, at // width, at % width] += grad_out[n, c, i, j]
    # END SOLUTION 4.3


@numba.njit(parallel=True, cache=True)
def avg_pool2d_forward(
    x: np.ndarray, out: np.ndarray, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
    count_include_pad: bool,
) -> None:
    """out[n, c, i, j] = (sum of the window of x[n, c]) / divisor, where the divisor is
    KH·KW (count_include_pad) or the number of window positions inside x."""
    # BEGIN SOLUTION 4.3
    n_batch, channels, height, width = x.shape
    out_h, out_w = out.shape[2], out.shape[3]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for i in range(out_h):
            for j in range(out_w):
                total = 0.0
                count = 0
                for a in range(kh):
                    y = i * sh - ph + a
                    if y < 0 or y >= height:
                        continue
                    for b in range(kw):
                        z = j * sw - pw + b
                        if z < 0 or z >= width:
                            continue
                        total += x[n, c, y, z]
                        count += 1
                divisor = kh * kw if count_include_pad else count
                out[n, c, i, j] = total / divisor
    # END SOLUTION 4.3


@numba.njit(parallel=True, cache=True)
def avg_pool2d_backward(
    grad_out: np.ndarray, grad_in: np.ndarray, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
    count_include_pad: bool,
) -> None:
    """grad_in[n, c] (zeroed here) += grad_out[n, c, i, j] / divisor over each window (i, j)."""
    # BEGIN SOLUTION 4.3
    n_batch, channels, height, width = grad_in.shape
    out_h, out_w = grad_out.shape[2], grad_out.shape[3]
    for plane in prange(n_batch * channels):
        n = plane // channels
        c = plane % channels
        for y in range(height):
            for z in range(width):
                grad_in[n, c, y, z] = 0.0
        for i in range(out_h):
            y0 = max(i * sh - ph, 0)
            y1 = min(i * sh - ph + kh, height)
            for j in range(out_w):
                z0 = max(j * sw - pw, 0)
                z1 = min(j * sw - pw + kw, width)
                divisor = kh * kw if count_include_pad else (y1 - y0) * (z1 - z0)
                share = grad_out[n, c, i, j] / divisor
                for y in range(y0, y1):
                    for z in range(z0, z1):
                        grad_in[n, c, y, z] += share
    # END SOLUTION 4.3


# ---------------------------------------------------------------------------------------
# The autograd functions (geometry checked by the functional forms below)


class MaxPool2dFun(Function):
    """out = max_pool2d(input) for a window, stride, padding and dilation given as pairs."""

    @staticmethod
    def forward(ctx: Context, input: Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> Tensor:
        x = array(input)
        n, c, h, w = x.shape
        oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        out = np.empty((n, c, oh, ow), dtype=x.dtype)
        argmax = np.empty((n, c, oh, ow), dtype=np.int64)
        max_pool2d_forward(x, out, argmax, kernel[0], kernel[1], stride[0], stride[1],
                           padding[0], padding[1], dilation[0], dilation[1])
        ctx.save_for_backward(argmax, x.shape)
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        argmax, shape = ctx.saved_values
        grad_in = np.empty(shape, dtype=grad_output.dtype)
        max_pool2d_backward(array(grad_output), argmax, grad_in)
        return wrap(grad_in, grad_output), None, None, None, None


class AvgPool2dFun(Function):
    """out = avg_pool2d(input) for a window, stride and padding given as pairs."""

    @staticmethod
    def forward(ctx: Context, input: Tensor, kernel: tuple, stride: tuple, padding: tuple, count_include_pad: bool) -> Tensor:
        x = array(input)
        n, c, h, w = x.shape
        oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
        ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
        geometry = (kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1], count_include_pad)
        out = np.empty((n, c, oh, ow), dtype=x.dtype)
        avg_pool2d_forward(x, out, *geometry)
        ctx.save_for_backward(x.shape, geometry)
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        shape, geometry = ctx.saved_values
        grad_in = np.empty(shape, dtype=grad_output.dtype)
        avg_pool2d_backward(array(grad_output), grad_in, *geometry)
        return wrap(grad_in, grad_output), None, None, None, None


# ---------------------------------------------------------------------------------------
# The functional forms


def _pair(name: str, what: str, value: Union[int, tuple], minimum: int) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name}: {what} must be an int or a pair of ints, got {value!r}")
        a, b = value
    else:
        a = b = value
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise ValueError(f"{name}: {what} must be integers ≥ {minimum}, got {value!r}")
    return int(a), int(b)


def _geometry(
    name: str, input: Tensor, kernel_size: IntOr2, stride: Optional[IntOr2], padding: IntOr2, dilation: IntOr2,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Check a 4-D input and the window; return kernel, stride, padding, dilation pairs."""
    check_float(name, input=input)
    if input.dims != 4:
        raise ShapeError(f"{name}: input must be 4-D [N, C, H, W], got shape {input.shape}")
    k = _pair(name, "kernel_size", kernel_size, 1)
    s = k if stride is None or stride == () else _pair(name, "stride", stride, 1)
    p = _pair(name, "padding", padding, 0)
    d = _pair(name, "dilation", dilation, 1)
    for axis, size, kk, pp, dd in (("height", input.shape[2], k[0], p[0], d[0]), ("width", input.shape[3], k[1], p[1], d[1])):
        span = dd * (kk - 1) + 1
        if 2 * pp > span:
            raise ValueError(f"{name}: padding {pp} along the {axis} must be at most half the window ({span})")
        if size + 2 * pp < span:
            raise ShapeError(
                f"{name}: the window ({span} along the {axis}) is larger than the padded input "
                f"({size} + 2·{pp}); input shape {input.shape}"
            )
    return k, s, p, d


def max_pool2d(
    input: Tensor, kernel_size: IntOr2, stride: Optional[IntOr2] = None, padding: IntOr2 = 0, dilation: IntOr2 = 1,
) -> Tensor:
    """Max over KH × KW windows of a [N, C, H, W] input → [N, C, OH, OW] (stride defaults to
    the kernel size; padding counts as −∞). As `torch.nn.functional.max_pool2d`."""
    k, s, p, d = _geometry("max_pool2d", input, kernel_size, stride, padding, dilation)
    return MaxPool2dFun.apply(input, k, s, p, d)


def avg_pool2d(
    input: Tensor, kernel_size: IntOr2, stride: Optional[IntOr2] = None, padding: IntOr2 = 0,
    ceil_mode: bool = False, count_include_pad: bool = True,
) -> Tensor:
    """Mean over KH × KW windows of a [N, C, H, W] input → [N, C, OH, OW] (stride defaults to
    the kernel size; zero padding, counted in the mean unless count_include_pad=False).
    As `torch.nn.functional.avg_pool2d` (ceil_mode is not supported)."""
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported")
    k, s, p, _ = _geometry("avg_pool2d", input, kernel_size, stride, padding, 1)
    return AvgPool2dFun.apply(input, k, s, p, bool(count_include_pad))


def _as_2d(name: str, input: Tensor) -> Tensor:
    check_float(name, input=input)
    if input.dims != 3:
        raise ShapeError(f"{name}: input must be 3-D [N, C, L], got shape {input.shape}")
    n, c, length = input.shape
    return input.contiguous().view(n, c, 1, length)


def _int(name: str, what: str, value: Union[int, tuple], minimum: int) -> int:
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{name}: {what} must be an int, got {value!r}")
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: {what} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def max_pool1d(input: Tensor, kernel_size: int, stride: Optional[int] = None, padding: int = 0, dilation: int = 1) -> Tensor:
    """Max over windows of K positions of a [N, C, L] input → [N, C, L_out] (as PyTorch)."""
    name = "max_pool1d"
    x = _as_2d(name, input)
    k = _int(name, "kernel_size", kernel_size, 1)
    s = k if stride is None else _int(name, "stride", stride, 1)
    out = max_pool2d(x, (1, k), (1, s), (0, _int(name, "padding", padding, 0)), (1, _int(name, "dilation", dilation, 1)))
    return out.view(out.shape[0], out.shape[1], out.shape[3])


def avg_pool1d(input: Tensor, kernel_size: int, stride: Optional[int] = None, padding: int = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of K positions of a [N, C, L] input → [N, C, L_out] (as PyTorch)."""
    name = "avg_pool1d"
    x = _as_2d(name, input)
    k = _int(name, "kernel_size", kernel_size, 1)
    s = k if stride is None else _int(name, "stride", stride, 1)
    out = avg_pool2d(x, (1, k), (1, s), (0, _int(name, "padding", padding, 0)), ceil_mode, count_include_pad)
    return out.view(out.shape[0], out.shape[1], out.shape[3])


class MaxOverTime(Function):
    """out[n, c] = max_l input[n, c, l]; the gradient goes to the (first) argmax.

    Equal to `max_pool1d(input, L)` with the length dimension dropped; written directly with
    NumPy's `argmax` because it is the pooling of every text CNN step.
    """

    @staticmethod
    def forward(ctx: Context, input: Tensor) -> Tensor:
        x = array(input)
        # BEGIN SOLUTION 4.3
        at = np.argmax(x, axis=2)[:, :, None]  # [N, C, 1]: first position of the maximum
        out = np.take_along_axis(x, at, axis=2)[:, :, 0]
        ctx.save_for_backward(at, x.shape)
        # END SOLUTION 4.3
        return wrap(out, input)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor]:
        # BEGIN SOLUTION 4.3
        at, shape = ctx.saved_values
        grad = np.zeros(shape, dtype=grad_output.dtype)
        np.put_along_axis(grad, at, array(grad_output)[:, :, None], axis=2)
        # END SOLUTION 4.3
        return (wrap(grad, grad_output),)


def max_over_time(input: Tensor) -> Tensor:
    """Max-over-time pooling: [N, C, L] → [N, C], out[n, c] = max_l input[n, c, l].

    The gradient goes to the first position holding the maximum.
    """
    check_float("max_over_time", input=input)
    if input.dims != 3:
        raise ShapeError(f"max_over_time: input must be 3-D [N, C, L], got shape {input.shape}")
    return MaxOverTime.apply(input)
