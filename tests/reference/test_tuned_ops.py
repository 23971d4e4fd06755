"""The reference's tuned CPU loops (`minitorch/accel/tuned_kernels.py`) and how `TunedOps`
(`accel/tuned_ops.py`, which replaces `FastOps` in `FastBackend`) picks them.

Not a student task (marker `library`), and not shipped with A3: that release has neither
file. The tests check

* which loop each layout of `backend_cases.LAYOUT_CASES` takes (`elementwise_path`,
  `reduce_path`, `tiled_applies`), and that the tuned kernels and `TunedOps`' choice give
  the numbers of the task kernels;
* that the plain `FastOps` hands every call to the task kernels, and that an A3 release
  whose 3.1 kernels are stubs fails on contiguous tensors as well (marker `grader`: it
  renders the release with the grader's fence renderer).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch import fast_ops, operators
from minitorch.jit import jit_scalar
from minitorch.accel import tuned_kernels
from minitorch.accel.cpu_target import TILES, Tile
from minitorch.accel.tuned_ops import TunedOps
from minitorch.fast_paths import scalar_form
from minitorch.fast_ops import FastOps
from minitorch.tensor_data import TensorData
from backend_cases import LAYOUT_CASES, MATMUL_LAYOUTS, MATMUL_SIZES, empty, layout, run_matmul, tol

DTYPES = [np.float64, np.float32]

#: The loop each case of LAYOUT_CASES takes.
PATHS = {
    "contiguous": "flat",
    "same permutation": "flat",
    "tensor with scalar": "flat",
    "scalar with tensor": "flat",
    "bias row": "rows",
    "transposed with column": "rows",
    "both broadcast, long rows": "rows",
    "permuted out, long rows": "rows",
    "one transposed": "general",
    "short bias row": "general",
    "both broadcast, short rows": "general",
    "permuted out, short rows": "general",
    "empty": "general",
    "large, reversed": "general",
    "large, transposed out": "rows",
    "large, contiguous": "flat",
}


@pytest.mark.library
def test_every_layout_case_names_its_path() -> None:
    assert set(PATHS) == set(LAYOUT_CASES)
    assert set(PATHS.values()) == {"flat", "rows", "general"}


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_every_elementwise_path(case: str, dtype: type) -> None:
    """The path each layout takes; the tuned kernel (when one fits) and TunedOps' choice
    compute what the task's kernel computes."""
    out_shape, out_order, operands = LAYOUT_CASES[case]
    path = PATHS[case]
    a, b = (layout(shape, order, dtype, seed=k) for k, (shape, order) in enumerate(operands))
    expected = a.to_numpy() * b.to_numpy()
    assert (
        tuned_kernels.elementwise_path(
            out_shape, layout(out_shape, out_order).strides, (a.shape, a.strides), (b.shape, b.strides)
        )
        == path
    )
    runs = {"TunedOps": TunedOps.zip_kernel(operators.mul)}
    if path != "general":
        fast = tuned_kernels.tensor_zip_fast(operators.mul)
        runs["tuned"] = lambda *args: fast(*args, path == "flat")
    for name, kernel in runs.items():
        out = layout(out_shape, out_order, dtype, values=np.zeros(out_shape))
        kernel(*out.tuple(), *a.tuple(), *b.tuple())
        np.testing.assert_allclose(
            out.to_numpy(), expected, **tol(dtype), err_msg=f"mul, {path} path, {name}"
        )
    if a.shape == out_shape:
        out = layout(out_shape, out_order, dtype, values=np.zeros(out_shape))
        assert tuned_kernels.elementwise_path(out.shape, out.strides, (a.shape, a.strides)) in (
            "flat",
            "rows",
            "general",
        )
        TunedOps.map_kernel(operators.neg)(*out.tuple(), *a.tuple())
        np.testing.assert_array_equal(out.to_numpy(), -a.to_numpy(), err_msg=f"neg, {case}")


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_reduce_paths(dim: int, order: tuple[int, ...], dtype: type) -> None:
    """Sum over each dimension of a (3, 1100, 5) tensor through TunedOps: contiguous (the
    tuned loop) and permuted (the task's loop)."""
    a = layout((3, 1100, 5), order, dtype)
    out_shape = list(a.shape)
    out_shape[dim] = 1
    out = empty(tuple(out_shape), dtype)
    expected_path = "contiguous" if order == (0, 1, 2) else "general"
    assert tuned_kernels.reduce_path(out.shape, out.strides, a.shape, a.strides) == expected_path
    TunedOps.reduce_kernel(operators.add)(*out.tuple(), *a.tuple(), dim)
    expected = a.to_numpy().astype(np.float64).sum(axis=dim, keepdims=True)
    np.testing.assert_allclose(out.to_numpy(), expected, **tol(dtype, a.shape[dim]))


