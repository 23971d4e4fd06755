"""Data races of a Numba kernel, found by running its Python source once.

    races = prange_trace(tensor_reduce(add), 0, [out, out_shape, out_strides, ...])

Numba runs the iterations of a ``prange`` on several threads at once, in any order; two
iterations that touch the same output cell (one of them writing) race: an update is lost
or a value read half-written, on some runs and not others — so comparing outputs finds a
race only when the threads happen to collide. Running the kernel's Python source
(``kernel.py_func``) with ``prange`` replaced by a loop that remembers its iteration, and
the output storage by an array that notes who touches each cell, finds it on every run, on
a machine with any number of cores.

Like `grader.sandbox.child.executor`, this runs next to student code (copied into the child as
``_grader_prange_trace.py``) and in the parent; it imports nothing of the grader (NumPy
only, lazily) and decides nothing: it answers the shared cells, the parent judges.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["prange_trace"]


def prange_trace(kernel: Any, out: int, args: list) -> list:
    """Run `kernel`'s Python source once and answer the cells of its output storage
    (argument number `out`) that two iterations of the outermost ``prange`` both touch, at
    least one of them writing: ``[[cell, [iteration, …]], …]`` (at most 5 cells, 4
    iterations each); [] for a kernel without races.

    Iterations of an inner ``prange`` run one after the other within an outer one (Numba
    parallelises the outermost only), and accesses outside every ``prange`` happen before or
    after the parallel loop: neither can race. ``prange`` is replaced where the kernel finds
    it (a global of its module, a variable it closes over, ``numba.prange`` through a global
    of its module that is Numba) and put back. Numba itself is never changed: the kernel's
    helpers may compile for the first time during the trace, and Numba's lowering of
    ``prange``, imported then, must see the real one.

    Raises:
        TypeError: `kernel` is not a Numba dispatcher (no ``py_func``).
    """
    import numpy as np

    numba = sys.modules.get("numba")
    current: list = [None]
    touched: dict[int, dict[int, bool]] = {}

    def traced_prange(*bounds: Any) -> Any:
        outermost = current[0] is None
        for i in range(*bounds):
            if outermost:
                current[0] = i
            yield i
        if outermost:
            current[0] = None

    class Traced(np.ndarray):
        def _cells(self, key: Any) -> Any:
            if isinstance(key, (int, np.integer)):
                return (int(key) % self.size,)
            return np.arange(self.size)[key].reshape(-1).tolist()

        def _note(self, key: Any, write: bool) -> None:
            if current[0] is not None:
                for cell in self._cells(key):
                    seen = touched.setdefault(cell, {})
                    seen[current[0]] = seen.get(current[0], False) or write

        def __getitem__(self, key: Any) -> Any:
            self._note(key, False)
            return self.view(np.ndarray)[key]

        def __setitem__(self, key: Any, value: Any) -> None:
            self._note(key, True)
            self.view(np.ndarray)[key] = value

    py_func = getattr(kernel, "py_func", None)
    if py_func is None:
        raise TypeError(
            f"{type(kernel).__module__}.{type(kernel).__qualname__} is not a Numba kernel (it has no py_func)"
        )
    args = list(args)
    args[out] = np.asarray(args[out]).view(Traced)
    # prange as the kernel finds it: a global of its module, a variable it closes over, or
    # `numba.prange` where a global of its module is Numba: that global becomes a stand-in
    # module holding Numba's names and the traced prange (Numba's own module is left alone)
    names = py_func.__globals__
    cells = [
        c for name, c in zip(py_func.__code__.co_freevars, py_func.__closure__ or ()) if name == "prange"
    ]
    aliases = [name for name, value in names.items() if numba is not None and value is numba]
    stand_in = types.ModuleType("numba")
    if numba is not None:
        stand_in.__dict__.update(vars(numba))
    stand_in.prange = traced_prange
    saved = names.get("prange"), [c.cell_contents for c in cells]
    names["prange"] = traced_prange
    for c in cells:
        c.cell_contents = traced_prange
    for name in aliases:
        names[name] = stand_in
    try:
        py_func(*args)
    finally:
        if saved[0] is None:
            names.pop("prange", None)
        else:
            names["prange"] = saved[0]
        for c, value in zip(cells, saved[1]):
            c.cell_contents = value
        for name in aliases:
            names[name] = numba
    races = [
        [cell, sorted(seen)[:4]]
        for cell, seen in sorted(touched.items())
        if len(seen) > 1 and any(seen.values())
    ]
    return races[:5]
