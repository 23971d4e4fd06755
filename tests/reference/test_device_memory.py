"""The CUDA backend keeps tensors in GPU memory between operations (minitorch/device_memory.py,
issue 31), and host code always sees the newest values.

Two kinds of tests: the transfers a computation makes (counted by `device_memory.transfers`:
a chain of operations sends its inputs once and brings back only what host code asks for),
and the values after every way host code and kernels can take turns (an in-place write, an
optimizer step, `load_state_dict`, a view, a CPU operation on a CUDA tensor). On Numba's
simulator the "GPU memory" is NumPy arrays the simulator owns; the bookkeeping is the same.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from numba import cuda

import minitorch
import minitorch.nn.functional as F
from minitorch import device_memory, nn
from minitorch.backends import CudaBackend, FastBackend
from minitorch.device_memory import newest_copy, transfers

pytestmark = [
    pytest.mark.library,
    pytest.mark.skipif(not cuda.is_available(), reason="no GPU and NUMBA_ENABLE_CUDASIM is off"),
    pytest.mark.usefixtures("quick_thread_switches"),  # the simulator's barriers (conftest.py)
]


def _cuda(values: object, dtype: type = np.float64) -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values, dtype=dtype), backend=CudaBackend)


def _newest(t: minitorch.Tensor) -> str:
    """Which copy of the tensor's (or Parameter's tensor's) values is the newest."""
    return newest_copy(getattr(t, "value", t)._tensor._buffer)


def _chain(x: minitorch.Tensor, w: minitorch.Tensor) -> minitorch.Tensor:
    """map, zip, matmul, reduce, a view and a permute, on the GPU."""
    return ((x @ w).exp() * x.permute(1, 0)[:, :1].view(-1, 1)).sum(1)


def test_a_chain_of_operations_sends_its_inputs_once_and_brings_back_only_the_result() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((9, 9)), rng.standard_normal((9, 9))  # > cuda_ops.SMALL entries
    _chain(_cuda(a), _cuda(b)).numpy()  # compiles the kernels and sends the layouts once
    x, w = _cuda(a), _cuda(b)
    transfers.reset()
    y = _chain(x, w)
    assert (transfers.to_device, transfers.to_host) == (2, 0)  # x and w, nothing back
    assert transfers.bytes_to_device == a.nbytes + b.nbytes
    assert _newest(y) == "device"
    want = (np.exp(a @ b) * a.T[:, :1]).sum(1)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    assert transfers.to_host == 1 and _newest(y) == "host"
    transfers.reset()
    _chain(x, w)  # x and w are still on the GPU
    assert transfers.to_device == 0


def test_outputs_and_constants_are_made_on_the_gpu_without_sending_them() -> None:
    x = _cuda(np.arange(40.0).reshape(8, 5))
    (x.sum(1) + x.amax(1)).numpy()
    transfers.reset()
    y = x.sum(1) + x.amax(1)  # the reductions' outputs start at 0 and −∞, filled on the GPU
    z = x.new_zeros((8, 5)) + x  # new_zeros: never sent
    assert transfers.to_device == 0
    np.testing.assert_array_equal(y.numpy(), np.arange(40.0).reshape(8, 5).sum(1) + np.arange(4, 40, 5))
    np.testing.assert_array_equal(z.numpy(), np.arange(40.0).reshape(8, 5))


@pytest.mark.parametrize("write", ["setitem", "add_", "data.mul_", "zero_"])
def test_a_host_write_between_kernels_is_seen_by_the_next_kernel(write: str) -> None:
    x = _cuda(np.arange(40.0))  # more entries than cuda_ops.SMALL: read through its mirror
    y = x * x
    assert _newest(y) == "device"
    want = np.arange(40.0) ** 2
    if write == "setitem":
        y[1:3] = 10.0
        want[1:3] = 10.0
    elif write == "add_":
        y.add_(1.0)
        want += 1.0
    elif write == "data.mul_":
        y.data.mul_(0.5)
        want *= 0.5
    else:
        y.zero_()
        want[:] = 0.0
    np.testing.assert_array_equal((y + y).numpy(), 2 * want)