@pytest.mark.library
def test_tuned_reduce_start_value_and_empty_dimension() -> None:
    kernel = TunedOps.reduce_kernel(operators.add)
    out = empty((1, 4), fill=7.0)
    kernel(*out.tuple(), *empty((0, 4)).tuple(), 0)
    np.testing.assert_array_equal(out.to_numpy(), np.full((1, 4), 7.0))
    kernel(*empty((3, 1, 0)).tuple(), *empty((3, 2, 0)).tuple(), 1)


#: Sizes that are whole multiples of every tile (24 rows: 6, 8, 12; 32 and 64 columns: 8, 16,
#: 32), beside MATMUL_SIZES' odd sizes that cut them.
TILE_SIZES = [(1, 1, 24, 9, 32), (2, 1, 48, 1, 64)]

#: Every register tile the kernel can be compiled for (`cpu_target.TILES`), whatever this
#: machine's CPU picks: an AVX-512 machine tests the AVX2 tiles too, and the other way round.
ALL_TILES = sorted({tile for by_dtype in TILES.values() for tile in by_dtype.values()})


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tile", ALL_TILES, ids=str)
@pytest.mark.parametrize("lay", sorted(MATMUL_LAYOUTS))
@pytest.mark.parametrize("size", MATMUL_SIZES + TILE_SIZES, ids=[str(s) for s in MATMUL_SIZES + TILE_SIZES])
def test_tiled_matmul(size, lay: str, tile: Tile, dtype: type) -> None:
    """The tiled kernel of every tile shape, on every layout and size (TunedOps sends it only
    the large ones): the float64 product to rounding, and b packed beforehand bit for bit."""
    ba, bb, i, k, j = size
    order_a, order_b = MATMUL_LAYOUTS[lay]
    a = layout((ba, i, k), order_a, dtype, seed=1)
    b = layout((bb, k, j), order_b, dtype, seed=2)
    expected = a.to_numpy().astype(np.float64) @ b.to_numpy().astype(np.float64)
    kernel = tuned_kernels.tiled_kernel(tile)

    def tiled(*args):  # b packed by the kernel itself
        kernel(*args, tuned_kernels.not_packed(args[0]))

    got = run_matmul(tiled, a, b, dtype)
    np.testing.assert_allclose(got, expected, **tol(dtype, k), err_msg=f"{tile} tile, {lay}, {size}")

    def prepacked(*args):  # b packed once beforehand, as an RNN's weight
        out = args[0]
        packed = tuned_kernels.pack_right(*args[6:9], out, tile)
        kernel(*args, packed)

    np.testing.assert_array_equal(run_matmul(prepacked, a, b, dtype), got)


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tile", ALL_TILES, ids=str)
@pytest.mark.parametrize("out_order", [(0, 2, 1), (2, 1, 0)], ids=["out transposed", "out batch innermost"])
def test_tiled_matmul_writes_any_output_layout(out_order: tuple[int, ...], tile: Tile, dtype: type) -> None:
    """The tile copy's other loop: an output whose columns are not adjacent (TunedOps always
    passes a new row-major one; the kernel's contract is any strides). Every element written,
    and the numbers of a row-major output."""
    a = layout((2, 30, 20), (0, 1, 2), dtype, seed=1)
    b = layout((2, 20, 37), (0, 2, 1), dtype, seed=2)
    kernel = tuned_kernels.tiled_kernel(tile)
    row_major = run_matmul(lambda *args: kernel(*args, tuned_kernels.not_packed(args[0])), a, b, dtype)
    out = layout((2, 30, 37), out_order, dtype, values=np.full((2, 30, 37), np.nan))
    kernel(*out.tuple(), *a.tuple(), *b.tuple(), tuned_kernels.not_packed(out._storage))
    np.testing.assert_array_equal(out.to_numpy(), row_major)


