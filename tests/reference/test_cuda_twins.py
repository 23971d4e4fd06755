"""The CUDA backend runs every op of the library (issue 31): the CUDA twins of the loop
kernels (minitorch/accel/cuda_twins.py and the cuda_* modules beside it), the layers built on them, and a training step of
each example model, compared with the fast backend.

On Numba's CUDA simulator (CI) every GPU thread is a Python thread, so the shapes are tiny;
with ``NUMBA_ENABLE_CUDASIM=0`` on a machine with a GPU the same tests run on the device.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np
import pytest
from numba import cuda

import minitorch
import minitorch.nn.functional as F
from minitorch import nn
from minitorch.backends import CudaBackend, FastBackend
from minitorch.fast_paths import cuda_twin
from minitorch.nn.gpt import TinyGPT
from minitorch.nn.language_model import CharLanguageModel
from minitorch.tensor_ops import LIBRARY_KERNELS, TensorBackend

pytestmark = [
    pytest.mark.library,
    pytest.mark.skipif(not cuda.is_available(), reason="no GPU and NUMBA_ENABLE_CUDASIM is off"),
    pytest.mark.usefixtures("quick_thread_switches"),  # the simulator's barriers (conftest.py)
]

FLOATS = [np.float64, np.float32]


def tol(dtype: type) -> dict[str, float]:
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)


# ---------------------------------------------------------------------------------------
# The backend's ops, walked


def _backend_ops() -> list[str]:
    """Every named op of TensorBackend: the maps, zips and reductions, and the library
    kernels `backend_kernel` registered (their modules are imported by `minitorch`)."""
    return sorted(name for name, value in vars(TensorBackend).items() if type(value).__name__ == "LazyOp")


def test_the_walk_sees_the_library_kernels() -> None:
    ops = _backend_ops()
    assert set(LIBRARY_KERNELS) <= set(ops) and {"add_zip", "max_reduce", "exp_map"} <= set(ops)
    assert len(LIBRARY_KERNELS) == 10, sorted(LIBRARY_KERNELS)  # im2col/col2im ×2, pooling ×4, embedding ×2
    lacking = [name for name in LIBRARY_KERNELS if cuda_twin(name) is None]
    assert not lacking, f"library kernels without a CUDA twin (@cuda_twin in minitorch/accel): {lacking}"


@pytest.mark.parametrize("name", _backend_ops())
def test_every_backend_op_exists_on_cuda(name: str) -> None:
    """Building the op is where a backend without it raises NotImplementedError."""
    op = getattr(CudaBackend, name)
    assert callable(op)


@pytest.mark.parametrize("name", sorted(LIBRARY_KERNELS))
def test_each_twin_takes_the_arguments_of_its_kernel(name: str) -> None:
    twin = cuda_twin(name)
    assert twin is not None and twin.__name__ == name and twin.__module__.startswith("minitorch.accel.cuda_")
    kernel = LIBRARY_KERNELS[name]
    assert list(inspect.signature(twin).parameters) == list(inspect.signature(kernel).parameters)


# ---------------------------------------------------------------------------------------
# Layers: forward and backward on CUDA against the fast backend


def _run(
    backend: TensorBackend,
    dtype: type,
    fn: Callable[..., minitorch.Tensor],
    *arrays: np.ndarray,
    seed: int = 0,
) -> list[np.ndarray]:
    """fn's output and the gradients of its inputs for a fixed upstream gradient, on `backend`.
    Each input arrives transposed (last two dimensions swapped back: a strided view)."""
    inputs = [
        minitorch.tensor(np.swapaxes(a, -1, -2).astype(dtype), backend=backend, requires_grad=True)
        for a in arrays
    ]
    views = [x.transpose(-1, -2) for x in inputs]
    out = fn(*views)
    g = np.random.default_rng(seed).standard_normal(out.shape).astype(dtype)
    out.backward(minitorch.tensor(g, backend=backend))
    return [out.numpy()] + [np.swapaxes(x.grad.numpy(), -1, -2) for x in inputs]


def _same_on_both(dtype: type, fn: Callable[..., minitorch.Tensor], *arrays: np.ndarray) -> None:
    on_cuda = _run(CudaBackend, dtype, fn, *arrays)
    on_fast = _run(FastBackend, dtype, fn, *arrays)
    for what, got, want in zip(["output"] + [f"grad {i}" for i in range(len(arrays))], on_cuda, on_fast):
        assert got.shape == want.shape and got.dtype == want.dtype, what
        np.testing.assert_allclose(got, want, **tol(dtype), err_msg=what)


def _normal(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), (2, 2, 2), (3, 1, 1)])
def test_conv1d(dtype: type, stride: int, padding: int, dilation: int) -> None:
    x, w, b = _normal(2, 3, 9), _normal(4, 3, 3, seed=2), _normal(1, 4, seed=3)
    _same_on_both(dtype, lambda x, w, b: F.conv1d(x, w, b.view(4), stride, padding, dilation), x, w, b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), ((2, 1), (1, 2), (1, 2))])
def test_conv2d(dtype: type, stride, padding, dilation) -> None:
    x, w = _normal(2, 2, 5, 6), _normal(3, 2, 2, 3, seed=2)
    _same_on_both(dtype, lambda x, w: F.conv2d(x, w, None, stride, padding, dilation), x, w)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "kernel, stride, padding, dilation", [(2, None, 0, 1), (3, 2, 1, 2), ((2, 3), 1, (1, 0), 1)]
)
def test_max_pool2d(dtype: type, kernel, stride, padding, dilation) -> None:
    x = _normal(2, 3, 6, 5)
    x[0, 0, :2, :2] = x[0, 0, 0, 0]  # ties: the first keeps the gradient
    _same_on_both(dtype, lambda x: F.max_pool2d(x, kernel, stride, padding, dilation), x)


def test_max_pool2d_windows_of_only_minus_infinity() -> None:
    """As on the CPU: the gradient goes to the window's first position inside x."""
    x = np.array([[[[-np.inf, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]]]])
    _same_on_both(np.float64, lambda x: F.max_pool2d(x, 2, stride=1, padding=1), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), ((3, 2), 1, (1, 1))])
