"""The gradient check: the student's backward against central differences of the student's
own forward (a check of kind ``gradient``, `CheckContext.gradcheck`).

    ctx.gradcheck("a * b", lambda p, ts: p.op("mul", *ts), [a, b], names=["a", "b"])

The child runs the forward and one backward with a random upstream gradient g, then the
forward at x ± ε for every input element; the derivatives are computed here, in the parent,
from the forward values it returns (`central_difference`, which differences the outputs
before it weighs and sums them), and compared with the ``.grad`` of each input. No
expected value goes to the child, and no reference is run: the student's own forward is
the yardstick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from .errors import CheckFailed, GraderBug, StudentError
from .feedback import inputs_text, join_lines as _join
from .probe import Probe, TensorVal, Tol, describe, diff, fmt_array

if TYPE_CHECKING:
    from .base import CheckContext

__all__ = ["central_difference", "gradcheck"]


def gradcheck(
    ctx: CheckContext,
    label: str,
    build: Callable[[Probe, list[Any]], Any],
    arrays: Sequence[np.ndarray],
    backend: str = "simple",
    epsilon: float = 1e-6,
    tol: Tol = Tol(rtol=1e-4, atol=1e-5),
    upstream: Optional[np.ndarray] = None,
    names: Optional[Sequence[str]] = None,
) -> None:
    """Central differences of the student's forward against the student's backward, run in
    `ctx`'s child (`ctx.gradcheck(label, build, arrays, …)`).

    ``build(p, tensors)`` adds the function's steps to probe `p` and returns the output
    register; `names` name the inputs in feedback (as `label` does: "a", "weight"),
    "x0", "x1" … when not given. The upstream gradient g is random (so a backward that
    drops or mixes up entries of g is caught); the loss is L(x) = Σ f(x) ⊙ g, and for
    every input element `central_difference` computes, here in the parent, from the
    forward values the child returns,

        ∂L/∂x_i ≈ Σ (f(x + ε e_i) − f(x − ε e_i)) ⊙ g / 2ε
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    names = list(names) if names is not None else [f"x{k}" for k in range(len(arrays))]
    if len(names) != len(arrays):
        raise GraderBug(f"gradcheck {label!r}: {len(names)} names for {len(arrays)} inputs")
    inputs = dict(zip(names, arrays))
    shown = inputs_text(inputs)
    # forward once to learn the output's shape (from the student's own forward)
    main = Probe(label, inputs)
    ts = [main.tensor(a, requires_grad=True, backend=backend) for a in arrays]
    out = build(main, ts)
    main.returns(out)
    (first,) = ctx.child([main])
    if first.error:
        raise StudentError(label, first.error, shown)
    (out_val,) = first.values
    if not isinstance(out_val, TensorVal):
        raise CheckFailed(f"{label}: forward returned {describe(out_val)[:80]}, not a Tensor", shown)
    g = upstream if upstream is not None else ctx.rng.standard_normal(out_val.array.shape)
    g = np.asarray(g, dtype=np.float64).reshape(out_val.array.shape)
    details = shown + f"\nupstream gradient g = {fmt_array(g)}"

    probes = []
    bw = Probe(label, inputs)
    ts = [bw.tensor(a, requires_grad=True, backend=backend) for a in arrays]
    out = build(bw, ts)
    bw.method(out, "backward", bw.tensor(g, backend=backend))
    bw.returns(out, *[bw.attr(t, "grad") for t in ts])
    probes.append(bw)
    index = []
    for k, a in enumerate(arrays):
        for idx in np.ndindex(*a.shape):
            for sign in (+1, -1):
                pert = [x.copy() for x in arrays]
                pert[k][idx] += sign * epsilon
                p = Probe(label)
                ts = [p.tensor(x, backend=backend) for x in pert]
                p.returns(build(p, ts))
                probes.append(p)
            index.append((k, idx))
    answers = ctx.child(probes)
    if answers[0].error:
        raise StudentError(f"{label}, then out.backward(g)", answers[0].error, details)
    grads = answers[0].values[1:]
    numeric = [np.zeros_like(a) for a in arrays]
    for j, (k, idx) in enumerate(index):
        up, down = answers[1 + 2 * j], answers[2 + 2 * j]
        at = f"{names[k]}{list(idx)}" if idx else names[k]
        for sign, ans in (("+", up), ("−", down)):
            if ans.error:
                raise StudentError(f"{label} with {at} {sign} ε (ε = {epsilon:g})", ans.error, details)
            if not isinstance(ans.values[0], TensorVal) or ans.values[0].array.shape != g.shape:
                raise CheckFailed(
                    f"{label}: with {at} {sign} ε your forward gave {describe(ans.values[0])[:80]}, "
                    f"not a tensor of shape {g.shape}",
                    details,
                )
        numeric[k][idx] = central_difference(up.values[0].array, down.values[0].array, g, epsilon)
    for k, (a, got) in enumerate(zip(arrays, grads)):
        if got is None:
            raise CheckFailed(
                f"{label}: input {names[k]} (shape {a.shape}) received no gradient (.grad is None)",
                details,
            )
        if not isinstance(got, TensorVal):
            raise CheckFailed(f"{label}: {names[k]}.grad is {describe(got)[:80]}, not a Tensor", details)
        if got.array.shape != a.shape:
            raise CheckFailed(
                f"{label}: {names[k]}.grad has shape {got.array.shape}, {names[k]} has shape {a.shape}",
                details,
            )
        d = diff(TensorVal(numeric[k]), TensorVal(got.array.astype(np.float64)), tol)
        if d:
            rows = [
                ("central differences of your forward:", numeric[k]),
                (f"your backward ({names[k]}.grad):", got.array),
            ]
            width = max(len(title) for title, _ in rows)
            raise CheckFailed(
                f"{label}: your backward disagrees with central differences of your forward for {names[k]}: {d}",
                _join(details, *(f"{title:<{width}} {fmt_array(v)}" for title, v in rows)),
            )


def central_difference(up: np.ndarray, down: np.ndarray, g: np.ndarray, epsilon: float) -> float:
    """∂L/∂x_i ≈ Σ (f(x + ε e_i) − f(x − ε e_i)) ⊙ g / 2ε, from the two forward outputs.

    The outputs are differenced before they are weighted and summed: entries of f that x_i
    does not move are the same floats in `up` and `down` and cancel exactly. Summing first
    (L(x + ε e_i) − L(x − ε e_i)) rounds each sum to about ulp(|L|) and adds an error of
    about ulp(|L|) / 2ε, which exceeds the tolerance when the output mixes large and small
    values (x = [0.109375, 63.0], f = x³: a correct backward reported wrong).
    """
    delta = np.asarray(up, dtype=np.float64) - np.asarray(down, dtype=np.float64)
    return float(np.sum(delta * g) / (2 * epsilon))
