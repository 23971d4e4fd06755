"""Hidden checks of task 4.3, pooling: max_pool2d (padding, stride, dilation, ties, windows
of only −inf), max_pool1d, max_over_time and avg_pool2d / avg_pool1d, forward and backward
against the reference, the avg-pool backward kernel alone, and central differences of the
student's own forward (see `a4` for how A4 is checked).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..base import CheckContext, check
from ..layer_probes import fwd_bwd, gradcheck_call, kernel_probe, out_len
from ..probe import Tol


POOL = "minitorch.nn.pooling"
TOL = Tol(rtol=1e-9, atol=1e-11)


def _ties(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Values on a coarse grid, so windows hold ties (the gradient goes to the first)."""
    return np.round(rng.standard_normal(shape) * 2) / 2


POOL2D = [  # input shape, kernel, stride, padding, dilation
    ((1, 1, 4, 4), 2, None, 0, 1),
    ((2, 3, 5, 6), (2, 3), (1, 2), 0, 1),
    ((1, 2, 6, 6), 3, 2, 1, 1),
    ((2, 1, 7, 5), 2, 1, 0, (2, 1)),
]


def _pool_out(shape: Sequence[int], k: Any, s: Any, p: Any, d: Any) -> tuple[int, ...]:
    two = lambda v, default=None: (v, v) if isinstance(v, int) else (default if v is None else v)  # noqa: E731
    k2 = two(k)
    s2 = two(s, k2) if s is not None else k2
    p2, d2 = two(p), two(d)
    return (
        shape[0],
        shape[1],
        out_len(shape[2], k2[0], s2[0], p2[0], d2[0]),
        out_len(shape[3], k2[1], s2[1], p2[1], d2[1]),
    )


@check("4.3", "max_pool2d", kind="equivalence")
def max_pool2d(ctx: CheckContext) -> None:
    """max_pool2d (padding, stride, dilation; ties → first maximum), max_pool1d and
    max_over_time, forward and backward, against the reference."""
    probes = []
    for shape, k, s, pad, dil in POOL2D:
        x = _ties(ctx.rng, shape)
        kwargs = {"stride": s, "padding": pad, "dilation": dil}
        probes.append(
            fwd_bwd(
                ctx,
                f"max_pool2d(x {shape}, kernel_size={k!r}, stride={s!r}, padding={pad!r}, dilation={dil!r})",
                {"x": x},
                lambda p, t, k=k, kw=kwargs: p.call(f"{POOL}.max_pool2d", t[0], k, **kw),
                _pool_out(shape, k, s, pad, dil),
            )
        )
    x = _ties(ctx.rng, (2, 3, 7))
    probes.append(
        fwd_bwd(
            ctx,
            "max_pool1d(x (2, 3, 7), kernel_size=3, stride=2)",
            {"x": x},
            lambda p, t: p.call(f"{POOL}.max_pool1d", t[0], 3, stride=2),
            (2, 3, 3),
        )
    )
    for shape in [(1, 1, 4), (2, 3, 6)]:
        x = _ties(ctx.rng, shape)
        probes.append(
            fwd_bwd(
                ctx,
                f"max_over_time(x {shape})",
                {"x": x},
                lambda p, t: p.call(f"{POOL}.max_over_time", t[0]),
                shape[:2],
            )
        )
    x = _ties(ctx.rng, (2, 2, 5, 4))
    probes.append(
        fwd_bwd(
            ctx,
            "max_pool2d(x (2, 2, 5, 4) stored in dimension order (3, 1, 0, 2), kernel_size=(3, 2), stride=(2, 1), padding=1)",
            {"x": x},
            lambda p, t: p.call(f"{POOL}.max_pool2d", t[0], (3, 2), stride=(2, 1), padding=1),
            (2, 2, 3, 5),
            order={"x": (3, 1, 0, 2)},
        )
    )
    # windows that see only −inf (and padding): max −inf, the gradient to the window's first
    # position inside x, as PyTorch does
    x = np.array([[[[-np.inf, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]]]])
    probes.append(
        fwd_bwd(
            ctx,
            "max_pool2d(x (1, 1, 2, 3) with −inf values, kernel_size=2, stride=1, padding=1)",
            {"x": x},
            lambda p, t: p.call(f"{POOL}.max_pool2d", t[0], 2, stride=1, padding=1),
            (1, 1, 3, 4),
        )
    )
    ctx.equivalent(probes, TOL)


