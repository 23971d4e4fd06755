"""The hidden checks of A5 (recurrent networks) against the reference, a release and
submissions with one classic mistake each.

Each bad submission is the reference with one fence body replaced (`write_submission`).
Graded with ``isolate=True`` (the other tasks get the reference's bodies), the bad task
loses points and every other task keeps all of its own; graded on the student's whole
tree alone (``one_charge=False``), the mistake also costs the checks of later tasks that
run the broken piece (an LSTM layer needs the LSTM cell) and nothing else — which the
default grade then gives back (tests/grader/test_grader_one_charge_stages.py). The notebook
part: the solution scores 15, the release 0, wrong answers lose exactly their cells' points.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from grader.release.examples import LSTM_GATES_IFOG, write_submission
from grader.grading.grade import grade
from grader.core.manifest import load_manifest, repo_root
from grader.notebooks.parts import autograde_notebook, notebook_points, release_notebook
from grader.core.results import GradeResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=60, start_timeout=60)
NOTEBOOK = repo_root() / "solutions" / "a5" / "vanishing_gradients.ipynb"

# the gates cut i, f, o, g: the example a5-lstm-gate-order's body (grader.release.examples)
LSTM_IFOG = LSTM_GATES_IFOG
GRU_LECTURE_RESET = """\
hidden = hx.shape[-1]
gh = hx @ w_hh.transpose(0, 1)
if b_hh is not None:
    gh = gh + b_hh
r = (x_proj[..., 0:hidden] + gh[..., 0:hidden]).sigmoid()
z = (x_proj[..., hidden:2 * hidden] + gh[..., hidden:2 * hidden]).sigmoid()
pre = x_proj[..., 2 * hidden:3 * hidden] + (r * hx) @ w_hh[2 * hidden:3 * hidden].transpose(0, 1)  # W_hn (r ⊙ h)
if b_hh is not None:
    pre = pre + b_hh[2 * hidden:3 * hidden]
n = pre.tanh()
return n + z * (hx - n)
"""
UNROLL_REVERSED_OUTPUTS = """\
outputs = []
for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
    state = step(xs[t], state)
    outputs.append(state[0] if isinstance(state, tuple) else state)
return stack(outputs, dim=0), state  # in processing order, not input time order
"""
_CLIP = """\
grads = [h.grad.numpy().astype(np.float64) for h in holders]
if norm_type == np.inf:
    total = float(max(np.max(np.abs(g)) for g in grads))
else:
    total = float(sum(np.sum(np.abs(g) ** norm_type) for g in grads) ** (1.0 / norm_type))
if error_if_nonfinite and not np.isfinite(total):
    raise RuntimeError("clip_grad_norm_: non-finite total norm")
coef = min(max_norm / (total + 1e-6), 1.0)
for h, g in zip(holders, grads):
    set_grad(h, g * coef)
return holders[0].grad.new_tensor(total)
"""
CLIP_WITHOUT_EPSILON = _CLIP.replace("max_norm / (total + 1e-6)", "max_norm / total")
CLIP_RETURNS_CLIPPED_NORM = _CLIP.replace("new_tensor(total)", "new_tensor(min(total, max_norm))")
H_N_BACKWARD_FIRST = """\
finals = []
layer_input = x
for layer in range(self.num_layers):
    outputs = []
    for direction in range(self.num_directions):
        w_ih, _, b_ih, _ = self.layer_weights(layer, direction)
        x_proj = layer_input @ w_ih.transpose(0, 1)
        if b_ih is not None:
            x_proj = x_proj + b_ih
        state = select_state(hx, layer * self.num_directions + direction)
        out, final = unroll(self.step_function(layer, direction), x_proj, state, reverse=direction == 1)
        outputs.append(out)
        finals.insert(len(finals) - direction, final)  # backward before forward
    layer_input = outputs[0] if len(outputs) == 1 else cat(outputs, dim=2)
    if layer < self.num_layers - 1:
        layer_input = dropout(layer_input, self.dropout, self.training)
return layer_input, stack_states(finals)
"""
SAMPLE_ALWAYS_GREEDY = """\
ids = vocab.encode(prompt)
out = []
with no_grad():
    logits, state = model(_ids(model, np.asarray(ids)[None, :], "sample"))
    for _ in range(length):
        out.append(int(np.argmax(logits.numpy()[0, -1])))  # ignores temperature and seed
        logits, state = model(_ids(model, np.array([[out[-1]]]), "sample"), state)
