"""Neural-network layers (`minitorch.nn`) and their functional forms (`minitorch.nn.functional`).

Layer names, constructor arguments and parameter names/layouts follow `torch.nn`, so a
PyTorch `state_dict` (converted to NumPy arrays) loads into the matching minitorch module.
"""

from ..module import Module, Parameter
from . import functional
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .textcnn import TextCNN

__all__ = ["Module", "Parameter", "functional", "Linear", "Conv1d", "Conv2d", "Dropout", "Embedding", "TextCNN"]