@pytest.mark.library
def test_matmul_routing() -> None:
    """TunedOps sends large float products of row/column-major operands to the tiled kernel
    and the rest (tiny, integer, no unit stride, a negative stride) to the task's kernel."""

    def routes(a: TensorData, b: TensorData, dtype: type = np.float64) -> bool:
        out = empty((max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2]), dtype)
        return tuned_kernels.tiled_applies(
            out._storage, out._shape, out._strides, a._shape, a._strides, b._shape, b._strides
        )

    big = layout((1, 40, 40), (0, 1, 2))
    assert routes(big, big)
    assert routes(layout((1, 40, 40), (0, 2, 1)), big)  # a transposed
    assert routes(layout((3, 40, 40), (0, 1, 2)), big)  # b broadcast over the batch
    assert not routes(layout((1, 3, 3), (0, 1, 2)), layout((1, 3, 3), (0, 1, 2)))  # tiny
    assert not routes(big, big, np.int64)
    assert not routes(layout((2, 40, 40), (1, 2, 0)), big)  # batch innermost: no unit stride
    flipped = TensorData(big._storage, (1, 40, 40), (0, 40, -1))  # a negative stride
    assert not routes(flipped, big)
    assert tuned_kernels.elementwise_path((40, 40), (40, 1), ((40, 40), (40, -1))) == "general"


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_runs_its_faster_form_with_the_c_library_s_values(dtype: type) -> None:
    """`Tensor.exp` on the fast backend, on each path (small dense, large flat in parallel, a
    transposed input): within 2 ulp of NumPy's exp (computed in float64, rounded once), with
    its inf, 0 and nan; the scalar form is inlined into the loop (`jit_scalar` keeps it)."""
    special = [0.0, -0.0, 1.0, -1.0, 88.7, 89.0, -103.0, 709.7, 709.8, 800.0, -745.0, -746.0]
    special += [-1e4, 1e-300, np.inf, -np.inf, np.nan]
    rng = np.random.default_rng(5)
    for shape in ((17, 23), (300, 200)):  # below and above tuned_kernels.PARALLEL_MIN
        x = rng.standard_normal(shape) * 30
        x.flat[: len(special)] = special
        x = x.astype(dtype)
        with np.errstate(over="ignore"):  # exp(800) is inf, as it should be
            want = np.exp(x.astype(np.float64)).astype(dtype)
        a = minitorch.from_numpy(x, backend=minitorch.FastBackend)
        for got, expected in ((a.exp().numpy(), want), (a.permute(1, 0).exp().numpy(), want.T)):
            np.testing.assert_array_max_ulp(got, expected, maxulp=2)
    assert jit_scalar(scalar_form(operators.exp)).targetoptions["inline"] == "always"


@pytest.mark.library
def test_a_tree_without_a_faster_scalar_form_maps_the_plain_function(monkeypatch) -> None:
    """The faster eˣ ships from a later stage than the tuned backend: where a tree lacks it
    (nothing registered), the tuned maps run `operators.exp` itself; other functions always."""
    from minitorch import fast_paths

    assert scalar_form(operators.exp) is not operators.exp  # this tree registers one
    assert scalar_form(operators.neg) is operators.neg
    monkeypatch.delitem(fast_paths._registry, fast_paths._scalar_name(operators.exp))
    assert scalar_form(operators.exp) is operators.exp


@pytest.mark.library
def test_the_reference_fast_backend_runs_the_tuned_ops() -> None:
    assert minitorch.FastBackend.ops is TunedOps and issubclass(TunedOps, FastOps)


@pytest.mark.library
def test_plain_fast_ops_uses_the_task_kernels() -> None:
    """What an A3 release's FastOps does: every kernel factory returns the task's kernel."""
    assert FastOps.map_kernel(operators.neg) is fast_ops.tensor_map(operators.neg)
    assert FastOps.zip_kernel(operators.add) is fast_ops.tensor_zip(operators.add)
    assert FastOps.reduce_kernel(operators.add) is fast_ops.tensor_reduce(operators.add)
    assert FastOps.matmul_kernel() is fast_ops.tensor_matmul


