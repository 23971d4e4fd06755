"""Stage A4, task 4.5: Kim's convolutional network for sentence classification (Kim, 2014).

    tokens [N, L] ──embedding──▶ [N, L, E] ──permute──▶ [N, E, L]
        ──for each filter width k: conv1d (E → F maps, width k), ReLU──▶ [N, F, L − k + 1]
        ──max over time──▶ [N, F]
        ──concatenate the widths──▶ [N, F · #widths] ──dropout──▶ ──linear──▶ logits [N, classes]

Each filter is an n-gram detector; max-over-time pooling keeps how strongly it fired
anywhere in the sentence, so sentences of any length (≥ the widest filter) map to a vector
of fixed size. "CNN-rand" starts the embeddings at random and learns them with the rest.
(ReLU is increasing, so max_l ReLU(c_l) = ReLU(max_l c_l), gradients included: the code
pools first and applies ReLU to the small [N, F] result.)

The parameter names match a PyTorch model built from `nn.Embedding`, an `nn.ModuleList`
of `nn.Conv1d` called `convs` and an `nn.Linear` called `fc` (`embedding.weight`,
`convs.0.weight`, `convs.0.bias`, …, `fc.weight`, `fc.bias`), so its `state_dict` loads.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..containers import ModuleList
from ..joining import cat
from ..module import Module
from ..tensor import Tensor
from ..tensor_data import ShapeError
from ..tensor_ops import TensorBackend
from .conv import Conv1d
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .pooling import max_over_time

__all__ = ["TextCNN", "saliency"]


class TextCNN(Module):
    """Kim's CNN for sentence classification.

    Args:
        vocab_size: number of token ids (the embedding table's rows).
        embedding_dim: E, the size of a token vector (Kim: 300).
        num_classes: number of output classes (2 for SST-2).
        kernel_sizes: filter widths (Kim: 3, 4, 5).
        num_filters: F, feature maps per width (Kim: 100).
        dropout: dropout probability before the classifier (Kim: 0.5).
        padding_idx: the id of <pad>, whose embedding stays zero.

    Input: int64 token ids [N, L] with L ≥ max(kernel_sizes). Output: logits [N, num_classes].
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 300,
        num_classes: int = 2,
        kernel_sizes: Sequence[int] = (3, 4, 5),
        num_filters: int = 100,
        dropout: float = 0.5,
        padding_idx: Optional[int] = 0,
        dtype: Any = None,
        backend: Optional[TensorBackend] = None,
    ) -> None:
        super().__init__()
        self.kernel_sizes = tuple(kernel_sizes)
        self.embedding = Embedding(
            vocab_size, embedding_dim, padding_idx=padding_idx, dtype=dtype, backend=backend
        )
        self.convs = ModuleList(
            [Conv1d(embedding_dim, num_filters, k, dtype=dtype, backend=backend) for k in self.kernel_sizes]
        )
        self.dropout = Dropout(dropout)
        self.fc = Linear(num_filters * len(self.kernel_sizes), num_classes, dtype=dtype, backend=backend)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens [N, L] (int64) → logits [N, num_classes]."""
        if tokens.dims != 2:
            raise ShapeError(f"TextCNN: tokens must be 2-D [N, L], got shape {tokens.shape}")
        if tokens.shape[1] < max(self.kernel_sizes):
            raise ShapeError(
                f"TextCNN: sentences must be padded to at least the widest filter "
                f"({max(self.kernel_sizes)} tokens), got length {tokens.shape[1]}"
            )
        return self.forward_embedded(self.embedding(tokens))

    def forward_embedded(self, embedded: Tensor) -> Tensor:
        """The network after the embedding lookup: embedded [N, L, E] → logits [N, classes].

        (Separate from `forward` so that saliency can differentiate with respect to the
        token vectors.) Dropout is active only in training mode.
        """
        # BEGIN SOLUTION 4.5
        x = embedded.permute(0, 2, 1)  # [N, E, L]: embedding dims are the input channels
        # max_l relu(c_l) = relu(max_l c_l) (ReLU is increasing), and so are the gradients:
        # pooling first applies ReLU to [N, F] instead of [N, F, L].
        features = [max_over_time(conv(x)).relu() for conv in self.convs]  # each [N, F]
        h = cat(features, dim=1)  # [N, F · #widths]
        return self.fc(self.dropout(h))
        # END SOLUTION 4.5


def saliency(model: TextCNN, tokens: Tensor, target: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """Gradient-norm saliency of one sentence (Simonyan et al., 2014; Li et al., 2016).

    For tokens [1, L], compute the loss of class `target` (by default the predicted class)
    and its gradient with respect to each token's embedding e_t; the importance of token t
    is ‖∂loss/∂e_t‖₂. Runs in evaluation mode (no dropout) and restores the mode.

    Returns (importance [L], probabilities [num_classes]).
    """
    from ..constructors import tensor
    from .losses import cross_entropy
    from .softmax import softmax

    was_training = model.training
    model.eval()
    try:
        embedded = model.embedding(tokens).detach().requires_grad_(True)
        logits = model.forward_embedded(embedded)
        probs = softmax(logits, dim=1).numpy()[0]
        label = int(np.argmax(probs)) if target is None else int(target)
        loss = cross_entropy(logits, tensor([label], dtype=np.int64, backend=tokens.backend))
        loss.backward()
        assert embedded.grad is not None
        grad = embedded.grad.numpy()[0]  # [L, E]
        return np.sqrt((grad.astype(np.float64) ** 2).sum(axis=1)), probs
    finally:
        model.train(was_training)
