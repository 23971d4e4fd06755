"""Hidden checks of stage A3: the parallel CPU kernels (3.1, 3.2) and the CUDA kernels
(3.3, 3.4; run on Numba's CUDA simulator unless the grader is given a GPU).

The reference's tuned CPU loops (flat and row-wise paths, the tiled matmul) live in
`minitorch/accel/` (`tuned_ops`, `tuned_kernels`), which the A3 manifest lists as
``reference_only``: A3 child trees do not contain them, so `FastBackend` runs the student's kernels on every layout, contiguous
ones included, and the probes below use both kinds. The probes that call the kernels
of `fast_ops` directly (`tensor_map(fn)`, …, `tensor_matmul`) reach the student's code
whatever the tree holds; the parent computes their expected values with the simple kernels
(`REFERENCE_ALIASES` in `grader/checks/reference.py`).

Data races are found, not stumbled on: `fast_kernels_race_free` and `fast_matmul_race_free`
run each kernel's Python source once with every ``prange`` a loop that remembers its
iteration (`grader.sandbox.child.prange_trace`) and fail when two iterations touch the same
output cell, one of them writing. That finds a race on every run, on a machine of any
number of cores — comparing outputs finds one only when the threads happen to collide
(a reduce with its ``prange`` over the reduced dimension passed the equivalence check and
was caught once, by one value of one timed call). Like every answer, the trace is computed
in the child, where the student's code could tamper with it; writing the kernel without
the race is less work.

The performance checks of 3.1 and 3.2 (in `task_3_1`, `task_3_2`) time the task's kernels
against the reference's with `speed`: fresh inputs for every timed call, every timed output
checked. `common` holds the raw kernel arguments, the race check and the probes the tasks
share. One module per task.
"""
