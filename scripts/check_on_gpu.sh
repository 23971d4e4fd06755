#!/usr/bin/env bash
# The checks to run on a machine with an NVIDIA GPU, in one go (CI has no GPU: there the
# same CUDA tests run on Numba's simulator). From the repository root:
#
#     bash scripts/check_on_gpu.sh            # logs and tables in ./gpu-check (or in $OUT)
#
# 0. a smoke test: one CUDA kernel and one backward on the device; stops here if it fails
#    (a Numba or driver mismatch shows in seconds, not after the benchmark's timeout);
# 1. the four models' training steps on the GPU against PyTorch's CUDA (bench.train_step
#    --device cuda), first, while nothing else uses the GPU or the CPUs;
# 2. the CUDA tests with NUMBA_ENABLE_CUDASIM=0: the kernels, the device-memory mirrors,
#    the layers and optimizers against the CPU backend, and against PyTorch.
#
# Settings (environment): PYTHON (python3), MODELS (gpt,lstm,cnn,mlp), REPEATS (10),
# BENCH_TIMEOUT / TEST_TIMEOUT (seconds, 240 each), WORKERS (pytest-xdist workers, 8).
# The package need not be installed: the checkout goes on PYTHONPATH.
#
# If the smoke test fails inside numba-cuda's import with "module 'numpy' has no attribute
# 'row_stack'", the machine's NumPy (2.5 on the H200 image of 2026-11) is newer than its
# numba-cuda (0.30.4) supports: install a NumPy 2.4 wheel ahead of it on PYTHONPATH first
# (`pip install --target DIR numpy==2.4.6`, then PYTHONPATH=DIR).
set -u
out="${OUT:-gpu-check}"
mkdir -p "$out"
py="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0 MINITORCH_SHARE_CPU=0
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    "$py" -c 'import sys, numba, numpy; print(sys.version.split()[0], "numba", numba.__version__, "numpy", numpy.__version__)'
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' || echo "no torch"
    nproc
} 2>&1 | tee "$out/machine.txt"

echo "== 0. smoke test" | tee "$out/smoke.log"
if ! timeout 120 "$py" - >>"$out/smoke.log" 2>&1 <<'EOF'; then
import time
t = time.perf_counter()
import minitorch
from minitorch import device_memory

x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]]).to("cuda").requires_grad_()
y = ((x * 2 + 1) @ x).sum()
y.backward()
print("device", x.device, "loss", y.item(), "grad", x.grad.numpy().tolist())
print("transfers to device / to host", device_memory.transfers.to_device, device_memory.transfers.to_host)
print(f"smoke test {time.perf_counter() - t:.1f} s (compiling included)")
EOF
    cat "$out/smoke.log"
    echo "smoke test failed: nothing else was run"
    exit 1
fi
cat "$out/smoke.log"

echo "== 1. training steps on the GPU"
set -o pipefail
timeout "${BENCH_TIMEOUT:-240}" "$py" -m bench.train_step --device cuda --models "${MODELS:-gpt,lstm,cnn,mlp}" \
    --processes 1 --repeats "${REPEATS:-10}" --warmup 2 --markdown "$out/BENCHMARKS-gpu.md" 2>&1 | tee "$out/bench.log"
echo "bench exit $?"

echo "== 2. CUDA tests on the device"
parallel=()
if "$py" -c "import xdist" 2>/dev/null; then parallel=(-n "${WORKERS:-8}"); fi
timeout "${TEST_TIMEOUT:-240}" "$py" -m pytest -q -p no:cacheprovider "${parallel[@]}" --durations=10 \
    tests/reference/test_device_memory.py tests/reference/test_cuda_twins.py \
    tests/reference/test_cuda_layers.py tests/public/test_cuda_ops.py \
    tests/oracle/test_cuda_ops_torch.py \
    tests/public/test_softmax.py::test_softmax_and_log_softmax_run_on_the_cuda_backend \
    tests/reference/test_nn_optim.py::test_regression_and_binary_losses_run_on_the_cuda_backend \
    2>&1 | tee "$out/tests.log"
echo "tests exit $?"
