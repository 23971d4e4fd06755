"""One mistake, one charge in every stage: a realistic mistake planted in each task of A0–A6
costs that task points and leaves every other task of the stage with the reference's score.

Each mistake is one a student makes (the stage catalogues in ``assignments/*/mutants.toml``
and the A5/A6 grading tests hold more); where a later task uses the task, the mistake is
chosen so that it breaks that task too in the whole tree — a wrong stride breaks every
tensor operation, a conv1d with its output laid out wrong breaks the text CNN, scaled
dot-product attention scaled by 1/E breaks multi-head attention and the transformer — which
is what grading each task alone (`grader.one_charge`) must not charge twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.examples import write_submission
from grader.grading import grade
from grader.manifest import load_manifest
from grader.sandbox import Limits
from test_grader_a5 import GRU_LECTURE_RESET, LSTM_IFOG, TRAIN_CHUNK_WITHOUT_CLIPPING, UNROLL_REVERSED_OUTPUTS
from test_grader_a6 import (GPT_WITHOUT_CAUSAL_MASK, LAYER_NORM_UNBIASED, MHA_MERGE_WITHOUT_TRANSPOSE, SDPA_SCALE_ONE_OVER_E,
                            SOFTMAX_NAN_ON_EMPTY_ROWS)

pytestmark = pytest.mark.grader

LIMITS = Limits(check_timeout=60, start_timeout=60)

STRIDES_REVERSED = """strides = []
step = 1
for size in reversed(shape):
    strides.append(step)
    step *= size
return tuple(strides)
"""

ZIP_WITHOUT_BROADCAST = """out_index = np.zeros(len(out_shape), dtype=INDEX_DTYPE)
for ordinal in range(int(np.prod(out_shape))):
    to_index(ordinal, out_shape, out_index)
    a_value = a_storage[index_to_position(out_index[len(out_shape) - len(a_shape):], a_strides)]
    b_value = b_storage[index_to_position(out_index[len(out_shape) - len(b_shape):], b_strides)]
    out[index_to_position(out_index, out_strides)] = fn(a_value, b_value)
"""

MUL_BACKWARD_SWAPPED = """a, b = ctx.saved_values
mul = grad_output.backend.mul_zip
return mul(grad_output, a), mul(grad_output, b)
"""

FAST_MAP_WITHOUT_BROADCAST = """size = int(np.prod(out_shape))
chunks = (size + CHUNK - 1) // CHUNK
for chunk in prange(chunks):
    out_index = np.empty(len(out_shape), np.int64)
    for ordinal in range(chunk * CHUNK, min(size, (chunk + 1) * CHUNK)):
        to_index(ordinal, out_shape, out_index)
        value = in_storage[index_to_position(out_index[len(out_shape) - len(in_shape):], in_strides)]
        out[index_to_position(out_index, out_strides)] = fn(value)
"""

FAST_MATMUL_B_STRIDE = """rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
for row in prange(out_shape[0] * rows):
    n = row // rows
    i = row % rows
    a_row = n * a_batch_stride + i * a_strides[1]
    out_row = n * out_strides[0] + i * out_strides[1]
    for j in range(cols):
        b_col = n * b_batch_stride + j * b_strides[2]
        acc = 0.0
        for k in range(inner):
            acc += a_storage[a_row + k * a_strides[2]] * b_storage[b_col + k * b_strides[2]]
        out[out_row + j * out_strides[2]] = acc
"""

CUDA_MAP_WITHOUT_BROADCAST = """out_index = cuda.local.array(MAX_DIMS, numba.int64)[: len(out_shape)]
ordinal = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
size = 1
for d in range(len(out_shape)):
    size *= out_shape[d]
if ordinal < size:
    _to_index(ordinal, out_shape, out_index)
    value = in_storage[_index_to_position(out_index[len(out_shape) - len(in_shape):], in_strides)]
    out[_index_to_position(out_index, out_strides)] = fn_gpu(value)