def test_avg_pool2d(dtype: type, count_include_pad: bool, kernel, stride, padding) -> None:
    x = _normal(2, 2, 6, 5)
    _same_on_both(
        dtype, lambda x: F.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad), x
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_pooling_1d_and_over_time(dtype: type) -> None:
    x = _normal(2, 3, 7)
    _same_on_both(dtype, lambda x: F.max_pool1d(x, 3, 2, 1), x)
    _same_on_both(dtype, lambda x: F.avg_pool1d(x, 2), x)
    _same_on_both(dtype, lambda x: F.max_over_time(x), x)


def _ids(values: list, backend: TensorBackend) -> minitorch.Tensor:
    return minitorch.tensor(values, backend=backend, dtype=np.int64)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_with_repeated_ids(dtype: type, padding_idx) -> None:
    ids = [[1, 3, 3, 0], [3, 1, 4, 3]]
    table = _normal(5, 4)
    results = {}
    for backend in (CudaBackend, FastBackend):
        weight = minitorch.tensor(table.astype(dtype), backend=backend, requires_grad=True)
        out = F.embedding(_ids(ids, backend), weight, padding_idx)
        out.backward(minitorch.tensor(_normal(2, 4, 4, seed=5).astype(dtype), backend=backend))
        results[backend.name] = (out.numpy(), weight.grad.numpy())
    for got, want in zip(results["cuda"], results["fast"]):
        np.testing.assert_array_equal(got, want)  # the same additions, in the same order


def test_integer_indexing_gathers_and_scatters_on_cuda() -> None:
    """x[ids] and its backward use the embedding kernels (minitorch/indexing.py)."""
    rows = np.array([2, 0, 2])
    _same_on_both(
        np.float64,
        lambda x: x[minitorch.tensor(rows.tolist(), dtype=np.int64, backend=x.backend)] * 1.0,
        _normal(4, 3),
    )


# ---------------------------------------------------------------------------------------
# A training step of each example model: the fast backend's loss and gradients


def _models(backend: TensorBackend) -> dict[str, minitorch.Module]:
    """The three example models, tiny, with the same initial weights on every backend."""
    made = {}
    for name, build in {
        "text CNN": lambda: nn.TextCNN(12, 6, 2, (2, 3), 3, dropout=0.0, dtype=np.float64, backend=backend),
        "char LSTM": lambda: CharLanguageModel(12, 5, 6, "lstm", dtype=np.float64, backend=backend),
        "tiny GPT": lambda: TinyGPT(12, 5, 8, 2, 1, 12, 0.0, dtype=np.float64, backend=backend),
    }.items():
        minitorch.manual_seed(0)
        made[name] = build()
    return made


IDS = np.random.default_rng(0).integers(1, 12, size=(2, 5))


def _training_step(name: str, model: minitorch.Module, backend: TensorBackend) -> tuple[float, dict]:
    x = _ids(IDS.tolist(), backend)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.01)
    if name == "text CNN":
        loss = F.cross_entropy(model(x), _ids([0, 1], backend))
    else:
        out = model(x)
        logits = out[0] if isinstance(out, tuple) else out
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), _ids(IDS.reshape(-1).tolist(), backend))
    loss.backward()
    grads = {k: p.grad.numpy() for k, p in model.named_parameters()}
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    after = {k: p.numpy() for k, p in model.named_parameters()}
    return loss.item(), {"grad": grads, "after": after}


@pytest.mark.parametrize("name", ["text CNN", "char LSTM", "tiny GPT"])
def test_a_training_step_on_cuda_gives_the_fast_backends_numbers(name: str) -> None:
    on_cuda = _training_step(name, _models(CudaBackend)[name], CudaBackend)
    on_fast = _training_step(name, _models(FastBackend)[name], FastBackend)
    assert on_cuda[0] == pytest.approx(on_fast[0], rel=1e-12)
    for part in ("grad", "after"):
        for key, want in on_fast[1][part].items():
            np.testing.assert_allclose(
                on_cuda[1][part][key], want, rtol=1e-10, atol=1e-11, err_msg=f"{part} {key}"
            )
    for p in _models(CudaBackend)[name].parameters():
        assert p.backend is CudaBackend
