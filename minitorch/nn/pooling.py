"""Stage A4, task 4.3: pooling (as `torch.nn.functional.max_pool2d` / `avg_pool2d`).

Pooling summarises each window of a feature map by one number. With input x [N, C, H, W],
a window of KH × KW, stride (sh, sw), padding (ph, pw) and (max pooling only) dilation
(dh, dw):

    max_pool2d:  out[n, c, i, j] = max_{a, b} x[n, c, i·sh + a·dh − ph, j·sw + b·dw − pw]
    avg_pool2d:  out[n, c, i, j] = (1 / (KH·KW)) Σ_{a, b} x[n, c, i·sh + a − ph, j·sw + b − pw]

    OH = ⌊(H + 2·ph − dh·(KH − 1) − 1) / sh⌋ + 1,  OW likewise;  the stride defaults to
    the window size; max pooling pads with −∞, average pooling with zeros.

Gradients: average pooling spreads ∂L/∂out[i, j] evenly over its window; max pooling sends
all of it to the position that held the maximum — the first one in row-major order when
several tie, as PyTorch — remembered in forward as `argmax` (y·W + z within the plane).

1-D pooling of [N, C, L] is 2-D pooling of the same storage seen as [N, C, 1, L] (no copy:
the kernels take any strides). *Max-over-time pooling* (Collobert et al., 2011; Kim, 2014)
keeps, for each feature map of a sentence, its largest value: it is `max_pool1d` with a
window as long as the sentence, [N, C, L] → [N, C].

The four kernels are loops over raw storages, shapes and strides (see `tensor_ops`) that the
backend runs: as Python on the simple backend, compiled and parallel (`prange` over the N·C
planes; each iteration reads and writes only its own plane, so nothing races) on the fast
one. The CUDA backend runs a CUDA version of each (one GPU thread per output entry),
written separately and shipped from stage A5 on; before, it raises a NotImplementedError
naming the operation.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from numba import prange

from ..autodiff import Context
from ..function import Function
from ..tensor import Tensor
from ..tensor_data import Shape, ShapeError, Storage, Strides
from ..tensor_ops import backend_kernel
from .validation import check_float, int_tuple

IntOr2 = Union[int, tuple[int, int]]

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "max_over_time"]


# ---------------------------------------------------------------------------------------
# ## Task 4.3: the kernels (every array is [N, C, H, W], with any strides)


@backend_kernel("max pooling (max_pool2d_forward)")
def max_pool2d_forward(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    argmax: Storage,
    x: Storage,
    x_shape: Shape,
    x_strides: Strides,
    kh: int,
    kw: int,
    sh: int,
    sw: int,
    ph: int,
    pw: int,
    dh: int,
    dw: int,
) -> None:
    """Kernel: out[n, c, i, j] = the max of the window of x[n, c] at (i, j) (positions in the
    padding are skipped, i.e. count as −∞); argmax (int64, contiguous, same shape as out,
    indexed by out's row-major ordinal) = y·W + z of the *first* position (row-major) holding
    that max — or, if every value is −∞, of the window's first position inside x (as
    PyTorch: the index must always point into x). Window offsets are a·dh, b·dw.
    """
    # BEGIN SOLUTION 4.3
    channels, height, width = x_shape[1], x_shape[2], x_shape[3]
    out_h, out_w = out_shape[2], out_shape[3]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * x_strides[0] + c * x_strides[1]
        for i in range(out_h):
            top = i * sh - ph
            for j in range(out_w):
                left = j * sw - pw
                best = -np.inf  # the padding
                best_at = -1
                for a in range(kh):
                    y = top + a * dh
                    if 0 <= y < height:
                        row = x_plane + y * x_strides[2]
                        for b in range(kw):
                            z = left + b * dw
                            if 0 <= z < width:
                                v = x[row + z * x_strides[3]]
                                if v > best:  # strictly greater: ties keep the first
                                    best = v
                                    best_at = y * width + z
                if best_at < 0:  # every value was −inf: the window's first position inside x
                    y = top
                    while y < 0:
                        y += dh
                    z = left
                    while z < 0:
                        z += dw
                    best_at = y * width + z
                out[n * out_strides[0] + c * out_strides[1] + i * out_strides[2] + j * out_strides[3]] = best
                argmax[(plane * out_h + i) * out_w + j] = best_at
    # END SOLUTION 4.3


@backend_kernel("max pooling backward (max_pool2d_backward)")
def max_pool2d_backward(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    argmax: Storage,
    grad: Storage,
    grad_shape: Shape,
    grad_strides: Strides,
) -> None:
    """Kernel: out = ∂L/∂x [N, C, H, W], overwritten: 0 everywhere, then, for every output
    position (i, j), += grad[n, c, i, j] at the position argmax[n, c, i, j] = y·W + z that
    forward recorded (argmax contiguous, of grad's shape)."""
    # BEGIN SOLUTION 4.3
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    out_h, out_w = grad_shape[2], grad_shape[3]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * out_strides[0] + c * out_strides[1]
        for y in range(height):
            for z in range(width):
                out[x_plane + y * out_strides[2] + z * out_strides[3]] = 0.0
        g_plane = n * grad_strides[0] + c * grad_strides[1]
        for i in range(out_h):
            for j in range(out_w):
                at = argmax[(plane * out_h + i) * out_w + j]
                y = at // width
                z = at % width
                out[x_plane + y * out_strides[2] + z * out_strides[3]] += grad[
                    g_plane + i * grad_strides[2] + j * grad_strides[3]
                ]
    # END SOLUTION 4.3


@backend_kernel("average pooling (avg_pool2d_forward)")
def avg_pool2d_forward(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    x: Storage,
    x_shape: Shape,
    x_strides: Strides,
    kh: int,
    kw: int,
    sh: int,
    sw: int,
    ph: int,
    pw: int,
    count_include_pad: bool,
) -> None:
    """Kernel: out[n, c, i, j] = (sum of the window of x[n, c] at (i, j)) / divisor, where
    the divisor is KH·KW (count_include_pad: padding counts as zeros) or the number of
    window positions inside x."""
    # BEGIN SOLUTION 4.3
    channels, height, width = x_shape[1], x_shape[2], x_shape[3]
    out_h, out_w = out_shape[2], out_shape[3]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * x_strides[0] + c * x_strides[1]
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
                        total += x[x_plane + y * x_strides[2] + z * x_strides[3]]
                        count += 1
                divisor = kh * kw if count_include_pad else count
                out[n * out_strides[0] + c * out_strides[1] + i * out_strides[2] + j * out_strides[3]] = (
                    total / divisor
                )
    # END SOLUTION 4.3


@backend_kernel("average pooling backward (avg_pool2d_backward)")
def avg_pool2d_backward(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    grad: Storage,
    grad_shape: Shape,
    grad_strides: Strides,
    kh: int,
    kw: int,
    sh: int,
    sw: int,
    ph: int,
    pw: int,
    count_include_pad: bool,
) -> None:
    """Kernel: out = ∂L/∂x [N, C, H, W], overwritten: 0 everywhere, then every window (i, j)
    adds grad[n, c, i, j] / divisor to each of its positions inside x."""
    # BEGIN SOLUTION 4.3
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    out_h, out_w = grad_shape[2], grad_shape[3]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * out_strides[0] + c * out_strides[1]
        for y in range(height):
            for z in range(width):
                out[x_plane + y * out_strides[2] + z * out_strides[3]] = 0.0
        g_plane = n * grad_strides[0] + c * grad_strides[1]
        for i in range(out_h):
            y0 = max(i * sh - ph, 0)
            y1 = min(i * sh - ph + kh, height)
            for j in range(out_w):
                z0 = max(j * sw - pw, 0)
                z1 = min(j * sw - pw + kw, width)
                divisor = kh * kw if count_include_pad else (y1 - y0) * (z1 - z0)
                share = grad[g_plane + i * grad_strides[2] + j * grad_strides[3]] / divisor
                for y in range(y0, y1):
                    for z in range(z0, z1):
                        out[x_plane + y * out_strides[2] + z * out_strides[3]] += share
    # END SOLUTION 4.3


# ---------------------------------------------------------------------------------------
# The autograd functions (library code: allocate, call the backend's kernels). They take
# 3-D [N, C, L] or 4-D [N, C, H, W] tensors; the kernels always see 4-D.


def _planes(t: Tensor) -> tuple[Storage, Shape, Strides]:
    """(storage, shape, strides) of t seen as [N, C, H, W]: a 3-D [N, C, L] is [N, C, 1, L]."""
    storage, shape, strides = t.tuple()
    if t.dims == 3:
        shape = shape[[0, 1, 2, 2]].copy()
        shape[2] = 1
        strides = strides[[0, 1, 2, 2]].copy()
        strides[2] = 0
    return storage, shape, strides


def _pooled_shape(input: Tensor, oh: int, ow: int) -> tuple[int, ...]:
    n, c = input.shape[0], input.shape[1]
    return (n, c, ow) if input.dims == 3 else (n, c, oh, ow)


class MaxPool2dFun(Function):
    """out = max pooling of input ([N, C, L] or [N, C, H, W]), window/stride/padding/dilation pairs."""

    @staticmethod
    def forward(
        ctx: Context, input: Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple
    ) -> Tensor:
        pool = input.backend.max_pool2d_forward  # the backend's version (raises if it has none)
        x = _planes(input)
        height, width = int(x[1][2]), int(x[1][3])
        oh = (height + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (width + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        out = input.new_zeros(_pooled_shape(input, oh, ow))
        argmax = input.new_zeros(out.shape, dtype="int64")
        pool(
            *_planes(out),
            argmax.tuple()[0],
            *x,
            kernel[0],
            kernel[1],
            stride[0],
            stride[1],
            padding[0],
            padding[1],
            dilation[0],
            dilation[1],
        )
        ctx.save_for_backward(argmax, input.shape, input.dtype)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        argmax, shape, dtype = ctx.saved_values
        unpool = grad_output.backend.max_pool2d_backward
        grad = grad_output.new_zeros(shape, dtype=dtype)
        unpool(*_planes(grad), argmax.tuple()[0], *_planes(grad_output))
        return grad, None, None, None, None


class AvgPool2dFun(Function):
    """out = average pooling of input ([N, C, L] or [N, C, H, W]), window/stride/padding pairs."""

    @staticmethod
    def forward(
        ctx: Context, input: Tensor, kernel: tuple, stride: tuple, padding: tuple, count_include_pad: bool
    ) -> Tensor:
        pool = input.backend.avg_pool2d_forward
        x = _planes(input)
        height, width = int(x[1][2]), int(x[1][3])
        oh = (height + 2 * padding[0] - kernel[0]) // stride[0] + 1
        ow = (width + 2 * padding[1] - kernel[1]) // stride[1] + 1
        geometry = (kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1], count_include_pad)
        out = input.new_zeros(_pooled_shape(input, oh, ow))
        pool(*_planes(out), *x, *geometry)
        ctx.save_for_backward(input.shape, input.dtype, geometry)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        shape, dtype, geometry = ctx.saved_values
        unpool = grad_output.backend.avg_pool2d_backward
        grad = grad_output.new_zeros(shape, dtype=dtype)
        unpool(*_planes(grad), *_planes(grad_output), *geometry)
        return grad, None, None, None, None


# ---------------------------------------------------------------------------------------
# The functional forms


def _geometry(
    name: str,
    input: Tensor,
    dims: int,
    kernel_size: Union[int, tuple],
    stride: Optional[Union[int, tuple]],
    padding: Union[int, tuple],
    dilation: Union[int, tuple],
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Check a [N, C, L] (dims=1) or [N, C, H, W] (dims=2) float input and the window;
    return kernel, stride, padding and dilation as (height, width) pairs (height = 1 in 1-D)."""
    check_float(name, input=input)
    if input.dims != dims + 2:
        layout = "3-D [N, C, L]" if dims == 1 else "4-D [N, C, H, W]"
        raise ShapeError(f"{name}: input must be {layout}, got shape {input.shape}")
    k = int_tuple(name, "kernel_size", kernel_size, dims, 1)
    s = k if stride is None or stride == () else int_tuple(name, "stride", stride, dims, 1)
    p = int_tuple(name, "padding", padding, dims, 0)
    d = int_tuple(name, "dilation", dilation, dims, 1)
    if dims == 1:
        k, s, p, d = (1,) + k, (1,) + s, (0,) + p, (1,) + d
    sizes = (1,) + input.shape[2:] if dims == 1 else input.shape[2:]
    for axis, size, kk, pp, dd in zip(("height", "width"), sizes, k, p, d):
        span = dd * (kk - 1) + 1
        if 2 * pp > span:
            raise ValueError(
                f"{name}: padding {pp} along the {axis} must be at most half the window ({span})"
            )
        if size + 2 * pp < span:
            raise ShapeError(
                f"{name}: the window ({span} along the {axis}) is larger than the padded input "
                f"({size} + 2·{pp}); input shape {input.shape}"
            )
    return k, s, p, d  # type: ignore[return-value]


def max_pool2d(
    input: Tensor,
    kernel_size: IntOr2,
    stride: Optional[IntOr2] = None,
    padding: IntOr2 = 0,
    dilation: IntOr2 = 1,
) -> Tensor:
    """Max over KH × KW windows of a [N, C, H, W] input → [N, C, OH, OW] (stride defaults to
    the kernel size; padding counts as −∞). As `torch.nn.functional.max_pool2d`."""
    k, s, p, d = _geometry("max_pool2d", input, 2, kernel_size, stride, padding, dilation)
    return MaxPool2dFun.apply(input, k, s, p, d)


def avg_pool2d(
    input: Tensor,
    kernel_size: IntOr2,
    stride: Optional[IntOr2] = None,
    padding: IntOr2 = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over KH × KW windows of a [N, C, H, W] input → [N, C, OH, OW] (stride defaults to
    the kernel size; zero padding, counted in the mean unless count_include_pad=False).
    As `torch.nn.functional.avg_pool2d` (ceil_mode is not supported)."""
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported")
    k, s, p, _ = _geometry("avg_pool2d", input, 2, kernel_size, stride, padding, 1)
    return AvgPool2dFun.apply(input, k, s, p, bool(count_include_pad))


def max_pool1d(
    input: Tensor, kernel_size: int, stride: Optional[int] = None, padding: int = 0, dilation: int = 1
) -> Tensor:
    """Max over windows of K positions of a [N, C, L] input → [N, C, L_out] (as PyTorch)."""
    k, s, p, d = _geometry("max_pool1d", input, 1, kernel_size, stride, padding, dilation)
    return MaxPool2dFun.apply(input, k, s, p, d)


def avg_pool1d(
    input: Tensor,
    kernel_size: int,
    stride: Optional[int] = None,
    padding: int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over windows of K positions of a [N, C, L] input → [N, C, L_out] (as PyTorch)."""
    if ceil_mode:
        raise NotImplementedError("avg_pool1d: ceil_mode=True is not supported")
    k, s, p, _ = _geometry("avg_pool1d", input, 1, kernel_size, stride, padding, 1)
    return AvgPool2dFun.apply(input, k, s, p, bool(count_include_pad))


def max_over_time(input: Tensor) -> Tensor:
    """Max-over-time pooling: [N, C, L] → [N, C], out[n, c] = max_l input[n, c, l]:
    `max_pool1d` with one window covering the whole sentence. The gradient goes to the first
    position holding the maximum."""
    check_float("max_over_time", input=input)
    if input.dims != 3:
        raise ShapeError(f"max_over_time: input must be 3-D [N, C, L], got shape {input.shape}")
    n, c, length = input.shape
    return max_pool1d(input, length).view(n, c)
