"""CUDA twins of the convolution kernels of `nn/conv.py`: im2col and col2im, 1-d and 2-d.

Same names, arguments and results as the CPU kernels (see their docstrings for the
formulas); `cuda_twins` explains how a loop kernel becomes a grid. Here:

* im2col: one thread per entry of cols. Thread o finds its (n, l, c, k) from o, computes the
  input position p = l·stride + k·dilation − padding and copies x[n, c, p] (0 in the padding).
* col2im: one thread per entry of x (the gather form of the CPU loop's scatter). Entry
  (n, c, p) receives cols[n, l, c·K + k] from every (l, k) with l·stride + k·dilation −
  padding = p. For one l there is at most one such k, and l·stride must lie within
  [p + padding − (K−1)·dilation, p + padding], so the thread walks only that range of l,
  in increasing order — the order in which the CPU loop adds them, so the sums are equal to
  the last bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from numba import cuda

from ..cuda_ops import launch_per_element, num_elements
from .cuda_twins import cuda_twin

if TYPE_CHECKING:
    from ..tensor_data import Shape, Storage, Strides

__all__ = ["im2col1d", "col2im1d", "im2col2d", "col2im2d"]


@cuda.jit(device=True)
def windows_over(p: int, span: int, stride: int, count: int) -> tuple[int, int]:
    """The windows w (0 ≤ w < count, window w starting at w·stride) whose reach
    [w·stride, w·stride + span] holds the padded position p ≥ 0: the range first … last
    (empty when first > last)."""
    low = p - span
    first = 0 if low <= 0 else (low + stride - 1) // stride
    last = p // stride
    if last > count - 1:
        last = count - 1
    return first, last


# ---------------------------------------------------------------------------------------
# 1-d


@cuda.jit
def _im2col1d(out, out_shape, out_strides, x, x_shape, x_strides, kernel_size, stride, padding, dilation):
    o = cuda.grid(1)
    l_out, width = out_shape[1], out_shape[2]
    if o < out_shape[0] * l_out * width:
        col = o % width
        l = (o // width) % l_out  # noqa: E741
        n = o // (width * l_out)
        c = col // kernel_size
        k = col % kernel_size
        pos = l * stride + k * dilation - padding
        value = 0.0
        if 0 <= pos < x_shape[2]:
            value = x[n * x_strides[0] + c * x_strides[1] + pos * x_strides[2]]
        out[n * out_strides[0] + l * out_strides[1] + col * out_strides[2]] = value


@cuda_twin
def im2col1d(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    x: Storage,
    x_shape: Shape,
    x_strides: Strides,
    kernel_size: int,
    stride: int,
    padding: int,
    dilation: int,
) -> None:
    """cols [N, L_out, C·K] from x [N, C, L]: one thread per entry of cols."""
    launch_per_element(
        _im2col1d,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        x,
        x_shape,
        x_strides,
        kernel_size,
        stride,
        padding,
        dilation,
    )


@cuda.jit
def _col2im1d(
    out, out_shape, out_strides, cols, cols_shape, cols_strides, kernel_size, stride, padding, dilation, zero
):
    o = cuda.grid(1)
    channels, length = out_shape[1], out_shape[2]
    if o < out_shape[0] * channels * length:
        p = o % length
        c = (o // length) % channels
        n = o // (length * channels)
        total = zero  # of out's dtype: each addition rounds as the CPU loop's `out[…] +=` does
        first, last = windows_over(p + padding, (kernel_size - 1) * dilation, stride, cols_shape[1])
        for l in range(first, last + 1):  # noqa: E741
            offset = p + padding - l * stride
            if offset % dilation == 0:
                col = c * kernel_size + offset // dilation
                total += cols[n * cols_strides[0] + l * cols_strides[1] + col * cols_strides[2]]
        out[n * out_strides[0] + c * out_strides[1] + p * out_strides[2]] = total


@cuda_twin
def col2im1d(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    cols: Storage,
    cols_shape: Shape,
    cols_strides: Strides,
    kernel_size: int,
    stride: int,
    padding: int,
    dilation: int,
) -> None:
    """x [N, C, L] = the sums of the copies in cols [N, L_out, C·K]: one thread per entry of x."""
    launch_per_element(
        _col2im1d,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        cols,
        cols_shape,
        cols_strides,
        kernel_size,
        stride,
        padding,
        dilation,
        out.dtype.type(0),
    )


# ---------------------------------------------------------------------------------------
# 2-d: the same on both spatial axes


@cuda.jit
def _im2col2d(out, out_shape, out_strides, x, x_shape, x_strides, kh, kw, sh, sw, ph, pw, dh, dw):
    o = cuda.grid(1)
    out_h, out_w, width = out_shape[1], out_shape[2], out_shape[3]
    if o < out_shape[0] * out_h * out_w * width:
        col = o % width
        j = (o // width) % out_w
        i = (o // (width * out_w)) % out_h
        n = o // (width * out_w * out_h)
        c = col // (kh * kw)
        a = (col // kw) % kh
        b = col % kw
        y = i * sh + a * dh - ph
        z = j * sw + b * dw - pw
        value = 0.0
        if 0 <= y < x_shape[2] and 0 <= z < x_shape[3]:
            value = x[n * x_strides[0] + c * x_strides[1] + y * x_strides[2] + z * x_strides[3]]
        out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2] + col * out_strides[3]] = value


@cuda_twin
def im2col2d(
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
    dh: int,
    dw: int,
) -> None:
    """cols [N, OH, OW, C·KH·KW] from x [N, C, H, W]: one thread per entry of cols."""
    launch_per_element(
        _im2col2d,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        x,
        x_shape,
        x_strides,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
    )


@cuda.jit
def _col2im2d(
    out, out_shape, out_strides, cols, cols_shape, cols_strides, kh, kw, sh, sw, ph, pw, dh, dw, zero
):
    o = cuda.grid(1)
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    if o < out_shape[0] * channels * height * width:
        z = o % width
        y = (o // width) % height
        c = (o // (width * height)) % channels
        n = o // (width * height * channels)
        total = zero
        i_first, i_last = windows_over(y + ph, (kh - 1) * dh, sh, cols_shape[1])
        j_first, j_last = windows_over(z + pw, (kw - 1) * dw, sw, cols_shape[2])
        for i in range(i_first, i_last + 1):  # rows of windows, then columns: the CPU's order
            dy = y + ph - i * sh
            if dy % dh != 0:
                continue
            for j in range(j_first, j_last + 1):
                dz = z + pw - j * sw
                if dz % dw == 0:
                    col = (c * kh + dy // dh) * kw + dz // dw
                    total += cols[
                        n * cols_strides[0]
                        + i * cols_strides[1]
                        + j * cols_strides[2]
                        + col * cols_strides[3]
                    ]
        out[n * out_strides[0] + c * out_strides[1] + y * out_strides[2] + z * out_strides[3]] = total


@cuda_twin
def col2im2d(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    cols: Storage,
    cols_shape: Shape,
    cols_strides: Strides,
    kh: int,
    kw: int,
    sh: int,
    sw: int,
    ph: int,
    pw: int,
    dh: int,
    dw: int,
) -> None:
    """x [N, C, H, W] = the sums of the copies in cols: one thread per entry of x."""
    launch_per_element(
        _col2im2d,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        cols,
        cols_shape,
        cols_strides,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        out.dtype.type(0),
    )
