"""Task 6.5: the tiny GPT (`minitorch.nn.gpt.TinyGPT`): logits and the loss against the
model written out in NumPy (float64) and the gradient of every parameter against central
differences of it, causality, central differences of the model itself, shapes and errors;
plus the library around it (train_step, evaluate, generate / sample) and the `gpt` example.
(The project's own suite also compares with PyTorch: test_gpt_torch.py, not shipped.)"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.nn import gpt as gpt_module
from minitorch.nn.gpt import TinyGPT, evaluate, sample, train_step
from minitorch.nn.language_model import sequence_loss
from minitorch.optim import Adam
from minitorch.testing import grad_check
from numpy_gradients import numpy_gradients

V, CONTEXT = 7, 6


def _model(positions: str = "learned", seed: int = 0, dtype=minitorch.float64, **kwargs) -> TinyGPT:
    minitorch.manual_seed(seed)
    sizes = {"d_model": 8, "nhead": 2, "num_layers": 2, "dim_feedforward": 12, **kwargs}
    return TinyGPT(V, CONTEXT, positions=positions, dtype=dtype, **sizes)


def _ids(values) -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values), dtype=minitorch.int64)


def _tokens(b: int, t: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, V, size=(b, t))


def _randomise_layer_norms(model: TinyGPT, seed: int = 1) -> None:
    """Random LayerNorm gains and biases (ones and zeros would hide a missing one)."""
    rng = np.random.default_rng(seed)
    state = model.state_dict()
    model.load_state_dict(
        {
            k: (
                1.0 + 0.3 * rng.standard_normal(v.shape)
                if k.endswith("norm1.weight") or k.endswith("norm2.weight") or k == "norm.weight"
                else 0.3 * rng.standard_normal(v.shape)
                if "norm" in k or k.endswith("_bias")
                else v
            )
            for k, v in state.items()
        }
    )


# ---------------------------------------------------------------------------------------
# The model written out in NumPy (`p` holds the model's state_dict)


_erf = np.vectorize(math.erf)


def _numpy_layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """(x − μ) / √(σ² + ε) · weight + bias over the last dimension (σ² biased)."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


