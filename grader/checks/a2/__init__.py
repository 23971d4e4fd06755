"""Hidden checks of stage A2: strides and indexing (2.1), broadcasting (2.2), tensor
operations forward (2.3) and backward (2.4, one check per Function). What a forward saves
in ``ctx`` only its backward can see: 2.3's `forwards_save_for_backward` runs 2.4's probes
(`backward_probes`), and is charged to 2.3 only when they fail after the reference's
backward.

Tensors are built in the child straight from storage, shape and strides (so a permuted,
non-contiguous layout reaches the student's kernels without any student code making it)
and live on the simple backend.
"""
