"""Neural-network layers (`minitorch.nn`) and their functional forms (`minitorch.nn.functional`).

Layer names, constructor arguments and parameter names/layouts follow `torch.nn`, so a
PyTorch `state_dict` (converted to NumPy arrays) loads into the matching minitorch module.

Files: `parameter` (nn.Parameter, a Tensor that a module learns), `parameter_containers`
(ParameterList, ParameterDict), `linear` (Linear, F.linear), `conv` (conv1d/conv2d by im2col, task 4.1/4.2), `pooling`
(task 4.3), `softmax` and `dropout` (task 4.4), `losses` (mse, BCE, NLL, cross-entropy),
`loss_modules` (MSELoss, BCELoss, NLLLoss, CrossEntropyLoss),
`init` (nn.init: xavier_, kaiming_, normal_ … in place), `embedding`, `textcnn` (Kim's CNN, task 4.5), `validation` (argument checks); A5:
`rnn`, `lstm`, `gru` (cells, tasks 5.1–5.3), `recurrent` (unroll, RNN/LSTM/GRU layers,
tasks 5.1/5.4), `clip_grad` (task 5.4, exposed as `minitorch.nn.utils`); A6:
`masked_softmax` (the softmax over allowed positions, task 6.1), `attention_pooling`
(AttentionPooling, task 6.1), `additive_attention` (AdditiveAttention, Bahdanau, task 6.1),
`attention` (scaled dot-product attention, task 6.2), `multihead_attention`
(MultiheadAttention, task 6.3), `layer_norm` (LayerNorm) and `positional` (sinusoidal
encodings, task 6.4), `transformer` (the encoder/decoder layers and stacks, Transformer,
the causal mask, task 6.5), `gpt` (TinyGPT, a character GPT, task 6.5); `activation`
(ReLU, Tanh, GELU modules, F.gelu; library).
"""

from ..containers import ModuleDict, ModuleList, Sequential
from ..module import Module
from .parameter import Parameter
from .parameter_containers import ParameterDict, ParameterList
from . import functional, init, utils
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .layer_norm import LayerNorm
from .linear import Linear
from .loss_modules import BCELoss, CrossEntropyLoss, MSELoss, NLLLoss
from .textcnn import TextCNN
from .rnn import RNNCell
from .lstm import LSTMCell
from .gru import GRUCell
from .recurrent import GRU, LSTM, RNN
from .activation import GELU, ReLU, Tanh
from .attention_pooling import AttentionPooling
from .additive_attention import AdditiveAttention
from .multihead_attention import MultiheadAttention
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "Module",
    "Parameter",
    "ParameterList",
    "ParameterDict",
    "ModuleList",
    "ModuleDict",
    "Sequential",
    "functional",
    "init",
    "Linear",
    "MSELoss",
    "BCELoss",
    "NLLLoss",
    "CrossEntropyLoss",
    "Conv1d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "TextCNN",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "RNN",
    "LSTM",
    "GRU",
    "utils",
    "LayerNorm",
    "GELU",
    "ReLU",
    "Tanh",
    "AttentionPooling",
    "AdditiveAttention",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerDecoder",
    "Transformer",
]
