"""Hidden checks of stage A6, attention and the transformer, one concept per module:

* `a6_pooling` — `masked_softmax`, attention pooling and additive attention (6.1);
* `a6_sdpa` — scaled dot-product attention with masks (6.2);
* `a6_mha` — multi-head attention (6.3);
* `a6_norm` — LayerNorm and the sinusoidal positional encodings (6.4);
* `a6_transformer` — the transformer layers and the tiny GPT (6.5).

Masks are random (padding and causal, both polarities of the PyTorch API: True = may attend
for `scaled_dot_product_attention`, True = may not for `MultiheadAttention`), and every
check includes rows with nothing allowed. The lecture's properties are checked on the
student's code alone: rows of the attention matrix sum to 1, and a causal model's output
at t does not change when the tokens after t change. Importing this module registers all
of them under stage "a6". Tensors live on the simple backend; the reference runs in this
process.
"""

from __future__ import annotations

from . import a6_mha, a6_norm, a6_pooling, a6_sdpa, a6_transformer  # noqa: F401 - registers the checks

__all__: list[str] = []
