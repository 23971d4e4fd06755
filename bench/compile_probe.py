"""Time `import minitorch` and the first use of each fast kernel, in this (fresh) process.

Run by ``python -m bench`` in a subprocess, twice: first with NUMBA_CACHE_DIR pointing at
an empty directory (a cold start: every kernel compiles), then again with the same
directory (a warm start: every kernel loads from Numba's on-disk cache). Prints one JSON
object {step: seconds}.
"""

from __future__ import annotations

import json
import time


def main() -> None:
    timings: dict[str, float] = {}
    start = time.perf_counter()
    import numpy as np

    import minitorch

    timings["import minitorch"] = time.perf_counter() - start
    fast = minitorch.FastBackend
    a = minitorch.from_numpy(np.linspace(-1.0, 1.0, 64 * 64).reshape(64, 64), backend=fast)
    steps = {
        "map (neg)": lambda: -a,
        "zip (add)": lambda: a + a,
        "reduce (sum)": lambda: a.sum(1),
        "matmul (tiled, 64×64)": lambda: a @ a,
    }
    for name, step in steps.items():
        t = time.perf_counter()
        step()
        timings[name] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - start
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
