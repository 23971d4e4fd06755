"""The optimizers' in-place kernels (`minitorch/optim/`): many SGD / Adam steps against
`torch.optim` in float64 (parameters and state to 1e-12), every option (weight decay,
momentum, dampening, nesterov, betas, eps), parameters of several shapes (one large enough
for the parallel kernel), non-contiguous gradients and parameters without a gradient on
some steps; float32 stays float32; the parameters' storage keeps its identity."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import optim

pytestmark = pytest.mark.library

SHAPES = [(3, 4), (5,), (), (300, 256)]  # the last one ≥ optim.optimizer.PARALLEL_MIN elements
STEPS = 25

CONFIGS = [
    pytest.param("SGD", dict(lr=0.1), id="sgd"),
    pytest.param("SGD", dict(lr=0.05, weight_decay=0.01), id="sgd-weight-decay"),
    pytest.param("SGD", dict(lr=0.05, momentum=0.9), id="sgd-momentum"),
    pytest.param("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.02), id="sgd-dampening"),
    pytest.param("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), id="sgd-nesterov"),
    pytest.param("Adam", dict(), id="adam"),
    pytest.param("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1), id="adam-weight-decay"),
    pytest.param("Adam", dict(lr=0.02, betas=(0.3, 0.9), eps=1e-6), id="adam-small-beta1"),
]


def _gradients(step: int, dtype) -> list[np.ndarray | None]:
    rng = np.random.default_rng(100 + step)
    grads: list[np.ndarray | None] = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    if step % 4 == 1:
        grads[1] = None  # no gradient this step: the parameter and its state are left alone
    return grads


def _grad_tensor(g: np.ndarray, k: int) -> minitorch.Tensor:
    if k == 0:  # a transposed (non-contiguous) gradient: the kernel gets a copy
        t = minitorch.tensor(np.ascontiguousarray(g.T)).transpose(0, 1)
        assert not t._tensor.is_contiguous()
        return t
    return minitorch.tensor(g)


def _run_both(name: str, options: dict, dtype):
    """Yield (step, minitorch parameters, torch parameters, the two optimizers) after each step."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [minitorch.Parameter(minitorch.tensor(a.copy())) for a in init]
    t_params = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    opt = getattr(optim, name)(params, **options)
    t_opt = getattr(torch.optim, name)(t_params, **options)
    for step in range(STEPS):
        for k, (p, tp, g) in enumerate(zip(params, t_params, _gradients(step, dtype))):
            p.value.grad = None if g is None else _grad_tensor(g, k)
            tp.grad = None if g is None else torch.tensor(g)
        opt.step()
        t_opt.step()
        yield step, params, t_params, opt, t_opt


@pytest.mark.parametrize("name, options", CONFIGS)
def test_many_steps_match_torch_float64(name: str, options: dict) -> None:
    for step, params, t_params, opt, t_opt in _run_both(name, options, np.float64):
        for k, (p, tp) in enumerate(zip(params, t_params)):
            np.testing.assert_allclose(
                p.value.numpy(),
                tp.detach().numpy(),
                rtol=1e-12,
                atol=1e-14,
                err_msg=f"parameter {k} after step {step + 1}",
            )
    # the state too (what a checkpoint saves)
    state = opt.state_dict()["state"]
    for k, tp in enumerate(t_params):
        t_state = t_opt.state[tp]
        for key, value in state.get(k, {}).items():
            expected = t_state[key].detach().numpy() if hasattr(t_state[key], "detach") else t_state[key]
            np.testing.assert_allclose(
                np.asarray(value, dtype=np.float64),
                np.asarray(expected, dtype=np.float64),
                rtol=1e-12,
                atol=1e-14,
                err_msg=f"{key} of parameter {k}",
            )


@pytest.mark.parametrize("name, options", [CONFIGS[4], CONFIGS[6]])
def test_float32_stays_float32_and_matches_torch(name: str, options: dict) -> None:
    for _, params, t_params, opt, _ in _run_both(name, options, np.float32):
        pass
    for p, tp in zip(params, t_params):
        assert p.value.dtype == np.float32
        np.testing.assert_allclose(p.value.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5)
    for st in opt.state_dict()["state"].values():
        for key, value in st.items():
            if np.ndim(value):
                assert np.asarray(value).dtype == np.float32, key


@pytest.mark.parametrize("name, options", [CONFIGS[3], CONFIGS[6]])
def test_parameter_storage_keeps_its_identity(name: str, options: dict) -> None:
    """The update is written into the parameter's own storage: the tensor object, its storage
    array and every view of it (a layer's weight.T, a reshaped copy of the handle) stay valid."""
    rng = np.random.default_rng(1)
    params = [minitorch.Parameter(minitorch.tensor(rng.standard_normal(s))) for s in SHAPES]
    tensors = [p.value for p in params]
    storages = [p.value._tensor._storage for p in params]
    views = [p.value.view(-1) for p in params]
    opt = getattr(optim, name)(params, **options)
    before = [p.value.numpy() for p in params]
    for step in range(3):
        for p, g in zip(params, _gradients(step, np.float64)):
            p.value.grad = None if g is None else minitorch.tensor(g)
        opt.step()
    for p, t, s, v, b in zip(params, tensors, storages, views, before):
        assert p.value is t and p.value._tensor._storage is s
        np.testing.assert_array_equal(v.numpy(), p.value.numpy().reshape(-1))
        assert not np.array_equal(p.value.numpy(), b), "the parameter did not move"


def test_gradient_storage_is_not_written() -> None:
    """The kernels read a contiguous gradient's storage directly: it must come out unchanged
    (two gradients may share one storage)."""
    p = minitorch.Parameter(minitorch.tensor(np.ones((4, 3))))
    g = np.random.default_rng(2).standard_normal((4, 3))
    for make in (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1), lambda ps: optim.Adam(ps)):
        opt = make([p])
        for _ in range(2):
            p.value.grad = minitorch.tensor(g.copy())
            kept = p.value.grad
            opt.step()
            np.testing.assert_array_equal(kept.numpy(), g)


def test_integer_hyperparameters_and_a_loaded_state() -> None:
    """lr=1 / momentum=0 given as ints work; a state loaded from a (Fortran-ordered) array is
    updated in place, as it is saved."""
    torch = pytest.importorskip("torch")
    w0 = np.random.default_rng(3).standard_normal((3, 2))
    g = np.random.default_rng(4).standard_normal((3, 2))
    p = minitorch.Parameter(minitorch.tensor(w0.copy()))
    opt = optim.SGD([p], lr=1, momentum=0.5, weight_decay=0)
    opt.load_state_dict({"state": {0: {"momentum_buffer": np.asfortranarray(g * 2)}}})
    tp = torch.tensor(w0.copy(), requires_grad=True)
    t_opt = torch.optim.SGD([tp], lr=1, momentum=0.5)
    t_opt.state[tp]["momentum_buffer"] = torch.tensor(g * 2)
    for _ in range(3):
        p.value.grad = minitorch.tensor(g)
        tp.grad = torch.tensor(g)
        opt.step()
        t_opt.step()
    np.testing.assert_allclose(p.value.numpy(), tp.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        opt.state_dict()["state"][0]["momentum_buffer"],
        t_opt.state[tp]["momentum_buffer"].numpy(),
        rtol=1e-12,
    )
