"""Tasks 3.3 and 3.4: the tests of the CUDA backend kept out of the students' release.

* Gradients through the CUDA backend against PyTorch (the project's oracle; the public
  `test_cuda_ops.py` checks them against central differences and the chain rule in NumPy).
* Every kernel compiles to PTX for a real GPU. This needs NVVM from a CUDA toolkit, which a
  student's machine usually lacks (the test would skip there); it lives here so that the
  public tests never skip.

Like every companion `test_*_torch.py`, the module skips where torch is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import cuda

import minitorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not cuda.is_available(),
    reason="no CUDA GPU, and the CUDA simulator is off: run with NUMBA_ENABLE_CUDASIM=1 "
    "set in the environment before Python starts",
)

CUDA = minitorch.CudaBackend


@pytest.mark.task3_3
@pytest.mark.task3_4
def test_gradient_through_cuda_backend_matches_torch() -> None:
    rng = np.random.default_rng(6)
    x, y, g = rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 2))

    def composite(a, b):  # the same code runs on minitorch and on torch tensors
        ab = a @ b
        return (ab.sigmoid() * a.exp().sum(1, keepdim=True)).relu() + ab.max(0).values

    a = minitorch.tensor(x, backend=CUDA, requires_grad=True)
    b = minitorch.tensor(y, backend=CUDA, requires_grad=True)
    out = composite(a, b)
    out.backward(minitorch.tensor(g, backend=CUDA))
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    tout = composite(ta, tb)
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- the kernels also compile for a real GPU --------------------------------------------

_PTX_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import numba
    from numba import cuda, types
    try:
        import numba.cuda.dispatcher as dispatcher
        class _Hopper:  # device functions compile for the current device: pretend one
            compute_capability = (9, 0)
        dispatcher.get_current_device = lambda: _Hopper()
        cuda.compile_ptx(lambda x: None, (types.float64[::1],), cc=(9, 0))
    except Exception as e:  # no NVVM (CUDA toolkit) here
        print(f"cannot compile PTX here: {type(e).__name__}: {e}")
        sys.exit(77)
    from minitorch import cuda_ops, operators
    I = types.int64[::1]
    MAPS = (operators.neg, operators.sigmoid, operators.relu, operators.log,
            operators.exp, operators.id, operators.inv, operators.tanh)
    ZIPS = (operators.add, operators.mul, operators.lt, operators.eq, operators.is_close,
            operators.relu_back, operators.log_back, operators.inv_back, operators.pow)
    REDUCES = (operators.add, operators.mul, operators.max)
    # every scalar function in float64; float32 (separately typed shared memory) once each
    for dt, maps, zips, reduces in ((np.float64, MAPS, ZIPS, REDUCES),
                                    (np.float32, MAPS[4:5], ZIPS[:1], REDUCES[2:])):
        A = types.Array(numba.from_dtype(np.dtype(dt)), 1, "C")
        for fn in maps:
            cuda.compile_ptx(cuda_ops._map_kernel(fn).py_func, (A, I, I, A, I, I), cc=(9, 0))
        for fn in zips:
            cuda.compile_ptx(cuda_ops._zip_kernel(fn).py_func, (A, I, I) * 3, cc=(9, 0))
        for fn in reduces:
            ptx, _ = cuda.compile_ptx(cuda_ops._reduce_kernel(fn, dt).py_func,
                                      (A, I, I, A, I, I, types.int64), cc=(9, 0))
            assert "bar.sync" in ptx and ".shared" in ptx
        ptx, _ = cuda.compile_ptx(cuda_ops._matmul_kernel(dt).py_func, (A, I, I) * 3, cc=(9, 0))
        assert ptx.count("bar.sync") == 2 and ".shared" in ptx
    print("ok")
    """
)


@pytest.mark.task3_3
@pytest.mark.task3_4
def test_kernels_compile_for_a_real_gpu() -> None:
    """The simulator runs kernels as Python, so it accepts code that Numba cannot compile
    for a GPU. Compile every kernel to PTX (sm_90, no GPU needed, but NVVM from a CUDA
    toolkit is), in a process without the simulator."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", _PTX_SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    if proc.returncode == 77:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
