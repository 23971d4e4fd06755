"""The `seq2seq` example (library): the per-row reversal of padded sources, the encoder
against PyTorch's bidirectional GRU over packed sequences, the whole model's loss and every
gradient against a PyTorch twin (float64), greedy decoding against teacher forcing, and a
smoke run of training, and of the command line with the attention heatmaps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.datasets import date_translation, encode_batch
from minitorch.examples import seq2seq
from minitorch.examples.seq2seq import Config, Seq2Seq, attention_table, reverse_padded, sequence_loss, train

pytestmark = pytest.mark.library

BACKEND = minitorch.FastBackend
E, H, A = 3, 4, 5  # embedding, GRU state, attention sizes of the small models


def _torch():
    return pytest.importorskip("torch")


def _model(bidirectional: bool = True, seed: int = 0, src_vocab: int = 9, tgt_vocab: int = 7) -> Seq2Seq:
    minitorch.manual_seed(seed)
    return Seq2Seq(src_vocab, tgt_vocab, E, H, A, bidirectional, dtype=minitorch.float64, backend=BACKEND)


def _batch(src_vocab: int = 9, tgt_vocab: int = 7, seed: int = 0):
    """A random padded batch: sources of lengths 5, 2, 4, 1; targets of lengths 3, 1, 2, 3 (+ <eos>)."""
    rng = np.random.default_rng(seed)
    src_lengths, tgt_lengths = np.array([5, 2, 4, 1]), np.array([3, 1, 2, 3])
    src = np.zeros((4, 5), dtype=np.int64)
    tgt = np.zeros((4, 4), dtype=np.int64)
    for b in range(4):
        src[b, : src_lengths[b]] = rng.integers(3, src_vocab, src_lengths[b])
        tgt[b, : tgt_lengths[b]] = rng.integers(3, tgt_vocab, tgt_lengths[b])
        tgt[b, tgt_lengths[b]] = 2  # <eos>
    tgt_in = np.concatenate([np.ones((4, 1), dtype=np.int64), tgt[:, :-1]], axis=1)
    tgt_in[tgt_in == 2] = 0
    return seq2seq.Seq2SeqBatch(src, src_lengths, tgt_in, tgt, tgt_lengths + 1)


def test_reverse_padded_reverses_each_row_and_keeps_padding() -> None:
    ids = np.array([[5, 6, 7, 0], [8, 9, 0, 0], [1, 2, 3, 4]])
    lengths = np.array([3, 2, 4])
    rev = reverse_padded(ids, lengths)
    np.testing.assert_array_equal(ids[np.arange(3)[:, None], rev], [[7, 6, 5, 0], [9, 8, 0, 0], [4, 3, 2, 1]])
    # an involution: reversing twice restores the order
    np.testing.assert_array_equal(rev[np.arange(3)[:, None], rev], np.broadcast_to(np.arange(4), (3, 4)))


def _torch_encoder(torch, model: Seq2Seq):
    """torch's bidirectional GRU loaded with the encoder's two directions."""
    sd = {k: torch.tensor(v) for k, v in model.state_dict().items()}
    gru = torch.nn.GRU(E, H, batch_first=True, bidirectional=True).double()
    gru.load_state_dict(
        {
            f"{name}{suffix}": sd[f"encoder.{direction}.{name}"]
            for direction, suffix in (("forward_rnn", ""), ("backward_rnn", "_reverse"))
            for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
        }
    )
    return sd, gru


def _torch_encode(torch, sd, gru, src, lengths):
    """keys [B, S, 2H] (zero at padding) and summary [B, 2H] through pack_padded_sequence."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    emb = torch.nn.functional.embedding(torch.tensor(src), sd["encoder.embedding.weight"], padding_idx=0)
    packed = pack_padded_sequence(emb, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    out, h_n = gru(packed)
    keys, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
    return keys, torch.cat([h_n[0], h_n[1]], dim=1)


def test_encoder_matches_torch_bidirectional_gru_over_packed_sequences() -> None:
    torch = _torch()
    model = _model()
    batch = _batch()
    keys, summary = model.encoder(batch.src, batch.src_lengths)
    sd, gru = _torch_encoder(torch, model)
    with torch.no_grad():
        t_keys, t_summary = _torch_encode(torch, sd, gru, batch.src, batch.src_lengths)
    real = np.arange(5)[None, :] < batch.src_lengths[:, None]  # padding positions are masked later: skip them
    np.testing.assert_allclose(keys.numpy()[real], t_keys.numpy()[real], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(summary.numpy(), t_summary.numpy(), rtol=1e-10, atol=1e-12)
    assert keys.shape == (4, 5, 2 * H) and summary.shape == (4, 2 * H)


def test_encoder_does_not_see_padding() -> None:
    model = _model()
    batch = _batch()
    keys, summary = model.encoder(batch.src, batch.src_lengths)
    wider = np.concatenate([batch.src, np.zeros((4, 3), dtype=np.int64)], axis=1)  # three more pad columns
    keys2, summary2 = model.encoder(wider, batch.src_lengths)
    alone, alone_summary = model.encoder(
        batch.src[1:2, :2], batch.src_lengths[1:2]
    )  # row 1 without the others
    np.testing.assert_allclose(summary2.numpy(), summary.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(alone_summary.numpy()[0], summary.numpy()[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(alone.numpy()[0], keys.numpy()[1, :2], rtol=1e-12, atol=1e-14)
    for b, n in enumerate(batch.src_lengths):
        np.testing.assert_allclose(keys2.numpy()[b, :n], keys.numpy()[b, :n], rtol=1e-12, atol=1e-14)
    one_way, one_way_summary = _model(bidirectional=False).encoder(batch.src, batch.src_lengths)
    assert one_way.shape == (4, 5, H) and one_way_summary.shape == (4, H)
    np.testing.assert_allclose(one_way_summary.numpy(), one_way.numpy()[np.arange(4), batch.src_lengths - 1])


def _torch_loss(torch, model: Seq2Seq, batch):
    """The model's teacher-forced loss written with PyTorch, from the same parameters."""
    sd, gru = _torch_encoder(torch, model)
    params = {k: v.requires_grad_(True) for k, v in sd.items()}
    gru_params = dict(gru.named_parameters())
    keys, summary = _torch_encode(torch, params, gru, batch.src, batch.src_lengths)
    F = torch.nn.functional
    padding = torch.tensor(np.arange(batch.src.shape[1])[None, :] >= batch.src_lengths[:, None])
    state = torch.tanh(F.linear(summary, params["bridge.weight"], params["bridge.bias"]))
    projected = keys @ params["decoder.attention.key_proj.weight"].T  # U k_j
    embedded = F.embedding(torch.tensor(batch.tgt_in), params["decoder.embedding.weight"], padding_idx=0)
    logits = []
    for t in range(batch.tgt_in.shape[1]):
        scores = (
            torch.tanh((state @ params["decoder.attention.query_proj.weight"].T)[:, None, :] + projected)
            @ params["decoder.attention.v"]
        )
        weights = torch.softmax(scores.masked_fill(padding, float("-inf")), dim=1)
        context = (weights[:, :, None] * keys).sum(1)
        state = torch.gru_cell(
            torch.cat([embedded[:, t], context], 1),
            state,
            params["decoder.cell.weight_ih"],
            params["decoder.cell.weight_hh"],
            params["decoder.cell.bias_ih"],
            params["decoder.cell.bias_hh"],
        )
        logits.append(
            F.linear(
                torch.cat([state, context, embedded[:, t]], 1),
                params["decoder.out.weight"],
                params["decoder.out.bias"],
            )
        )
    logits = torch.stack(logits, 1)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), torch.tensor(batch.tgt_out).reshape(-1), ignore_index=0
    )
    loss.backward()
    grads = {k: p.grad for k, p in params.items() if not k.startswith("encoder.") or "embedding" in k}
    for direction, suffix in (("forward_rnn", ""), ("backward_rnn", "_reverse")):
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            grads[f"encoder.{direction}.{name}"] = gru_params[f"{name}{suffix}"].grad
    return loss, grads


def test_loss_and_every_gradient_match_a_torch_twin() -> None:
    torch = _torch()
    model = _model()
    batch = _batch()
    loss = sequence_loss(model(batch), batch.tgt_out)
    loss.backward()
    t_loss, t_grads = _torch_loss(torch, model, batch)
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-10)
    named = dict(model.named_parameters())
    assert set(named) == set(t_grads)
    for name, p in named.items():
        assert p.value.grad is not None, name
        np.testing.assert_allclose(
            p.value.grad.numpy(), t_grads[name].numpy(), rtol=1e-9, atol=1e-12, err_msg=name
        )
    assert np.abs(named["decoder.attention.v"].value.grad.numpy()).max() > 1e-6  # attention is in the graph
    np.testing.assert_array_equal(named["encoder.embedding.weight"].value.grad.numpy()[0], 0)  # <pad> row


def test_greedy_decoding_agrees_with_teacher_forcing_on_its_own_output() -> None:
    """Fed its own greedy outputs as teacher-forced inputs, the model predicts the same ids
    (the two code paths compute the same decoder), and the weights are distributions over
    the real source positions."""
    model = _model(seed=3)
    batch = _batch(seed=3)
    ids, weights = model.greedy(batch.src, batch.src_lengths, max_len=6)
    assert ids.shape[0] == 4 and ids.shape[1] <= 6 and weights.shape == (4, ids.shape[1], 5)
    for b in range(4):
        n = batch.src_lengths[b]
        np.testing.assert_allclose(weights[b, :, :n].sum(-1), 1.0, rtol=1e-12)
        np.testing.assert_array_equal(weights[b, :, n:], 0.0)
    tgt_in = np.concatenate([np.ones((4, 1), dtype=np.int64), ids[:, :-1]], axis=1)
    forced = seq2seq.Seq2SeqBatch(batch.src, batch.src_lengths, tgt_in, ids, batch.tgt_lengths)
    predicted = model(forced).numpy().argmax(-1)
    for b in range(4):
        row = list(ids[b])
        end = row.index(2) + 1 if 2 in row else len(row)  # compare up to the first <eos>
        np.testing.assert_array_equal(predicted[b, :end], ids[b, :end])


def test_heatmap_examples_prefer_different_layouts() -> None:
    sources = ["3/3/98", "12/25/05", "march 3, 1998", "may 9, 2001", "03.03.1998"]
    assert seq2seq.diverse_examples(sources, 3) == ["3/3/98", "march 3, 1998", "03.03.1998"]
    assert seq2seq.diverse_examples(sources[:2], 2) == ["3/3/98", "12/25/05"]  # then the first ones left
    assert seq2seq.diverse_examples(sources, 1) == ["3/3/98"]


def test_attention_table_shows_percentages() -> None:
    table = attention_table("a b", ["1", "<eos>"], np.array([[0.9, 0.04, 0.06], [0.0, 0.5, 0.5]]))
    assert table.splitlines() == ["        a  _  b", "    1  90  .  6", "<eos>   . 50 50"]


def test_training_smoke_run_learns_decodes_and_draws(tmp_path: Path, capsys, monkeypatch) -> None:
    """... without matplotlib (the heatmaps are drawn in test_command_line_prints_the_scores):
    the run says what to install, even when quiet, and goes on."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    # small sizes: every tensor stays under the fast backend's one-thread size (one thread: quick on a busy machine)
    config = Config(
        steps=30,
        batch_size=8,
        embedding=16,
        hidden=16,
        attention=16,
        lr=1e-2,
        eval_every=15,
        eval_size=20,
        n_train=1000,
        n_val=40,
        n_test=40,
        heatmap_png=str(tmp_path / "att.png"),
        heatmap_examples=2,
    )
    result = train(config, quiet=True)
    losses = result.train_losses
    assert len(losses) == 30 and all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])  # it learns
    assert [s for s, _ in result.evals] == [15, 30]
    assert 0.0 <= result.val_accuracy <= 1.0 and 0.0 <= result.test_accuracy <= 1.0
    assert "no heatmaps: heatmaps needs matplotlib" in capsys.readouterr().out
    assert not (tmp_path / "att.png").exists()
    assert len(result.tables) == 2 and result.tables[0].startswith(repr(result.data.test.sources[0]))
    outputs, ids, weights = seq2seq.translate(result.model, result.data, result.data.test.sources[:3])
    assert len(outputs) == 3 and all(set(o) <= set("0123456789-") for o in outputs)
    # the exact-match score counts whole strings
    data = result.data
    got = seq2seq.exact_match(result.model, data, data.test, batch_size=7)
    expected = np.mean(
        [
            o == t
            for o, t in zip(seq2seq.translate(result.model, data, data.test.sources)[0], data.test.targets)
        ]
    )
    assert got == pytest.approx(expected)


def test_command_line_prints_the_scores(tmp_path: Path, capsys) -> None:
    png = tmp_path / "att.png"
    seq2seq.main(
        [
            "--steps",
            "4",
            "--eval-every",
            "2",
            "--eval-size",
            "8",
            "--n-train",
            "200",
            "--n-val",
            "8",
            "--n-test",
            "8",
            "--hidden",
            "8",
            "--embedding",
            "8",
            "--attention",
            "8",
            "--unidirectional",
            "--heatmap-png",
            str(png),
            "--heatmap-examples",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert "exact match: validation" in out and "test" in out and "attention" in out
    if importlib.util.find_spec("matplotlib") is not None:
        from matplotlib.image import imread

        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "wrote the attention heatmaps" in out
        height, width = imread(png).shape[:2]
        assert height > 100 and width > 100
    else:  # matplotlib is optional: the run says so and goes on
        assert "heatmaps needs matplotlib" in out and not png.exists()
    with pytest.raises(SystemExit):
        seq2seq.parse_args(["--heatmap-examples", "0"])


def test_real_data_batches_run_through_the_model() -> None:
    data = date_translation(20, 2, 2, seed=0)
    minitorch.manual_seed(0)
    model = Seq2Seq(
        len(data.src_vocab), len(data.tgt_vocab), 4, 6, 5, dtype=minitorch.float64, backend=BACKEND
    )
    batch = encode_batch(data.train.sources[:5], data.train.targets[:5], data.src_vocab, data.tgt_vocab)
    logits = model(batch)
    assert logits.shape == (5, 11, len(data.tgt_vocab))
    # an untrained model is close to uniform over the 14 target tokens
    assert abs(sequence_loss(logits, batch.tgt_out).item() - np.log(len(data.tgt_vocab))) < 0.5
