"""Hidden checks of stage A5, recurrent networks, one module per task:

* `task_5_1` — the RNN cell and `unroll` (forward and reversed, tuple states, 1500 steps);
* `task_5_2`, `task_5_3` — the LSTM and GRU cells; `cells` holds the probes the three cell
  tasks share (functional cell, step on a precomputed input projection, module; against
  the reference and central differences);
* `task_5_4` — the stacked and bidirectional `RNN`, `LSTM`, `GRU` layers, the h_n
  property, `clip_grad_norm_` and `clip_grad_value_`; `layers` holds the layers' probes
  (given weights, generated configurations, forward and backward);
* `task_5_5` — the character language model's functions.

Tensors live on the simple backend (no compilation in the child or here); the reference
runs in this process.
"""
