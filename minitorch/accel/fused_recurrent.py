r"""One LSTM or GRU time step as one fused operation — the reference's fast path for
`lstm_step` (task 5.2) and `gru_step` (task 5.3).

The composed steps are about fifteen tensor operations forward (a product, two additions,
four slices, four activations, three products and a sum …) and about thirty backward,
each with its Python overhead, its temporary tensor and — for every slice — a zero tensor
of the full gate width in backward. A layer runs one step per time step, so a sequence of
64 steps pays that 64 times. Here a step is ONE `Function`: the matrix product
h W_hhᵀ with the library's matmul, then ONE Numba kernel for all the gates and the state
update; backward is ONE Numba kernel for the gate gradients, then the matrix products.

Shapes: batch B, hidden size H, G gate blocks (LSTM 4: i, f, g, o; GRU 3: r, z, n).
x_proj = x_t W_ihᵀ + b_ih [B, G·H] (the layer computes it for all steps at once), h and c
[B, H], W_hh [G·H, H], b_hh [G·H] or None. σ is the logistic sigmoid.

LSTM forward (the same function as `lstm.lstm_step`):

    a = x_proj + h W_hhᵀ + b_hh                                  [B, 4H], blocks i, f, g, o
    i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)         each [B, H]   (saved)
    c' = f ⊙ c + i ⊙ g                                            [B, H]
    h' = o ⊙ tanh(c')                                             [B, H]   (tanh(c') saved)

LSTM backward, given ∂h' and ∂c' (the derivative reaching c' from h' is added first):

    ∂c'ₜ = ∂c' + ∂h' ⊙ o ⊙ (1 − tanh²(c'))
    ∂a_i = ∂c'ₜ ⊙ g ⊙ i(1 − i)      ∂a_f = ∂c'ₜ ⊙ c ⊙ f(1 − f)
    ∂a_g = ∂c'ₜ ⊙ i ⊙ (1 − g²)       ∂a_o = ∂h' ⊙ tanh(c') ⊙ o(1 − o)
    ∂c = ∂c'ₜ ⊙ f                   ∂x_proj = ∂a                [B, 4H]
    ∂h = ∂a W_hh  [B, H]      ∂W_hh = ∂aᵀ h  [4H, H]      ∂b_hh = Σ_batch ∂a  [4H]

GRU forward (PyTorch's formulation, as `gru.gru_step`: r multiplies h W_hnᵀ + b_hn):

    gh = h W_hhᵀ + b_hh                                          [B, 3H], blocks r, z, n
    r = σ(x_r + gh_r)   z = σ(x_z + gh_z)   n = tanh(x_n + r ⊙ gh_n)     (r, z, n, gh_n saved)
    h' = (1 − z) ⊙ n + z ⊙ h          computed as n + z ⊙ (h − n)

GRU backward, given ∂h'. With ∂n̂ = ∂h' ⊙ (1 − z) ⊙ (1 − n²) the derivative at n's
pre-activation x_n + r ⊙ gh_n:

    ∂r̂ = ∂n̂ ⊙ gh_n ⊙ r(1 − r)        ∂ẑ = ∂h' ⊙ (h − n) ⊙ z(1 − z)
    ∂x_proj = [∂r̂, ∂ẑ, ∂n̂]                                       [B, 3H]
    ∂gh     = [∂r̂, ∂ẑ, ∂n̂ ⊙ r]   (the n block of gh sits behind r)   [B, 3H]
    ∂h = ∂h' ⊙ z + ∂gh W_hh     ∂W_hh = ∂ghᵀ h     ∂b_hh = Σ_batch ∂gh

Two outputs, one node. The `Function` machinery records one output tensor per node, and
the LSTM step has two, h' and c'. The node returns them stacked, hc [2, B, H], and
`lstm_step` returns the views hc[0] and hc[1]. Each view's backward is a zero [2, B, H]
with the view's gradient written in (the library's `Index`), and the two are added: small
next to the step (measured for a whole layer, B = 32, H = 256, T = 64: about 2.5% of its
forward and backward time on one thread; the step's three matrix products take 35–40%).

Kernels. Every kernel loops over batch rows in parallel (`prange`): a row's outputs are
its own, so no two threads write the same number. The bias gradient, a sum *across* rows,
is a separate pass after the kernel (`_column_sums`; for a sequence, once over all steps).
The activations use `fast_exp.exp`, plain arithmetic instead of a call into the C
library, so that LLVM runs the gate loop on SIMD lanes. Small steps run the serial compile
of the same kernel: waking the thread pool costs more than the loop. The matrix products
use the backend's matmul (not NumPy's BLAS, whose thread pool fights Numba's).

A whole sequence (`LSTMSequence`, `GRUSequence`, through `unroll`). An LSTM or GRU layer
goes further: each layer and direction runs its T steps as ONE node. Forward is the T
steps above, with W_hh packed once for the T products (`_RightFactor`); backward keeps
every step's ∂a, so that ∂W_hh is one product over all steps instead of T products added
up by backpropagation, and no graph node, view or zero tensor is made per step. Measured
on the char-LSTM training step (`python -m bench.train_step --models lstm`, B = 32,
H = 256, T = 64): see BENCHMARKS.md.

It replaces `LSTM.cell_step`, `GRU.cell_step`, `unroll` and `time_steps`
(`minitorch/nn/recurrent.py`, through `fast_paths`) only on CPU backends, for
float32/float64 2-D inputs of one dtype (see `supports`); anything else takes the composed
step. The reference ships this file from stage A6 on (`reference_only` in the A5
manifest), so a student's A5 cells are what runs and is graded in A5.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from numba import prange

from ..autodiff import Context
from ..fast_paths import replaces
from ..function import Function
from ..jit import njit, serial_and_parallel
from ..nn.recurrent import GRU, LSTM, LayerStep
from ..tensor import Tensor
from ..tensor_data import TensorData
from ..tensor_ops import TensorBackend
from . import tuned_kernels
from .fast_exp import exp as fast_exp
from .tuned_ops import TunedOps

__all__ = ["supports", "lstm_step", "gru_step", "time_steps", "unroll"]

#: Below this many gate values (B·G·H) a kernel runs its serial compile on the calling
#: thread. Low, because the parallel compile is also the *vectorised* one: Numba tells LLVM
#: that a parallel loop's arrays do not overlap, so its body runs on SIMD lanes, while the
#: serial compile must assume they may and stays scalar. Measured (LSTM, float32, 2
#: threads): forward at 1,024 values 15.6 µs serial, 4.3 µs parallel; at 32,768 (B = 32,
#: H = 256) 485 µs and 84 µs. Backward at 1,024: 1.4 and 1.9 µs.
PARALLEL_MIN = 1 << 10
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ## The kernels (each Python function is compiled twice: serial and parallel)


@njit(inline="always")
def _sigmoid(v: float) -> float:
    """σ(v), stable: the exponent is never positive (as `operators.sigmoid`)."""
    if v >= 0.0:
        return 1.0 / (1.0 + fast_exp(-v))
    e = fast_exp(v)
    return e / (1.0 + e)


@njit(inline="always")
def _tanh(v: float) -> float:
    """tanh(v) to about 2 ulp, in half the time of `math.tanh` (the C library's tanh costs
    about three exp): the method of the Cephes library. For |v| < 0.625 a rational function
    v + v·z·P(z)/Q(z), z = v² (there 1 − e^{−2|v|} would cancel); above, 1 − 2/(e^{2|v|} + 1)."""
    a = abs(v)
    if a < 0.625:
        z = v * v
        p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z - 1.61468768441708447952e3
        q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z + 4.84406305325125486048e3
        return v + v * z * p / q
    t = 1.0 - 2.0 / (fast_exp(2.0 * a) + 1.0)  # e^{2|v|} = inf for huge |v|: t = 1; NaN stays NaN
    return t if v >= 0.0 else -t


def _lstm_forward(
    x: np.ndarray,
    gh: np.ndarray,
    bias: np.ndarray,
    has_bias: bool,
    c: np.ndarray,
    hc: np.ndarray,
    act: np.ndarray,
    tanh_c: np.ndarray,
) -> None:
    """x, gh = h W_hhᵀ [B, 4H], bias [4H], c [B, H] → hc [2, B, H] (h', c'), act [B, 4H]
    (i, f, g, o), tanh_c [B, H]; every element of the outputs is written."""
    batch, hidden = c.shape
    for b in prange(batch):  # rows are independent: one per parallel iteration
        for j in range(hidden):
            a_i = x[b, j] + gh[b, j]  # same order of additions as the composed step
            a_f = x[b, hidden + j] + gh[b, hidden + j]
            a_g = x[b, 2 * hidden + j] + gh[b, 2 * hidden + j]
            a_o = x[b, 3 * hidden + j] + gh[b, 3 * hidden + j]
            if has_bias:
                a_i += bias[j]
                a_f += bias[hidden + j]
                a_g += bias[2 * hidden + j]
                a_o += bias[3 * hidden + j]
            i = _sigmoid(a_i)
            f = _sigmoid(a_f)
            g = _tanh(a_g)
            o = _sigmoid(a_o)
            c_next = f * c[b, j] + i * g
            t = _tanh(c_next)
            hc[0, b, j] = o * t
            hc[1, b, j] = c_next
            act[b, j] = i
            act[b, hidden + j] = f
            act[b, 2 * hidden + j] = g
            act[b, 3 * hidden + j] = o
            tanh_c[b, j] = t


def _lstm_backward(
    dhc: np.ndarray, act: np.ndarray, tanh_c: np.ndarray, c: np.ndarray, da: np.ndarray, dc: np.ndarray
) -> None:
    """dhc [2, B, H] (∂h', ∂c'), act [B, 4H], tanh_c, c [B, H] → da [B, 4H], dc [B, H]."""
    batch, hidden = c.shape
    for b in prange(batch):  # rows are independent: each writes its own da and dc
        for j in range(hidden):
            i = act[b, j]
            f = act[b, hidden + j]
            g = act[b, 2 * hidden + j]
            o = act[b, 3 * hidden + j]
            t = tanh_c[b, j]
            dh = dhc[0, b, j]
            dcn = dhc[1, b, j] + dh * o * (1.0 - t * t)  # c' reaches the loss two ways
            da[b, j] = dcn * g * i * (1.0 - i)
            da[b, hidden + j] = dcn * c[b, j] * f * (1.0 - f)
            da[b, 2 * hidden + j] = dcn * i * (1.0 - g * g)
            da[b, 3 * hidden + j] = dh * t * o * (1.0 - o)
            dc[b, j] = dcn * f


def _gru_forward(
    x: np.ndarray,
    gh: np.ndarray,
    bias: np.ndarray,
    has_bias: bool,
    h: np.ndarray,
    out: np.ndarray,
    act: np.ndarray,
    ghn: np.ndarray,
) -> None:
    """x, gh = h W_hhᵀ [B, 3H], bias [3H], h [B, H] → out [B, H] (h'), act [B, 3H] (r, z, n),
    ghn [B, H] (gh_n + b_hn); every element of the outputs is written."""
    batch, hidden = h.shape
    for b in prange(batch):
        for j in range(hidden):
            g_r = gh[b, j]
            g_z = gh[b, hidden + j]
            g_n = gh[b, 2 * hidden + j]
            if has_bias:  # gh = h W_hhᵀ + b_hh first, then x_proj + gh (the composed order)
                g_r += bias[j]
                g_z += bias[hidden + j]
                g_n += bias[2 * hidden + j]
            r = _sigmoid(x[b, j] + g_r)
            z = _sigmoid(x[b, hidden + j] + g_z)
            n = _tanh(x[b, 2 * hidden + j] + r * g_n)
            out[b, j] = n + z * (h[b, j] - n)
            act[b, j] = r
            act[b, hidden + j] = z
            act[b, 2 * hidden + j] = n
            ghn[b, j] = g_n


def _gru_backward(
    dout: np.ndarray,
    act: np.ndarray,
    ghn: np.ndarray,
    h: np.ndarray,
    dx: np.ndarray,
    dgh: np.ndarray,
    dh: np.ndarray,
) -> None:
    """dout [B, H] (∂h'), act [B, 3H], ghn, h [B, H] → dx, dgh [B, 3H] and dh [B, H] (the
    direct part ∂h' ⊙ z)."""
    batch, hidden = h.shape
    for b in prange(batch):
        for j in range(hidden):
            r = act[b, j]
            z = act[b, hidden + j]
            n = act[b, 2 * hidden + j]
            d = dout[b, j]
            d_n = d * (1.0 - z) * (1.0 - n * n)
            d_z = d * (h[b, j] - n) * z * (1.0 - z)
            d_r = d_n * ghn[b, j] * r * (1.0 - r)
            dx[b, j] = d_r
            dx[b, hidden + j] = d_z
            dx[b, 2 * hidden + j] = d_n
            dgh[b, j] = d_r
            dgh[b, hidden + j] = d_z
            dgh[b, 2 * hidden + j] = d_n * r
            dh[b, j] = d * z


@njit
def _column_sums(rows: np.ndarray) -> np.ndarray:
    """Σ over the rows of a [N, W] array, in float64 → [W] (the bias gradient Σ_batch ∂a).

    Row by row, each row added to all W sums at once: the inner loop runs along memory and
    LLVM vectorises it (a loop down each column would stride through memory)."""
    sums = np.zeros(rows.shape[1], dtype=np.float64)
    for n in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            sums[j] += rows[n, j]
    return sums


_lstm_forward_serial, _lstm_forward_parallel = serial_and_parallel(_lstm_forward)
_lstm_backward_serial, _lstm_backward_parallel = serial_and_parallel(_lstm_backward)
_gru_forward_serial, _gru_forward_parallel = serial_and_parallel(_gru_forward)
_gru_backward_serial, _gru_backward_parallel = serial_and_parallel(_gru_backward)


# ## NumPy views of tensors, matrix products, and back


def _array(t: Tensor) -> np.ndarray:
    """`t` as a C-contiguous NumPy array of its shape (a copy only when `t` is not contiguous)."""
    data = t._tensor
    if data.is_contiguous():
        return data._storage[: data.size].reshape(data.shape)
    view = data.numpy_view()
    return np.ascontiguousarray(view)  # one layout, so each kernel compiles once per dtype


def _tensor(array: np.ndarray, like: Tensor) -> Tensor:
    """A tensor over a C-contiguous array, on `like`'s backend (no copy)."""
    return Tensor.make(array.reshape(-1), array.shape, backend=like.backend)


def _transposed(data: TensorData) -> TensorData:
    """The transpose of a 2-D layout: the same storage, shape and strides swapped (no copy)."""
    return TensorData(data._storage, data.shape[::-1], data.strides[::-1])


def _rows(array: np.ndarray) -> TensorData:
    """A C-contiguous 2-D array as a layout (no copy)."""
    return TensorData(array.reshape(-1), array.shape)


def _product(a: TensorData, b: TensorData, backend: TensorBackend) -> np.ndarray:
    """a [n, k] @ b [k, m] as a new C-contiguous [n, m] array, by the backend's matmul.

    The operands go in as batches of one with any strides (so Wᵀ and ∂aᵀ are read in place,
    never copied), and the product comes out as an array the kernels can read — the same
    kernel as `a @ b`, without the graph bookkeeping of a tensor operation.
    """

    def as_batch(d: TensorData) -> Tensor:
        return Tensor(TensorData(d._storage, (1,) + d.shape, (0,) + d.strides), backend=backend)

    out = backend.matrix_multiply(as_batch(a), as_batch(b))  # a fresh row-major [1, n, m]
    return out._tensor._storage.reshape(a.shape[0], b.shape[1])


class _RightFactor:
    """A matrix b [k, m] that multiplies a new a [n, k] at every time step (W_hhᵀ forward,
    W_hh backward): `times(a)` = a @ b as a new C-contiguous [n, m] array.

    When the backend's matmul would run the tiled kernel on these shapes, b is packed ONCE
    here (`tuned_kernels.pack_right`) and each step runs that kernel with b already packed —
    the same micro-kernel in the same order, so the same numbers as `_product`, without
    packing b again at each of the T steps and without the backend's per-call checks.
    Otherwise each step is `_product`."""

    def __init__(self, b: TensorData, rows: int, backend: TensorBackend) -> None:
        self.b, self.backend, self.packed = b, backend, None
        if not (isinstance(backend.ops, type) and issubclass(backend.ops, TunedOps)):
            return
        tuned = tuned_kernels
        (k, m), dtype = b.shape, b._storage.dtype
        self.out_layout = (np.array([1, rows, m]), np.array([0, m, 1]))
        self.a_layout = (np.array([1, rows, k]), np.array([0, k, 1]))
        self.b_layout = (np.array((1,) + b.shape), np.array((0,) + b.strides))
        probe = np.empty(0, dtype=dtype)
        if tuned.tiled_applies(probe, *self.out_layout, *self.a_layout, *self.b_layout):
            self.packed = tuned.pack_right(b._storage, *self.b_layout, probe)
            self.tuned, self.work = tuned, rows * m * k
            self.kernel = tuned.tiled_kernel_for(dtype)

    def times(self, a: np.ndarray) -> np.ndarray:
        if self.packed is None:
            return _product(_rows(a), self.b, self.backend)
        out = np.empty((a.shape[0], self.b.shape[1]), dtype=a.dtype)  # the kernel writes it all
        self.tuned.launch(
            self.kernel,
            self.work,
            self.tuned.MATMUL_PARALLEL_MIN,
            out.reshape(-1),
            *self.out_layout,
            a.reshape(-1),
            *self.a_layout,
            self.b._storage,
            *self.b_layout,
            self.packed,
        )
        return out


def _bias(b_hh: Optional[Tensor], dtype: np.dtype) -> np.ndarray:
    return _array(b_hh) if b_hh is not None else np.empty(0, dtype=dtype)


def _bias_grad(da: np.ndarray, like: Tensor) -> Tensor:
    """∂b_hh = Σ over the rows of ∂a (every batch row, and every step for a sequence),
    summed in float64 and rounded once to ∂a's dtype."""
    flat = da.reshape(-1, da.shape[-1])
    return _tensor(_column_sums(flat).astype(da.dtype, copy=False), like)


def _weight_grads(
    da: np.ndarray, h: Tensor, w_hh: Tensor, needs: tuple[bool, bool]
) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """∂h = ∂a W_hh [B, H] and ∂W_hh = ∂aᵀ h [G·H, H], each only when its input needs a
    gradient (the zero initial state does not: the first step of a sequence saves a product)."""
    backend = h.backend
    dh = _product(_rows(da), w_hh._tensor, backend) if needs[0] else None
    dw = _product(_transposed(_rows(da)), h._tensor, backend) if needs[1] else None
    return dh, dw


# ## The Functions


class LSTMStep(Function):
    """(x_proj, h, c, W_hh, b_hh) → hc [2, B, H] = (h', c') stacked: one graph node."""

    @staticmethod
    def forward(
        ctx: Context, x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Optional[Tensor]
    ) -> Tensor:
        gh = _product(h._tensor, _transposed(w_hh._tensor), h.backend)  # h W_hhᵀ [B, 4H]
        cs = _array(c)
        batch, hidden = cs.shape
        hc = np.empty((2, batch, hidden), dtype=cs.dtype)  # the kernel writes every element
        act = np.empty((batch, 4 * hidden), dtype=cs.dtype)
        tanh_c = np.empty_like(cs)
        kernel = _lstm_forward_parallel if act.size >= PARALLEL_MIN else _lstm_forward_serial
        kernel(_array(x_proj), gh, _bias(b_hh, cs.dtype), b_hh is not None, cs, hc, act, tanh_c)
        ctx.save_for_backward(
            act, tanh_c, cs, h, w_hh, b_hh is not None, (h.requires_grad, w_hh.requires_grad)
        )
        return _tensor(hc, c)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        act, tanh_c, cs, h, w_hh, has_bias, needs = ctx.saved_values
        da = np.empty_like(act)  # the kernel writes every element
        dc = np.empty_like(cs)
        kernel = _lstm_backward_parallel if act.size >= PARALLEL_MIN else _lstm_backward_serial
        kernel(_array(grad_output), act, tanh_c, cs, da, dc)
        dh, dw = _weight_grads(da, h, w_hh, needs)
        return (
            _tensor(da, grad_output),
            _tensor(dh, grad_output) if dh is not None else None,
            _tensor(dc, grad_output),
            _tensor(dw, grad_output) if dw is not None else None,
            _bias_grad(da, grad_output) if has_bias else None,
        )


class GRUStep(Function):
    """(x_proj, h, W_hh, b_hh) → h' [B, H]: one graph node."""

    @staticmethod
    def forward(ctx: Context, x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor]) -> Tensor:
        gh = _product(h._tensor, _transposed(w_hh._tensor), h.backend)  # h W_hhᵀ [B, 3H]
        hs = _array(h)
        batch, hidden = hs.shape
        out = np.empty_like(hs)  # the kernel writes every element
        act = np.empty((batch, 3 * hidden), dtype=hs.dtype)
        ghn = np.empty_like(hs)
        kernel = _gru_forward_parallel if act.size >= PARALLEL_MIN else _gru_forward_serial
        kernel(_array(x_proj), gh, _bias(b_hh, hs.dtype), b_hh is not None, hs, out, act, ghn)
        ctx.save_for_backward(act, ghn, hs, h, w_hh, b_hh is not None, (h.requires_grad, w_hh.requires_grad))
        return _tensor(out, h)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        act, ghn, hs, h, w_hh, has_bias, needs = ctx.saved_values
        dx = np.empty_like(act)  # the kernel writes every element
        dgh = np.empty_like(act)
        dh_direct = np.empty_like(hs)
        kernel = _gru_backward_parallel if act.size >= PARALLEL_MIN else _gru_backward_serial
        kernel(_array(grad_output), act, ghn, hs, dx, dgh, dh_direct)
        dh, dw = _weight_grads(dgh, h, w_hh, needs)
        if dh is not None:
            dh += dh_direct  # h reaches h' twice: through the product and through z ⊙ h
        return (
            _tensor(dx, grad_output),
            _tensor(dh, grad_output) if dh is not None else None,
            _tensor(dw, grad_output) if dw is not None else None,
            _bias_grad(dgh, grad_output) if has_bias else None,
        )


# ## What the call sites use


def supports(
    gates: int, x_proj: Tensor, state: tuple[Tensor, ...], w_hh: Tensor, b_hh: Optional[Tensor]
) -> bool:
    """Whether the fused step computes exactly what the composed one would: every tensor on
    one CPU backend with one float32/float64 dtype, x_proj [B, G·H], each state tensor
    [B, H], w_hh [G·H, H] and b_hh [G·H] (or None), with G = `gates` (LSTM 4, GRU 3)."""
    tensors = [x_proj, *state, w_hh] + ([] if b_hh is None else [b_hh])
    if not all(isinstance(t, Tensor) for t in tensors):
        return False
    backend, dtype = x_proj.backend, x_proj.dtype
    if (
        backend.cuda
        or dtype not in FLOATS
        or any(t.backend is not backend or t.dtype != dtype for t in tensors)
    ):
        return False
    if x_proj.dims != 2 or w_hh.dims != 2 or any(s.dims != 2 for s in state):
        return False
    batch, hidden = x_proj.shape[0], w_hh.shape[1]
    if batch == 0 or hidden == 0 or x_proj.shape[1] != gates * hidden or w_hh.shape[0] != gates * hidden:
        return False
    if any(s.shape != (batch, hidden) for s in state):
        return False
    return b_hh is None or b_hh.shape == (gates * hidden,)


@replaces("LSTM.cell_step")
def lstm_cell_step(cell: LSTM, x_proj: Tensor, state: Any, w_hh: Tensor, b_hh: Optional[Tensor]) -> Any:
    """`LSTM.cell_step` as one `LSTMStep` node, or `NotImplemented` (the cell functions)."""
    if not supports(4, x_proj, state, w_hh, b_hh):
        return NotImplemented
    return lstm_step(x_proj, state, w_hh, b_hh)


@replaces("GRU.cell_step")
def gru_cell_step(cell: GRU, x_proj: Tensor, state: Any, w_hh: Tensor, b_hh: Optional[Tensor]) -> Any:
    """`GRU.cell_step` as one `GRUStep` node, or `NotImplemented` (the cell functions)."""
    if not isinstance(state, Tensor) or not supports(3, x_proj, (state,), w_hh, b_hh):
        return NotImplemented
    return gru_step(x_proj, state, w_hh, b_hh)


def lstm_step(
    x_proj: Tensor, hx: tuple[Tensor, Tensor], w_hh: Tensor, b_hh: Optional[Tensor] = None
) -> tuple[Tensor, Tensor]:
    """One LSTM step as `lstm.lstm_step` (x_proj [B, 4H], hx = (h, c) [B, H], w_hh [4H, H],
    b_hh [4H] or None → (h', c')), as one graph node. The caller checks `supports` first."""
    h, c = hx
    hc = LSTMStep.apply(x_proj, h, c, w_hh, b_hh)
    return hc[0], hc[1]


def gru_step(x_proj: Tensor, hx: Tensor, w_hh: Tensor, b_hh: Optional[Tensor] = None) -> Tensor:
    """One GRU step as `gru.gru_step` (x_proj [B, 3H], hx [B, H], w_hh [3H, H], b_hh [3H]
    or None → h' [B, H]), as one graph node. The caller checks `supports` first."""
    return GRUStep.apply(x_proj, hx, w_hh, b_hh)


# ## A whole LSTM sequence as one node


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


class LSTMSequence(Function):
    """(x_proj [T, B, 4H], h0, c0 [B, H], W_hh, b_hh, reverse) → hc [T, 2, B, H]: one
    direction of an LSTM layer, all T steps as ONE graph node; hc[t] = (h, c) after x_t.

    Forward runs the steps of `LSTMStep` in order (the same product and kernel, so the same
    numbers). Backward runs them in reverse, carrying ∂h and ∂c from each step to the one
    before, and keeps every step's ∂a [T, B, 4H]: that is ∂x_proj as it stands, and the
    recurrent weights' gradient becomes ONE product over all steps,

        ∂W_hh = Σ_t ∂a_tᵀ h_{t−1} = ∂A_flatᵀ H_prev_flat      [4H, T·B] @ [T·B, H]

    instead of T products of [4H, B] @ [B, H] and T − 1 additions of [4H, H] (what
    backpropagation does with one node per step), and ∂b_hh = Σ_t Σ_batch ∂a_t.
    """

    @staticmethod
    def forward(
        ctx: Context,
        x_proj: Tensor,
        h0: Tensor,
        c0: Tensor,
        w_hh: Tensor,
        b_hh: Optional[Tensor],
        reverse: bool,
    ) -> Tensor:
        xs = _array(x_proj)
        steps, batch, gates = xs.shape
        hidden, dtype = gates // 4, xs.dtype
        hc = np.empty((steps, 2, batch, hidden), dtype=dtype)  # the kernel writes every element
        act = np.empty((steps, batch, gates), dtype=dtype)
        tanh_c = np.empty((steps, batch, hidden), dtype=dtype)
        h_prev = np.empty((steps, batch, hidden), dtype=dtype)  # the state each step read
        c_prev = np.empty((steps, batch, hidden), dtype=dtype)
        bias, w_t = _bias(b_hh, dtype), _RightFactor(_transposed(w_hh._tensor), batch, x_proj.backend)
        kernel = _lstm_forward_parallel if batch * gates >= PARALLEL_MIN else _lstm_forward_serial
        h, c = _array(h0), _array(c0)
        for t in _order(steps, reverse):
            h_prev[t], c_prev[t] = h, c
            gh = w_t.times(h_prev[t])  # h W_hhᵀ [B, 4H]
            kernel(xs[t], gh, bias, b_hh is not None, c_prev[t], hc[t], act[t], tanh_c[t])
            h, c = hc[t, 0], hc[t, 1]
        ctx.save_for_backward(act, tanh_c, c_prev, h_prev, w_hh, b_hh is not None, reverse)
        return _tensor(hc, x_proj)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        act, tanh_c, c_prev, h_prev, w_hh, has_bias, reverse = ctx.saved_values
        steps, batch, gates = act.shape
        grads = _array(grad_output)  # [T, 2, B, H]: what the loss sends to each (h, c)
        kernel = _lstm_backward_parallel if batch * gates >= PARALLEL_MIN else _lstm_backward_serial
        w = _RightFactor(w_hh._tensor, batch, grad_output.backend)
        da = np.empty_like(act)  # the kernel writes every element of each step's rows
        dhc = np.empty_like(grads[0])  # [2, B, H]: ∂h', ∂c' of the step being run
        dc = np.empty_like(c_prev[0])
        dh: Optional[np.ndarray] = None
        for t in reversed(_order(steps, reverse)):
            dhc[...] = grads[t]
            if dh is not None:  # what the later step sent back to this step's output
                dhc[0] += dh
                dhc[1] += dc
            kernel(dhc, act[t], tanh_c[t], c_prev[t], da[t], dc)
            dh = w.times(da[t])  # ∂a W_hh [B, H]
        flat_da = _rows(da.reshape(steps * batch, gates))
        dw = _product(_transposed(flat_da), _rows(h_prev.reshape(steps * batch, -1)), grad_output.backend)
        return (
            _tensor(da, grad_output),
            _tensor(dh, grad_output),
            _tensor(dc.copy(), grad_output),
            _tensor(dw, grad_output),
            _bias_grad(da, grad_output) if has_bias else None,
            None,
        )


class GRUSequence(Function):
    """(x_proj [T, B, 3H], h0 [B, H], W_hh, b_hh, reverse) → out [T, B, H]: one direction of
    a GRU layer, all T steps as ONE graph node; out[t] = h after x_t.

    As `LSTMSequence`: forward runs the steps of `GRUStep` in order (same numbers), backward
    runs them in reverse carrying ∂h, keeps every step's ∂gh [T, B, 3H], and makes the
    recurrent weights' gradient one product over all steps,

        ∂W_hh = Σ_t ∂gh_tᵀ h_{t−1} = ∂GH_flatᵀ H_prev_flat      [3H, T·B] @ [T·B, H]

    and ∂b_hh = Σ_t Σ_batch ∂gh_t. The ∂h that reaches step t − 1 is the direct part
    ∂h' ⊙ z plus ∂gh W_hh.
    """

    @staticmethod
    def forward(
        ctx: Context, x_proj: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Optional[Tensor], reverse: bool
    ) -> Tensor:
        xs = _array(x_proj)
        steps, batch, gates = xs.shape
        hidden, dtype = gates // 3, xs.dtype
        out = np.empty((steps, batch, hidden), dtype=dtype)  # the kernel writes every element
        act = np.empty((steps, batch, gates), dtype=dtype)
        ghn = np.empty((steps, batch, hidden), dtype=dtype)
        h_prev = np.empty((steps, batch, hidden), dtype=dtype)  # the state each step read
        bias, w_t = _bias(b_hh, dtype), _RightFactor(_transposed(w_hh._tensor), batch, x_proj.backend)
        kernel = _gru_forward_parallel if batch * gates >= PARALLEL_MIN else _gru_forward_serial
        h = _array(h0)
        for t in _order(steps, reverse):
            h_prev[t] = h
            gh = w_t.times(h_prev[t])  # h W_hhᵀ [B, 3H]
            kernel(xs[t], gh, bias, b_hh is not None, h_prev[t], out[t], act[t], ghn[t])
            h = out[t]
        ctx.save_for_backward(act, ghn, h_prev, w_hh, b_hh is not None, reverse)
        return _tensor(out, x_proj)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], ...]:
        act, ghn, h_prev, w_hh, has_bias, reverse = ctx.saved_values
        steps, batch, gates = act.shape
        grads = _array(grad_output)  # [T, B, H]: what the loss sends to each output
        kernel = _gru_backward_parallel if batch * gates >= PARALLEL_MIN else _gru_backward_serial
        w = _RightFactor(w_hh._tensor, batch, grad_output.backend)
        dx = np.empty_like(act)  # the kernel writes every element of each step's rows
        dgh = np.empty_like(act)
        dout = np.empty_like(grads[0])  # ∂h' of the step being run
        dh_direct = np.empty_like(dout)
        dh: Optional[np.ndarray] = None
        for t in reversed(_order(steps, reverse)):
            dout[...] = grads[t]
            if dh is not None:  # what the later step sent back to this step's output
                dout += dh
            kernel(dout, act[t], ghn[t], h_prev[t], dx[t], dgh[t], dh_direct)
            dh = w.times(dgh[t])  # ∂gh W_hh [B, H]
            dh += dh_direct  # h reaches h' twice: through the product and through z ⊙ h
        flat_dgh = _rows(dgh.reshape(steps * batch, gates))
        dw = _product(_transposed(flat_dgh), _rows(h_prev.reshape(steps * batch, -1)), grad_output.backend)
        return (
            _tensor(dx, grad_output),
            _tensor(dh, grad_output),
            _tensor(dw, grad_output),
            _bias_grad(dgh, grad_output) if has_bias else None,
            None,
        )


