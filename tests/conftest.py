"""Test-suite set-up that must happen before Numba is imported.

CUDA tests run on the Numba CUDA simulator unless told otherwise: set
`NUMBA_ENABLE_CUDASIM=0` on a machine with a GPU to run them on the device.
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_configure(config):
    # Registered here, not in pyproject.toml: resolving the warning class imports Numba,
    # which must not happen before the line above.
    config.addinivalue_line("filterwarnings", "ignore::numba.core.errors.NumbaPerformanceWarning")


def pytest_collection_modifyitems(config, items):
    """Every test must say which task (or which non-student part) it tests.

    A student runs `pytest -m task2_2`; a test without a task marker would never be selected
    that way, so an unmarked test is an error rather than a silently unreachable test.
    """
    import pytest

    allowed_prefixes = ("task",)
    allowed = {"library", "grader"}
    unmarked = [
        item.nodeid
        for item in items
        if not any(m.name in allowed or m.name.startswith(allowed_prefixes) for m in item.iter_markers())
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests without a task marker (add @pytest.mark.taskX_Y, library or grader):\n  "
            + "\n  ".join(unmarked[:20])
        )