@pytest.mark.grader
def test_a3_release_stub_fails_on_contiguous_tensors(tmp_path: Path) -> None:
    """The package as an A3 release has it — no tuned_ops.py, the 3.1 fences stubbed —
    raises the task's NotImplementedError for `a + a` on contiguous FastBackend tensors
    (no tuned loop answers in front of the student's kernel)."""
    from grader.core.fences import render
    from grader.core.manifest import all_manifests
    from grader.trees.child_tree import reference_only_files

    source = Path(minitorch.__file__).resolve().parent
    package = tmp_path / "minitorch"
    shutil.copytree(source, package, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in reference_only_files("a3", all_manifests(source.parent)):  # as the release leaves them out
        (tmp_path / rel).unlink()
    assert not (package / "accel" / "tuned_ops.py").exists()
    text = (package / "fast_ops.py").read_text(encoding="utf-8")
    stubbed, problems = render(text, keep={"3.2"}, stub={"3.1"}, filename="minitorch/fast_ops.py")
    assert not problems and stubbed.count('raise NotImplementedError("Task 3.1') == 3
    (package / "fast_ops.py").write_text(stubbed, encoding="utf-8")

    # Started like the grader's child: `-I -S` skips site-packages' .pth files, whose
    # editable-install finder would otherwise find the kit's accel/tuned_ops.py for this copy.
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    script = textwrap.dedent(
        """
        import sys
        sys.path[:0] = [{root!r}] + {site_dirs!r}
        import numpy as np
        import minitorch
        from minitorch import fast_ops
        assert minitorch.__file__.startswith({root!r}), minitorch.__file__
        assert minitorch.FastBackend.ops is fast_ops.FastOps
        a = minitorch.from_numpy(np.arange(6.0).reshape(2, 3), backend=minitorch.FastBackend)
        assert a._tensor.is_contiguous()
        try:
            a + a
        except NotImplementedError as e:
            print("raised:", e)
        else:
            print("no error")
        """
    ).format(root=str(tmp_path), site_dirs=site_dirs)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "raised: Task 3.1" in run.stdout, run.stdout + run.stderr


# ---- the dense paths: small row-major tensors skip the layout checks ----------------------

#: Shapes for the dense paths: 0-d, empty, 1-d, and reductions with inner = 1 and inner > 1.
DENSE_SHAPES = [
    (),
    (0, 3),
    (7,),
    (5, 9),
    (6, 11),
    (3, 4, 6),
    (2, 1, 5),
]  # rows folded 4 at a time, and the rest


def _counting(monkeypatch, factory_name: str) -> list[int]:
    """Count the calls of the kernels `tuned_kernels.<factory_name>` makes from now on."""
    calls: list[int] = []
    factory = getattr(tuned_kernels, factory_name)

    def counted(fn):
        kernel = factory(fn)

        def run(*args):
            calls.append(1)
            return kernel(*args)

        return run

    monkeypatch.setattr(tuned_kernels, factory_name, counted)
    return calls


@pytest.mark.library
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", DENSE_SHAPES, ids=str)
def test_dense_paths_give_the_general_kernels_numbers(shape, dtype: type, monkeypatch) -> None:
    """map, zip and every reduce of small row-major tensors go through the dense kernels and
    compute, bit for bit, what the task's kernels compute; a transposed or broadcast operand
    takes the general route."""
    counts = {
        name: _counting(monkeypatch, name)
        for name in ("tensor_map_dense", "tensor_zip_dense", "tensor_reduce_dense")
    }
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    a = minitorch.from_numpy(x, backend=minitorch.FastBackend)
    b = minitorch.from_numpy(y, backend=minitorch.FastBackend)
    plain = minitorch.TensorBackend(FastOps, "plain fast")  # the task kernels only
    pa, pb = minitorch.from_numpy(x, backend=plain), minitorch.from_numpy(y, backend=plain)

    np.testing.assert_array_equal(TunedOps.zip(operators.mul)(a, b).numpy(), (pa * pb).numpy())
    # exp runs its faster form (`fast_paths.scalar_form`): bit for bit what the task's kernel
    # computes with that form, within 2 ulp of the C library's exp that the plain backend calls
    got = TunedOps.map(operators.exp)(a).numpy()
    general = minitorch.zeros(shape, backend=plain, dtype=a.dtype)
    fast_ops.tensor_map(scalar_form(operators.exp))(*general.tuple(), *pa.tuple())
    np.testing.assert_array_equal(got, general.numpy())
    np.testing.assert_array_max_ulp(got, pa.exp().numpy(), maxulp=2)
    assert len(counts["tensor_zip_dense"]) == 1 and len(counts["tensor_map_dense"]) == 1
    for dim in range(len(shape)):
        for fn, start, method in ((operators.add, 0.0, "sum"), (operators.max, -np.inf, "amax")):
            got = TunedOps.reduce(fn, start)(a, dim).numpy()
            want = getattr(pa, method)(dim, keepdim=True).numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{method} over {dim} of {shape}")
    assert len(counts["tensor_reduce_dense"]) == 2 * len(shape)

    if len(shape) == 2 and shape[0] > 1:  # not row-major: the general kernels, the same numbers
        t = a.permute(1, 0)
        np.testing.assert_array_equal(TunedOps.map(operators.neg)(t).numpy(), -x.T)
        np.testing.assert_array_equal(
            TunedOps.reduce(operators.add)(t, 0).numpy(), pa.permute(1, 0).sum(0, keepdim=True).numpy()
        )
        row = minitorch.from_numpy(y[:1], backend=minitorch.FastBackend)  # broadcast: not the same shape
        np.testing.assert_array_equal(TunedOps.zip(operators.add)(a, row).numpy(), x + y[:1])
        assert len(counts["tensor_map_dense"]) == 1 and len(counts["tensor_zip_dense"]) == 1
