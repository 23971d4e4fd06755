"""Example submissions, generated from the reference and a table of named edits.

    grader example                         # the names, with what each shows
    grader example a1-two-wrong -o DIR     # write that submission into DIR
    grader run DIR -a a1

Nothing is committed: an example is the stage's files with the reference's fence bodies
(`submission_files`), some bodies replaced by the edits of `EXAMPLES`, plus — where it is
solved — the released notebook with the solution cells filled in. So the examples never
drift from the kit, and writing one twice gives the same bytes.

A submission holds only the files with the stage's fences (the grader takes nothing else
from a student). `submission_files` and `write_submission` are also what the grader's
tests use to make broken submissions: reference fence bodies with one body replaced.
This module writes files only where it is told to, and never into the kit.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from grader.core.fences import find_fences, package_fences
from grader.core.manifest import load_manifest, repo_root

__all__ = [
    "EXAMPLES",
    "Example",
    "ExampleError",
    "example_files",
    "solved_notebook",
    "submission_files",
    "write_example",
    "write_files",
    "write_submission",
]

#: (task, enclosing function) → replacement body (unindented; indented to the fence).
Edits = Mapping[tuple[str, str], str]


def stage_files(stage: str) -> list[str]:
    """Paths (``minitorch/…``) of the reference files holding the stage's fences."""
    ids = {f for t in load_manifest(stage).tasks for f in t.fences}
    fences = package_fences(repo_root() / "minitorch")
    return sorted(rel for rel, fs in fences.items() if any(f.task in ids for f in fs))


def splice(text: str, task: str, function: str, body: str, filename: str = "<string>") -> str:
    """`text` with the body of the fence of `task` inside `function` replaced by `body`."""
    fences = [f for f in find_fences(text, filename) if f.task == task and f.function == function]
    if not fences:
        raise KeyError(f"{filename}: no fence of task {task} in {function}")
    lines = text.splitlines(keepends=True)
    for fence in sorted(fences, key=lambda f: -f.begin):  # bottom-up keeps line numbers valid
        new = [fence.indent + line + "\n" if line.strip() else "\n" for line in body.strip("\n").splitlines()]
        lines[fence.begin : fence.end - 1] = new
    return "".join(lines)


def submission_files(stage: str, edits: Optional[Edits] = None) -> dict[str, str]:
    """The stage's files with reference bodies, `edits` applied: path → text."""
    root = repo_root()
    out = {}
    remaining = dict(edits or {})
    for rel in stage_files(stage):
        text = (root / rel).read_text(encoding="utf-8")
        for (task, function), body in list(remaining.items()):
            if any(f.task == task and f.function == function for f in find_fences(text, rel)):
                text = splice(text, task, function, body, rel)
                del remaining[(task, function)]
        out[rel] = text
    if remaining:
        raise KeyError(f"no fence for {sorted(remaining)} in the files of stage {stage}")
    return out


def write_submission(
    out_dir: Path, stage: str, edits: Optional[Edits] = None, extra: Optional[Mapping[str, str]] = None
) -> Path:
    """Write a submission directory: the stage's files (with `edits`) and `extra` files."""
    files = submission_files(stage, edits)
    files.update(extra or {})
    return write_files(Path(out_dir), files)


def write_files(out_dir: Path, files: Mapping[str, str]) -> Path:
    """Write `files` (path relative to out_dir → text) under `out_dir`; returns out_dir."""
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return out_dir


def solved_notebook(stage: str, name: str) -> str:
    """The released (student) notebook with the solution cells filled in from the source.

    Built from the release, so no hidden test of the source is copied.
    """
    import nbformat

    from grader.notebooks.parts import release_notebook  # nbgrader: loaded only for solved notebooks

    part = next(n for n in load_manifest(stage).notebooks if n.name == name)
    source = repo_root() / "solutions" / part.path
    with tempfile.TemporaryDirectory() as tmp:
        released = Path(tmp) / name
        release_notebook(source, released)
        nb = nbformat.read(str(released), as_version=4)
    src = nbformat.read(str(source), as_version=4)
    solutions = {}
    for cell in src.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and not meta.get("grade"):
            solutions[meta["grade_id"]] = cell.source
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") in solutions:
            cell.source = _strip_markers(solutions[meta["grade_id"]])
    return nbformat.writes(nb, version=4) + "\n"