return vocab.decode(out)
"""
TRAIN_CHUNK_WITHOUT_CLIPPING = """\
optimizer.zero_grad()
logits, final = model(x, detach_state(state))
loss = sequence_loss(logits, y)
loss.backward()
optimizer.step()  # max_norm ignored
return loss.item(), final
"""

TRAIN_CHUNK_WITHOUT_DETACH = """\
optimizer.zero_grad()
logits, final = model(x, state)  # the graph of the previous chunks stays attached
loss = sequence_loss(logits, y)
loss.backward()
if max_norm is not None:
    clip_grad_norm_(model.parameters(), max_norm)
optimizer.step()
return loss.item(), final
"""

#: name → (edits, the task that is wrong, its checks that must fail,
#:         {other task: its checks that also fail when graded without isolation})
BAD = {
    "lstm gates in i, f, o, g order": (
        {("5.2", "lstm_step"): LSTM_IFOG},
        "5.2",
        {"lstm_cell", "lstm_step", "lstm_module"},
        {"5.4": {"lstm_layers"}},
    ),
    "GRU with the lecture's reset placement": (
        {("5.3", "gru_step"): GRU_LECTURE_RESET},
        "5.3",
        {"gru_cell", "gru_step", "gru_module"},
        {"5.4": {"gru_layers"}},
    ),
    "unroll returns reversed outputs": (
        {("5.1", "unroll"): UNROLL_REVERSED_OUTPUTS},
        "5.1",
        {"unroll"},
        {"5.4": {"rnn_layers", "lstm_layers", "gru_layers", "recurrent_h_n"}},
    ),
    "clip_grad_norm_ without the epsilon": (
        {("5.4", "clip_grad_norm_"): CLIP_WITHOUT_EPSILON},
        "5.4",
        {"clip_grad_norm"},
        {},
    ),
    "clip_grad_norm_ returns the clipped norm": (
        {("5.4", "clip_grad_norm_"): CLIP_RETURNS_CLIPPED_NORM},
        "5.4",
        {"clip_grad_norm"},
        {},
    ),
    "bidirectional h_n in the wrong order": (
        {("5.4", "RNNBase._run_layers"): H_N_BACKWARD_FIRST},
        "5.4",
        {"rnn_layers", "lstm_layers", "gru_layers", "recurrent_h_n"},
        {},
    ),
    "train_chunk without clipping": (
        {("5.5", "train_chunk"): TRAIN_CHUNK_WITHOUT_CLIPPING},
        "5.5",
        {"lm_train_step", "lm_train_chunk"},
        {},
    ),
    "train_chunk without detaching the state": (
        {("5.5", "train_chunk"): TRAIN_CHUNK_WITHOUT_DETACH},
        "5.5",
        {"lm_train_chunk"},
        {},
    ),
    "sample ignores temperature and seed": (
        {("5.5", "sample"): SAMPLE_ALWAYS_GREEDY},
        "5.5",
        {"lm_sample"},
        {},
    ),
}


def _failing(result: GradeResult) -> dict[str, set[str]]:
    return {
        row.id: {c.name for c in row.checks if c.status != "passed"}
        for row in result.tasks
        if row.score < row.max_points
    }


def _grade(tmp_path: Path, edits: dict, isolate: bool) -> GradeResult:
    sub = write_submission(tmp_path / "submission", "a5", edits)
    result = grade(sub, "a5", limits=LIMITS, notebooks=False, isolate=isolate, one_charge=False)
    assert not result.grader_errors, result.grader_errors
    return result


def test_the_notebook_points_add_up() -> None:
    """(The manifest against the registry, the reference and the release: tests/grader/test_grader_stages.py.)"""
    assert (
        sum(notebook_points(NOTEBOOK).values()) == sum(n.points for n in load_manifest("a5").notebooks) == 15
    )


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_costs_its_task_and_only_that_task(tmp_path: Path, name: str) -> None:
    edits, task, checks, _ = BAD[name]
    result = _grade(tmp_path, edits, isolate=True)
    assert _failing(result) == {task: checks}, {
        r.id: r.feedback for r in result.tasks if r.score < r.max_points
    }
    row = next(r for r in result.tasks if r.id == task)
    assert row.status == "failed"
    for check in row.checks:
        if check.name in checks:  # the message names the function (or layer) and the input
            assert "(" in check.message and ("expected" in check.message or "must" in check.message), (
                check.message
            )


@pytest.mark.parametrize("name", ["lstm gates in i, f, o, g order", "clip_grad_norm_ without the epsilon"])
def test_without_isolation_a_mistake_costs_only_the_checks_that_run_it(tmp_path: Path, name: str) -> None:
    edits, task, checks, downstream = BAD[name]
    result = _grade(tmp_path, edits, isolate=False)
    assert _failing(result) == {task: checks, **downstream}


def test_failure_messages_say_what_was_wrong(tmp_path: Path) -> None:
    result = _grade(
        tmp_path,
        {("5.2", "lstm_step"): LSTM_IFOG, ("5.4", "RNNBase._run_layers"): H_N_BACKWARD_FIRST},
        isolate=True,
    )
    lstm = next(c for r in result.tasks for c in r.checks if c.name == "lstm_cell")
    # of the smallest failing inputs, the one furthest off: a difference one sees at a glance
    shown = re.match(
        r"lstm_cell\(input \(\d, \d\), h \(\d, \d\), .*\) \(h'\): value at index \(\d, \d\): expected (\S+), got (\S+) ",
        lstm.message,
    )
    assert shown, lstm.message
    expected, got = (float(v) for v in shown.groups())
    assert abs(got - expected) > 0.1 * max(abs(expected), abs(got)), lstm.message
    h_n = next(c for r in result.tasks for c in r.checks if c.name == "recurrent_h_n")
    assert "bidirectional=True" in h_n.message and "h_n[" in h_n.message and "output[" in h_n.message


# ---------------------------------------------------------------------------- the notebook


@pytest.fixture
def kit_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The notebook imports minitorch: its kernel (started here, not in a grading child
    whose tree is on the path) must find the kit's."""
    monkeypatch.setenv("PYTHONPATH", str(repo_root()))


