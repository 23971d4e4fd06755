"""`minitorch.nn.utils`, as `torch.nn.utils`: gradient clipping (see `clip_grad.py`)."""

from .clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