def _strip_markers(source: str) -> str:
    keep = [
        line for line in source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
    ]
    return "\n".join(keep)


# ---------------------------------------------------------------------------- the examples

# A0
NAIVE_SIGMOID = """\
return 1.0 / (1.0 + math.exp(-x))  # the textbook form: math.exp(1000) overflows for x = -1000
"""
SHALLOW_NAMED_PARAMETERS = """\
out: list[tuple[str, Parameter]] = list(self._parameters.items())
for name, child in self._modules.items():  # one level down only: a child's children are missed
    for pname, param in child._parameters.items():
        out.append((f"{name}.{pname}", param))
return out
"""

# A1
ONE_SIDED = """\
up = list(vals)
up[arg] = up[arg] + epsilon
return (f(*up) - f(*vals)) / epsilon  # one-sided: error O(ε), not O(ε²)
"""
LOG_BACKWARD_WRONG = """\
(a,) = ctx.saved_values
return operators.mul(a, d_output)  # should be d / a
"""
SCALAR_SYNTAX_ERROR = """\
return Add.apply(self, b
"""

# A2
STRIDES_OFF_BY_ONE = """\
strides = []
for k in range(len(shape)):
    stride = 1
    for size in tuple(shape)[k:]:  # off by one: from k on; the stride is the product of the sizes after k
        stride *= int(size)
    strides.append(stride)
return tuple(strides)
"""

# A3: each chunk's range ends one ordinal too late, so neighbouring chunks both write the
# ordinal between them — the same value, so every output is right, and it is still a race.
OVERLAPPING_CHUNKS = {
    "tensor_map._map": """\
size = int(np.prod(out_shape))
chunks = (size + CHUNK - 1) // CHUNK
for chunk in prange(chunks):
    out_index = np.empty(len(out_shape), np.int64)
    in_index = np.empty(len(in_shape), np.int64)
    for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK + 1)):  # + 1: overlaps the next chunk
        to_index(ordinal, out_shape, out_index)
        broadcast_index(out_index, out_shape, in_shape, in_index)
        value = in_storage[index_to_position(in_index, in_strides)]
        out[index_to_position(out_index, out_strides)] = fn(value)
""",
    "tensor_zip._zip": """\
size = int(np.prod(out_shape))
chunks = (size + CHUNK - 1) // CHUNK
for chunk in prange(chunks):
    out_index = np.empty(len(out_shape), np.int64)
    a_index = np.empty(len(a_shape), np.int64)
    b_index = np.empty(len(b_shape), np.int64)
    for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK + 1)):  # + 1: overlaps the next chunk
        to_index(ordinal, out_shape, out_index)
        broadcast_index(out_index, out_shape, a_shape, a_index)
        broadcast_index(out_index, out_shape, b_shape, b_index)
        a_value = a_storage[index_to_position(a_index, a_strides)]
        b_value = b_storage[index_to_position(b_index, b_strides)]
        out[index_to_position(out_index, out_strides)] = fn(a_value, b_value)
""",
}

# A4: a "true" convolution (the kernel flipped, as in the maths textbooks) where PyTorch's
# conv1d is a cross-correlation; flipped in im2col and in its adjoint col2im alike.
FLIPPED_IM2COL1D = """\
channels, length = x_shape[1], x_shape[2]
l_out = out_shape[1]
for row in prange(out_shape[0] * l_out):
    n = row // l_out
    l = row % l_out  # noqa: E741
    start = l * stride - padding
    out_row = n * out_strides[0] + l * out_strides[1]
    for c in range(channels):
        x_plane = n * x_strides[0] + c * x_strides[1]
        for k in range(kernel_size):
            pos = start + (kernel_size - 1 - k) * dilation  # the kernel flipped
            o = out_row + (c * kernel_size + k) * out_strides[2]
            if 0 <= pos < length:
                out[o] = x[x_plane + pos * x_strides[2]]
            else:
                out[o] = 0.0
"""
FLIPPED_COL2IM1D = """\
channels, length = out_shape[1], out_shape[2]
l_out = cols_shape[1]
for plane in prange(out_shape[0] * channels):
    n = plane // channels
    c = plane % channels
    x_plane = n * out_strides[0] + c * out_strides[1]
    for p in range(length):
        out[x_plane + p * out_strides[2]] = 0.0
    for l in range(l_out):  # noqa: E741
        start = l * stride - padding
        cols_row = n * cols_strides[0] + l * cols_strides[1]
        for k in range(kernel_size):
            pos = start + (kernel_size - 1 - k) * dilation  # the kernel flipped
            if 0 <= pos < length:
                out[x_plane + pos * out_strides[2]] += cols[cols_row + (c * kernel_size + k) * cols_strides[2]]
"""

