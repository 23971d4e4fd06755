"""Hidden checks of stage A6, attention and the transformer, one module per task:

* `task_6_1` — `masked_softmax`, attention pooling and additive attention;
* `task_6_2` — scaled dot-product attention with masks;
* `task_6_3` — multi-head attention;
* `task_6_4` — LayerNorm and the sinusoidal positional encodings;
* `task_6_5` — the transformer layers and the tiny GPT.

Masks are random (`masks`: padding and causal, both polarities of the PyTorch API: True =
may attend for `scaled_dot_product_attention`, True = may not for `MultiheadAttention`),
and every check includes rows with nothing allowed. The lecture's properties are checked
on the student's code alone: rows of the attention matrix sum to 1, and a causal model's
output at t does not change when the tokens after t change. Tensors live on the simple
backend; the reference runs in this process.
"""