"""

CUDA_MATMUL_B_TILE_TRANSPOSED = """a_tile = cuda.shared.array((T, T), tile_type)
b_tile = cuda.shared.array((T, T), tile_type)
tx = cuda.threadIdx.x
ty = cuda.threadIdx.y
n = cuda.blockIdx.z
i = cuda.blockIdx.y * T + ty
j = cuda.blockIdx.x * T + tx
rows, inner, cols = a_shape[1], a_shape[2], b_shape[2]
a_base = (n * a_strides[0] if a_shape[0] > 1 else 0) + i * a_strides[1]
b_base = (n * b_strides[0] if b_shape[0] > 1 else 0) + j * b_strides[2]
acc = zero
for k0 in range(0, inner, T):
    if i < rows and k0 + tx < inner:
        a_tile[ty, tx] = a_storage[a_base + (k0 + tx) * a_strides[2]]
    else:
        a_tile[ty, tx] = zero
    if k0 + ty < inner and j < cols:
        b_tile[tx, ty] = b_storage[b_base + (k0 + ty) * b_strides[1]]
    else:
        b_tile[tx, ty] = zero
    cuda.syncthreads()
    for k in range(T):
        acc += a_tile[ty, k] * b_tile[k, tx]
    cuda.syncthreads()
if i < rows and j < cols:
    out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc
"""

CONV1D_RESHAPED_NOT_PERMUTED = """cols = unfold1d(input, k, s, pads, d)
l_out = cols.shape[1]
w = weight.reshape(c_out, c_in * k)
out = cols.view(n * l_out, c_in * k) @ w.transpose(0, 1)
if bias is not None:
    out = out + bias
return out.contiguous().view(n, c_out, l_out)
"""

CONV2D_RESHAPED_NOT_PERMUTED = """cols = unfold2d(input, (kh, kw), s, pads, d)
_, oh, ow, ck = cols.shape
w = weight.reshape(c_out, ck)
out = cols.view(n * oh * ow, ck) @ w.transpose(0, 1)
if bias is not None:
    out = out + bias
return out.contiguous().view(n, c_out, oh, ow)
"""

MAX_POOL_BACKWARD_OVERWRITES = """channels, height, width = out_shape[1], out_shape[2], out_shape[3]
out_h, out_w = grad_shape[2], grad_shape[3]
for plane in prange(out_shape[0] * channels):
    n = plane // channels
    c = plane % channels
    x_plane = n * out_strides[0] + c * out_strides[1]
    for y in range(height):
        for z in range(width):
            out[x_plane + y * out_strides[2] + z * out_strides[3]] = 0.0
    g_plane = n * grad_strides[0] + c * grad_strides[1]
    for i in range(out_h):
        for j in range(out_w):
            at = argmax[(plane * out_h + i) * out_w + j]
            y = at // width
            z = at % width
            out[x_plane + y * out_strides[2] + z * out_strides[3]] = grad[g_plane + i * grad_strides[2] + j * grad_strides[3]]
"""

SOFTMAX_WITHOUT_KEEPDIM = """z = input - input.detach().amax(d, keepdim=True)
e = z.exp()
return e / e.sum(d)
"""

TEXTCNN_WITHOUT_RELU = """x = embedded.permute(0, 2, 1)
features = [max_over_time(conv(x)) for conv in self.convs]
h = cat(features, dim=1)
return self.fc(self.dropout(h))
"""

CLIP_EACH_PARAMETER_ON_ITS_OWN = """grads = [h.grad.numpy().astype(np.float64) for h in holders]
if norm_type == np.inf:
    norms = np.array([np.max(np.abs(g)) if g.size else 0.0 for g in grads])
    total = float(np.max(norms))
else:
    norms = np.array([np.sum(np.abs(g) ** norm_type) ** (1.0 / norm_type) for g in grads])
    total = float(np.sum(norms ** norm_type) ** (1.0 / norm_type))
for h, g, norm in zip(holders, grads, norms):
    set_grad(h, g * min(max_norm / (norm + 1e-6), 1.0))
