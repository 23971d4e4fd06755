"""The hidden checks of A6 (attention and the transformer) against the reference, a release
and submissions with one classic mistake each.

Each bad submission is the reference with one fence body replaced (`write_submission`).
Graded with ``isolate=True`` (the other tasks get the reference's bodies), the bad task
loses exactly the checks that see the mistake and every other task keeps all of its points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import stage_checks
from grader.examples import write_submission
from grader.grading import grade
from grader.manifest import load_manifest, repo_root
from grader.release import release
from grader.results import GradeResult
from grader.sandbox import Limits

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=120, start_timeout=60)

SOFTMAX_NAN_ON_EMPTY_ROWS = """\
if mask is not None:
    scores = scores.masked_fill(~mask, float("-inf"))
e = (scores - scores.detach().amax(dim, keepdim=True)).exp()  # −∞ − (−∞) = NaN on an empty row
return e / e.sum(dim, keepdim=True)
"""
LAYER_NORM_LECTURE_EPSILON = """\
centred = x - x.mean(-1, keepdim=True)
variance = (centred * centred).mean(-1, keepdim=True)
normalised = centred / (variance.sqrt() + eps)  # σ + ε, the lecture's form: not PyTorch's
"""
LAYER_NORM_UNBIASED = """\
centred = x - x.mean(-1, keepdim=True)
variance = (centred * centred).sum(-1, keepdim=True) / max(x.shape[-1] - 1, 1)  # unbiased: not LayerNorm's
normalised = centred / (variance + eps).sqrt()
"""
PE_SIN_COS_SWAPPED = """\
pos = np.arange(length, dtype=np.float64)[:, None]
two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
angle = pos / np.power(10000.0, two_i / d_model)
pe[:, 0::2] = np.cos(angle)
pe[:, 1::2] = np.sin(angle[:, : d_model // 2])
"""
ENCODER_ALWAYS_PRE_NORM = """\
x = src
x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)  # norm_first ignored
x = x + self._ff_block(self.norm2(x))
return x
"""
GPT_WITHOUT_CAUSAL_MASK = """\
x = self.dropout(self.token_embedding(idx) + positions)
for block in self.blocks:
    x = block(x)  # every position sees the future
return self.head(self.norm(x))
"""

#: name → (edits, the task that is wrong, its checks that must fail)
BAD = {
    "masked softmax gives NaN on a row with nothing allowed": ({("6.1", "masked_softmax"): SOFTMAX_NAN_ON_EMPTY_ROWS}, "6.1",
                                                             {"masked_softmax", "attention_pooling", "additive_attention"}),
    "LayerNorm with the lecture's σ + ε": ({("6.4", "layer_norm"): LAYER_NORM_LECTURE_EPSILON}, "6.4", {"layer_norm"}),
    "LayerNorm with the unbiased variance": ({("6.4", "layer_norm"): LAYER_NORM_UNBIASED}, "6.4", {"layer_norm"}),
    "positional encodings with sin and cos swapped": ({("6.4", "sinusoidal_positional_encoding"): PE_SIN_COS_SWAPPED}, "6.4",
                                                     {"positional_encoding"}),
    "encoder layer ignores norm_first": ({("6.5", "TransformerEncoderLayer.forward"): ENCODER_ALWAYS_PRE_NORM}, "6.5",
                                         {"encoder_layer", "transformer_gradcheck"}),
    "GPT without the causal mask": ({("6.5", "TinyGPT.forward"): GPT_WITHOUT_CAUSAL_MASK}, "6.5", {"gpt_forward", "gpt_causal"}),
}


def _failing(result: GradeResult) -> dict[str, set[str]]:
    return {row.id: {c.name for c in row.checks if c.status != "passed"} for row in result.tasks if row.score < row.max_points}


def test_every_check_of_the_manifest_exists_and_points_add_up() -> None:
    manifest = load_manifest("a6")
    registered = stage_checks("a6")
    named = [c for t in manifest.tasks for c in t.checks]
    assert sorted(named) == sorted(registered)  # no check unused, none missing
    assert manifest.total_points == 100


def test_the_reference_scores_full_marks_and_a_release_zero(tmp_path: Path) -> None:
    ref = grade(repo_root(), "a6", limits=LIMITS, notebooks=False)
    assert not ref.grader_errors, ref.grader_errors
    assert all(row.score == row.max_points for row in ref.tasks), [(r.id, r.message, r.feedback) for r in ref.tasks]
    release("a6", tmp_path / "release")
    rel = grade(tmp_path / "release", "a6", limits=LIMITS, notebooks=False)
    assert not rel.grader_errors, rel.grader_errors
    for row in rel.tasks:
        assert row.score == 0, (row.id, row.feedback)
        assert row.message.startswith("not implemented yet"), (row.id, row.message)


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_costs_its_task_and_only_that_task(tmp_path: Path, name: str) -> None:
    edits, task, checks = BAD[name]
    sub = write_submission(tmp_path / "submission", "a6", edits)
    result = grade(sub, "a6", task=task, limits=LIMITS, notebooks=False, isolate=True)
    assert not result.grader_errors, result.grader_errors
    assert _failing(result) == {task: checks}, {r.id: r.feedback for r in result.tasks if r.score < r.max_points}
    row = next(r for r in result.tasks if r.id == task)
    for check in row.checks:
        if check.name in checks:  # the message names the function (or layer) and the input
            assert "(" in check.message, check.message
