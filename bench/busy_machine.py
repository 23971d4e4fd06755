"""``python -m bench.busy_machine``: training steps on a machine other programs keep busy.

    python -m bench.busy_machine [--models lstm,gpt] [--busy 2] [--repeats 10] [--settings 0,1,5]

Each model's training step (the models of `bench.train_step`) is timed in fresh processes,
first on the machine as it is, then with `--busy` busy loops (``while True: pass``, one
process each) running beside it, in these settings:

* ``all threads, default wait``: Numba's (or PyTorch's) pool of every core, OpenMP's
  threads spinning before they sleep (what a program gets unless it says otherwise);
* ``passive wait``: the same pool, ``OMP_WAIT_POLICY=PASSIVE``;
* ``spin 10k`` / ``spin 30k``: the same pool, spinning for a shorter time
  (``GOMP_SPINCOUNT``; OpenMP's default is 300,000);
* ``one thread``;
* ``share_the_cpu()``: what the examples do (`minitorch.threads`): on a busy machine passive
  wait and as many threads as cores are free, on an idle one nothing changed.

The table gives the median step of each setting idle and busy, and busy ÷ idle. Absolute
times depend on the machine: the header names its CPU and core count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from bench.machine import cpu_name
from bench.train_step import DESCRIPTIONS, MODELS

#: setting → (framework, threads: "all", "one" or "share", the OpenMP environment it sets)
SETTINGS = {
    "minitorch, all threads, default wait": ("minitorch", "all", {}),
    "minitorch, all threads, passive wait": ("minitorch", "all", {"OMP_WAIT_POLICY": "PASSIVE"}),
    "minitorch, all threads, spin 10k": ("minitorch", "all", {"GOMP_SPINCOUNT": "10000"}),
    "minitorch, all threads, spin 30k": ("minitorch", "all", {"GOMP_SPINCOUNT": "30000"}),
    "minitorch, one thread": ("minitorch", "one", {}),
    "minitorch, share_the_cpu()": ("minitorch", "share", {}),
    "PyTorch, all threads, default wait": ("torch", "all", {}),
    "PyTorch, all threads, passive wait": ("torch", "all", {"OMP_WAIT_POLICY": "PASSIVE"}),
    "PyTorch, all threads, spin 10k": ("torch", "all", {"GOMP_SPINCOUNT": "10000"}),
    "PyTorch, share_the_cpu()": ("torch", "share", {}),
}


def worker(setting: str, model: str, repeats: int, warmup: int) -> dict[str, Any]:
    """In a fresh process: apply `setting`, then time `model`'s step (`train_step.measure`)."""
    framework, threads, environment = SETTINGS[setting]
    cores = os.cpu_count() or 1
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(cores)
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MINITORCH_SHARE_CPU"):
        os.environ.pop(var, None)
    os.environ.update(environment)
    count = cores if threads == "all" else 1
    if threads == "share":
        from minitorch.threads import share_the_cpu

        count = share_the_cpu()
    elif framework == "minitorch":
        import numba

        numba.set_num_threads(count)
    from bench.train_step import measure

    result = measure(framework, model, repeats, warmup, count)
    result["threads"] = count
    return result


def run(setting: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "bench.busy_machine",
        "--worker",
        setting,
        "--models",
        model,
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{setting} {model} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="lstm,gpt", help="comma-separated, from " + ", ".join(MODELS))
    parser.add_argument(
        "--busy",
        type=int,
        default=os.cpu_count() or 1,
        help="busy loops beside the step (default: one per core)",
    )
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--settings",
        default="0,1,4,5,6,9",
        help="which settings, by number (0-based, in the order of SETTINGS)",
    )
    parser.add_argument("--worker", choices=sorted(SETTINGS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    if args.worker:
        print(json.dumps(worker(args.worker, names[0], args.repeats, args.warmup)))
        return
    chosen = [list(SETTINGS)[int(i)] for i in args.settings.split(",") if i]
    print(
        f"{cpu_name()}, {os.cpu_count()} cores; {args.busy} busy loop(s) in the busy columns; "
        f"median of {args.repeats} steps, one fresh process per cell"
    )
    print()
    print("| model | setting | idle: step (threads) | busy: step (threads) | busy ÷ idle |")
    print("|---|---|---|---|---|")
    for name in names:
        for setting in chosen:
            idle = run(setting, name, args)
            loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
            try:
                time.sleep(1.0)  # the loops are running before the worker looks at the load
                busy = run(setting, name, args)
            finally:
                for loop in loops:
                    loop.kill()
                    loop.wait()
            print(
                f"| {DESCRIPTIONS[name]} | {setting} | {idle['median_ms']:.1f} ms ({idle['threads']}) "
                f"| {busy['median_ms']:.1f} ms ({busy['threads']}) | {busy['median_ms'] / idle['median_ms']:.1f}× |",
                flush=True,
            )


if __name__ == "__main__":
    main()