return holders[0].grad.new_tensor(total)
"""

#: stage → task → (the function whose fence is replaced, the student's body)
PLANTED: dict[str, dict[str, tuple[str, str]]] = {
    "a0": {
        "0.1": ("lt", "return x < y"),
        "0.2": ("zipWith", "def apply(ls1, ls2):\n    ls1, ls2 = list(ls1), list(ls2)\n"
                           "    return [fn(ls1[i], ls2[i]) for i in range(len(ls1))]\n\nreturn apply"),
        "0.3": ("Module.train", "self.training = mode\nreturn self"),
    },
    "a1": {
        "1.1": ("central_difference", "up = list(vals)\nup[arg] = up[arg] + epsilon\nreturn (f(*up) - f(*vals)) / epsilon"),
        "1.2": ("Scalar.__sub__", "return Add.apply(b, Neg.apply(self))"),
        "1.3": ("Scalar.chain_rule", "derivatives = h.last_fn._backward(h.ctx, d_output)\n"
                                     "return [(inp, d) for inp, d in zip(h.inputs, derivatives) if not inp.is_constant()]"),
        "1.4": ("topological_sort", "order = []\nvisited = set()\n\ndef visit(node):\n"
                                    "    if node.unique_id in visited or node.is_constant():\n        return\n"
                                    "    visited.add(node.unique_id)\n    if not node.is_leaf():\n"
                                    "        for parent in node.parents:\n            visit(parent)\n    order.append(node)\n\n"
                                    "visit(variable)\nreturn list(reversed(order))"),
    },
    "a2": {
        "2.1": ("strides_from_shape", STRIDES_REVERSED),
        "2.2": ("broadcast_index", "pass"),
        "2.3": ("tensor_zip._zip", ZIP_WITHOUT_BROADCAST),
        "2.4": ("Mul.backward", MUL_BACKWARD_SWAPPED),
    },
    "a3": {
        "3.1": ("tensor_map._map", FAST_MAP_WITHOUT_BROADCAST),
        "3.2": ("tensor_matmul", FAST_MATMUL_B_STRIDE),
        "3.3": ("_map_kernel._map", CUDA_MAP_WITHOUT_BROADCAST),
        "3.4": ("_matmul_kernel._matmul", CUDA_MATMUL_B_TILE_TRANSPOSED),
    },
    "a4": {
        "4.1": ("conv1d", CONV1D_RESHAPED_NOT_PERMUTED),
        "4.2": ("conv2d", CONV2D_RESHAPED_NOT_PERMUTED),
        "4.3": ("max_pool2d_backward", MAX_POOL_BACKWARD_OVERWRITES),
        "4.4": ("softmax", SOFTMAX_WITHOUT_KEEPDIM),
        "4.5": ("TextCNN.forward_embedded", TEXTCNN_WITHOUT_RELU),
    },
    "a5": {
        "5.1": ("unroll", UNROLL_REVERSED_OUTPUTS),
        "5.2": ("lstm_step", LSTM_IFOG),
        "5.3": ("gru_step", GRU_LECTURE_RESET),
        "5.4": ("clip_grad_norm_", CLIP_EACH_PARAMETER_ON_ITS_OWN),
        "5.5": ("train_chunk", TRAIN_CHUNK_WITHOUT_CLIPPING),
    },
    "a6": {
        "6.1": ("masked_softmax", SOFTMAX_NAN_ON_EMPTY_ROWS),
        "6.2": ("scaled_dot_product_attention_with_weights", SDPA_SCALE_ONE_OVER_E),
        "6.3": ("multi_head_attention", MHA_MERGE_WITHOUT_TRANSPOSE),
        "6.4": ("layer_norm", LAYER_NORM_UNBIASED),
        "6.5": ("TinyGPT.forward", GPT_WITHOUT_CAUSAL_MASK),
    },
}


def test_every_task_of_every_stage_has_a_planted_mistake() -> None:
    for stage, planted in PLANTED.items():
        assert sorted(planted) == sorted(t.id for t in load_manifest(stage).tasks), stage


@pytest.mark.parametrize("stage, task", [(s, t) for s, tasks in PLANTED.items() for t in tasks])
def test_a_mistake_in_one_task_moves_no_other_tasks_points(tmp_path: Path, stage: str, task: str) -> None:
    function, body = PLANTED[stage][task]
    sub = write_submission(tmp_path / "sub", stage, {(task, function): body})
    result = grade(sub, stage, limits=LIMITS, notebooks=False)
    assert not result.grader_errors, result.grader_errors
    rows = {r.id: r for r in result.tasks}
    assert rows[task].score < rows[task].max_points, f"the planted mistake costs {task} nothing: {rows[task].feedback}"
    moved = {r.id: (r.score, r.max_points, r.feedback) for r in result.tasks if r.id != task and r.score != r.max_points}
    assert not moved, moved
