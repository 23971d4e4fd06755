"""The examples' pictures, drawn with matplotlib into PNG files.

    bar_chart("saliency.png", ["a", "gem"], [0.2, 1.3], title="saliency")
    heatmap("attention.png", weights, row_labels=list("1998-03-03"), col_labels=list("3/3/98"))
    heatmaps("alignments.png", [Heatmap(w1, rows1, cols1, "first"), Heatmap(w2, rows2, cols2, "second")])
    loss_curve("loss_curve.png", train_losses, evals=[(100, 2.1), (200, 1.8)], title="char LSTM")

matplotlib is optional (the kit's `plot` extra): the library and its tests do not need it.
Without it each function raises a ModuleNotFoundError that says what to install; the
examples print that message and carry on. The inputs are checked before matplotlib is
imported, so a bad input is reported the same way with or without it.

Each function draws on its own `matplotlib.figure.Figure` with the Agg canvas (the backend
that renders to pixels, no window): pyplot is not used, so nothing changes the backend or the
figures of a notebook or script that calls these functions. Each returns its Figure, already
saved, to look at or draw on further.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Heatmap", "bar_chart", "heatmap", "heatmaps", "loss_curve", "missing_matplotlib_message"]

DPI = 100  # pixels per inch of the PNG files: a figure of w × h inches is a picture of 100·w × 100·h pixels
CELL = 0.4  # inches per heatmap cell
CHAR = 0.08  # inches per character of a label (matplotlib's default 10-point font, roughly)


def missing_matplotlib_message(function: str) -> str:
    """What `function` says when matplotlib is not installed."""
    return (
        f"{function} needs matplotlib, which is not installed: pip install matplotlib "
        '(or, in the kit\'s checkout, pip install -e ".[plot]")'
    )


def _figure(function: str, width: float, height: float) -> Figure:
    """A new figure of width × height inches on the Agg canvas, or the error that names the missing package."""
    try:
        import matplotlib.backends.backend_agg
        import matplotlib.figure
    except ImportError:
        raise ModuleNotFoundError(missing_matplotlib_message(function), name="matplotlib") from None
    fig = matplotlib.figure.Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    matplotlib.backends.backend_agg.FigureCanvasAgg(fig)  # renders the figure to pixels: the PNG
    return fig


# ---------------------------------------------------------------------------------------
# Bar chart


def bar_chart(
    path: Union[str, Path], labels: Sequence[str], values: Sequence[float], title: Optional[str] = None
) -> Figure:
    """A horizontal bar chart: one bar per label, top to bottom in the order given, each
    value written after its bar (negative values drawn in red, to the left of zero)."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"bar_chart: expected a non-empty sequence of values, got shape {v.shape}")
    if len(labels) != len(v):
        raise ValueError(f"bar_chart: {len(labels)} labels but {len(v)} values")
    if not np.isfinite(v).all():
        raise ValueError(f"bar_chart: the values have non-finite entries (NaN or inf): {v.tolist()}")
    longest = max(len(str(label)) for label in labels)
    fig = _figure("bar_chart", 6.0 + CHAR * longest, 0.8 + 0.3 * len(v) + (0.3 if title else 0.0))
    ax = fig.subplots()
    rows = np.arange(len(v))
    bars = ax.barh(rows, v, color=["steelblue" if x >= 0 else "indianred" for x in v])
    ax.bar_label(bars, fmt="%.3g", padding=3)
    ax.set_yticks(rows, labels=[_plain(label) for label in labels])
    ax.invert_yaxis()  # the first label on top, as the words of a sentence are read
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.margins(x=0.15)  # room for the values after the longest bars
    if title:
        ax.set_title(_plain(title))
    fig.savefig(path)
    return fig


# ---------------------------------------------------------------------------------------
# Heatmaps


@dataclass
class Heatmap:
    """One heatmap of `heatmaps`: a matrix [R, C], a label per row and per column, a title."""

    matrix: np.ndarray
    row_labels: Optional[Sequence[str]] = None
    col_labels: Optional[Sequence[str]] = None
    title: Optional[str] = None


