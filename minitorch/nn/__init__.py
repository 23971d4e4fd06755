"""Neural-network layers (`minitorch.nn`) and their functional forms (`minitorch.nn.functional`).

Layer names, constructor arguments and parameter names/layouts follow `torch.nn`, so a
PyTorch `state_dict` (converted to NumPy arrays) loads into the matching minitorch module.
"""

from ..module import Module, Parameter
from . import functional
from .linear import Linear

__all__ = ["Module", "Parameter", "functional", "Linear"]