@replaces("unroll")
def unroll(step: Any, inputs: Any, state: Any, reverse: bool = False) -> Any:
    """`recurrent.unroll(step, inputs, state, reverse)` as one `LSTMSequence` or
    `GRUSequence` node, when `step` is the step of an LSTM or GRU layer
    (`recurrent.LayerStep`) over inputs this path supports; `NotImplemented` otherwise (the
    steps then run one by one)."""
    if (
        not isinstance(step, LayerStep)
        or not isinstance(inputs, Tensor)
        or inputs.dims != 3
        or inputs.shape[0] == 0
    ):
        return NotImplemented
    data = inputs._tensor
    first = inputs._view(
        TensorData(data._buffer, data.shape[1:], data.strides[1:])
    )  # x_proj_0, no graph node
    last = 0 if reverse else inputs.shape[0] - 1
    cell_step = type(step.cell).cell_step  # a subclass that overrides the step keeps its step
    if cell_step is LSTM.cell_step and isinstance(state, tuple) and len(state) == 2:
        if not supports(4, first, state, step.w_hh, step.b_hh):
            return NotImplemented
        hc = LSTMSequence.apply(inputs, state[0], state[1], step.w_hh, step.b_hh, reverse)
        return hc[:, 0], (hc[last, 0], hc[last, 1])
    if cell_step is GRU.cell_step and isinstance(state, Tensor):
        if not supports(3, first, (state,), step.w_hh, step.b_hh):
            return NotImplemented
        out = GRUSequence.apply(inputs, state, step.w_hh, step.b_hh, reverse)
        return out, out[last]
    return NotImplemented