def _answered(tmp_path: Path, answers: dict[str, str]) -> Path:
    released = tmp_path / "released.ipynb"
    release_notebook(NOTEBOOK, released)
    nb = nbformat.read(str(released), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    path = tmp_path / "submitted" / NOTEBOOK.name
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    return path


def _solution(grade_id: str) -> str:
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    source = next(c.source for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == grade_id)
    return "\n".join(line for line in source.splitlines() if "### " not in line)


@pytest.mark.usefixtures("kit_on_path")
def test_the_notebook_solution_scores_full_and_its_release_zero(tmp_path: Path) -> None:
    grades = autograde_notebook(NOTEBOOK, NOTEBOOK, tmp_path / "w1")
    assert [(g.cell_id, g.points) for g in grades] == [
        ("part1_tests", 7),
        ("part2_smallest_tests", 4),
        ("part2_orders_tests", 4),
    ], grades
    released = tmp_path / "released.ipynb"
    release_notebook(NOTEBOOK, released)
    grades = autograde_notebook(released, NOTEBOOK, tmp_path / "w2")
    assert sum(g.points for g in grades) == 0, grades
    assert (
        "hidden_grad_norms (above) must run" in grades[0].message
        and "set smallest_at_start" in grades[1].message
    )


@pytest.mark.usefixtures("kit_on_path")
def test_wrong_notebook_answers_lose_exactly_their_points(tmp_path: Path) -> None:
    # wrong norms that still pass the visible tests (T floats, the last one √(B·H)), and
    # both questions answered wrongly

    wrong_norms = _solution("part1_answer").replace("tap.grad.numpy()", "(tap.grad.numpy() * 0.5 + 0.5)")
    student = _answered(
        tmp_path,
        {"part1_answer": wrong_norms, "part2_answers": 'smallest_at_start = "lstm"\norders_gained = 1.0\n'},
    )
    grades = {g.cell_id: g for g in autograde_notebook(student, NOTEBOOK, tmp_path / "w")}
    assert grades["part1_tests"].points == 0
    assert (
        grades["part2_smallest_tests"].points == 0
        and "smallest_at_start is wrong" in grades["part2_smallest_tests"].message
    )
    assert (
        grades["part2_orders_tests"].points == 0
        and "orders_gained is wrong" in grades["part2_orders_tests"].message
    )
    # the right norms, a right answer and a wrong one: 7 + 4 points
    student = _answered(
        tmp_path / "again",
        {
            "part1_answer": _solution("part1_answer"),
            "part2_answers": 'smallest_at_start = "rnn"\norders_gained = 3.0\n',
        },
    )
    grades = autograde_notebook(student, NOTEBOOK, tmp_path / "w2")
    assert {g.cell_id: g.points for g in grades} == {
        "part1_tests": 7,
        "part2_smallest_tests": 4,
        "part2_orders_tests": 0,
    }