# A5: the gates cut in the order i, f, o, g (as in some course notes) where torch's is i, f, g, o.
LSTM_GATES_IFOG = """\
h, c = hx
hidden = h.shape[-1]
gates = x_proj + h @ w_hh.transpose(0, 1)
if b_hh is not None:
    gates = gates + b_hh
i = gates[..., 0:hidden].sigmoid()
f = gates[..., hidden:2 * hidden].sigmoid()
o = gates[..., 2 * hidden:3 * hidden].sigmoid()  # torch's order is i, f, g, o: o is the last block
g = gates[..., 3 * hidden:4 * hidden].tanh()
c_next = f * c + i * g
h_next = o * c_next.tanh()
return h_next, c_next
"""

# A6: the scores Q Kᵀ without the scale 1/√E.
SDPA_UNSCALED = """\
scores = query @ key.transpose(-2, -1)                      # forgot · scale (1/√E)
allowed = None
if is_causal:
    allowed = query.new_ones((L, S), dtype=bool).tril()
elif attn_mask is not None and attn_mask.dtype == bool:
    allowed = attn_mask
elif attn_mask is not None:
    scores = scores + attn_mask
weights = masked_softmax(scores, allowed, dim=-1)
weights = dropout(weights, dropout_p)
return weights @ value, weights
"""


class ExampleError(ValueError):
    """An unknown example name, or an output directory that holds something else."""


@dataclass(frozen=True)
class Example:
    """A named example submission: the stage's reference bodies with `edits` applied.

    Attributes:
        stage: the stage it is graded for.
        about: one line for `grader example` (what grading it shows).
        edits: (task, enclosing function) → replacement body.
        notebooks: include the stage's notebooks, solved.
    """

    stage: str
    about: str
    edits: Mapping[tuple[str, str], str] = field(default_factory=dict)
    notebooks: bool = True


