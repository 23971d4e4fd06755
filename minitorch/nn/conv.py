"""Stage A4, tasks 4.1 and 4.2: 1-D and 2-D convolution (as `torch.nn.functional.conv1d/2d`).

A convolution slides a bank of filters over the input. In 1-D, with input x [N, C_in, L],
weight w [C_out, C_in, K] and bias b [C_out]:

    out[n, o, l] = b[o] + Σ_c Σ_k w[o, c, k] · x[n, c, l·stride + k·dilation − padding]

where x is 0 outside 0 … L−1 (zero padding), and

    L_out = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1.

(Like PyTorch, this is a cross-correlation: the filter is not flipped.)

## How it is computed: im2col, then one matrix product

For every output position (n, l), copy the C_in·K input values the filter sees into one
row of a matrix `cols` [N, L_out, C_in·K] ("image to columns", `im2col1d`). Then the whole
convolution is one matrix product with the flattened weight W [C_out, C_in·K]:

    out[(n, l), o] = Σ_j cols[(n, l), j] · W[o, j]        i.e.  out = cols @ Wᵀ  (+ b)

computed by the tensor backend's matmul (stage A3's tiled kernel on the fast backend).
Autograd differentiates the product and the bias for free; the only new backward is that
of im2col itself, `col2im1d`, its adjoint: every input value was copied into several rows
of cols (once per filter position that covers it), so its gradient is the *sum* of the
gradients of its copies:

    ∂L/∂x[n, c, p] = Σ_{(l, k): l·stride + k·dilation − padding = p} ∂L/∂cols[n, l, c·K + k]

im2col and col2im are *kernels* in the sense of `tensor_ops`: loops over a raw storage,
shape and strides that fill a preallocated `out`. The backend runs them (`backend.im2col1d`,
…): as Python on the simple backend, compiled with Numba (`prange` loops in parallel) on
the fast backend; the CUDA backend runs CUDA versions of them, written separately (from
stage A5 on; before, it raises a NotImplementedError naming the operation). So write them with
plain loops, integers and indexing only — no NumPy calls, no Python objects.

2-D is the same with (i, j) output positions and (a, b) filter offsets:
cols [N, OH, OW, C_in·KH·KW] and out = cols @ Wᵀ with W [C_out, C_in·KH·KW].
"""

from __future__ import annotations

import math
from typing import Optional, Union

from numba import prange

from ..autodiff import Context
from ..function import Function
from ..module import Module
from .parameter import Parameter
from ..tensor import Tensor
from ..tensor_data import Shape, ShapeError, Storage, Strides
from ..tensor_ops import TensorBackend, backend_kernel
from .linear import uniform
from .validation import check_float, int_tuple

IntOr2 = Union[int, tuple[int, int]]
Padding1d = Union[int, str, tuple[int]]
Padding2d = Union[int, str, tuple[int, int]]

__all__ = [
    "conv1d",
    "conv2d",
    "Conv1d",
    "Conv2d",
    "unfold1d",
    "unfold2d",
    "im2col1d",
    "col2im1d",
    "im2col2d",
    "col2im2d",
]


# ---------------------------------------------------------------------------------------
# ## Task 4.1: conv1d — the kernels


@backend_kernel("conv1d (im2col1d)")
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
    """Kernel: fill cols = out [N, L_out, C·K] from x [N, C, L] (both with any strides):

        cols[n, l, c·K + k] = x[n, c, l·stride + k·dilation − padding]   (0 outside 0 … L−1)

    `padding` is the number of zeros before position 0 (those after the end follow from
    L_out = out_shape[1]). Parallel (`prange`) over the N·L_out rows of cols: each
    iteration writes only its own row.
    """
    # BEGIN SOLUTION 4.1
    channels, length = x_shape[1], x_shape[2]
    l_out = out_shape[1]
    for row in prange(out_shape[0] * l_out):
        n = row // l_out
        l = row % l_out  # noqa: E741
        start = l * stride - padding
        out_row = n * out_strides[0] + l * out_strides[1]
        for c in range(channels):
            x_plane = n * x_strides[0] + c * x_strides[1]
            for k in range(kernel_size):
                pos = start + k * dilation
                o = out_row + (c * kernel_size + k) * out_strides[2]
                if 0 <= pos < length:
                    out[o] = x[x_plane + pos * x_strides[2]]
                else:
                    out[o] = 0.0
    # END SOLUTION 4.1