def color_range(
    matrix: np.ndarray, vmin: Optional[float] = None, vmax: Optional[float] = None
) -> tuple[float, float]:
    """The values drawn lightest and darkest: [vmin, vmax] where given; otherwise [0, 1] when
    every value lies in it (attention weights, probabilities: pictures can then be compared),
    else the matrix's own minimum and maximum. An empty range [c, c] (a constant matrix)
    becomes [c, c + 1]: every cell gets the lightest colour."""
    m = np.asarray(matrix, dtype=np.float64)
    in_unit = m.min() >= 0.0 and m.max() <= 1.0
    lo = float(vmin) if vmin is not None else (0.0 if in_unit else float(m.min()))
    hi = float(vmax) if vmax is not None else (1.0 if in_unit else float(m.max()))
    return (lo, lo + 1.0) if hi == lo else (lo, hi)


def _checked(where: str, panel: Heatmap, vmin: Optional[float], vmax: Optional[float]) -> np.ndarray:
    """The panel's matrix as floats, after checking its shape, values and labels (errors start with `where`)."""
    m = np.asarray(panel.matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"{where}: expected a non-empty matrix [R, C], got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{where}: the matrix of shape {m.shape} has non-finite values (NaN or inf)")
    if panel.row_labels is not None and len(panel.row_labels) != m.shape[0]:
        raise ValueError(f"{where}: {len(panel.row_labels)} row labels for a matrix of shape {m.shape}")
    if panel.col_labels is not None and len(panel.col_labels) != m.shape[1]:
        raise ValueError(f"{where}: {len(panel.col_labels)} column labels for a matrix of shape {m.shape}")
    lo, hi = color_range(m, vmin, vmax)
    if hi < lo:
        raise ValueError(f"{where}: vmax ({hi}) is below vmin ({lo})")
    return m


def _plain(text: object) -> str:
    """Text drawn as it is written: matplotlib reads text between two `$` as a formula
    (mathtext, which can fail on a sentence such as "$5 and $10"); an escaped `\\$` is a dollar."""
    return str(text).replace("$", r"\$")


def _visible(label: str) -> str:
    """A label as drawn: a space would be invisible, so it is drawn as "_"."""
    return "_" if label == " " else _plain(label)


def _turned(panel: Heatmap) -> bool:
    """Whether the column labels are written vertically: when one is too wide for its cell
    (more than 4 characters: 4 × CHAR leaves a little room in a cell of CELL inches)."""
    return panel.col_labels is not None and max(len(_visible(s)) for s in panel.col_labels) > 4


def _size(panel: Heatmap, rows: int, cols: int) -> tuple[float, float]:
    """Width and height (inches) that give the panel's cells about CELL inches a side."""
    row_label_w = CHAR * max(len(_visible(s)) for s in panel.row_labels) + 0.2 if panel.row_labels else 0.0
    if panel.col_labels is None:
        col_label_h = 0.0
    elif _turned(panel):
        col_label_h = CHAR * max(len(_visible(s)) for s in panel.col_labels) + 0.2
    else:
        col_label_h = 0.3
    title_h = 0.4 if panel.title else 0.0
    width = 0.4 + row_label_w + CELL * cols + 1.0  # 1.0: the colour bar and its values
    height = 0.3 + title_h + col_label_h + max(CELL * rows, 1.0)  # at least an inch: a readable colour bar
    return width, height


def heatmaps(
    path: Union[str, Path],
    panels: Sequence[Heatmap],
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
) -> Figure:
    """Several heatmaps one below the other in one PNG file, each with its colour bar.

    Each matrix [R, C] is drawn as R × C cells, white for the smallest values to dark blue for
    the largest (matplotlib's "Blues"), its colours spanning `color_range(matrix, vmin, vmax)`
    (values outside it get the end colours). Row labels are written left of the cells, column
    labels above them (turned when one is too wide for its cell), the title above everything.
    """
    if len(panels) == 0:
        raise ValueError("heatmaps: expected at least one Heatmap")
    matrices = [_checked(f"heatmaps: panel {i}", panel, vmin, vmax) for i, panel in enumerate(panels)]
    return _draw_heatmaps("heatmaps", path, panels, matrices, vmin, vmax)


