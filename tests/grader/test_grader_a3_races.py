"""Data races in the 3.1 and 3.2 kernels are found on every grading, not by luck.

A reduce with its ``prange`` over the reduced dimension (every thread updating one output
cell) and a matmul with its ``prange`` over the inner dimension are wrong only when threads
collide, so comparing outputs caught them by chance. `grader.sandbox.child.prange_trace` runs
the kernel's Python source once, remembering which ``prange`` iteration touches which
output cell: the race is reported every time, whatever the number of cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.checks.base import Services
from grader.checks.runner import run_check
from grader.release.examples import write_submission
from grader.sandbox.child.prange_trace import prange_trace
from grader.grading.grade import grade
from grader.core.manifest import load_manifest
from grader.checks.reference import reference_executor
from grader.sandbox.session import Limits, Session
from grader.trees.child_tree import build_tree
from minitorch import fast_ops, operators
from minitorch.tensor_data import strides_from_shape

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=120, start_timeout=120)

RACY_REDUCE = """size = int(np.prod(out_shape))
out_index = np.empty(len(out_shape), np.int64)
for ordinal in range(size):
    to_index(ordinal, out_shape, out_index)
    out_pos = index_to_position(out_index, out_strides)
    a_pos = index_to_position(out_index, a_strides)
    for r in prange(a_shape[reduce_dim]):
        out[out_pos] = fn(out[out_pos], a_storage[a_pos + r * a_strides[reduce_dim]])
"""

RACY_MATMUL = """rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
for n in range(out_shape[0]):
    for i in range(rows):
        for j in range(cols):
            at = n * out_strides[0] + i * out_strides[1] + j * out_strides[2]
            for k in prange(inner):
                out[at] += a_storage[n * a_batch_stride + i * a_strides[1] + k * a_strides[2]] * b_storage[
                    n * b_batch_stride + k * b_strides[1] + j * b_strides[2]]
