"""Task 6.5 and the library around it, against PyTorch (the project's own suite; not
shipped): the tiny GPT's logits and the gradient of every parameter against the same model
built from PyTorch's layers (float64), train_step against torch's Adam with clipping, and
the `gpt` example in both frameworks. The torch-free tests are in test_gpt.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from minitorch.nn.gpt import train_step
from minitorch.nn.language_model import sequence_loss
from minitorch.optim import Adam
from test_gpt import CONTEXT, V, _example_args, _ids, _model, _randomise_layer_norms, _tokens

torch = pytest.importorskip("torch")


@pytest.mark.task6_5
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_logits_and_every_gradient_match_a_torch_twin(positions: str) -> None:
    from minitorch.examples.gpt import torch_twin

    model = _model(positions)
    _randomise_layer_norms(model)
    twin = torch_twin(model)
    assert list(twin.state_dict()) == list(model.state_dict())
    x, y = _tokens(3, 5, seed=2), _tokens(3, 5, seed=3)
    logits = model(_ids(x))
    t_logits = twin(torch.tensor(x))
    assert logits.shape == (3, 5, V)
    np.testing.assert_allclose(logits.numpy(), t_logits.detach().numpy(), rtol=1e-10, atol=1e-12)
    loss = sequence_loss(logits, y)
    t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, V), torch.tensor(y).reshape(-1))
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
    loss.backward()
    t_loss.backward()
    t_params = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        assert p.value.grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(
            p.value.grad.numpy(), t_params[name].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name
        )


@pytest.mark.library
def test_train_step_matches_torch_adam_with_clipping() -> None:
    from minitorch.examples.gpt import torch_twin

    model = _model()
    twin = torch_twin(model)
    optimizer = Adam(model.parameters(), lr=0.01)
    t_optimizer = torch.optim.Adam(twin.parameters(), lr=0.01)
    for step in range(3):
        x, y = _tokens(2, CONTEXT, seed=10 + step), _tokens(2, CONTEXT, seed=20 + step)
        loss = train_step(model, optimizer, x, y, max_norm=0.5)
        t_optimizer.zero_grad()
        t_loss = torch.nn.functional.cross_entropy(
            twin(torch.tensor(x)).reshape(-1, V), torch.tensor(y).reshape(-1)
        )
        t_loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        assert norm > 0.5  # the clipping did something
        t_optimizer.step()
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
    for name, value in twin.state_dict().items():
        np.testing.assert_allclose(
            model.state_dict()[name], value.numpy(), rtol=1e-8, atol=1e-10, err_msg=name
        )
    assert model.training


@pytest.mark.library
@pytest.mark.slow
def test_example_in_torch_starts_from_the_same_weights_and_batches(tmp_path: Path) -> None:
    from minitorch.examples import gpt

    ours = gpt.main(_example_args(tmp_path, "minitorch"))
    theirs = gpt.main(_example_args(tmp_path, "torch"))
    assert ours.framework == "minitorch" and theirs.framework == "torch"
    # float64: the same model, weights and batches give the same losses, step after step
    np.testing.assert_allclose(theirs.train_losses, ours.train_losses, rtol=1e-7)
    np.testing.assert_allclose(
        [e.val_loss for e in theirs.evals], [e.val_loss for e in ours.evals], rtol=1e-7
    )
    assert np.mean(theirs.train_losses[-5:]) < np.mean(theirs.train_losses[:5]) - 0.5
    assert len(theirs.sample) == 20


TORCH_BEFORE_NUMBAS_POOL = """
import json, sys
import numba.np.ufunc.parallel as parallel
seen = []
launch = parallel._launch_threads
def recording_launch():
    seen.append("torch" in sys.modules)
    launch()
parallel._launch_threads = recording_launch
from minitorch.examples import gpt
gpt.main(sys.argv[1:])
print(json.dumps(seen[:1]))
"""


@pytest.mark.library
def test_the_example_in_torch_imports_torch_before_numbas_pool_starts(tmp_path: Path) -> None:
    """Numba's pool and PyTorch each bring an OpenMP runtime (libgomp); when Numba's pool
    starts first, PyTorch's steps in the same process ran 100× slower (the example's default
    model: 1184 ms against 10.9 ms per step, idle 2-core machine, `python -m
    minitorch.examples.gpt --steps 30 --framework torch`). So with ``--framework torch`` the
    example imports torch before its first parallel loop (the hook here sees Numba start its
    threads: a private function of Numba's, the only place that says when)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", TORCH_BEFORE_NUMBAS_POOL, *_example_args(tmp_path, "torch", steps=2)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True]
