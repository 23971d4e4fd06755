"""Hidden checks of stage A0: operators (0.1), map / zipWith / reduce (0.2), modules (0.3).

One check per behaviour, weighted in the manifest: first each group of functions on
ordinary inputs, then each edge case on its own (`sigmoid_large_inputs`, `exp_overflow`,
…), so that a `log` written as log10 is reported on log(2.0), not hidden behind log(0.0),
and a missing edge case costs its share of the task only.

Numbers are compared by Python type as well as by value (`grader.checks.compare.diff`):
`lt` returning the bool True where the reference returns the float 1.0 is wrong, as in
the public tests. Where the public tests need a list (``map(neg)(ls) == [...]``,
``len(net.parameters())``, ``named_parameters() == [("w", p)]``) the probe also returns
the type of the result, so a generator or a tuple is reported as such.

One module per task (`task_0_1` …); `common` holds what several of them share.
"""
