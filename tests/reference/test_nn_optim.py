"""Library code around the tensor core: nn.Linear, losses, optimizers, the MLP example."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.nn import functional as Fn
from minitorch.testing import grad_check

B = minitorch.SimpleBackend
pytestmark = pytest.mark.library


def test_linear_layout_and_state_dict_from_torch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tl = torch.nn.Linear(4, 3).double()
    layer = nn.Linear(4, 3, backend=B)
    assert layer.weight.value.shape == (3, 4) and layer.bias.value.shape == (3,)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    layer.load_state_dict({k: v.detach().numpy() for k, v in tl.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 4))
    np.testing.assert_allclose(
        layer(minitorch.tensor(x, backend=B)).numpy(), tl(torch.tensor(x)).detach().numpy(), rtol=1e-12
    )
    with pytest.raises(ValueError, match="last dimension"):
        layer(minitorch.zeros(2, 5, backend=B))


def test_linear_gradients() -> None:
    layer = nn.Linear(3, 2, backend=B)
    x = minitorch.randn(4, 3, backend=B)
    grad_check(lambda x, w, b: x @ w.transpose(0, 1) + b, x, layer.weight.value, layer.bias.value)


def test_linear_without_bias() -> None:
    layer = nn.Linear(3, 2, bias=False, backend=B)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    assert layer(minitorch.ones(1, 3, backend=B)).shape == (1, 2)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, size=(3, 4))
    t = (rng.random((3, 4)) > 0.5).astype(np.float64)
    y = rng.standard_normal((3, 4))
    for ours, theirs, a, b in [
        (Fn.mse_loss, torch.nn.functional.mse_loss, y, p),
        (Fn.binary_cross_entropy, torch.nn.functional.binary_cross_entropy, p, t),
    ]:
        x = minitorch.tensor(a, backend=B, requires_grad=True)
        out = ours(x, minitorch.tensor(b, backend=B), reduction=reduction)
        tx = torch.tensor(a, requires_grad=True)
        tout = theirs(tx, torch.tensor(b), reduction=reduction)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
        g = rng.standard_normal(out.shape)
        out.backward(minitorch.tensor(g, backend=B))
        tout.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


def test_loss_gradients_central_difference() -> None:
    rng = np.random.default_rng(4)
    p = minitorch.tensor(rng.uniform(0.05, 0.95, size=(3, 2)), backend=B)
    t = minitorch.tensor((rng.random((3, 2)) > 0.5).astype(float), backend=B)
    y = minitorch.tensor(rng.standard_normal((3, 2)), backend=B)
    grad_check(lambda p: Fn.binary_cross_entropy(p, t, reduction="none"), p)
    grad_check(lambda y, p: Fn.mse_loss(y, p), y, p)


def test_binary_cross_entropy_is_finite_when_saturated() -> None:
    p = minitorch.tensor([1.0, 0.0, 0.5], backend=B, requires_grad=True)
    t = minitorch.tensor([0.0, 1.0, 1.0], backend=B)
    loss = Fn.binary_cross_entropy(p, t, reduction="sum")
    assert loss.item() == pytest.approx(200.0 + np.log(2.0))
    loss.backward()
    assert np.all(np.isfinite(p.grad.numpy()))


def test_regression_and_binary_losses_run_on_the_cuda_backend() -> None:
    """mse_loss and binary_cross_entropy are tensor operations of the backend (no NumPy
    round trip), so they run on CUDA (here Numba's simulator) with the clamped logs."""
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("no CUDA GPU and the CUDA simulator is off (NUMBA_ENABLE_CUDASIM=1)")
    C = minitorch.CudaBackend
    p_np, t_np = np.array([1.0, 0.0, 0.25]), np.array([0.0, 1.0, 1.0])
    p = minitorch.tensor(p_np, backend=C, requires_grad=True)
    loss = Fn.binary_cross_entropy(p, minitorch.tensor(t_np, backend=C), reduction="sum")
    assert loss.backend is C and loss.item() == pytest.approx(200.0 - np.log(0.25))
    loss.backward()
    np.testing.assert_allclose(
        p.grad.numpy(), (p_np - t_np) / np.maximum(p_np * (1 - p_np), 1e-12), rtol=1e-12
    )
    y = minitorch.tensor([1.0, 2.0, 4.0], backend=C, requires_grad=True)
    Fn.mse_loss(y, minitorch.tensor([0.0, 2.0, 1.0], backend=C)).backward()
    np.testing.assert_allclose(y.grad.numpy(), [2 / 3, 0.0, 2.0], rtol=1e-12)


def test_loss_errors() -> None:
    a, b = minitorch.zeros(3, backend=B), minitorch.zeros(4, backend=B)
    with pytest.raises(ValueError, match=r"mse_loss: input shape \(3,\) and target shape \(4,\)"):
        Fn.mse_loss(a, b)
    with pytest.raises(ValueError, match="reduction"):
        Fn.mse_loss(a, a, reduction="avg")


@pytest.mark.parametrize(
    "make",
    [
        lambda ps, torch: (minitorch.optim.SGD(ps, lr=0.1), torch.optim.SGD),
        lambda ps, torch: (minitorch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01), torch.optim.SGD),
        lambda ps, torch: (minitorch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True), torch.optim.SGD),
        lambda ps, torch: (minitorch.optim.Adam(ps, lr=0.01), torch.optim.Adam),
        lambda ps, torch: (
            minitorch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1),
            torch.optim.Adam,
        ),
    ],
    ids=["sgd", "sgd-momentum-wd", "sgd-nesterov", "adam", "adam-wd"],
)
def test_optimizers_match_torch(make) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 2))
    x = rng.standard_normal((5, 3))
    model = nn.Linear(3, 2, bias=False, backend=B)
    model.load_state_dict({"weight": w0.T.copy()})
    opt, torch_cls = make(model.parameters(), torch)
    kwargs = dict(opt.defaults)
    tw = torch.tensor(w0.T.copy(), requires_grad=True)
    topt = torch_cls([tw], **kwargs)
    for _ in range(4):
        opt.zero_grad()
        (model(minitorch.tensor(x, backend=B)) ** 2).sum().backward()
        opt.step()
        topt.zero_grad()
        ((torch.tensor(x) @ tw.T) ** 2).sum().backward()
        topt.step()
    np.testing.assert_allclose(model.weight.value.numpy(), tw.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("momentum", [True, False], ids=["sgd-momentum", "adam"])
def test_optimizer_state_dict_resumes_exactly(momentum: bool) -> None:
    """Two steps, save (model + optimizer), restore into fresh copies, two more steps: the
    same parameters as four uninterrupted steps; the state is keyed by parameter position
    with torch's names and is copied, not shared."""
    rng = np.random.default_rng(4)
    w0, x = rng.standard_normal((2, 3)), minitorch.tensor(rng.standard_normal((5, 3)), backend=B)

    def build():
        model = nn.Linear(3, 2, backend=B)
        model.load_state_dict({"weight": w0, "bias": np.zeros(2)})
        opt = (
            minitorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            if momentum
            else minitorch.optim.Adam(model.parameters(), lr=0.05)
        )
        return model, opt

    def steps(model, opt, n):
        for _ in range(n):
            opt.zero_grad()
            (model(x) ** 2).sum().backward()
            opt.step()

    straight, opt = build()
    steps(straight, opt, 4)
    first, opt1 = build()
    steps(first, opt1, 2)
    saved_params, saved_opt = first.state_dict(), opt1.state_dict()
    names = {"momentum_buffer"} if momentum else {"step", "exp_avg", "exp_avg_sq"}
    assert sorted(saved_opt["state"]) == [0, 1] and set(saved_opt["state"][0]) == names
    steps(first, opt1, 1)  # must not change what was saved
    resumed, opt2 = build()
    resumed.load_state_dict(saved_params)
    opt2.load_state_dict(saved_opt)
    steps(resumed, opt2, 2)
    np.testing.assert_array_equal(resumed.weight.value.numpy(), straight.weight.value.numpy())
    np.testing.assert_array_equal(resumed.bias.value.numpy(), straight.bias.value.numpy())
    bad = {"state": {0: {k: np.zeros((7,)) if k != "step" else 1 for k in names}}}
    with pytest.raises(ValueError, match="shape"):
        build()[1].load_state_dict(bad)


def test_optimizer_rejects_bad_settings() -> None:
    layer = nn.Linear(2, 2, backend=B)
    with pytest.raises(ValueError, match="lr"):
        minitorch.optim.SGD(layer.parameters(), lr=-1.0)
    with pytest.raises(ValueError, match="empty"):
        minitorch.optim.Adam([])


def test_toy_datasets_are_deterministic_and_balanced_enough() -> None:
    for name, make in minitorch.datasets.DATASETS.items():
        a, b = make(50), make(50)
        np.testing.assert_array_equal(a.X, b.X)
        assert a.X.shape == (a.N, 2) and a.y.shape == (a.N,)
        assert 0 < a.y.sum() < a.N, name


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["xor", "split", "circle"])
def test_mlp_example_reaches_95_percent(dataset: str) -> None:
    from minitorch.examples.train_mlp import train

    accuracy = train(dataset, epochs=500, quiet=True)
    assert accuracy >= 0.95, f"{dataset}: {accuracy:.1%}"


def test_modules_and_tensors_pickle() -> None:
    import pickle

    layer = nn.Linear(3, 2, backend=B)
    layer(minitorch.ones(1, 3, backend=B))  # builds the backend's kernels
    clone = pickle.loads(pickle.dumps(layer))
    assert clone.weight.value.backend is B
    np.testing.assert_array_equal(clone.weight.value.numpy(), layer.weight.value.numpy())


@pytest.mark.library
def test_module_zero_grad_forgets_or_zeros_every_gradient() -> None:
    layer = nn.Linear(2, 3)
    layer(minitorch.tensor([[1.0, 2.0]])).sum().backward()
    assert layer.weight.value.grad is not None and np.abs(layer.weight.value.grad.numpy()).sum() > 0
    layer.zero_grad(set_to_none=False)
    assert layer.weight.value.grad.shape == (3, 2) and not layer.weight.value.grad.numpy().any()
    assert not layer.bias.value.grad.numpy().any()
    layer.zero_grad()
    assert layer.weight.value.grad is None and layer.bias.value.grad is None
