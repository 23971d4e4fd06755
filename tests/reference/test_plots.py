"""The examples' pictures, `minitorch.examples.plots` (library): each function writes a PNG of
its figure; heatmaps colour larger values darker and label their rows and columns; bad
inputs are refused with the function's name (with or without matplotlib); without
matplotlib every function, and the examples that draw, say what to install and go on.

The tests that look at pictures skip without matplotlib (the kit's `plot` extra, which `dev`
installs)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from minitorch.examples.plots import Heatmap, bar_chart, color_range, heatmap, heatmaps, loss_curve

pytestmark = pytest.mark.library

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _pixels(path: Path, fig) -> np.ndarray:
    """The RGB pixels [H, W, 3] (floats in [0, 1]) of a PNG file, after checking that it is a
    PNG of the figure's size."""
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = imread(path)
    width, height = fig.get_size_inches() * fig.dpi
    assert image.shape[:2] == (round(height), round(width)), (image.shape, width, height)
    return image[..., :3]


def _pixel_at(image: np.ndarray, ax, x: float, y: float) -> np.ndarray:
    """The colour of the pixel at data coordinates (x, y) of `ax` (after the figure was saved)."""
    px, py = ax.transData.transform((x, y))
    return image[int(image.shape[0] - py), int(px)]


def _brightness(rgb: np.ndarray) -> float:
    return float(np.dot(rgb, [0.299, 0.587, 0.114]))


# ---------------------------------------------------------------------------------------
# The pictures


def test_bar_chart_one_bar_per_label_top_down_with_the_values(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    path = tmp_path / "bars.png"
    fig = bar_chart(path, ["good", "bad", "?"], [1.0, 0.5, -0.25], title="saliency")
    image = _pixels(path, fig)
    ax = fig.axes[0]
    assert [bar.get_width() for bar in ax.patches] == [1.0, 0.5, -0.25]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["good", "bad", "?"]
    assert ax.yaxis_inverted()  # the first label on top
    assert [t.get_text() for t in ax.texts] == ["1", "0.5", "-0.25"]  # each value after its bar
    assert ax.get_title() == "saliency"
    # the bars are drawn: blue for positive values, red for the negative one
    good, negative = (_pixel_at(image, ax, v / 2, row) for v, row in ((1.0, 0), (-0.25, 2)))
    assert good[2] > good[0] + 0.2 and negative[0] > negative[2] + 0.2
    # more labels, a taller picture; longer labels, a wider one
    taller = bar_chart(tmp_path / "taller.png", list("abcdefgh"), np.arange(8.0))
    wider = bar_chart(
        tmp_path / "wider.png", ["a rather long label", "b", "c"], [1.0, 0.5, -0.25], title="saliency"
    )
    assert _pixels(tmp_path / "taller.png", taller).shape[0] > image.shape[0]
    assert _pixels(tmp_path / "wider.png", wider).shape[1] > image.shape[1]


def test_heatmap_larger_values_are_darker_and_labels_are_drawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    m = np.array([[0.0, 0.5, 1.0], [0.25, 0.75, 1.0]])
    path = tmp_path / "h.png"
    fig = heatmap(path, m, row_labels=["a", "b"], col_labels=["x", " ", "z"], title="attention")
    image = _pixels(path, fig)
    ax = fig.axes[0]
    cells = np.array([[_brightness(_pixel_at(image, ax, j, i)) for j in range(3)] for i in range(2)])
    order = np.argsort(m, axis=None, kind="stable")
    assert np.all(np.diff(cells.ravel()[order]) <= 1e-6), cells  # larger value, darker cell
    assert cells[0, 0] > cells[0, 2] + 0.5
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "_", "z"]  # a space is drawn as "_"
    assert all(t.get_rotation() == 0 for t in ax.get_xticklabels())  # one character fits its cell
    assert ax.get_title() == "attention"
    assert (ax.images[0].norm.vmin, ax.images[0].norm.vmax) == (0.0, 1.0)
    # labels too wide for a cell are turned, and make the picture taller
    turned = heatmap(
        tmp_path / "t.png", m, row_labels=["a", "b"], col_labels=["<sos>", "hello", "z"], title="attention"
    )
    assert all(t.get_rotation() == 90 for t in turned.axes[0].get_xticklabels())
    assert _pixels(tmp_path / "t.png", turned).shape[0] > image.shape[0]
    # clipped to [vmin, vmax]: 0.5 and 1.0 get the same, darkest colour
    fig = heatmap(tmp_path / "v.png", m, vmin=0.0, vmax=0.5)
    clipped = _pixels(tmp_path / "v.png", fig)
    np.testing.assert_allclose(_pixel_at(clipped, fig.axes[0], 1, 0), _pixel_at(clipped, fig.axes[0], 2, 0))
    # a constant matrix: the lightest colour everywhere
    fig = heatmap(tmp_path / "k.png", np.full((2, 2), 4.0))
    constant = _pixels(tmp_path / "k.png", fig)
    lightest = _pixel_at(image, ax, 0, 0)
    for i, j in np.ndindex(2, 2):
        np.testing.assert_allclose(_pixel_at(constant, fig.axes[0], j, i), lightest, atol=1 / 255)


