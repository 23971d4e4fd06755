"""``python -m minitorch.precompile``: compile the examples' kernels now, not in a first run.

Numba compiles a kernel the first time a process uses it and keeps the machine code in its
on-disk cache (`minitorch.jit`): a first training step on a new machine waits 10–20 s for
compilation (BENCHMARKS.md, "first step (cold cache)"), every later process loads the code
in a fraction of a second. This command pays that wait once, at install time (the README's
install line runs it), so that a student's first run starts at once:

    python -m minitorch.precompile                 # the examples below, 2 at a time
    python -m minitorch.precompile --only char_lm  # one of them

How: it runs each example for a step or two at its default sizes (the sizes a student's
first run uses: they decide which kernels run, the parallel ones or their one-thread
twins), each in its own process, as many at once as the machine has cores (at most
`--jobs`). The kernels are the ones the examples' models need, for the dtype they train in
(float32; the MLP float64). Another model compiles what it adds, once, as before.

The cache holds code for one CPU target: ``NUMBA_CACHE_DIR``, ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` must be the same here as in the runs that should find it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

__all__ = ["RUNS", "main"]

#: Each example's arguments for a short run at its default sizes: a step or two of
#: training, one evaluation, a short sample.
RUNS: dict[str, list[str]] = {
    "train_mlp": ["--epochs", "2"],
    "sentiment": ["--epochs", "1", "--limit", "100"],
    "char_lm": ["--steps", "2", "--eval-every", "2", "--sample-length", "8"],
    "gpt": ["--steps", "2", "--eval-every", "2", "--sample-length", "8"],
}


def run_example(name: str) -> tuple[str, float, int, str]:
    """(name, seconds, exit status, the end of its output) of one short example run."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", f"minitorch.examples.{name}", *RUNS[name]],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "MINITORCH_COMPILE_NOTICE": "0"},
    )
    return name, time.perf_counter() - start, done.returncode, (done.stdout + done.stderr)[-2000:]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minitorch.precompile", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--only", action="append", choices=sorted(RUNS), help="this example only (repeatable; default: all)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="examples run at once")
    args = parser.parse_args(argv)
    names = args.only or list(RUNS)
    print(f"minitorch: compiling the kernels of {', '.join(names)} (once per machine) …", flush=True)
    start, failed = time.perf_counter(), []
    with ThreadPoolExecutor(max_workers=max(1, min(args.jobs, len(names)))) as pool:
        for name, seconds, status, tail in pool.map(run_example, names):
            if status == 0:
                print(f"  {name}: {seconds:.1f} s", flush=True)
            else:
                failed.append(name)
                print(f"  {name}: failed (exit status {status}):\n{tail}", file=sys.stderr, flush=True)
    print(
        f"minitorch: done in {time.perf_counter() - start:.1f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