def test_views_of_gpu_values_read_their_slice_of_the_gpu_copy() -> None:
    x = _cuda(np.arange(12.0))
    y = x * 2.0  # on the GPU only
    tail = y[4:].view(2, 4)  # a storage that starts 4 entries into y's
    column = y.view(3, 4)[:, 2]  # strided
    assert _newest(y) == "device"
    np.testing.assert_array_equal((tail + 1.0).numpy(), np.arange(8.0, 24.0, 2).reshape(2, 4) + 1)
    np.testing.assert_array_equal((column * column).numpy(), (np.arange(12.0) * 2).reshape(3, 4)[:, 2] ** 2)


def test_a_cpu_operation_on_a_cuda_tensor_fetches_its_values() -> None:
    x = _cuda([1.0, -2.0, 3.0])
    y = x * 3.0  # newest on the GPU
    on_cpu = minitorch.tensor([1.0, 1.0, 1.0], backend=FastBackend)
    np.testing.assert_array_equal((on_cpu + y).numpy(), [4.0, -5.0, 10.0])
    np.testing.assert_array_equal(y.to("cpu").numpy(), [3.0, -6.0, 9.0])
    moved = on_cpu.to("cuda")
    np.testing.assert_array_equal((moved * y).numpy(), [3.0, -6.0, 9.0])


def test_optimizer_steps_and_load_state_dict_reach_the_next_forward_pass() -> None:
    """Two Adam steps of a small model on both backends: the second loss is computed from the
    parameters the first step wrote on the host, so a stale GPU copy would change it."""
    rng = np.random.default_rng(3)
    x, target = rng.standard_normal((4, 8)), np.array([0, 2, 1, 2])

    def losses(backend) -> list[float]:
        minitorch.manual_seed(0)  # weights of more entries than cuda_ops.SMALL: through their mirrors
        model = nn.Sequential(nn.Linear(8, 6, backend=backend), nn.Tanh(), nn.Linear(6, 3, backend=backend))
        optimizer = minitorch.optim.Adam(model.parameters(), lr=0.1)
        inputs = minitorch.tensor(x, backend=backend)
        labels = minitorch.tensor(target, backend=backend, dtype=np.int64)
        found = []
        for _ in range(3):
            loss = F.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            found.append(loss.item())
        model.load_state_dict({k: np.zeros_like(v) for k, v in model.state_dict().items()})
        found.append(F.cross_entropy(model(inputs), labels).item())  # every logit 0: log 3
        return found

    on_cuda, on_fast = losses(CudaBackend), losses(FastBackend)
    np.testing.assert_allclose(on_cuda, on_fast, rtol=1e-12)
    assert on_cuda[-1] == pytest.approx(np.log(3.0))
    assert len(set(on_cuda[:3])) == 3  # the steps changed the parameters


@pytest.mark.parametrize("name", ["text CNN", "char LSTM", "tiny GPT"])
def test_a_training_step_sends_only_its_inputs_and_brings_back_only_the_loss(name: str) -> None:
    """After a warm-up step, a whole training step — forward, backward, gradient clipping and
    Adam's update (optim/on_gpu.py) — sends at most its two id tensors and brings back
    nothing but the loss that `item()` asks for."""
    from test_cuda_twins import IDS, _ids, _models

    model = _models(CudaBackend)[name]
    params = list(model.parameters())
    optimizer = minitorch.optim.Adam(params, lr=0.01)
    for step in range(2):
        transfers.reset()
        x = _ids(IDS.tolist(), CudaBackend)
        out = model(x)
        logits = out[0] if isinstance(out, tuple) else out
        labels = [0, 1] if name == "text CNN" else IDS.reshape(-1).tolist()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), _ids(labels, CudaBackend))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 0.5)
        optimizer.step()
        if step == 1:
            assert transfers.to_host == 0
            assert transfers.to_device <= 2
            assert all(_newest(p) == "device" for p in params)
        assert np.isfinite(loss.item())
        if step == 1:
            assert transfers.to_host == 1


