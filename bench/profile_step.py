"""Where a training step's time goes: cProfile of bench.train_step's models in minitorch.

    python -m bench.profile_step --models lstm --device cuda --steps 3 [--out DIR] [--top 45]

For each model: one step to compile, one to warm up, `--steps` timed steps without the
profiler, then `--steps` under cProfile. It prints the step times (plain and profiled: the
profiler's own cost is the difference, large where a step is many small Python calls) and the
host-GPU copies of a profiled step (`device_memory.transfers`), then the functions by their own
time and by their cumulative time. `--out DIR` also writes each model's report to
`DIR/profile-<model>.txt`. The profile of a CUDA step in BENCHMARKS.md ("on the GPU") is this
command's output on an H200.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

from bench.train_step import MODELS, training_step


def profile(name: str, device: str, steps: int, top: int) -> str:
    """The report of one model (see the module docstring)."""
    import minitorch
    from minitorch import device_memory

    step = training_step(minitorch, name, device)
    began = time.perf_counter()
    step()
    first = time.perf_counter() - began
    step()
    began = time.perf_counter()
    for _ in range(steps):
        step()
    plain = (time.perf_counter() - began) / steps
    device_memory.transfers.reset()
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    profiled = (time.perf_counter() - began) / steps
    report = io.StringIO()
    t = device_memory.transfers
    report.write(
        f"{name} on {device}: first step {first:.2f} s; a step {1000 * plain:.1f} ms, under cProfile "
        f"{1000 * profiled:.1f} ms; copies per step: {t.to_device / steps:g} to the GPU, "
        f"{t.to_host / steps:g} back\n"
    )
    stats = pstats.Stats(profiler, stream=report)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return report.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="lstm", help="comma-separated, from " + ", ".join(MODELS))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--steps", type=int, default=3, help="timed steps, and as many profiled")
    parser.add_argument("--top", type=int, default=45, help="functions listed in each order")
    parser.add_argument("--out", help="also write profile-<model>.txt here")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            parser.error(f"unknown model {n!r}: choose from {', '.join(MODELS)}")
    if args.steps < 1:
        parser.error("--steps must be ≥ 1")
    for name in names:
        text = profile(name, args.device, args.steps, args.top)
        print(text, flush=True)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, f"profile-{name}.txt"), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