def _numpy_causal_self_attention(p: dict, prefix: str, x: np.ndarray, nhead: int) -> np.ndarray:
    """Multi-head self-attention of x [B, T, d] in which position i sees positions j ≤ i only
    (in_proj_weight = [W_q; W_k; W_v], as PyTorch's)."""
    b, t, d = x.shape
    w, bias = p[prefix + "self_attn.in_proj_weight"], p[prefix + "self_attn.in_proj_bias"]

    def heads(y):  # [B, T, d] → [B, nhead, T, d / nhead]
        return y.reshape(b, t, nhead, d // nhead).transpose(0, 2, 1, 3)

    q, k, v = (heads(x @ w[i * d : (i + 1) * d].T + bias[i * d : (i + 1) * d]) for i in range(3))
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(d // nhead)
    scores = np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)  # the future is masked
    e = np.exp(scores - scores.max(-1, keepdims=True))
    merged = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return merged @ p[prefix + "self_attn.out_proj.weight"].T + p[prefix + "self_attn.out_proj.bias"]


def _numpy_sinusoids(length: int, d: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^{2i/d}), PE(pos, 2i + 1) = cos(pos / 10000^{2i/d})."""
    angle = np.arange(length)[:, None] / 10000 ** (2 * (np.arange(d) // 2) / d)
    return np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))


def _numpy_gpt(p: dict, idx: np.ndarray, nhead: int, num_layers: int) -> np.ndarray:
    """Logits [B, T, V]: token + position vectors, num_layers pre-norm blocks (causal
    self-attention; FFN with GELU(x) = x Φ(x)), the final LayerNorm, the head."""
    t = idx.shape[1]
    tok = p["token_embedding.weight"]
    if "position_embedding.weight" in p:
        positions = p["position_embedding.weight"][:t]
    else:
        positions = _numpy_sinusoids(t, tok.shape[1])
    x = tok[idx] + positions
    for i in range(num_layers):
        pre = f"blocks.{i}."
        h = _numpy_layer_norm(x, p[pre + "norm1.weight"], p[pre + "norm1.bias"])
        x = x + _numpy_causal_self_attention(p, pre, h, nhead)
        h = _numpy_layer_norm(x, p[pre + "norm2.weight"], p[pre + "norm2.bias"])
        h = h @ p[pre + "linear1.weight"].T + p[pre + "linear1.bias"]
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
        x = x + h @ p[pre + "linear2.weight"].T + p[pre + "linear2.bias"]
    return _numpy_layer_norm(x, p["norm.weight"], p["norm.bias"]) @ p["head.weight"].T + p["head.bias"]


def _numpy_mean_cross_entropy(logits: np.ndarray, targets: np.ndarray) -> float:
    """−(1 / BT) Σ_{b,t} log softmax(logits[b, t])[targets[b, t]]."""
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return float(-np.take_along_axis(log_probs, targets[..., None], -1).mean())


# ---------------------------------------------------------------------------------------
# The model (task 6.5)


@pytest.mark.task6_5
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_logits_loss_and_every_gradient_match_numpy(positions: str) -> None:
    """Logits and the mean cross-entropy against the model written out in NumPy; the
    gradient of every parameter against central differences of that loss."""
    model = _model(positions, d_model=4, nhead=2, num_layers=2, dim_feedforward=6)
    _randomise_layer_norms(model)
    x, y = _tokens(3, 5, seed=2), _tokens(3, 5, seed=3)
    logits = model(_ids(x))
    assert logits.shape == (3, 5, V)
    names = [name for name, _ in model.named_parameters()]
    params = {name: p.value.numpy() for name, p in model.named_parameters()}
    np.testing.assert_allclose(logits.numpy(), _numpy_gpt(params, x, 2, 2), rtol=1e-10, atol=1e-12)
    loss = sequence_loss(logits, y)
    np.testing.assert_allclose(
        loss.item(), _numpy_mean_cross_entropy(_numpy_gpt(params, x, 2, 2), y), rtol=1e-12
    )
    loss.backward()

    def numpy_loss(*values):
        return _numpy_mean_cross_entropy(_numpy_gpt(dict(zip(names, values)), x, 2, 2), y)

    for (name, p), expected in zip(
        model.named_parameters(), numpy_gradients(numpy_loss, [params[n] for n in names])
    ):
        assert p.value.grad is not None, f"{name} got no gradient"
        np.testing.assert_allclose(p.value.grad.numpy(), expected, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.task6_5
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_logits_at_t_do_not_depend_on_later_tokens(positions: str) -> None:
    model = _model(positions)
    x = _tokens(2, CONTEXT, seed=4)
    base = model(_ids(x)).numpy()
    for t in range(CONTEXT - 1):
        changed = x.copy()
        changed[:, t + 1 :] = (
            changed[:, t + 1 :] + 1 + np.arange(CONTEXT - t - 1)
        ) % V  # every later token differs
        out = model(_ids(changed)).numpy()
        np.testing.assert_allclose(
            out[:, : t + 1], base[:, : t + 1], rtol=1e-13, atol=1e-13, err_msg=f"t = {t}"
        )
        assert not np.allclose(out[:, t + 1 :], base[:, t + 1 :])  # the later positions do see their tokens


@pytest.mark.task6_5
def test_the_same_window_gives_the_same_logits_at_any_batch_size_and_prefix_length() -> None:
    model = _model()
    x = _tokens(3, CONTEXT, seed=5)
    full = model(_ids(x)).numpy()
    np.testing.assert_allclose(model(_ids(x[1:2])).numpy(), full[1:2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model(_ids(x[:, :3])).numpy(), full[:, :3], rtol=1e-12, atol=1e-12)


@pytest.mark.task6_5
def test_dropout_acts_on_the_embeddings_and_in_the_blocks_in_training_only() -> None:
    model = _model(dropout=1.0)  # everything dropped: the stream stays 0, every logit is head(norm(0))
    _randomise_layer_norms(model)
    x = _ids(_tokens(2, 4, seed=9))
    constant = model.head.weight.value.numpy() @ model.norm.bias.value.numpy() + model.head.bias.value.numpy()
    np.testing.assert_allclose(model(x).numpy(), np.broadcast_to(constant, (2, 4, V)), rtol=1e-12, atol=1e-12)
    model.eval()
    plain = _model(dropout=0.0)
    plain.load_state_dict(model.state_dict())
    np.testing.assert_allclose(model(x).numpy(), plain(x).numpy(), rtol=1e-13, atol=1e-13)


@pytest.mark.task6_5
def test_central_differences_of_a_tiny_model() -> None:
    model = _model("sinusoidal", d_model=4, nhead=2, num_layers=1, dim_feedforward=6)
    _randomise_layer_norms(model, seed=6)
    idx = _ids(_tokens(2, 3, seed=7))
    names = [
        "token_embedding.weight",
        "blocks.0.self_attn.in_proj_weight",
        "blocks.0.linear1.weight",
        "head.weight",
    ]
    params = dict(model.named_parameters())

    def logits(emb, in_proj, w1, head):
        for name, value in zip(names, (emb, in_proj, w1, head)):
            params[name].update(value)  # the perturbed values of a central difference
        return model(idx)

    # the parameters themselves are the inputs: backward's gradient lands on them
    grad_check(logits, *(params[n] for n in names))


@pytest.mark.task6_5
def test_parameters_and_structure() -> None:
    model = _model()
    names = [name for name, _ in model.named_parameters()]
    assert names[:2] == ["token_embedding.weight", "position_embedding.weight"]
    assert names[-4:] == ["norm.weight", "norm.bias", "head.weight", "head.bias"]
    assert [n for n in names if n.startswith("blocks.1.")][:2] == [
        "blocks.1.self_attn.in_proj_weight",
        "blocks.1.self_attn.in_proj_bias",
    ]
    assert model.position_embedding.weight.value.shape == (CONTEXT, 8) and model.head.weight.value.shape == (
        V,
        8,
    )
    block = model.blocks[0]
    assert block.norm_first and block.self_attn.batch_first and block.linear1.out_features == 12
    assert len(model.blocks) == 2 and model.blocks[0].linear1.weight is not model.blocks[1].linear1.weight
    sinusoidal = _model("sinusoidal")
    assert "position_embedding.weight" not in dict(sinusoidal.named_parameters())
    float32 = _model(dtype=minitorch.float32)
    assert all(p.value.dtype == np.float32 for p in float32.parameters())
    assert float32(_ids(_tokens(1, 3))).dtype == np.float32


@pytest.mark.task6_5
def test_the_sinusoidal_table_is_not_built_in_init(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("built in __init__")

    monkeypatch.setattr(gpt_module, "sinusoidal_positional_encoding", refuse)
    _model("sinusoidal")  # no call
    monkeypatch.undo()
    model = _model("sinusoidal")
    x = _tokens(1, 4, seed=8)
    emb = model.token_embedding.weight.value.numpy()[x[0]]
    table = minitorch.nn.functional.sinusoidal_positional_encoding(CONTEXT, 8).numpy()
    np.testing.assert_allclose(model.position_vectors(4).numpy(), table[:4], rtol=1e-15)
    assert not np.allclose(emb, emb + table[:4])  # the table is not all zeros


@pytest.mark.task6_5
def test_errors() -> None:
    model = _model()
    with pytest.raises(RuntimeError, match=r"TinyGPT.*context_length = 6.*\(1, 7\)"):
        model(_ids(_tokens(1, 7)))
    with pytest.raises(RuntimeError, match=r"TinyGPT.*\[B, T\].*\(6,\)"):
        model(_ids(_tokens(1, 6)[0]))
    with pytest.raises(TypeError, match="TinyGPT: idx must be an int64 tensor"):
        model(minitorch.tensor(_tokens(1, 3).astype(float)))
    with pytest.raises(IndexError, match="out of range"):
        model(_ids([[0, V]]))
    with pytest.raises(ValueError, match="positions"):
        TinyGPT(V, CONTEXT, 8, 2, 1, 12, positions="rotary")
    with pytest.raises(ValueError, match="divisible"):
        TinyGPT(V, CONTEXT, 8, 3, 1, 12)
    with pytest.raises(ValueError, match="num_layers=0"):
        TinyGPT(V, CONTEXT, 8, 2, 0, 12)


# ---------------------------------------------------------------------------------------
# Training, evaluation and generation (library)


@pytest.mark.library
def test_train_step_learns_a_repeated_pattern() -> None:
    model = _model()
    optimizer = Adam(model.parameters(), lr=0.02)
    stream = np.tile(np.arange(V), 20)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(40):
        starts = rng.integers(0, len(stream) - CONTEXT - 1, size=4)
        window = stream[starts[:, None] + np.arange(CONTEXT + 1)]
        losses.append(train_step(model, optimizer, window[:, :-1], window[:, 1:]))
    assert losses[-1] < 0.2 < math.log(V) < losses[0] + 1.0
    assert evaluate(model, stream[:50]) < 0.2


@pytest.mark.library
def test_evaluate_scores_every_position_once_in_windows_of_the_context() -> None:
    model = _model()
    model.train()
    data = _tokens(1, 27, seed=30)[0]  # 26 targets: 4 windows of 6 and one of 2
    expected = 0.0
    for s in range(0, 26, CONTEXT):
        x, y = data[s : min(s + CONTEXT, 26)], data[s + 1 : min(s + CONTEXT, 26) + 1]
        expected += sequence_loss(model(_ids(x[None])), y[None]).item() * len(y)
    assert evaluate(model, data, batch_size=3) == pytest.approx(expected / 26, rel=1e-12)
    assert model.training  # mode restored
    assert evaluate(model, data, seq_len=4) != pytest.approx(expected / 26, rel=1e-6)  # other windows
    with pytest.raises(ValueError, match="seq_len"):
        evaluate(model, data, seq_len=CONTEXT + 1)


@pytest.mark.library
def test_generate_appends_tokens_and_crops_to_the_context() -> None:
    model = _model()
    model.eval()
    prompt = _tokens(2, 9, seed=31)  # longer than the context: only the last 6 are read
    out = model.generate(prompt, 4, temperature=0.0).numpy()
    assert out.shape == (2, 13) and out.dtype == np.int64
    np.testing.assert_array_equal(out[:, :9], prompt)
    window = out[:, :9][:, -CONTEXT:]
    np.testing.assert_array_equal(out[:, 9], model(_ids(window)).numpy()[:, -1].argmax(-1))  # greedy
    again = model.generate(prompt, 4, temperature=1.0, rng=np.random.default_rng(1)).numpy()
    np.testing.assert_array_equal(again, model.generate(prompt, 4, 1.0, np.random.default_rng(1)).numpy())
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(prompt, -1)


@pytest.mark.library
def test_sample_draws_from_softmax_over_temperature() -> None:
    from minitorch.datasets import CharVocab

    vocab = CharVocab.build("abcdefg")
    model = _model()
    text = sample(model, vocab, "abc", 20, temperature=0.7, seed=3)
    assert len(text) == 20 and set(text) <= set("abcdefg")
    assert text == sample(model, vocab, "abc", 20, temperature=0.7, seed=3)
    assert model.training  # mode restored
    # the first draw by hand: softmax(logits / T) with the same generator
    model.eval()
    logits = model(_ids([vocab.encode("abc")])).numpy()[0, -1] / 0.7
    p = np.exp(logits - logits.max())
    first = np.random.default_rng(3).choice(V, p=p / p.sum())
    assert text[0] == vocab.chars[first]
    with pytest.raises(ValueError, match="prompt"):
        sample(model, vocab, "", 3)


# ---------------------------------------------------------------------------------------
# The example (library)


def _example_args(tmp_path: Path, framework: str, steps: int = 30) -> list[str]:
    text = tmp_path / "text.txt"
    if not text.exists():
        text.write_text("to be, or not to be: that is the question.\n" * 40)
    return [
        "--steps",
        str(steps),
        "--eval-every",
        "15",
        "--context",
        "8",
        "--d-model",
        "8",
        "--heads",
        "2",
        "--layers",
        "1",
        "--feedforward",
        "16",
        "--batch-size",
        "4",
        "--eval-batch-size",
        "16",
        "--lr",
        "0.01",
        "--dtype",
        "float64",
        "--text",
        str(text),
        "--prompt",
        "to ",
        "--sample-length",
        "20",
        "--seed",
        "1",
        "--framework",
        framework,
    ]


@pytest.mark.library
def test_example_trains_and_samples(tmp_path: Path) -> None:
    from minitorch.examples import gpt

    out = tmp_path / "out"
    result = gpt.main(_example_args(tmp_path, "minitorch") + ["--out", str(out)])
    assert [e.step for e in result.evals] == [15, 30]
    assert np.mean(result.train_losses[-5:]) < np.mean(result.train_losses[:5]) - 0.5  # it learns
    assert result.final is not None and result.final.perplexity == pytest.approx(
        math.exp(result.final.val_loss)
    )
    assert len(result.sample) == 20 and (out / "sample.txt").read_text() == "to " + result.sample
    lines = (out / "loss_curve.csv").read_text().splitlines()
    assert lines[0] == "step,train_loss,val_loss" and len(lines) == 31 and lines[15].startswith("15,")


@pytest.mark.library
def test_example_refuses_a_prompt_outside_the_vocabulary(tmp_path: Path) -> None:
    from minitorch.examples import gpt

    with pytest.raises(SystemExit, match=r"unknown characters: \['Z'\]"):
        gpt.main(_example_args(tmp_path, "minitorch", steps=1) + ["--prompt", "Zo"])