@check("4.3", "avg_pool2d", kind="equivalence")
def avg_pool2d(ctx: CheckContext) -> None:
    """avg_pool2d (padding counted or not), avg_pool1d, forward and backward, against the
    reference."""
    probes = []
    for shape, k, s, pad, _ in POOL2D[:3]:
        for include in (True, False):
            x = ctx.rng.standard_normal(shape)
            kwargs = {"stride": s, "padding": pad, "count_include_pad": include}
            probes.append(
                fwd_bwd(
                    ctx,
                    f"avg_pool2d(x {shape}, kernel_size={k!r}, stride={s!r}, padding={pad!r}, count_include_pad={include})",
                    {"x": x},
                    lambda p, t, k=k, kw=kwargs: p.call(f"{POOL}.avg_pool2d", t[0], k, **kw),
                    _pool_out(shape, k, s, pad, 1),
                )
            )
    x = ctx.rng.standard_normal((2, 2, 8))
    probes.append(
        fwd_bwd(
            ctx,
            "avg_pool1d(x (2, 2, 8), kernel_size=3, stride=2, padding=1)",
            {"x": x},
            lambda p, t: p.call(f"{POOL}.avg_pool1d", t[0], 3, stride=2, padding=1),
            (2, 2, 4),
        )
    )
    x = ctx.rng.standard_normal((1, 3, 4, 5))
    probes.append(
        fwd_bwd(
            ctx,
            "avg_pool2d(x (1, 3, 4, 5) stored in dimension order (3, 2, 1, 0), kernel_size=(2, 3), stride=1, padding=1, count_include_pad=False)",
            {"x": x},
            lambda p, t: p.call(
                f"{POOL}.avg_pool2d", t[0], (2, 3), stride=1, padding=1, count_include_pad=False
            ),
            (1, 3, 5, 5),
            order={"x": (3, 2, 1, 0)},
        )
    )
    # the backward kernel alone: ∂L/∂x arrives holding garbage, which it must overwrite
    g = ctx.rng.standard_normal((1, 2, 4, 3))
    probes.append(
        kernel_probe(
            "avg_pool2d_backward(out (1, 2, 4, 5) holding garbage, grad (1, 2, 4, 3) stored in order (3, 2, 1, 0), "
            "kernel (2, 3), stride (1, 2), padding (1, 1), count_include_pad=False)",
            f"{POOL}.avg_pool2d_backward",
            (1, 2, 4, 5),
            g,
            (3, 2, 1, 0),
            2,
            3,
            1,
            2,
            1,
            1,
            False,
        )
    )
    ctx.equivalent(probes, TOL)


@check("4.3", "pool_gradcheck", kind="gradient")
def pool_gradcheck(ctx: CheckContext) -> None:
    """max_pool2d, avg_pool2d and max_pool1d: backward against central differences of the
    student's forward (well-separated values, so every window's maximum is unique)."""
    x = ctx.rng.permutation(60).reshape(1, 3, 4, 5) * 0.1
    for fn, kwargs in [
        ("max_pool2d", {"stride": (1, 2), "padding": 1}),
        ("avg_pool2d", {"stride": (1, 2), "padding": 1}),
    ]:
        gradcheck_call(
            ctx,
            f"{fn}(x (1, 3, 4, 5), kernel_size=(2, 3), {kwargs})",
            f"{POOL}.{fn}",
            [x],
            {"kernel_size": (2, 3), **kwargs},
        )
    x1 = ctx.rng.permutation(24).reshape(2, 2, 6) * 0.1
    gradcheck_call(
        ctx,
        "max_pool1d(x (2, 2, 6), kernel_size=3, stride=2, padding=1)",
        f"{POOL}.max_pool1d",
        [x1],
        {"kernel_size": 3, "stride": 2, "padding": 1},
    )