@backend_kernel("conv1d backward (col2im1d)")
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
    """Kernel, the adjoint of `im2col1d`: overwrite out = x [N, C, L] with the sums

        x[n, c, p] = Σ_{(l, k): l·stride + k·dilation − padding = p} cols[n, l, c·K + k]

    of cols [N, L_out, C·K]. Parallel over the N·C (sample, channel) rows of x: each
    iteration writes only its own row, so the additions never race.
    """
    # BEGIN SOLUTION 4.1
    channels, length = out_shape[1], out_shape[2]
    l_out = cols_shape[1]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * out_strides[0] + c * out_strides[1]
        for p in range(length):
            out[x_plane + p * out_strides[2]] = 0.0
        for l in range(l_out):  # noqa: E741
            start = l * stride - padding
            cols_row = n * cols_strides[0] + l * cols_strides[1]
            for k in range(kernel_size):
                pos = start + k * dilation
                if 0 <= pos < length:
                    out[x_plane + pos * out_strides[2]] += cols[
                        cols_row + (c * kernel_size + k) * cols_strides[2]
                    ]
    # END SOLUTION 4.1


# ---------------------------------------------------------------------------------------
# ## Task 4.2: conv2d — the kernels


@backend_kernel("conv2d (im2col2d)")
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
    """Kernel: fill cols = out [N, OH, OW, C·KH·KW] from x [N, C, H, W] (any strides):

        cols[n, i, j, (c·KH + a)·KW + b] = x[n, c, i·sh + a·dh − ph, j·sw + b·dw − pw]

    (0 where the position falls in the padding). Window (kh, kw), stride (sh, sw), padding
    before (ph, pw), dilation (dh, dw). Parallel over the N·OH·OW rows of cols.
    """
    # BEGIN SOLUTION 4.2
    channels, height, width = x_shape[1], x_shape[2], x_shape[3]
    out_h, out_w = out_shape[1], out_shape[2]
    for row in prange(out_shape[0] * out_h * out_w):
        n = row // (out_h * out_w)
        i = (row // out_w) % out_h
        j = row % out_w
        top = i * sh - ph
        left = j * sw - pw
        out_row = n * out_strides[0] + i * out_strides[1] + j * out_strides[2]
        col = 0
        for c in range(channels):
            x_plane = n * x_strides[0] + c * x_strides[1]
            for a in range(kh):
                y = top + a * dh
                for b in range(kw):
                    z = left + b * dw
                    o = out_row + col * out_strides[3]
                    if 0 <= y < height and 0 <= z < width:
                        out[o] = x[x_plane + y * x_strides[2] + z * x_strides[3]]
                    else:
                        out[o] = 0.0
                    col += 1
    # END SOLUTION 4.2


@backend_kernel("conv2d backward (col2im2d)")
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
    """Kernel, the adjoint of `im2col2d`: overwrite out = x [N, C, H, W] with

        x[n, c, y, z] = Σ over the (i, j, a, b) with i·sh + a·dh − ph = y and
                        j·sw + b·dw − pw = z of cols[n, i, j, (c·KH + a)·KW + b]

    Parallel over the N·C planes of x (each iteration writes only its own plane).
    """
    # BEGIN SOLUTION 4.2
    channels, height, width = out_shape[1], out_shape[2], out_shape[3]
    out_h, out_w = cols_shape[1], cols_shape[2]
    for plane in prange(out_shape[0] * channels):
        n = plane // channels
        c = plane % channels
        x_plane = n * out_strides[0] + c * out_strides[1]
        for y in range(height):
            for z in range(width):
                out[x_plane + y * out_strides[2] + z * out_strides[3]] = 0.0
        for i in range(out_h):
            for j in range(out_w):
                cols_row = n * cols_strides[0] + i * cols_strides[1] + j * cols_strides[2]
                for a in range(kh):
                    y = i * sh - ph + a * dh
                    if y < 0 or y >= height:
                        continue
                    for b in range(kw):
                        z = j * sw - pw + b * dw
                        if 0 <= z < width:
                            col = (c * kh + a) * kw + b
                            out[x_plane + y * out_strides[2] + z * out_strides[3]] += cols[
                                cols_row + col * cols_strides[3]
                            ]
    # END SOLUTION 4.2


# ---------------------------------------------------------------------------------------
# im2col as a differentiable function (library code: allocate, call the backend's kernel)


def _out_size(size: int, before: int, after: int, kernel: int, stride: int, dilation: int) -> int:
    """⌊(size + before + after − dilation·(kernel − 1) − 1) / stride⌋ + 1."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


class Unfold1d(Function):
    """cols = im2col1d(input): [N, C, L] → [N, L_out, C·K]; backward: col2im1d."""

    @staticmethod
    def forward(
        ctx: Context, input: Tensor, kernel_size: int, stride: int, padding: tuple[int, int], dilation: int
    ) -> Tensor:
        kernel = input.backend.im2col1d  # the backend's version (raises if it has none)
        n, c, length = input.shape
        l_out = _out_size(length, padding[0], padding[1], kernel_size, stride, dilation)
        cols = input.new_zeros((n, l_out, c * kernel_size))
        kernel(*cols.tuple(), *input.tuple(), kernel_size, stride, padding[0], dilation)
        ctx.save_for_backward(input.shape, input.dtype, kernel_size, stride, padding[0], dilation)
        return cols

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        shape, dtype, kernel_size, stride, before, dilation = ctx.saved_values
        kernel = grad_output.backend.col2im1d
        grad = grad_output.new_zeros(shape, dtype=dtype)  # the input's dtype
        kernel(*grad.tuple(), *grad_output.tuple(), kernel_size, stride, before, dilation)
        return grad, None, None, None, None


class Unfold2d(Function):
    """cols = im2col2d(input): [N, C, H, W] → [N, OH, OW, C·KH·KW]; backward: col2im2d."""

    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int, int, int],
        dilation: tuple[int, int],
    ) -> Tensor:
        kernel = input.backend.im2col2d
        n, c, height, width = input.shape
        (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
        oh = _out_size(height, padding[0], padding[1], kh, sh, dh)
        ow = _out_size(width, padding[2], padding[3], kw, sw, dw)
        geometry = (kh, kw, sh, sw, padding[0], padding[2], dh, dw)
        cols = input.new_zeros((n, oh, ow, c * kh * kw))
        kernel(*cols.tuple(), *input.tuple(), *geometry)
        ctx.save_for_backward(input.shape, input.dtype, geometry)
        return cols

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple:
        shape, dtype, geometry = ctx.saved_values
        kernel = grad_output.backend.col2im2d
        grad = grad_output.new_zeros(shape, dtype=dtype)  # the input's dtype
        kernel(*grad.tuple(), *grad_output.tuple(), *geometry)
        return grad, None, None, None, None


def unfold1d(
    input: Tensor, kernel_size: int, stride: int = 1, padding: tuple[int, int] = (0, 0), dilation: int = 1
) -> Tensor:
    """im2col of a [N, C, L] input: cols [N, L_out, C·K] (padding = zeros before, after)."""
    return Unfold1d.apply(input, kernel_size, stride, tuple(padding), dilation)


def unfold2d(
    input: Tensor,
    kernel_size: tuple[int, int],
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
) -> Tensor:
    """im2col of a [N, C, H, W] input: cols [N, OH, OW, C·KH·KW] (padding = top, bottom,
    left, right)."""
    return Unfold2d.apply(input, tuple(kernel_size), tuple(stride), tuple(padding), tuple(dilation))


# ---------------------------------------------------------------------------------------
# The functional forms: argument checks, then im2col and a matrix product


def _same_padding(
    name: str, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]
) -> list[int]:
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
        raise ShapeError(
            f"{name}: bias must have shape ({c_out},) (one per output channel), got {bias.shape}"
        )


def _check_channels(name: str, input: Tensor, weight: Tensor) -> None:
    if weight.shape[1] != input.shape[1]:
        raise ShapeError(
            f"{name}: input has {input.shape[1]} channels (shape {input.shape}) but weight expects "
            f"{weight.shape[1]} (shape {weight.shape})"
        )


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

    Computed as cols = im2col1d(input) [N, L_out, C_in·K], out = cols @ Wᵀ + bias with
    W = weight as [C_out, C_in·K], moved back to [N, C_out, L_out].
    """
    name = "conv1d"
    check_float(name, input=input, weight=weight, bias=bias)
    if groups != 1:
        raise NotImplementedError(f"{name}: only groups=1 is supported, got groups={groups}")
    if input.dims != 3:
        raise ShapeError(
            f"{name}: input must be 3-D [N, C_in, L], got shape {input.shape}"
            + (" (add a batch dimension with .unsqueeze(0))" if input.dims == 2 else "")
        )
    if weight.dims != 3:
        raise ShapeError(f"{name}: weight must be 3-D [C_out, C_in, K], got shape {weight.shape}")
    _check_channels(name, input, weight)
    n, c_in, length = input.shape
    c_out, _, k = weight.shape
    _check_bias(name, bias, c_out)
    (s,) = int_tuple(name, "stride", stride, 1, 1)
    (d,) = int_tuple(name, "dilation", dilation, 1, 1)
    if padding == "valid":
        pads = (0, 0)
    elif padding == "same":
        pads = tuple(_same_padding(name, (k,), (d,), (s,)))
    elif isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int, 'valid' or 'same', got {padding!r}")
    else:
        pads = int_tuple(name, "padding", padding, 1, 0) * 2
    span = d * (k - 1) + 1
    if length + pads[0] + pads[1] < span:
        raise ShapeError(
            f"{name}: the kernel (size {k}, dilation {d}, spanning {span}) is larger than the "
            f"padded input (length {length} + padding {pads[0]}+{pads[1]}); input {input.shape}, weight {weight.shape}"
        )
    # BEGIN SOLUTION 4.1
    cols = unfold1d(input, k, s, pads, d)  # [N, L_out, C_in·K]
    l_out = cols.shape[1]
    w = weight.reshape(c_out, c_in * k)  # W [C_out, C_in·K]
    out = cols.view(n * l_out, c_in * k) @ w.transpose(0, 1)  # [N·L_out, C_out]
    if bias is not None:
        out = out + bias
    return out.view(n, l_out, c_out).permute(0, 2, 1).contiguous()  # [N, C_out, L_out]
    # END SOLUTION 4.1


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

    Computed as cols = im2col2d(input) [N, OH, OW, C_in·KH·KW], out = cols @ Wᵀ + bias with
    W = weight as [C_out, C_in·KH·KW], moved back to [N, C_out, OH, OW].
    """
    name = "conv2d"
    check_float(name, input=input, weight=weight, bias=bias)
    if groups != 1:
        raise NotImplementedError(f"{name}: only groups=1 is supported, got groups={groups}")
    if input.dims != 4:
        raise ShapeError(
            f"{name}: input must be 4-D [N, C_in, H, W], got shape {input.shape}"
            + (" (add a batch dimension with .unsqueeze(0))" if input.dims == 3 else "")
        )
    if weight.dims != 4:
        raise ShapeError(f"{name}: weight must be 4-D [C_out, C_in, KH, KW], got shape {weight.shape}")
    _check_channels(name, input, weight)
    n, c_in, height, width = input.shape
    c_out, _, kh, kw = weight.shape
    _check_bias(name, bias, c_out)
    s = int_tuple(name, "stride", stride, 2, 1)
    d = int_tuple(name, "dilation", dilation, 2, 1)
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        pads = tuple(_same_padding(name, (kh, kw), d, s))
    elif isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        ph, pw = int_tuple(name, "padding", padding, 2, 0)
        pads = (ph, ph, pw, pw)
    for axis, size, k, dd, before, after in (
        ("height", height, kh, d[0], pads[0], pads[1]),
        ("width", width, kw, d[1], pads[2], pads[3]),
    ):
        span = dd * (k - 1) + 1
        if size + before + after < span:
            raise ShapeError(
                f"{name}: along the {axis}, the kernel (size {k}, dilation {dd}, spanning {span}) is "
                f"larger than the padded input ({size} + padding {before}+{after}); "
                f"input {input.shape}, weight {weight.shape}"
            )
    # BEGIN SOLUTION 4.2
    cols = unfold2d(input, (kh, kw), s, pads, d)  # [N, OH, OW, C_in·KH·KW]
    _, oh, ow, ck = cols.shape
    w = weight.reshape(c_out, ck)  # W [C_out, C_in·KH·KW]
    out = cols.view(n * oh * ow, ck) @ w.transpose(0, 1)  # [N·OH·OW, C_out]
    if bias is not None:
        out = out + bias
    return out.view(n, oh, ow, c_out).permute(0, 3, 1, 2).contiguous()  # [N, C_out, OH, OW]
    # END SOLUTION 4.2


# ---------------------------------------------------------------------------------------
# The layers


class _ConvNd(Module):
    """Shared constructor of Conv1d and Conv2d: parameters `weight` [C_out, C_in, *kernel]
    and `bias` [C_out], both U(−1/√fan_in, 1/√fan_in) with fan_in = C_in · Π kernel (PyTorch's
    default initialisation)."""

    _dims = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: tuple[int, ...],
        stride: tuple[int, ...],
        padding: Union[str, tuple[int, ...]],
        dilation: tuple[int, ...],
        groups: int,
        bias: bool,
        padding_mode: str,
        dtype,
        backend: Optional[TensorBackend],
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
        fan_in = in_channels * math.prod(kernel_size)
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
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple[int]],
        stride: Union[int, tuple[int]] = 1,
        padding: Padding1d = 0,
        dilation: Union[int, tuple[int]] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        name = "Conv1d"
        pad = padding if isinstance(padding, str) else int_tuple(name, "padding", padding, 1, 0)
        super().__init__(
            in_channels,
            out_channels,
            int_tuple(name, "kernel_size", kernel_size, 1, 1),
            int_tuple(name, "stride", stride, 1, 1),
            pad,
            int_tuple(name, "dilation", dilation, 1, 1),
            groups,
            bias,
            padding_mode,
            dtype,
            backend,
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
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOr2,
        stride: IntOr2 = 1,
        padding: Padding2d = 0,
        dilation: IntOr2 = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        dtype=None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        name = "Conv2d"
        pad = padding if isinstance(padding, str) else int_tuple(name, "padding", padding, 2, 0)
        super().__init__(
            in_channels,
            out_channels,
            int_tuple(name, "kernel_size", kernel_size, 2, 1),
            int_tuple(name, "stride", stride, 2, 1),
            pad,
            int_tuple(name, "dilation", dilation, 2, 1),
            groups,
            bias,
            padding_mode,
            dtype,
            backend,
        )

    def forward(self, input: Tensor) -> Tensor:
        bias = None if self.bias is None else self.bias.value
        return conv2d(input, self.weight.value, bias, self.stride, self.padding, self.dilation)