def test_heatmap_size_follows_the_matrix(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")

    def size(name: str, matrix: np.ndarray, **labels) -> tuple[int, int]:
        fig = heatmap(tmp_path / name, matrix, **labels)
        return _pixels(tmp_path / name, fig).shape[:2]

    small = size("small.png", np.ones((3, 3)))
    assert size("wide.png", np.ones((3, 12)))[1] > small[1]
    assert size("tall.png", np.ones((12, 3)))[0] > small[0]
    assert size("rows.png", np.ones((3, 3)), row_labels=["first", "second", "third"])[1] > small[1]


def test_heatmaps_draws_each_panel_below_the_previous(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    first = Heatmap(np.array([[0.9, 0.1], [0.2, 0.8]]), ["1", "<eos>"], ["a", "b"], "a b → 1")
    second = Heatmap(np.array([[0.5, 0.25, 0.25]]), ["<eos>"], ["c", "d", "e"], "c d e →")
    fig = heatmaps(tmp_path / "both.png", [first, second])
    image = _pixels(tmp_path / "both.png", fig)
    top, bottom = fig.axes[:2]
    assert [top.get_title(), bottom.get_title()] == ["a b → 1", "c d e →"]
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["c", "d", "e"]
    assert top.get_position().y0 > bottom.get_position().y1  # one below the other
    np.testing.assert_allclose(top.images[0].get_array(), first.matrix)
    one = heatmap(tmp_path / "one.png", first.matrix, first.row_labels, first.col_labels, first.title)
    assert image.shape[0] > _pixels(tmp_path / "one.png", one).shape[0]


def test_loss_curve_draws_the_steps_a_running_mean_and_the_evaluations(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    losses = np.linspace(3.0, 1.0, 100)
    fig = loss_curve(tmp_path / "loss.png", losses, [(50, 2.2), (100, 1.5)], title="char LM", ylabel="nats")
    _pixels(tmp_path / "loss.png", fig)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["train (batch)", "train (mean of 10)", "validation"]
    np.testing.assert_array_equal(
        lines["train (batch)"].get_xdata(), np.arange(1, 101)
    )  # step 1 is the first
    np.testing.assert_allclose(lines["train (mean of 10)"].get_ydata()[0], losses[:10].mean())
    np.testing.assert_array_equal(lines["validation"].get_xydata(), [[50, 2.2], [100, 1.5]])
    assert (ax.get_title(), ax.get_ylabel()) == ("char LM", "nats")
    # a short run has no running mean; a run of no steps (an initial evaluation) is drawn too
    short = loss_curve(tmp_path / "short.png", [2.0, 1.5, 1.2])
    assert [line.get_label() for line in short.axes[0].get_lines()] == ["train (batch)"]
    empty = loss_curve(tmp_path / "empty.png", [], [(0, 4.2)])
    _pixels(tmp_path / "empty.png", empty)


def test_char_lm_writes_the_csv_and_the_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    from minitorch.examples.char_lm import EvalResult, write_loss_curve

    printed = io.StringIO()
    write_loss_curve(tmp_path, [3.0, 2.5, 2.0], [EvalResult(2, 2.4, 2.7, 1.0)], "LM", Console(file=printed))
    assert (tmp_path / "loss_curve.csv").read_text().splitlines()[2] == "2,2.500000,2.400000"
    assert (tmp_path / "loss_curve.png").read_bytes()[:8] == PNG_SIGNATURE
    assert "saved the loss curve" in printed.getvalue()


# ---------------------------------------------------------------------------------------
# Inputs and errors (no matplotlib needed)


def test_color_range_is_unit_for_weights_else_the_matrix_range() -> None:
    assert color_range(np.array([[0.2, 0.7]])) == (0.0, 1.0)
    assert color_range(np.array([[-3.0, 7.0]])) == (-3.0, 7.0)
    assert color_range(np.array([[0.2, 0.7]]), vmax=0.7) == (0.0, 0.7)
    assert color_range(np.array([[4.0, 4.0]])) == (4.0, 5.0)  # constant: the lightest colour
    assert color_range(np.array([[0.5]]), vmin=0.5, vmax=0.5) == (0.5, 1.5)


@pytest.mark.parametrize(
    "draw, message",
    [
        (lambda p: bar_chart(p, ["a", "b"], [1.0]), "bar_chart: 2 labels but 1 values"),
        (
            lambda p: bar_chart(p, [], []),
            r"bar_chart: expected a non-empty sequence of values, got shape \(0,\)",
        ),
        (lambda p: bar_chart(p, ["a", "b"], [1.0, np.inf]), "bar_chart: the values have non-finite entries"),
        (
            lambda p: heatmap(p, np.ones(3)),
            r"heatmap: expected a non-empty matrix \[R, C\], got shape \(3,\)",
        ),
        (lambda p: heatmap(p, np.ones((0, 2))), r"heatmap: .*got shape \(0, 2\)"),
        (
            lambda p: heatmap(p, np.array([[0.5, np.nan]])),
            r"heatmap: the matrix of shape \(1, 2\) has non-finite values",
        ),
        (
            lambda p: heatmap(p, np.ones((3, 2)), row_labels=["a", "b"]),
            r"heatmap: 2 row labels for a matrix of shape \(3, 2\)",
        ),
        (
            lambda p: heatmap(p, np.ones((3, 2)), col_labels=list("abc")),
            r"heatmap: 3 column labels .*\(3, 2\)",
        ),
        (
            lambda p: heatmap(p, np.ones((2, 2)), vmin=1.0, vmax=0.0),
            r"heatmap: vmax \(0.0\) is below vmin \(1.0\)",
        ),
        (lambda p: heatmaps(p, []), "heatmaps: expected at least one Heatmap"),
        (
            lambda p: heatmaps(p, [Heatmap(np.ones((2, 2))), Heatmap(np.ones((2, 2)), ["a"])]),
            r"heatmaps: panel 1: 1 row labels for a matrix of shape \(2, 2\)",
        ),
        (
            lambda p: loss_curve(p, np.ones((2, 2))),
            r"loss_curve: expected a sequence of losses, got shape \(2, 2\)",
        ),
        (lambda p: loss_curve(p, [1.0], [(1, 2.0, 3.0)]), r"loss_curve: evals must be \(step, loss\) pairs"),
    ],
)
def test_bad_inputs_are_refused_with_the_function_name(
    tmp_path: Path, monkeypatch, draw, message: str
) -> None:
    path = tmp_path / "bad.png"
    with pytest.raises(ValueError, match=message):
        draw(path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the same error without matplotlib
    with pytest.raises(ValueError, match=message):
        draw(path)
    assert not path.exists()


# ---------------------------------------------------------------------------------------
# Without matplotlib


def test_without_matplotlib_each_function_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    calls = {
        "bar_chart": lambda p: bar_chart(p, ["a"], [1.0]),
        "heatmap": lambda p: heatmap(p, np.eye(2)),
        "heatmaps": lambda p: heatmaps(p, [Heatmap(np.eye(2))]),
        "loss_curve": lambda p: loss_curve(p, [1.0, 0.5]),
    }
    for name, draw in calls.items():
        with pytest.raises(ModuleNotFoundError) as error:
            draw(tmp_path / f"{name}.png")
        assert str(error.value) == (
            f"{name} needs matplotlib, which is not installed: pip install matplotlib "
            '(or, in the kit\'s checkout, pip install -e ".[plot]")'
        )
        assert error.value.name == "matplotlib"
        assert not (tmp_path / f"{name}.png").exists()


def test_without_matplotlib_the_examples_say_so_and_go_on(tmp_path: Path, monkeypatch) -> None:
    """What `--saliency-png`, `--heatmap-png` and `--out` do without matplotlib: print the
    message and carry on (the seq2seq run: tests/reference/test_seq2seq.py's smoke run)."""
    import minitorch
    from minitorch.examples import sentiment, sentiment_attention
    from minitorch.examples.char_lm import EvalResult, write_loss_curve
    from minitorch.nn.textcnn import TextCNN
    from minitorch.text import Vocab

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    vocab = Vocab.build([["a", "gorgeous", "movie"]], min_freq=1)
    minitorch.manual_seed(0)
    printed = io.StringIO()
    console = Console(file=printed, width=200)
    scores = sentiment.explain(
        TextCNN(len(vocab), 4, 2, num_filters=2),
        vocab,
        "a gorgeous movie",
        console,
        str(tmp_path / "saliency.png"),
    )
    assert [token for token, _ in scores] == ["a", "gorgeous", "movie"]
    assert "no bar chart: bar_chart needs matplotlib" in printed.getvalue()
    weights = sentiment_attention.explain(
        sentiment_attention.AttentionClassifier(len(vocab), emb=4, hidden=4),
        vocab,
        "a gorgeous movie",
        console,
        str(tmp_path / "attention.png"),
    )
    assert len(weights) == 3 and "no heatmap: heatmap needs matplotlib" in printed.getvalue()
    write_loss_curve(tmp_path, [3.0, 2.5], [EvalResult(2, 2.4, 2.7, 1.0)], "LM", console)
    assert (tmp_path / "loss_curve.csv").read_text().splitlines() == [
        "step,train_loss,val_loss",
        "1,3.000000,",
        "2,2.500000,2.400000",
    ]
    assert "loss_curve.csv only: loss_curve needs matplotlib" in printed.getvalue().replace("\n", "")
    assert not list(tmp_path.glob("*.png"))


def test_text_with_dollar_signs_is_drawn_as_written(tmp_path: Path) -> None:
    # matplotlib would read "$5 and $" as a formula: a sentence of the data set must not be one
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the `plot` extra)")
    words = ["it", "cost", "$5", "not", "$10", "$\\frac{"]
    fig = bar_chart(tmp_path / "bars.png", words, np.arange(6.0), title="$x$ saliency")
    assert (tmp_path / "bars.png").read_bytes()[:8] == PNG_SIGNATURE
    drawn = fig.axes[0].get_yticklabels()
    assert [t.get_text().replace("\\$", "$") for t in drawn] == words
    heatmap(tmp_path / "map.png", np.eye(2), row_labels=["$1", "$2$"], col_labels=["$", "$$"], title="$5 $6")
    assert (tmp_path / "map.png").read_bytes()[:8] == PNG_SIGNATURE
