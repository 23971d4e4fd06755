"""Benchmarks of minitorch's backends against NumPy and PyTorch: ``python -m bench``.

Not a test: it prints timings of this machine, measured side by side in one run, so the
ratios (not the absolute numbers) are what carries over. ``python -m bench --help`` lists
the options (``--quick`` for a short run, ``--markdown FILE`` to write BENCHMARKS.md).
"""
