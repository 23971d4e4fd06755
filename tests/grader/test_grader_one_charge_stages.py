"""One mistake, one charge in every stage: a realistic mistake planted in each task of A0–A6
costs that task points and leaves every other task of the stage with the reference's score.

Each mistake is one a student makes (the stage catalogues in ``assignments/*/mutants.toml``
and the A5/A6 grading tests hold more), most of them written as the reference's body with
one line changed (`changed`); where a later task uses the task, the mistake is
chosen so that it breaks that task too in the whole tree — a wrong stride breaks every
tensor operation, a conv1d with its output laid out wrong breaks the text CNN, scaled
dot-product attention scaled by 1/E breaks multi-head attention and the transformer — which
is what grading each task alone (`grader.grading.one_charge`) must not charge twice.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.release.examples import write_submission
from grader.core.fences import package_fences
from grader.grading.grade import grade
from grader.core.manifest import load_manifest, repo_root
from grader.sandbox.session import Limits
from test_grader_a5 import GRU_LECTURE_RESET, LSTM_IFOG, TRAIN_CHUNK_WITHOUT_CLIPPING, UNROLL_REVERSED_OUTPUTS
from test_grader_a6 import (
    GPT_WITHOUT_CAUSAL_MASK,
    LAYER_NORM_UNBIASED,
    MHA_MERGE_WITHOUT_TRANSPOSE,
    SDPA_SCALE_ONE_OVER_E,
    SOFTMAX_NAN_ON_EMPTY_ROWS,
)

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=60, start_timeout=60)


def reference_body(task: str, function: str) -> str:
    """The reference's body of `task`'s fence in `function`, unindented."""
    for rel, fences in package_fences(repo_root() / "minitorch").items():
        for fence in fences:
            if (fence.task, fence.function) == (task, function):
                return textwrap.dedent("".join(fence.body))
    raise KeyError(f"no fence of task {task} in {function}")


def changed(task: str, function: str, old: str, new: str) -> tuple[str, str]:
    """(function, the reference's body with `old` replaced by `new`): a mistake of one line,
    which follows the reference when the reference changes elsewhere."""
    body = reference_body(task, function)
    assert body.count(old) == 1, f"{task} {function}: {old!r} is not in the reference body once"
    return function, body.replace(old, new)


#: (in the reference's words, to stay in step with it) wrong strides: not reversed
STRIDES_REVERSED = changed(
    "2.1", "strides_from_shape", "return tuple(reversed(strides))", "return tuple(strides)"
)[1]


#: stage → task → (the function whose fence is replaced, the student's body)
PLANTED: dict[str, dict[str, tuple[str, str]]] = {
    "a0": {
        "0.1": ("lt", "return x < y"),
        "0.2": (
            "zipWith",
            "def apply(ls1, ls2):\n    ls1, ls2 = list(ls1), list(ls2)\n"
            "    return [fn(ls1[i], ls2[i]) for i in range(len(ls1))]\n\nreturn apply",
        ),
        "0.3": ("Module.train", "self.training = mode\nreturn self"),
    },
    "a1": {
        "1.1": (
            "central_difference",
            "up = list(vals)\nup[arg] = up[arg] + epsilon\nreturn (f(*up) - f(*vals)) / epsilon",
        ),
        "1.2": ("Scalar.__sub__", "return Add.apply(b, Neg.apply(self))"),
        "1.3": (
            "Scalar.chain_rule",
            "derivatives = h.last_fn._backward(h.ctx, d_output)\n"
            "return [(inp, d) for inp, d in zip(h.inputs, derivatives) if not inp.is_constant()]",
        ),
        "1.4": (
            "topological_sort",
            "order = []\nvisited = set()\n\ndef visit(node):\n"
            "    if node.unique_id in visited or node.is_constant():\n        return\n"
            "    visited.add(node.unique_id)\n    if not node.is_leaf():\n"
            "        for parent in node.parents:\n            visit(parent)\n    order.append(node)\n\n"
            "visit(variable)\nreturn list(reversed(order))",
        ),
    },
    "a2": {
        "2.1": ("strides_from_shape", STRIDES_REVERSED),
        "2.2": ("broadcast_index", "pass"),
        "2.3": changed(
            "2.3",
            "tensor_zip._zip",
            "broadcast_index(out_index, out_shape, b_shape, b_index)",
            "b_index[:] = out_index[len(out_shape) - len(b_shape):]",
        ),
        "2.4": changed(
            "2.4",
            "Mul.backward",
            "return mul(grad_output, b), mul(grad_output, a)",
            "return mul(grad_output, a), mul(grad_output, b)",
        ),
    },
    "a3": {
        "3.1": changed(
            "3.1",
            "tensor_map._map",
            "broadcast_index(out_index, out_shape, in_shape, in_index)",
            "in_index[:] = out_index[len(out_shape) - len(in_shape):]",
        ),
        "3.2": changed("3.2", "tensor_matmul", "k * b_strides[1]]", "k * b_strides[2]]"),
        "3.3": changed(
            "3.3",
            "_map_kernel._map",
            "_broadcast_index(out_index, out_shape, in_shape, in_index)",
            "in_index[:] = out_index[len(out_shape) - len(in_shape):]",
        ),
        "3.4": changed(
            "3.4", "_matmul_kernel._matmul", "b_tile[ty, tx] = b_storage", "b_tile[tx, ty] = b_storage"
        ),
    },
    "a4": {
        "4.1": changed(
            "4.1",
            "conv1d",
            "out.view(n, l_out, c_out).permute(0, 2, 1).contiguous()",
            "out.contiguous().view(n, c_out, l_out)",
        ),
        "4.2": changed(
            "4.2",
            "conv2d",
            "out.view(n, oh, ow, c_out).permute(0, 3, 1, 2).contiguous()",
            "out.contiguous().view(n, c_out, oh, ow)",
        ),
        "4.3": changed(
            "4.3",
            "max_pool2d_backward",
            "out[x_plane + y * out_strides[2] + z * out_strides[3]] += grad",
            "out[x_plane + y * out_strides[2] + z * out_strides[3]] = grad",
        ),
        "4.4": changed("4.4", "softmax", "return e / e.sum(d, keepdim=True)", "return e / e.sum(d)"),
        "4.5": changed(
            "4.5", "TextCNN.forward_embedded", "max_over_time(conv(x)).relu()", "max_over_time(conv(x))"
        ),
    },
    "a5": {
        "5.1": ("unroll", UNROLL_REVERSED_OUTPUTS),
        "5.2": ("lstm_step", LSTM_IFOG),
        "5.3": ("gru_step", GRU_LECTURE_RESET),
        "5.4": changed(
            "5.4",
            "clip_grad_norm_",
            "set_grad(h, g * coef)",
            "set_grad(h, g * min(max_norm / (np.sum(np.abs(g) ** norm_type) ** (1.0 / norm_type) + 1e-6), 1.0))",
        ),
        "5.5": ("train_chunk", TRAIN_CHUNK_WITHOUT_CLIPPING),
    },
    "a6": {
        "6.1": ("masked_softmax", SOFTMAX_NAN_ON_EMPTY_ROWS),
        "6.2": ("scaled_dot_product_attention_with_weights", SDPA_SCALE_ONE_OVER_E),
        "6.3": ("multi_head_attention", MHA_MERGE_WITHOUT_TRANSPOSE),
        "6.4": ("normalise_rows", LAYER_NORM_UNBIASED),
        "6.5": ("TinyGPT.forward", GPT_WITHOUT_CAUSAL_MASK),
    },
}

#: A forward and its backward in two tasks, one of them wrong. The backward's checks call the
#: forward and the forward's task checks what it saves by calling the backward, so in the whole
#: tree both tasks fail; each is run again with the other's reference (`grader.grading.second_looks.
#: second_look`) and only the wrong one is charged. name → (stage, task, function, body).
FORWARD_AND_BACKWARD: dict[str, tuple[str, str, str, str]] = {
    # computes e^-a, returns it and saves it: Exp.backward (1.3) multiplies by the wrong value
    "a1 wrong forward": (
        "a1",
        "1.2",
        *changed("1.2", "Exp.forward", "out = operators.exp(a)", "out = operators.exp(-a)"),
    ),
    # forgets to save the input: right by every value it returns, Log.backward finds nothing
    "a1 forward saves nothing": (
        "a1",
        "1.2",
        *changed("1.2", "Log.forward", "ctx.save_for_backward(a)", "pass"),
    ),
    # a backward with its derivatives swapped: the forward's saving check fails beside it
    "a1 wrong backward": (
        "a1",
        "1.3",
        *changed(
            "1.3",
            "Mul.backward",
            "return operators.mul(b, d_output), operators.mul(a, d_output)",
            "return operators.mul(a, d_output), operators.mul(b, d_output)",
        ),
    ),
    # applies the inverse permutation: Permute.backward (2.4) gets a gradient of the wrong shape
    "a2 wrong forward": (
        "a2",
        "2.3",
        *changed(
            "2.3",
            "Permute.forward",
            "return a._view(a._tensor.permute(*order))",
            "inverse = [0] * len(order)\nfor i, o in enumerate(order):\n    inverse[o] = i\n"
            "return a._view(a._tensor.permute(*inverse))",
        ),
    ),
    # saves nothing: Permute.backward finds no order in ctx
    "a2 forward saves nothing": (
        "a2",
        "2.3",
        *changed("2.3", "Permute.forward", "ctx.save_for_backward(order)", "pass"),
    ),
}


def test_every_task_of_every_stage_has_a_planted_mistake() -> None:
    for stage, planted in PLANTED.items():
        assert sorted(planted) == sorted(t.id for t in load_manifest(stage).tasks), stage


@pytest.mark.parametrize("stage, task", [(s, t) for s, tasks in PLANTED.items() for t in tasks])
def test_a_mistake_in_one_task_moves_no_other_tasks_points(tmp_path: Path, stage: str, task: str) -> None:
    assert_charged_once(tmp_path, stage, task, *PLANTED[stage][task])


@pytest.mark.parametrize("case", sorted(FORWARD_AND_BACKWARD))
def test_a_forward_and_its_backward_are_charged_apart(tmp_path: Path, case: str) -> None:
    assert_charged_once(tmp_path, *FORWARD_AND_BACKWARD[case])


def assert_charged_once(tmp_path: Path, stage: str, task: str, function: str, body: str) -> None:
    """Graded with `body` in `task`'s fence of `function`, `task` loses points and no other
    task of `stage` does."""
    sub = write_submission(tmp_path / "sub", stage, {(task, function): body})
    result = grade(sub, stage, limits=LIMITS, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    rows = {r.id: r for r in result.tasks}
    assert rows[task].score < rows[task].max_points, (
        f"the planted mistake costs {task} nothing: {rows[task].feedback}"
    )
    moved = {
        r.id: (r.score, r.max_points, r.feedback)
        for r in result.tasks
        if r.id != task and r.score != r.max_points
    }
    assert not moved, moved
