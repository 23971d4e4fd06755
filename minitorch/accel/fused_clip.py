r"""Gradient clipping by norm with Numba kernels — the reference's fast path for
`clip_grad_norm_` (task 5.4).

The composed `clip_grad_norm_` (task 5.4) works on NumPy copies: for every gradient it
copies the values out of the tensor, converts them to float64 (another copy), takes |g|,
raises it to the power p (another array each), sums, then multiplies by coef (another
array) and copies the result into a new tensor — six passes and five temporary arrays per
gradient, every training step. Here each gradient is read in place, once for its norm and
once more only when it has to be scaled.

With g_1 … g_n the gradients and p = norm_type (as in `clip_grad.py`):

    norm_k = (Σ_i |g_k,i|^p)^(1/p)           (p = ∞: max_i |g_k,i|)     one kernel call per k
    total  = (Σ_k norm_k^p)^(1/p)            (p = ∞: max_k norm_k)
    coef   = min(1, max_norm / (total + 1e−6))
    g_k    ← coef · g_k                      (a new tensor per k; one kernel call per k)

Sums are accumulated in float64, also for float32 gradients; g_k · coef is computed in
float64 and rounded to the gradient's dtype, as the composed code does.

Two shortcuts, both exact:

* when coef = 1 (the norm is already within max_norm — most steps of most models), every
  g_k · 1 = g_k, so the gradients are left as they are: no pass, no new tensor;
* a contiguous gradient is read straight from its storage (no copy); a strided one (e.g.
  the transposed gradient of a matmul's weight) is first copied into a contiguous array.

The scaled gradient is a new tensor, never written into the old one: two parameters may
share one gradient tensor (see `clip_grad.set_grad`). A NaN or ±∞ total is reported (or
raises with `error_if_nonfinite`) before any gradient changes.

Clipping is not differentiable (it edits `.grad`, data, after backward): no `Function`.

It replaces `clip_grad_norm_` (`minitorch/nn/clip_grad.py`, through `fast_paths`) when
every gradient is float32/float64 on a CPU backend; anything else takes the composed path.
The reference ships this file from stage A6 on (`reference_only` in the A5 manifest), so a
student's A5 code is what runs and is graded in A5.
"""

from __future__ import annotations

import math
from typing import Any, Union

import numpy as np
from numba import prange

from ..fast_paths import replaces
from ..jit import njit, serial_and_parallel
from ..nn import clip_grad
from ..nn.clip_grad import clip_arguments
from ..joining import stack
from ..tensor import Tensor

__all__ = ["supports", "clip_grad_norm_"]

#: From this many elements a kernel runs on all threads (`prange`); below, on the calling
#: thread only (the serial compile of the same Python function).
PARALLEL_MIN = 1 << 16
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ## The kernels (flat arrays; the parallel ones are also compiled serially)


def _sum_abs_pow(g: np.ndarray, p: float) -> float:
    """Σ_i |g_i|^p in float64 (a prange reduction: each thread sums a part, then the parts)."""
    total = 0.0
    for i in prange(g.size):
        a = abs(float(g[i]))
        if p == 2.0:
            total += a * a  # the common case: no pow()
        elif p == 1.0:
            total += a
        else:
            total += a**p
    return total


@njit
def _max_abs(g: np.ndarray) -> float:
    """max_i |g_i| (0 for no element); NaN once any |g_i| is NaN, as NumPy's max."""
    m = 0.0
    for i in range(g.size):
        a = abs(float(g[i]))
        if a > m or a != a:  # a != a: a is NaN; after that nothing is > m and m stays NaN
            m = a
    return m


def _scale(g: np.ndarray, coef: float, out: np.ndarray) -> None:
    """out = g · coef, computed in float64, stored in out's dtype."""
    for i in prange(g.size):
        out[i] = float(g[i]) * coef