# ## The T steps of a sequence, with one gradient buffer


class _StepGradients:
    """∂L/∂x of a sequence x [T, ...], assembled step by step by the T `Step` nodes.

    Why: the composed `recurrent.time_steps` makes views whose backward each returns a tensor
    of x's full shape (zeros but for its step), and backpropagation adds them up: O(T log T)
    full-size tensors per sequence. Here every step writes its gradient into its row of ONE
    buffer. Backpropagation only needs to know that x's node has a gradient to collect: the
    first step to run its backward hands it a free stand-in (a single zero seen through
    stride-0 strides, any shape at the cost of one number); the others return None. The
    topological order runs every step's backward before x's (`Unbind`), which then passes
    the whole buffer on and starts a fresh one for the next backward pass.
    """

    def __init__(self, x: Tensor) -> None:
        self.shape, self.dtype, self.backend = x.shape, x.dtype, x.backend
        self.buffer: Optional[np.ndarray] = None
        self.written = np.zeros(0, dtype=bool)  # which rows of the buffer a step has written
        self.announced = False

    def write(self, t: int, grad: Tensor) -> Optional[Tensor]:
        if self.buffer is None:  # rows no step writes are zeroed in `collect`
            self.buffer = np.empty(self.shape, dtype=self.dtype)
            self.written = np.zeros(self.shape[0], dtype=bool)
        data = grad._tensor
        if data.is_contiguous():  # read the gradient's storage in place, no copy
            self.buffer[t] = data._storage[: data.size].reshape(data.shape)
        else:
            self.buffer[t] = grad.numpy()
        self.written[t] = True
        if self.announced:
            return None
        self.announced = True
        zero = TensorData(np.zeros(1, dtype=self.dtype), self.shape, (0,) * len(self.shape))
        return Tensor(zero, backend=self.backend)

    def collect(self) -> Tensor:
        if self.buffer is None:
            buffer = np.zeros(self.shape, dtype=self.dtype)
        else:
            buffer = self.buffer
            buffer[~self.written] = 0  # steps whose output the loss did not use
        self.buffer, self.announced = None, False
        return Tensor(TensorData(buffer.reshape(-1), self.shape), backend=self.backend)


