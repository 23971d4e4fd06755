"""Neural-network layers (`minitorch.nn`) and their functional forms (`minitorch.nn.functional`).

Layer names, constructor arguments and parameter names/layouts follow `torch.nn`, so a
PyTorch `state_dict` (converted to NumPy arrays) loads into the matching minitorch module.
"""

from ..module import Module, Parameter
from . import functional
from .linear import Linear

__all__ = ["Module", "Parameter", "functional", "Linear"]

# Stage A4: convolution, dropout, embeddings and Kim's text CNN.
from .conv import Conv1d, Conv2d  # noqa: E402
from .dropout import Dropout  # noqa: E402
from .embedding import Embedding  # noqa: E402
from .textcnn import TextCNN  # noqa: E402

__all__ += ["Conv1d", "Conv2d", "Dropout", "Embedding", "TextCNN"]
