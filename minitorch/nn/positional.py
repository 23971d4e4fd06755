r"""Stage A6, task 6.4: sinusoidal positional encodings (Vaswani et al., 2017), as `F.sinusoidal_positional_encoding`.

Attention by itself does not see order: permuting the tokens permutes its outputs. The
transformer adds to each token's embedding a vector that depends on its position only:

    PE(pos, 2i)     = sin(pos / 10000^{2i/d})
    PE(pos, 2i + 1) = cos(pos / 10000^{2i/d})          pos = 0 … length−1,  i = 0 … ⌈d/2⌉−1

Each pair of columns (2i, 2i+1) is a point on a circle turning at the frequency
ω_i = 10000^{−2i/d}, from one turn per 2π positions (i = 0) down to one per 2π·10000.
Moving k positions turns every pair by the angle k·ω_i, the same rotation for every pos:

    [PE(pos+k, 2i), PE(pos+k, 2i+1)] = R(k·ω_i) [PE(pos, 2i), PE(pos, 2i+1)]

so "k positions later" is a linear map that attention can learn. The encoding is a
constant (no gradient); learned positions are an `Embedding(length, d_model)` instead.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..constructors import tensor
from ..tensor import Tensor
from ..tensor_ops import TensorBackend


def sinusoidal_positional_encoding(
    length: int,
    d_model: int,
    dtype=None,  # noqa: ANN001 - a minitorch or NumPy dtype
    backend: Optional[TensorBackend] = None,
) -> Tensor:
    """The table PE of the module docstring, shape [length, d_model] (float64 unless `dtype`).

    An odd d_model ends with a sine column (its cosine partner would be column d_model).
    """
    if length < 0 or d_model <= 0:
        raise ValueError(
            f"sinusoidal_positional_encoding({length}, {d_model}): length must be ≥ 0 and d_model > 0"
        )
    pe = np.empty((length, d_model))
    # BEGIN SOLUTION 6.4
    pos = np.arange(length, dtype=np.float64)[:, None]  # [length, 1]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]  # [1, ⌈d/2⌉]: 2i
    angle = pos / np.power(10000.0, two_i / d_model)  # [length, ⌈d/2⌉]
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    # END SOLUTION 6.4
    return tensor(pe, dtype=dtype, backend=backend)
