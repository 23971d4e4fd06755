"""Task 5.5 against PyTorch (the project's own oracle; not shipped to students, whose public
tests in `test_language_model.py` use NumPy and hand-written training steps instead):
sequence_loss against F.cross_entropy, the model against a PyTorch twin with the same
weights, and train_step / train_chunk against PyTorch's training loop (Adam with clipping;
SGD with a carried, detached state)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn.language_model import (
    CharLanguageModel,
    detach_state,
    sequence_loss,
    train_chunk,
    train_step,
)
from test_language_model import BACKEND, _ids, _model

torch = pytest.importorskip("torch")


def _torch_twin(torch, model: CharLanguageModel, cell: str = "lstm", num_layers: int = 1):
    """A PyTorch model with the same layout and parameter names, loaded with our values."""
    emb, hidden, vocab = model.embedding.embedding_dim, model.fc.in_features, model.vocab_size

    class Twin(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, emb)
            self.rnn = {"rnn": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](
                emb, hidden, num_layers=num_layers, batch_first=True
            )
            self.fc = torch.nn.Linear(hidden, vocab)

        def forward(self, x, state=None):
            h, state = self.rnn(self.embedding(x), state)
            return self.fc(h), state

    twin = Twin().double()
    twin.load_state_dict({k: torch.tensor(v) for k, v in model.state_dict().items()})
    return twin


@pytest.mark.task5_5
def test_sequence_loss_matches_torch() -> None:
    rng = np.random.default_rng(1)
    logits, targets = rng.standard_normal((3, 4, 6)), rng.integers(0, 6, (3, 4))
    x = minitorch.tensor(logits, requires_grad=True, backend=BACKEND)
    loss = sequence_loss(x, _ids(targets))
    loss.backward()
    tx = torch.tensor(logits, requires_grad=True)
    t_loss = torch.nn.functional.cross_entropy(tx.reshape(-1, 6), torch.tensor(targets).reshape(-1))
    t_loss.backward()
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.task5_5
@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_model_matches_a_torch_twin(cell: str) -> None:
    """Same parameter names and shapes as PyTorch's Embedding → nn.{RNN,LSTM,GRU} → Linear;
    same logits and final state, and a carried state continues the sequence exactly."""
    model = _model(7, cell, num_layers=2)
    twin = _torch_twin(torch, model, cell, num_layers=2)
    assert {k: v.shape for k, v in model.state_dict().items()} == {
        k: tuple(v.shape) for k, v in twin.state_dict().items()
    }
    ids = np.random.default_rng(3).integers(0, 7, (2, 5))
    logits, state = model(_ids(ids))
    t_logits, t_state = twin(torch.tensor(ids))
    assert logits.shape == (2, 5, 7)
    np.testing.assert_allclose(logits.numpy(), t_logits.detach().numpy(), rtol=1e-9, atol=1e-12)
    h, t_h = (state[0], t_state[0]) if cell == "lstm" else (state, t_state)
    np.testing.assert_allclose(h.numpy(), t_h.detach().numpy(), rtol=1e-9, atol=1e-12)
    # two chunks with the state carried = one pass over the whole sequence
    first, state = model(_ids(ids[:, :2]))
    second, _ = model(_ids(ids[:, 2:]), detach_state(state))
    np.testing.assert_allclose(second.numpy(), logits.numpy()[:, 2:], rtol=1e-9, atol=1e-12)


@pytest.mark.task5_5
def test_train_step_matches_torch() -> None:
    """Two steps (Adam, clipping that bites) leave the same parameters as PyTorch's loop."""
    model = _model(6)
    twin = _torch_twin(torch, model)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.01)
    t_optimizer = torch.optim.Adam(twin.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    for _ in range(2):
        x, y = rng.integers(0, 6, (3, 5)), rng.integers(0, 6, (3, 5))
        loss = train_step(model, optimizer, x, y, max_norm=0.1)
        t_optimizer.zero_grad()
        t_logits, _ = twin(torch.tensor(x))
        t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 6), torch.tensor(y).reshape(-1))
        t_loss.backward()
        t_norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.1)
        t_optimizer.step()
        assert isinstance(loss, float)
        assert t_norm.item() > 0.1  # clipping did something
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(
            value, twin.state_dict()[name].numpy(), rtol=1e-7, atol=1e-10, err_msg=name
        )


@pytest.mark.task5_5
def test_train_chunk_carries_the_state_detached_like_torch() -> None:
    """Truncated BPTT: three chunks, each from the previous one's final state, detached.
    Same losses, parameters and carried state as PyTorch's loop; the given state gets no
    gradient (the backward pass stops at the chunk's first step)."""
    model = _model(6)
    twin = _torch_twin(torch, model)
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.5)
    t_optimizer = torch.optim.SGD(twin.parameters(), lr=0.5)
    rng = np.random.default_rng(5)
    state, t_state = None, None
    for _ in range(3):
        x, y = rng.integers(0, 6, (2, 4)), rng.integers(0, 6, (2, 4))
        if state is not None:
            state = tuple(
                s.detach().requires_grad_() for s in state
            )  # would collect a gradient if not detached
        given = state
        loss, state = train_chunk(model, optimizer, x, y, state, max_norm=None)
        t_optimizer.zero_grad()
        t_logits, t_state = twin(
            torch.tensor(x), None if t_state is None else tuple(s.detach() for s in t_state)
        )
        t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 6), torch.tensor(y).reshape(-1))
        t_loss.backward()
        t_optimizer.step()
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
        for mine, theirs in zip(state, t_state):
            np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
        if given is not None:
            assert all(s.grad is None for s in given), "train_chunk must detach the state it is given"
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(
            value, twin.state_dict()[name].numpy(), rtol=1e-7, atol=1e-10, err_msg=name
        )
