"""Hidden checks of stage A1, scalar autodiff: central difference (1.1), the Scalar forward
(1.2), the backward and the chain rule (1.3), topological sort and backpropagation (1.4), on
graphs from `graphs`; `common` holds each backward run after its forward.

Task 1.2 is split into the ScalarFunction forwards, the Scalar operators, Python numbers
mixed in, and the edge cases; the operators are compared with the reference by value and
by the graph they record (``x * y`` records Mul with the inputs x, y, as the public tests
ask). The checks of 1.3 and 1.4 build their graphs with ``F.apply`` and never use the
operators, so a wrong operator costs 1.2 only.

A forward also saves in ``ctx`` what its backward needs, which only a backward can see:
`forwards_save_for_backward` runs each forward with the backward beside it. In the whole
tree that backward is the student's (1.3), so a wrong backward fails it too; the default
grade then runs it again after the reference's backward (`grader.grading.one_charge`), and only a
forward that saves too little or the wrong value is charged for it — on 1.2, while 1.3's
backward checks, run again after the reference's forward, pass.
"""