"""


def _layout(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(shape, dtype=np.int64), np.array(strides_from_shape(shape), dtype=np.int64)


# --------------------------------------------------------------------------- the trace


def test_the_reference_kernels_touch_each_output_cell_from_one_iteration() -> None:
    a = np.random.default_rng(0).random((4, 5, 300))
    for dim in range(3):
        shape = tuple(1 if d == dim else s for d, s in enumerate(a.shape))
        out = np.zeros(int(np.prod(shape)))
        assert (
            prange_trace(
                fast_ops.tensor_reduce(operators.add),
                0,
                [out, *_layout(shape), a.reshape(-1), *_layout(a.shape), dim],
            )
            == []
        )
        np.testing.assert_allclose(out, a.sum(dim).reshape(-1))  # and it computed, as the kernel does
    b = np.random.default_rng(1).random((4, 300, 3))
    out = np.zeros(4 * 5 * 3)
    assert (
        prange_trace(
            fast_ops.tensor_matmul,
            0,
            [out, *_layout((4, 5, 3)), a.reshape(-1), *_layout(a.shape), b.reshape(-1), *_layout(b.shape)],
        )
        == []
    )
    np.testing.assert_allclose(out.reshape(4, 5, 3), a @ b)


def test_a_prange_over_the_reduced_dimension_is_a_race_on_every_output_cell() -> None:
    import numba

    from minitorch.fast_ops import index_to_position, prange, to_index

    @numba.njit(parallel=True)
    def racy(out, out_shape, out_strides, a_storage, a_shape, a_strides, reduce_dim):  # noqa: ANN001, ANN202
        out_index = np.empty(len(out_shape), np.int64)
        for ordinal in range(out.size):
            to_index(ordinal, out_shape, out_index)
            out_pos = index_to_position(out_index, out_strides)
            a_pos = index_to_position(out_index, a_strides)
            for r in prange(a_shape[reduce_dim]):
                out[out_pos] = out[out_pos] + a_storage[a_pos + r * a_strides[reduce_dim]]

    a = np.random.default_rng(2).random((2, 3, 40))
    races = prange_trace(racy, 0, [np.zeros(6), *_layout((2, 3, 1)), a.reshape(-1), *_layout(a.shape), 2])
    assert [cell for cell, _ in races] == [0, 1, 2, 3, 4]  # the first five of the six cells
    assert races[0][1] == [0, 1, 2, 3]
    assert numba.prange is prange  # put back


# --------------------------------------------------------------------------- graded


def _tree(tmp_path: Path, edits: dict) -> Path:
    sub = write_submission(tmp_path / "sub", "a3", edits)
    build_tree("a3", sub, tmp_path / "tree")
    return tmp_path / "tree"


@pytest.mark.parametrize(
    "task, function, body, check",
    [
        ("3.1", "tensor_reduce._reduce", RACY_REDUCE, "fast_kernels_race_free"),
        ("3.2", "tensor_matmul", RACY_MATMUL, "fast_matmul_race_free"),
    ],
    ids=["reduce", "matmul"],
)
def test_a_racy_kernel_fails_its_race_check_20_times_in_20(
    tmp_path: Path, task: str, function: str, body: str, check: str
) -> None:
    tree = _tree(tmp_path, {(task, function): body})
    (tmp_path / "scratch").mkdir()
    manifest_task = next(t for t in load_manifest("a3").tasks if t.id == task)
    session = Session(tree, tmp_path / "scratch", LIMITS)
    try:
        for _ in range(20):
            result = run_check(
                check,
                "a3",
                reference_executor(),
                Services(limits=LIMITS, task=manifest_task, student=session),
            )
            assert result.status == "failed", (result.status, result.message, result.details)
            assert (
                "a data race: iterations 0, 1, 2, 3 of the outermost prange all touch out[" in result.message
            )
    finally:
        session.close()


def test_the_reference_passes_the_race_checks_and_a_racy_reduce_fails_its_own(tmp_path: Path) -> None:
    ref = grade(write_submission(tmp_path / "ref", "a3"), "a3", task="3.1", limits=LIMITS, notebooks=False)
    assert [c.status for c in ref.tasks[0].checks] == ["passed"] * 3, ref.tasks[0].feedback
    racy = grade(
        write_submission(tmp_path / "racy", "a3", {("3.1", "tensor_reduce._reduce"): RACY_REDUCE}),
        "a3",
        task="3.1",
        limits=LIMITS,
        notebooks=False,
    )
    (row,) = racy.tasks
    failed = {c.name for c in row.checks if c.status != "passed"}
    assert "fast_kernels_race_free" in failed, row.feedback


def test_a_trace_that_compiles_numba_for_the_first_time_leaves_prange_working(tmp_path: Path) -> None:
    """The kernel's Python source calls jitted helpers, so a trace on a cold cache may be the
    process's first compilation, which imports Numba's own modules (its range lowering reads
    ``numba.prange`` then). Were ``numba.prange`` the trace's stand-in at that moment, every
    later kernel with a ``prange`` would fail to compile in that process ("No definition for
    lowering prange"): in the child, the task's other checks; in a test run, every test after.
    Fresh interpreter, Numba's cache off: the first compilation happens inside the trace."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent(
        """\
        import numba
        import numpy as np
        from numba import prange

        from grader.sandbox.child.prange_trace import prange_trace

        @numba.njit
        def helper(i):
            return i + 1

        @numba.njit(parallel=True)
        def kernel(out, n):
            for i in numba.prange(n):
                out[i] = helper(i)
            for i in prange(n):
                out[i] += 0

        assert "numba.cpython.rangeobj" not in __import__("sys").modules  # nothing compiled yet
        assert prange_trace(kernel, 0, [np.zeros(4), 4]) == []
        assert numba.prange is prange  # put back

        @numba.njit  # prange as a plain loop: needs the range lowering registered for numba.prange
        def serial(out):
            for i in prange(out.size):
                out[i] = i

        out = np.zeros(3)
        serial(out)
        print(out.tolist())
        """
    )
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[0.0, 1.0, 2.0]"
