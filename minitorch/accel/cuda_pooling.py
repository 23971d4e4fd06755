"""CUDA twins of the pooling kernels of `nn/pooling.py` (every array [N, C, H, W]).

Same names, arguments and results as the CPU kernels (see their docstrings); `cuda_twins`
explains the plan. Forward: one thread per output entry, which scans its window exactly as
the CPU loop does. Average backward: one thread per entry (y, z) of ∂L/∂x, which gathers from the
windows (i, j) that reach it — rows i with i·sh − ph ≤ y ≤ i·sh − ph + KH − 1, and the same
for columns — in the CPU loop's order (i, then j). Max
backward: one thread per (n, c) plane (its docstring says why).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from numba import cuda

from ..cuda_ops import launch_per_element, num_elements
from .cuda_conv import windows_over
from .cuda_twins import cuda_twin

if TYPE_CHECKING:
    from ..tensor_data import Shape, Storage, Strides

__all__ = ["max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward"]


@cuda.jit
def _max_pool2d_forward(
    out, out_shape, out_strides, argmax, x, x_shape, x_strides, kh, kw, sh, sw, ph, pw, dh, dw
):
    o = cuda.grid(1)  # the row-major ordinal of (n, c, i, j): argmax's position too
    channels, out_h, out_w = out_shape[1], out_shape[2], out_shape[3]
    if o < out_shape[0] * channels * out_h * out_w:
        j = o % out_w
        i = (o // out_w) % out_h
        c = (o // (out_w * out_h)) % channels
        n = o // (out_w * out_h * channels)
        height, width = x_shape[2], x_shape[3]
        x_plane = n * x_strides[0] + c * x_strides[1]
        top = i * sh - ph
        left = j * sw - pw
        best = -math.inf  # the padding
        best_at = -1
        for a in range(kh):
            y = top + a * dh
            if 0 <= y < height:
                for b in range(kw):
                    z = left + b * dw
                    if 0 <= z < width:
                        v = x[x_plane + y * x_strides[2] + z * x_strides[3]]
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
        argmax[o] = best_at


@cuda_twin
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
    """out and argmax [N, C, OH, OW]: one thread per window."""
    launch_per_element(
        _max_pool2d_forward,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        argmax,
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
        written=(0, 3),
    )


@cuda.jit
def _max_pool2d_backward(out, out_shape, out_strides, argmax, grad, grad_shape, grad_strides):
    plane = cuda.grid(1)  # (n, c): this thread owns the whole plane out[n, c]
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    if plane < out_shape[0] * channels:
        n = plane // channels
        c = plane % channels
        x_plane = n * out_strides[0] + c * out_strides[1]
        for y in range(height):
            for z in range(width):
                out[x_plane + y * out_strides[2] + z * out_strides[3]] = 0.0
        out_h, out_w = grad_shape[2], grad_shape[3]
        g_plane = n * grad_strides[0] + c * grad_strides[1]
        for i in range(out_h):
            for j in range(out_w):
                at = argmax[(plane * out_h + i) * out_w + j]
                out[x_plane + (at // width) * out_strides[2] + (at % width) * out_strides[3]] += grad[
                    g_plane + i * grad_strides[2] + j * grad_strides[3]
                ]


@cuda_twin
def max_pool2d_backward(
    out: Storage,
    out_shape: Shape,
    out_strides: Strides,
    argmax: Storage,
    grad: Storage,
    grad_shape: Shape,
    grad_strides: Strides,
) -> None:
    """∂L/∂x [N, C, H, W]: one thread per (n, c) plane, the CPU loop's body.

    The exception to the gather rule: argmax records where each window's max was, not the
    window's geometry, so an entry of x cannot tell which windows reach it without scanning
    them all. A thread per plane scatters instead (no race: it owns its plane). Fewer
    threads (N·C), but each does only the plane's OH·OW additions."""
    launch_per_element(
        _max_pool2d_backward,
        int(out_shape[0]) * int(out_shape[1]),
        out,
        out_shape,
        out_strides,
        argmax,
        grad,
        grad_shape,
        grad_strides,
    )


@cuda.jit
def _avg_pool2d_forward(
    out, out_shape, out_strides, x, x_shape, x_strides, kh, kw, sh, sw, ph, pw, count_include_pad
):
    o = cuda.grid(1)
    channels, out_h, out_w = out_shape[1], out_shape[2], out_shape[3]
    if o < out_shape[0] * channels * out_h * out_w:
        j = o % out_w
        i = (o // out_w) % out_h
        c = (o // (out_w * out_h)) % channels
        n = o // (out_w * out_h * channels)
        height, width = x_shape[2], x_shape[3]
        x_plane = n * x_strides[0] + c * x_strides[1]
        total = 0.0  # float64, as the CPU loop's `total`
        count = 0
        for a in range(kh):
            y = i * sh - ph + a
            if 0 <= y < height:
                for b in range(kw):
                    z = j * sw - pw + b
                    if 0 <= z < width:
                        total += x[x_plane + y * x_strides[2] + z * x_strides[3]]
                        count += 1
        divisor = kh * kw if count_include_pad else count
        out[n * out_strides[0] + c * out_strides[1] + i * out_strides[2] + j * out_strides[3]] = (
            total / divisor
        )


@cuda_twin
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
    """out [N, C, OH, OW]: one thread per window."""
    launch_per_element(
        _avg_pool2d_forward,
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
        bool(count_include_pad),
    )


@cuda.jit
def _avg_pool2d_backward(
    out,
    out_shape,
    out_strides,
    grad,
    grad_shape,
    grad_strides,
    kh,
    kw,
    sh,
    sw,
    ph,
    pw,
    count_include_pad,
    zero,
):
    o = cuda.grid(1)
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    if o < out_shape[0] * channels * height * width:
        z = o % width
        y = (o // width) % height
        c = (o // (width * height)) % channels
        n = o // (width * height * channels)
        g_plane = n * grad_strides[0] + c * grad_strides[1]
        total = zero  # of out's dtype, as the CPU loop's `out[…] +=`
        i_first, i_last = windows_over(y + ph, kh - 1, sh, grad_shape[2])
        j_first, j_last = windows_over(z + pw, kw - 1, sw, grad_shape[3])
        for i in range(i_first, i_last + 1):
            # the window's rows inside x (no max()/min(): Numba's CUDA target fails to
            # compile the builtins on integers; tests/reference/test_cuda_twins.py's PTX check)
            top = i * sh - ph
            rows = (top + kh if top + kh < height else height) - (top if top > 0 else 0)
            for j in range(j_first, j_last + 1):
                left = j * sw - pw
                cols = (left + kw if left + kw < width else width) - (left if left > 0 else 0)
                divisor = kh * kw if count_include_pad else rows * cols
                total += grad[g_plane + i * grad_strides[2] + j * grad_strides[3]] / divisor
        out[n * out_strides[0] + c * out_strides[1] + y * out_strides[2] + z * out_strides[3]] = total


@cuda_twin
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
    """∂L/∂x [N, C, H, W]: one thread per entry, adding grad / divisor of each window over it."""
    launch_per_element(
        _avg_pool2d_backward,
        num_elements(out_shape),
        out,
        out_shape,
        out_strides,
        grad,
        grad_shape,
        grad_strides,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        bool(count_include_pad),
        out.dtype.type(0),
    )