_sum_abs_pow_serial, _sum_abs_pow_parallel = serial_and_parallel(_sum_abs_pow)
_scale_serial, _scale_parallel = serial_and_parallel(_scale)


def _values(t: Tensor) -> np.ndarray:
    """The values of `t` as a flat C-contiguous array: its storage itself (no copy) when `t`
    is contiguous, else a contiguous copy. Only read, never written."""
    data = t._tensor
    if data.is_contiguous():
        return data._storage[: data.size]
    view = data.numpy_view()
    return np.ascontiguousarray(view).reshape(-1)


def supports(holders: list[Tensor]) -> bool:
    """Whether every gradient is a float32/float64 tensor on a CPU backend."""
    return all(not h.grad.backend.cuda and h.grad.dtype in FLOATS for h in holders)


@replaces("clip_grad_norm_")
def clip_grad_norm_(
    parameters: Any, max_norm: float, norm_type: Union[float, str] = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """Scale the gradients of `parameters` so that their total `norm_type`-norm is at most
    `max_norm`; return the total before clipping as a 0-d tensor of the first gradient's
    dtype. The arguments are checked as the composed `clip_grad_norm_` checks them
    (`clip_arguments`); the composed function clips when no gradient is set or one is not
    `supports`ed. Raises RuntimeError when error_if_nonfinite and the total is not finite
    (nothing is changed then)."""
    holders, max_norm, norm_type = clip_arguments(parameters, max_norm, norm_type)
    if holders and all(h.grad.backend.cuda and h.grad.dtype in FLOATS for h in holders):
        return _clip_on_gpu(holders, max_norm, norm_type, error_if_nonfinite)
    if not holders or not supports(holders):
        # Not `NotImplemented`: `parameters` may be a generator, now used up; the composed
        # function gets the tensors it held.
        return clip_grad.clip_grad_norm_.plain(holders, max_norm, norm_type, error_if_nonfinite)
    grads = [_values(h.grad) for h in holders]
    if norm_type == math.inf:
        total = float(np.max([_max_abs(g) for g in grads]))
    else:
        norms = np.array(
            [
                (_sum_abs_pow_parallel if g.size >= PARALLEL_MIN else _sum_abs_pow_serial)(g, norm_type)
                ** (1.0 / norm_type)
                for g in grads
            ]
        )
        total = float(np.sum(norms**norm_type) ** (1.0 / norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = min(max_norm / (total + 1e-6), 1.0)
    if coef != 1.0:  # g · 1 = g exactly: with coef 1 every gradient stays as it is (NaN ≠ 1: scaled)
        for h, g in zip(holders, grads):
            out = np.empty(g.size, dtype=h.grad.dtype)  # the kernel writes every element
            (_scale_parallel if g.size >= PARALLEL_MIN else _scale_serial)(g, coef, out)
            h.grad = Tensor.make(out, h.grad.shape, backend=h.grad.backend)
    return holders[0].grad.new_tensor(total)


def _clip_on_gpu(
    holders: list[Tensor], max_norm: float, norm_type: float, error_if_nonfinite: bool
) -> Tensor:
    """`clip_grad_norm_` of gradients on the CUDA backend, composed of its operations so
    that they stay in GPU memory: each norm in float64, as the composed function computes
    it; the coefficient min(max_norm / (total + 1e−6), 1) a 0-d tensor on the GPU. Only
    `error_if_nonfinite` brings a number (the total) back to the host."""
    grads = [h.grad.to(np.float64) for h in holders]
    if norm_type == math.inf:
        total = stack([g.abs().amax() if g.numel() else g.new_zeros(()) for g in grads]).amax()
    else:
        norms = stack([(g.abs() ** norm_type).sum() ** (1.0 / norm_type) for g in grads])
        total = (norms**norm_type).sum() ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for h, g in zip(holders, grads):
        h.grad = (g * coef).to(h.grad.dtype)
    return total.to(holders[0].grad.dtype)
