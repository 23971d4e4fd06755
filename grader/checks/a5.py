"""Hidden checks of stage A5, recurrent networks, one concept per module:

* `a5_cells` — the RNN (5.1), LSTM (5.2) and GRU (5.3) cells: functional cell, step on a
  precomputed input projection, module; against the reference and central differences;
* `a5_unroll` — `unroll` (5.1): forward and reversed, tuple states, 1500 steps;
* `a5_layers` — the stacked and bidirectional `RNN`, `LSTM`, `GRU` layers (5.4) and the
  h_n property;
* `a5_clip` — `clip_grad_norm_` and `clip_grad_value_` (5.4);
* `a5_lm` — the character language model's functions (5.5).

Importing this module registers all of them under stage "a5". Tensors live on the simple
backend (no compilation in the child or here); the reference runs in this process.
"""

from __future__ import annotations

from . import a5_cells, a5_clip, a5_layers, a5_lm, a5_unroll  # noqa: F401 - registers the checks

__all__: list[str] = []
