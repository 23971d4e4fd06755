"""Probe builders shared by the hidden checks of layer stages (A4 on): a function's forward
and backward on tensors, a gradient check of a call, and a kernel called directly on raw
storages. They only *describe* programs for the child; nothing here runs student code."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .base import CheckContext
from .inputs import I64, strides_for
from .probe import Probe, Ref

__all__ = [
    "Build",
    "BuildMany",
    "backward_of_sum",
    "fwd_bwd",
    "fwd_bwd_many",
    "gradcheck_call",
    "kernel_probe",
    "out_len",
    "raw_layout",
]

Build = Callable[[Probe, list[Ref]], Ref]
BuildMany = Callable[[Probe, list[Any]], list[Ref]]


def _probe_with_inputs(
    label: str, arrays: dict[str, Optional[np.ndarray]], grad: bool, order: Optional[dict[str, Sequence[int]]]
) -> tuple[Probe, list[Any], list[tuple[str, Ref]]]:
    """A probe holding a tensor per array (None stays None; float ones require a gradient
    when `grad`): (probe, the registers in order, [(name, tensor)] of those with a gradient)."""
    p = Probe(label, {k: v for k, v in arrays.items() if v is not None})
    refs: list[Any] = []
    with_grad = []
    for name, value in arrays.items():
        if value is None:
            refs.append(None)
            continue
        needs = grad and value.dtype.kind == "f"
        t = p.tensor(value, (order or {}).get(name), requires_grad=needs)
        refs.append(t)
        if needs:
            with_grad.append((name, t))
    return p, refs, with_grad


def fwd_bwd(
    ctx: CheckContext,
    label: str,
    arrays: dict[str, Optional[np.ndarray]],
    build: Build,
    out_shape: Sequence[int],
    *,
    grad: bool = True,
    order: Optional[dict[str, Sequence[int]]] = None,
) -> Probe:
    """A probe: tensors for `arrays` (None stays None), out = build(...); with `grad`, also
    out.backward(g) for a random g and every input's .grad."""
    p, refs, with_grad = _probe_with_inputs(label, arrays, grad, order)
    out = build(p, refs)
    if not grad:
        p.returns(out)
        return p
    g = ctx.rng.standard_normal(tuple(out_shape)).astype(next(iter(p.inputs.values())).dtype)
    p.inputs["upstream gradient"] = g
    p.method(out, "backward", p.tensor(g))
    grads = [(name, p.attr(t, "grad")) for name, t in with_grad]
    p.returns(out, *[r for _, r in grads], names=["output"] + [f"{n}.grad" for n, _ in grads])
    return p


def backward_of_sum(p: Probe, outputs: Sequence[tuple[Ref, np.ndarray]]) -> None:
    """Add L = Σ_k sum(out_k ⊙ g_k) and L.backward() to `p` (several outputs, one backward:
    a leaf used by several outputs receives the sum of their gradients)."""
    loss = None
    for out, g in outputs:
        term = p.method(p.op("mul", out, p.tensor(g)), "sum")
        loss = term if loss is None else p.op("add", loss, term)
    p.method(loss, "backward")


def fwd_bwd_many(
    ctx: CheckContext,
    label: str,
    arrays: dict[str, Optional[np.ndarray]],
    build: BuildMany,
    out_shapes: Sequence[Sequence[int]],
    names: Sequence[str],
    *,
    order: Optional[dict[str, Sequence[int]]] = None,
) -> Probe:
    """`fwd_bwd` for a function of several outputs (an LSTM's (h, c), a layer's (output, h_n)):
    `build` returns their registers; one backward of L = Σ_k sum(out_k ⊙ g_k) for random g_k;
    the probe returns the outputs (named `names`) and every float input's .grad."""
    p, refs, with_grad = _probe_with_inputs(label, arrays, True, order)
    outs = build(p, refs)
    dtype = next(iter(p.inputs.values())).dtype
    gs = [ctx.rng.standard_normal(tuple(s)).astype(dtype) for s in out_shapes]
    for n, g in zip(names, gs):
        p.inputs[f"upstream gradient of {n}"] = g
    backward_of_sum(p, list(zip(outs, gs)))
    grads = [(name, p.attr(t, "grad")) for name, t in with_grad]
    p.returns(*outs, *[r for _, r in grads], names=list(names) + [f"{n}.grad" for n, _ in grads])
    return p


def gradcheck_call(ctx: CheckContext, label: str, fn: str, arrays: list[np.ndarray], kwargs: dict) -> None:
    def build(p: Probe, ts: list[Ref]) -> Ref:
        return p.call(fn, *ts, **kwargs)

    ctx.gradcheck(label, build, arrays)


def raw_layout(x: np.ndarray, order: Optional[Sequence[int]] = None) -> list[np.ndarray]:
    """(storage, shape, strides) of x stored in dimension order `order` (a strided layout)."""
    order = list(range(x.ndim)) if order is None else list(order)
    storage = np.ascontiguousarray(x.transpose(order)).reshape(-1)
    return [storage, np.array(x.shape, dtype=I64), np.array(strides_for(x.shape, order), dtype=I64)]


def kernel_probe(
    label: str, kernel: str, out_shape: Sequence[int], source: np.ndarray, order: Sequence[int], *args: Any
) -> Probe:
    """Call a kernel directly: out (contiguous, prefilled with garbage it must overwrite),
    the source in a permuted layout, then the kernel's scalar arguments; return out."""
    p = Probe(label, {"input": source})
    out = p.const(np.full(int(np.prod(out_shape)), 1e3))
    p.call(
        kernel,
        out,
        np.array(out_shape, dtype=I64),
        np.array(strides_for(tuple(out_shape)), dtype=I64),
        *raw_layout(source, order),
        *args,
    )
    p.returns(out)
    return p


def out_len(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    """The output length of a convolution or pooling window: ⌊(size + 2·pad − dil·(k − 1) − 1) / stride⌋ + 1."""
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1