def heatmap(
    path: Union[str, Path],
    matrix: np.ndarray,
    row_labels: Optional[Sequence[str]] = None,
    col_labels: Optional[Sequence[str]] = None,
    title: Optional[str] = None,
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
) -> Figure:
    """The heatmap of `matrix` [R, C] in a PNG file: `heatmaps` (see there) with one panel."""
    panel = Heatmap(matrix, row_labels, col_labels, title)
    return _draw_heatmaps("heatmap", path, [panel], [_checked("heatmap", panel, vmin, vmax)], vmin, vmax)


def _draw_heatmaps(
    function: str,
    path: Union[str, Path],
    panels: Sequence[Heatmap],
    matrices: Sequence[np.ndarray],
    vmin: Optional[float],
    vmax: Optional[float],
) -> Figure:
    """Draw the checked `matrices` of `panels` one below the other (`function` names the caller in errors)."""
    sizes = [_size(panel, *m.shape) for panel, m in zip(panels, matrices)]
    fig = _figure(function, max(w for w, _ in sizes), sum(h for _, h in sizes))
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=[h for _, h in sizes])[:, 0]
    for ax, panel, m in zip(axes, panels, matrices):
        rows, cols = m.shape
        lo, hi = color_range(m, vmin, vmax)
        image = ax.imshow(m, cmap="Blues", vmin=lo, vmax=hi, aspect="auto", interpolation="nearest")
        fig.colorbar(image, ax=ax)
        ax.xaxis.tick_top()  # column labels above the cells
        if panel.col_labels is not None:
            ax.set_xticks(np.arange(cols), labels=[_visible(s) for s in panel.col_labels])
        else:
            ax.set_xticks([])
        if panel.row_labels is not None:
            ax.set_yticks(np.arange(rows), labels=[_visible(s) for s in panel.row_labels])
        else:
            ax.set_yticks([])
        ax.tick_params(length=0)
        ax.tick_params(axis="x", labelrotation=90 if _turned(panel) else 0)
        # thin white lines between the cells
        ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
        if panel.title:
            ax.set_title(_plain(panel.title))
    fig.savefig(path)
    return fig


# ---------------------------------------------------------------------------------------
# Loss curve


def loss_curve(
    path: Union[str, Path],
    train_losses: Sequence[float],
    evals: Sequence[tuple[int, float]] = (),
    title: Optional[str] = None,
    ylabel: str = "loss",
) -> Figure:
    """The training loss of every step (light grey), its running mean over up to 50 steps and
    the validation loss at each evaluation `evals` = [(step, loss), ...]; step 1 is the first
    training step. A NaN loss (a diverged run) leaves a gap."""
    losses = np.asarray(train_losses, dtype=np.float64)
    if losses.ndim != 1:
        raise ValueError(f"loss_curve: expected a sequence of losses, got shape {losses.shape}")
    if any(len(e) != 2 for e in evals):
        raise ValueError(f"loss_curve: evals must be (step, loss) pairs, got {list(evals)}")
    points = np.asarray(evals, dtype=np.float64).reshape(len(evals), 2)
    fig = _figure("loss_curve", 7.0, 4.0)
    ax = fig.subplots()
    steps = np.arange(1, len(losses) + 1)
    ax.plot(steps, losses, color="0.75", linewidth=0.7, label="train (batch)")
    k = min(50, len(losses) // 10)
    if k > 1:
        ax.plot(
            steps[k - 1 :], np.convolve(losses, np.ones(k) / k, mode="valid"), label=f"train (mean of {k})"
        )
    if len(points):
        ax.plot(points[:, 0], points[:, 1], "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(_plain(title))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path)
    return fig
