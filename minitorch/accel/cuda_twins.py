"""The CUDA twins of the library's loop kernels: what they are, how the CUDA backend finds them.

Stage A4's kernels (im2col / col2im, pooling, the embedding gather and scatter-add) are
plain loops over raw storages, decorated with `tensor_ops.backend_kernel`: the simple
backend runs them as Python, the fast one compiles them with Numba. A GPU cannot run a CPU
loop, so each has a *twin*: a host launcher of the same name and the same arguments that
runs the loop's work as a grid of CUDA threads, registered with `@cuda_twin` (through
`minitorch.fast_paths`, as the other faster versions of `accel/`), where
`CudaOps.compile_kernel` finds it.

How a loop becomes a grid: a `prange` loop whose iterations write disjoint parts of the
output is already a set of independent tasks. The twins go one step further and give every
*output element* its own thread, written in the "gather" form: a thread computes its
element from everything that contributes to it, instead of each input adding itself to the
outputs it touches ("scatter"). Gathers never race, need no atomics, and add the
contributions in the CPU loops' order, so the results agree with the CPU's to the last bit
or to the rounding of a sum. Two twins keep the CPU's split instead (max pooling's backward:
one thread per plane; the embedding's scatter-add: one per column); their docstrings say why.

The twins live in modules of their own (`cuda_conv`, `cuda_pooling`, `cuda_embedding`) so
that a release of stage A4, whose students write im2col and pooling, does not ship their
solutions in CUDA form; a release that lacks a module simply has no twin for its kernels,
and its CUDA backend says so when asked for one.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ..fast_paths import register

__all__ = ["cuda_twin"]

L = TypeVar("L", bound=Callable[..., None])


def cuda_twin(launcher: L) -> L:
    """Decorator: register `launcher` as the CUDA twin of the library kernel of the same
    name (`CudaOps.compile_kernel` finds it with `fast_paths.cuda_twin(name)`)."""
    register(f"cuda:{launcher.__name__}", launcher)
    return launcher