class Unbind(Function):
    """xs = x (the same data, a node of its own): the parent of the T step views."""

    @staticmethod
    def forward(ctx: Context, x: Tensor, grads: _StepGradients) -> Tensor:
        ctx.save_for_backward(grads)
        return x._view(x._tensor)

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Tensor, None]:
        (grads,) = ctx.saved_values
        return grads.collect(), None  # grad_output is the stand-in: the steps wrote the buffer


class Step(Function):
    """out = xs[t] (a view); backward writes ∂L/∂out into row t of the shared buffer."""

    @staticmethod
    def forward(ctx: Context, xs: Tensor, t: int, grads: _StepGradients) -> Tensor:
        ctx.save_for_backward(t, grads)
        data = xs._tensor
        return xs._view(TensorData(data._buffer[t * data.strides[0] :], data.shape[1:], data.strides[1:]))

    @staticmethod
    def backward(ctx: Context, grad_output: Tensor) -> tuple[Optional[Tensor], None, None]:
        t, grads = ctx.saved_values
        return grads.write(t, grad_output), None, None


@replaces("time_steps")
def time_steps(x: Tensor) -> list[Tensor]:
    """x [T, ...] as its T views x[0], …, x[T − 1], as `recurrent.time_steps`, with a backward
    that costs one buffer of x's size in all (see `_StepGradients`). Not on the CUDA
    backend, where that buffer, in host memory, would bring every step's gradient back from
    the GPU: there the composed version keeps them on the device."""
    if not x.requires_grad or x.shape[0] == 0:
        data = x._tensor
        return [
            x._view(TensorData(data._buffer[t * data.strides[0] :], data.shape[1:], data.strides[1:]))
            for t in range(x.shape[0])
        ]
    if x.backend.cuda:
        return NotImplemented
    grads = _StepGradients(x)
    xs = Unbind.apply(x, grads)
    return [Step.apply(xs, t, grads) for t in range(x.shape[0])]