#: The examples by name (`grader example NAME -o DIR`): for each stage the reference solved
#: (`-complete`), then realistic mistakes, one at a time. Each `about` says what `grader run
#: DIR -a STAGE` gives it (measured; tests/grader/test_grader_run.py checks that every edit applies).
EXAMPLES: dict[str, Example] = {
    "a0-complete": Example("a0", "the reference bodies: full marks (100/100)"),
    "a0-naive-sigmoid": Example(
        "a0",
        "sigmoid as 1/(1 + e^-x), which overflows at x = -1000: 0.1 loses its edge-case check "
        "sigmoid_large_inputs, 37.5/40 (97.5/100)",
        {("0.1", "sigmoid"): NAIVE_SIGMOID},
    ),
    "a0-shallow-parameters": Example(
        "a0",
        "named_parameters looks one level of sub-modules deep (and lists a tied parameter twice): "
        "0.3 is 12.5/30 (82.5/100)",
        {("0.3", "Module.named_parameters"): SHALLOW_NAMED_PARAMETERS},
    ),
    "a1-complete": Example("a1", "the reference bodies and the notebook solved: full marks (100/100)"),
    "a1-two-wrong": Example(
        "a1",
        "two tasks wrong: a one-sided difference (1.1: 0/10) and Log.backward multiplying by a "
        "(1.3: 6/30); 1.2 fails beside them but keeps 20/20, graded with their reference (66/100)",
        {("1.1", "central_difference"): ONE_SIDED, ("1.3", "Log.backward"): LOG_BACKWARD_WRONG},
    ),
    "a1-syntax-error": Example(
        "a1",
        "a syntax error in Scalar.__add__: that body does not compile and is stubbed, so 1.2 alone "
        "is an error (0/20, the message quotes the line) and the rest is graded (80/100)",
        {("1.2", "Scalar.__add__"): SCALAR_SYNTAX_ERROR},
    ),
    "a2-complete": Example("a2", "the reference bodies: full marks (100/100)"),
    "a2-strides-off-by-one": Example(
        "a2",
        "strides_from_shape multiplies in its own dimension ((24, 12, 4) for (2, 3, 4)): 2.1 is 10/20; "
        "2.2-2.4, broken by it, keep full marks graded with the reference 2.1 (90/100)",
        {("2.1", "strides_from_shape"): STRIDES_OFF_BY_ONE},
    ),
    "a3-complete": Example(
        "a3", "the reference kernels: full marks (100/100; minutes: speed checks, CUDA on the simulator)"
    ),
    "a3-overlapping-chunks": Example(
        "a3",
        "the prange chunks of map and zip overlap by one ordinal: values and speed pass, the race "
        "check finds two iterations writing one cell, 3.1 is 24/30 (94/100)",
        {("3.1", function): body for function, body in OVERLAPPING_CHUNKS.items()},
    ),
    "a4-complete": Example("a4", "the reference bodies: full marks (100/100)"),
    "a4-flipped-kernel": Example(
        "a4",
        "im2col1d/col2im1d flip the kernel (a textbook convolution; PyTorch's is a cross-correlation): "
        "4.1 keeps only its gradient check, 5/20; 4.5 keeps 15/15 with the reference 4.1 (85/100)",
        {("4.1", "im2col1d"): FLIPPED_IM2COL1D, ("4.1", "col2im1d"): FLIPPED_COL2IM1D},
    ),
    "a5-complete": Example("a5", "the reference bodies and the notebook solved: full marks (100/100)"),
    "a5-lstm-gate-order": Example(
        "a5",
        "lstm_step cuts the gates i, f, o, g (torch: i, f, g, o): 5.2 keeps only its gradient check, "
        "5/15; 5.4 and the notebook, which runs this lstm_cell, keep full marks: graded again with the "
        "reference's lstm_cell they pass (90/100)",
        {("5.2", "lstm_step"): LSTM_GATES_IFOG},
    ),
    "a6-complete": Example("a6", "the reference bodies: full marks (100/100)"),
    "a6-unscaled-attention": Example(
        "a6",
        "scaled dot-product attention without the 1/sqrt(E) scale: 6.2 keeps its property and "
        "gradient checks, 10/20; 6.3 and 6.5, which call it, keep full marks (90/100)",
        {("6.2", "scaled_dot_product_attention_with_weights"): SDPA_UNSCALED},
    ),
}


def example_files(name: str) -> dict[str, str]:
    """The files (path → text) of the example `name`."""
    if name not in EXAMPLES:
        raise ExampleError(f"no example {name!r} (examples: {', '.join(EXAMPLES)})")
    ex = EXAMPLES[name]
    files = submission_files(ex.stage, ex.edits)
    if ex.notebooks:
        for part in load_manifest(ex.stage).notebooks:
            files[f"notebooks/{part.name}"] = solved_notebook(ex.stage, part.name)
    return files


def write_example(name: str, out_dir: Path) -> list[str]:
    """Write the example `name` into `out_dir`; return the paths written (sorted).

    `out_dir` may exist when it holds nothing but files this example writes (an earlier
    copy, replaced); anything else there is an `ExampleError`, and nothing is written.
    """
    files = example_files(name)
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ExampleError(f"{out_dir} is not a directory")
        present = {
            p.relative_to(out_dir).as_posix()
            for p in out_dir.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        other = sorted(present - set(files))
        if other:
            raise ExampleError(
                f"{out_dir} holds files that are not part of example {name} ({', '.join(other[:3])}…): choose an empty or new directory"
            )
    write_files(out_dir, files)
    return sorted(files)
