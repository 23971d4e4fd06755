"""Every CUDA kernel of the library compiles to PTX (issue 31), where NVVM is installed.

The simulator runs a kernel as Python, so it accepts code that Numba's CUDA compiler
refuses (this check found one: the builtin ``max``/``min`` on integers in a kernel). Here
each kernel is compiled for real, for float32 and float64, in a fresh interpreter with the
simulator off: the map / zip / reduce kernel of every scalar function a backend op uses,
the tiled matmul, every CUDA twin of the library's loop kernels, `where`, the fill of new
outputs and the optimizers' updates (`optim/on_gpu.py`). No GPU is needed:
`numba.cuda.compile_ptx` only needs NVVM (the device functions a kernel calls ask for the
current device's compute capability, so the script answers 9.0 for a GPU that is not there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import inspect, json, sys, types as pytypes

from numba.cuda.cudadrv import nvvm

if not nvvm.is_available():
    print(json.dumps({"nvvm": False}))
    sys.exit(0)

import numba.cuda.dispatcher
from numba import cuda, types

numba.cuda.dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))

import numpy as np

import minitorch
from minitorch import cuda_fill, cuda_ops
from minitorch.fast_paths import cuda_twin
from minitorch.tensor_ops import LIBRARY_KERNELS, TensorBackend, TensorOps


class Recording(TensorOps):
    # what each backend op is built from: ("map", fn), ("zip", fn), ("reduce", fn)
    map = classmethod(lambda cls, fn: ("map", fn))
    zip = classmethod(lambda cls, fn: ("zip", fn))
    reduce = classmethod(lambda cls, fn, start=0.0: ("reduce", fn))
    compile_kernel = staticmethod(lambda kernel, name: None)


def signature(py_func, dtype):
    # storages of dtype, shapes / strides / ids / argmax int64, window sizes int64
    argtypes = []
    for name in inspect.signature(py_func).parameters:
        if name in ("argmax", "ids") or name.endswith(("_shape", "_strides")):
            argtypes.append(types.int64[::1])
        elif name in ("out", "x", "cols", "weight", "grad") or name.endswith("_storage"):
            argtypes.append(dtype[::1])
        elif name == "count_include_pad":
            argtypes.append(types.boolean)
        elif name == "zero":
            argtypes.append(dtype)
        else:
            argtypes.append(types.int64)
    return tuple(argtypes)


recorder = TensorBackend(Recording, "ptx-recording")
kernels = []  # (label, build(dtype) -> dispatcher)
for name, value in sorted(vars(TensorBackend).items()):
    if type(value).__name__ != "LazyOp" or name in LIBRARY_KERNELS:
        continue
    kind, fn = getattr(recorder, name)
    if kind == "map":
        kernels.append((name, lambda dtype, fn=fn: cuda_ops._map_kernel(fn)))
    elif kind == "zip":
        kernels.append((name, lambda dtype, fn=fn: cuda_ops._zip_kernel(fn)))
    else:
        kernels.append((name, lambda dtype, fn=fn: cuda_ops._reduce_kernel(fn, dtype)))
kernels.append(("matmul", lambda dtype: cuda_ops._matmul_kernel(dtype)))
for name in sorted(LIBRARY_KERNELS):
    module = sys.modules[cuda_twin(name).__module__]
    dispatchers = [
        v for v in vars(module).values()
        if isinstance(v, numba.cuda.dispatcher.CUDADispatcher) and not v.targetoptions.get("device")
    ]
    for d in dispatchers:
        if d.py_func.__name__ == f"_{name}":
            kernels.append((name, lambda dtype, d=d: d))

# the kernels of the data's life on the GPU: where, the fill of new outputs, the optimizers
from minitorch.optim import on_gpu

index = types.int64[::1]
others = {  # label → (kernel, dtype → its argument types)
    "where": (cuda_ops._where, lambda d: (d[::1], index, index, types.boolean[::1], index, index)
              + (d[::1], index, index) * 2),
    "fill": (cuda_fill._fill, lambda d: (d[::1], d)),
    "adam": (on_gpu._adam, lambda d: (d[::1],) * 4 + (types.float64,) * 7),
    "sgd": (on_gpu._sgd, lambda d: (d[::1],) * 3 + (types.float64,) * 4 + (types.boolean,) * 2),
}
copy = cuda_ops._map_kernel(minitorch.operators.id)  # dtype casts: the copy into int64 / bool
for target in (types.int64, types.boolean):
    others[f"cast to {target}"] = (copy, lambda d, t=target: (t[::1], index, index, d[::1], index, index))
for label, (kernel, argtypes) in others.items():
    kernels.append((label, lambda dtype, kernel=kernel, argtypes=argtypes: (kernel, argtypes)))

results = []
for label, build in kernels:
    for dtype in (np.float32, np.float64):
        kernel = build(np.dtype(dtype))
        if isinstance(kernel, tuple):
            kernel, argtypes = kernel[0], kernel[1](numba.from_dtype(dtype))
        else:
            argtypes = signature(kernel.py_func, numba.from_dtype(dtype))
        try:
            ptx, _ = cuda.compile_ptx(kernel.py_func, argtypes, cc=(9, 0))
            results.append([label, np.dtype(dtype).name, "ok" if ".entry" in ptx else "no .entry in the PTX"])
        except Exception as error:
            results.append([label, np.dtype(dtype).name, f"{type(error).__name__}: {str(error)[:300]}"])
print(json.dumps({"nvvm": True, "results": results, "library": sorted(LIBRARY_KERNELS)}))
"""


def test_every_cuda_kernel_compiles_to_ptx() -> None:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if not report["nvvm"]:
        pytest.skip("NVVM (the CUDA toolkit's compiler library) is not installed here")
    results = report["results"]
    failed = [r for r in results if r[2] != "ok"]
    assert not failed, failed
    compiled = {label for label, _, _ in results}
    assert set(report["library"]) <= compiled, "a library kernel's twin was not found to compile"
    assert {
        "add_zip",
        "exp_map",
        "max_reduce",
        "matmul",
        "where",
        "fill",
        "adam",
        "sgd",
        "cast to bool",
    } <= compiled
    assert len(results) == 2 * len(compiled)