def test_a_mirror_goes_with_its_host_array() -> None:
    y = _cuda(np.ones(64)) * 2.0
    key = id(device_memory._root(y._tensor._buffer))
    assert key in device_memory.MIRRORS
    del y
    gc.collect()
    assert key not in device_memory.MIRRORS


def test_the_gpu_array_of_a_dead_tensor_is_reused_by_the_next_of_its_size() -> None:
    """The pool: a freed GPU copy serves the next new copy of the same size and dtype; what
    it held never shows (the new copy is written whole, filled, or sent)."""
    x = _cuda(np.arange(64.0))
    y = x * 2.0
    freed = device_memory.MIRRORS[id(device_memory._root(y._tensor._buffer))].device
    del y
    gc.collect()
    assert any(d is freed for d in device_memory.POOL.free.get((64, np.dtype(np.float64).str), []))
    z = x + 1.0  # a new output of 64 float64 entries: the freed array, written whole
    w = x.new_zeros(64) + x.new_zeros(64)  # new zeros made on the GPU in a recycled array
    assert any(_mirror_device(t) is freed for t in (z, w))
    np.testing.assert_array_equal(z.numpy(), np.arange(64.0) + 1.0)
    np.testing.assert_array_equal(w.numpy(), np.zeros(64))
    v = _cuda(np.full(64, 7.0))
    del z, w
    gc.collect()
    np.testing.assert_array_equal((v * 1.0).numpy(), np.full(64, 7.0))  # sent into a recycled array


def test_the_pool_keeps_no_more_than_its_bytes(monkeypatch) -> None:
    pool = device_memory.POOL
    pool.free.clear()
    pool.bytes = 0
    monkeypatch.setattr(pool, "limit", 64 * 8)  # one array of 64 float64
    x = _cuda(np.arange(64.0))
    y, z = x * 2.0, x * 3.0
    del y, z
    gc.collect()
    assert sum(len(kept) for kept in pool.free.values()) == 1
    assert pool.bytes == 64 * 8
    assert pool.take(64, np.dtype(np.float64)) is not None and pool.bytes == 0


def _mirror_device(t: minitorch.Tensor) -> object:
    return device_memory.MIRRORS[id(device_memory._root(t._tensor._buffer))].device


def test_an_array_without_a_contiguous_root_is_copied_in_and_out_at_once() -> None:
    from minitorch.cuda_ops import launch_per_element

    base = np.zeros((6, 4))
    out = base[:, 1]  # a strided array: no mirror, the plain way
    source = np.arange(6.0)

    @cuda.jit
    def double(out, source):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 2.0 * source[i]

    launch_per_element(double, 6, out, source)
    np.testing.assert_array_equal(base[:, 1], 2.0 * source)
    assert newest_copy(out) == "host"


def test_an_output_that_shares_its_inputs_storage_still_reads_the_input() -> None:
    """map(x, out=x) on a tensor with no GPU copy yet: the output's copy is made without
    sending (the kernel writes every entry), but the input's values must still be sent."""
    values = np.linspace(-1.0, 1.0, 40)
    x = _cuda(values)
    CudaBackend.exp_map(_cuda(values), _cuda(values))  # compiles, and sends the layout (40,) once
    transfers.reset()
    CudaBackend.exp_map(x, x)
    assert transfers.to_device == 1  # x's values (a fresh GPU array holds anything)
    np.testing.assert_allclose(x.numpy(), np.exp(values), rtol=1e-15)
    y = x.new_full((40,), 2.0)  # filled: made on the GPU only when a kernel needs it
    CudaBackend.neg_map(y, y)
    np.testing.assert_array_equal(y.numpy(), np.full(40, -2.0))


def test_pickling_a_tensor_takes_its_newest_values() -> None:
    import pickle

    y = _cuda(np.arange(40.0)) * 3.0
    assert _newest(y) == "device"
    copy = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(copy.numpy(), 3.0 * np.arange(40.0))
    assert copy.backend is CudaBackend
