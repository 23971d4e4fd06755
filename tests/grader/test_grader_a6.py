"""The hidden checks of A6 (attention and the transformer) against the reference, a release
and submissions with one classic mistake each.

Each bad submission is the reference with one fence body replaced (`write_submission`).
Graded with ``isolate=True`` (the other tasks get the reference's bodies), the bad task
loses exactly the checks that see the mistake and every other task keeps all of its points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.release.examples import write_submission
from grader.grading.grade import grade
from grader.core.results import GradeResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=120, start_timeout=60)

SOFTMAX_NAN_ON_EMPTY_ROWS = """\
if mask is not None:
    scores = scores.masked_fill(~mask, float("-inf"))
e = (scores - scores.detach().amax(dim, keepdim=True)).exp()  # −∞ − (−∞) = NaN on an empty row
return e / e.sum(dim, keepdim=True)
"""
ADDITIVE_WITHOUT_TANH = """\
if projected_keys is None:
    projected_keys = keys @ w_key.transpose(0, 1)
projected_query = query @ w_query.transpose(0, 1)
hidden = projected_query.unsqueeze(1) + projected_keys  # no tanh: the scores are linear in q and k
scores = hidden @ v
weights = masked_softmax(scores, allowed, dim=-1)
context = (weights.unsqueeze(1) @ values).squeeze(1)
return context, weights
"""
_SDPA = """\
scores = (query @ key.transpose(-2, -1)) * scale
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
SDPA_SCALE_ONE_OVER_E = _SDPA.replace(
    "* scale", "/ query.shape[-1]  # 1/E, not 1/√E (and a given scale ignored)"
)
SDPA_CAUSAL_UPPER_TRIANGLE = _SDPA.replace(".tril()", ".triu()  # the future, not the past")
SDPA_BOOL_MASK_INVERTED = _SDPA.replace(
    "allowed = attn_mask", "allowed = ~attn_mask  # MultiheadAttention's polarity"
)
MHA_MERGE_WITHOUT_TRANSPOSE = """\
q = query @ w_q.transpose(0, 1)
k = key @ w_k.transpose(0, 1)
v = value @ w_v.transpose(0, 1)
if b_q is not None:
    q, k, v = q + b_q, k + b_k, v + b_v
q = q.view(batch, tgt_len, num_heads, head_dim).transpose(1, 2)
k = k.view(batch, src_len, num_heads, head_dim).transpose(1, 2)
v = v.view(batch, src_len, num_heads, head_dim).transpose(1, 2)
heads, weights = scaled_dot_product_attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal)
merged = heads.contiguous().view(batch, tgt_len, embed_dim)  # [B, H, L, d] read as [B, L, E]: heads and positions mixed
out = merged @ out_weight.transpose(0, 1)
if out_bias is not None:
    out = out + out_bias
return out, weights
"""
LAYER_NORM_LECTURE_EPSILON = """\
centred = x - x.mean(-1, keepdim=True)
variance = (centred * centred).mean(-1, keepdim=True)
return centred / (variance.sqrt() + eps)  # σ + ε, the lecture's form: not PyTorch's
"""
LAYER_NORM_UNBIASED = """\
centred = x - x.mean(-1, keepdim=True)
variance = (centred * centred).sum(-1, keepdim=True) / max(x.shape[-1] - 1, 1)  # unbiased: not LayerNorm's
return centred / (variance + eps).sqrt()
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
    "masked softmax gives NaN on a row with nothing allowed": (
        {("6.1", "masked_softmax"): SOFTMAX_NAN_ON_EMPTY_ROWS},
        "6.1",
        {"masked_softmax", "attention_pooling", "additive_attention"},
    ),
    "additive attention without the tanh": (
        {("6.1", "additive_attention"): ADDITIVE_WITHOUT_TANH},
        "6.1",
        {"additive_attention"},
    ),
    "attention scaled by 1/E": (
        {("6.2", "scaled_dot_product_attention_with_weights"): SDPA_SCALE_ONE_OVER_E},
        "6.2",
        {"sdpa", "sdpa_masks"},
    ),
    "is_causal attends to the future": (
        {("6.2", "scaled_dot_product_attention_with_weights"): SDPA_CAUSAL_UPPER_TRIANGLE},
        "6.2",
        {"sdpa_masks", "sdpa_properties"},
    ),
    "a boolean mask read as True = may not attend": (
        {("6.2", "scaled_dot_product_attention_with_weights"): SDPA_BOOL_MASK_INVERTED},
        "6.2",
        {"sdpa_masks", "sdpa_properties"},
    ),
    "heads merged without moving them back": (
        {("6.3", "multi_head_attention"): MHA_MERGE_WITHOUT_TRANSPOSE},
        "6.3",
        {"mha", "mha_masks"},
    ),
    "LayerNorm with the lecture's σ + ε": (
        {("6.4", "normalise_rows"): LAYER_NORM_LECTURE_EPSILON},
        "6.4",
        {"layer_norm"},
    ),
    "LayerNorm with the unbiased variance": (
        {("6.4", "normalise_rows"): LAYER_NORM_UNBIASED},
        "6.4",
        {"layer_norm"},
    ),
    "positional encodings with sin and cos swapped": (
        {("6.4", "sinusoidal_positional_encoding"): PE_SIN_COS_SWAPPED},
        "6.4",
        {"positional_encoding"},
    ),
    "encoder layer ignores norm_first": (
        {("6.5", "TransformerEncoderLayer.forward"): ENCODER_ALWAYS_PRE_NORM},
        "6.5",
        {"encoder_layer"},
    ),
    "GPT without the causal mask": (
        {("6.5", "TinyGPT.forward"): GPT_WITHOUT_CAUSAL_MASK},
        "6.5",
        {"gpt_forward", "gpt_causal"},
    ),
}


def _failing(result: GradeResult) -> dict[str, set[str]]:
    return {
        row.id: {c.name for c in row.checks if c.status != "passed"}
        for row in result.tasks
        if row.score < row.max_points
    }


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_costs_its_task_and_only_that_task(tmp_path: Path, name: str) -> None:
    edits, task, checks = BAD[name]
    sub = write_submission(tmp_path / "submission", "a6", edits)
    result = grade(sub, "a6", task=task, limits=LIMITS, notebooks=False, isolate=True)
    assert not result.grader_errors, result.grader_errors
    assert _failing(result) == {task: checks}, {
        r.id: r.feedback for r in result.tasks if r.score < r.max_points
    }
    row = next(r for r in result.tasks if r.id == task)
    for check in row.checks:
        if check.name in checks:  # the message names the function (or layer) and the input
            assert "(" in check.message, check.message
