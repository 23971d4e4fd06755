"""Task 4.5 against PyTorch: Kim's text CNN and a PyTorch twin have the same parameter names
and shapes, and with the same weights the same logits and gradients.

The project's own oracle, kept apart from `test_sentiment.py` (the public tests, which check
the logits against a NumPy definition and the gradients by central differences, without
PyTorch): not shipped to students, and skipped where torch is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.nn import functional as F
from minitorch.nn.textcnn import TextCNN
from test_sentiment import CLASSES, E, FILTERS, V, _tokens

torch = pytest.importorskip("torch")


def _torch_kim():
    class KimCNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(V, E, padding_idx=0)
            self.convs = torch.nn.ModuleList([torch.nn.Conv1d(E, FILTERS, k) for k in (3, 4, 5)])
            self.dropout = torch.nn.Dropout(0.5)
            self.fc = torch.nn.Linear(3 * FILTERS, CLASSES)

        def forward_embedded(self, x):
            x = x.permute(0, 2, 1)
            h = torch.cat([conv(x).relu().amax(dim=2) for conv in self.convs], dim=1)
            return self.fc(self.dropout(h))

    return KimCNN().double()


@pytest.mark.task4_5
def test_parameter_names_and_shapes_match_torch() -> None:
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    ours = {k: v.shape for k, v in model.state_dict().items()}
    theirs = {k: tuple(v.shape) for k, v in _torch_kim().state_dict().items()}
    assert ours == theirs


@pytest.mark.task4_5
def test_logits_and_gradients_match_torch() -> None:
    """Load a torch state_dict, then compare logits (eval mode) and every gradient, including
    ∂loss/∂embeddings (what saliency uses)."""
    rng = np.random.default_rng(0)
    t_model = _torch_kim().eval()
    model = TextCNN(V, E, CLASSES, num_filters=FILTERS)
    model.load_state_dict({k: v.detach().numpy() for k, v in t_model.state_dict().items()})
    model.eval()
    ids, target = _tokens(rng), rng.integers(0, CLASSES, 4)

    tokens = minitorch.tensor(ids, dtype=minitorch.int64)
    embedded = model.embedding(tokens).detach().requires_grad_(True)
    logits = model.forward_embedded(embedded)
    np.testing.assert_allclose(model(tokens).numpy(), logits.numpy(), rtol=1e-12)
    F.cross_entropy(logits, minitorch.tensor(target, dtype=minitorch.int64)).backward()

    t_embedded = t_model.embedding(torch.tensor(ids)).detach().requires_grad_(True)
    t_logits = t_model.forward_embedded(t_embedded)
    torch.nn.functional.cross_entropy(t_logits, torch.tensor(target)).backward()

    np.testing.assert_allclose(logits.numpy(), t_logits.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert embedded.grad is not None
    np.testing.assert_allclose(embedded.grad.numpy(), t_embedded.grad.numpy(), rtol=1e-8, atol=1e-12)
    for name, p in model.named_parameters():
        if name == "embedding.weight":
            continue  # the lookup was detached above; its gradient is tested in test_embedding
        t_param = dict(t_model.named_parameters())[name]
        assert p.value.grad is not None, name
        np.testing.assert_allclose(
            p.value.grad.numpy(), t_param.grad.numpy(), rtol=1e-8, atol=1e-12, err_msg=name
        )
