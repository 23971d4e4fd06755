"""A tiny PNG writer, a horizontal bar chart and a heatmap, with the standard library and NumPy only.

    write_png("img.png", rgb)                           # rgb: uint8 array [H, W, 3]
    bar_chart_png("saliency.png", ["a", "gem"], [0.2, 1.3], title="saliency")
    heatmap_png("attention.png", weights, row_labels=list("1998-03-03"), col_labels=list("3/3/98"))
    write_png("two.png", stack_images([heatmap_image(w1), heatmap_image(w2)]))   # several in one file

A PNG file is a signature and a sequence of chunks (length, type, data, CRC-32): IHDR (size,
8-bit RGB), IDAT (the zlib-compressed rows, each prefixed by a filter byte, 0 = none) and
IEND. Text is drawn with a built-in 5×7 bitmap font (lower-case letters, digits and common
punctuation; upper case is drawn in lower case, anything else as a box), so no plotting
library is needed.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

__all__ = ["write_png", "bar_chart_png", "heatmap_png", "heatmap_image", "stack_images", "render_text"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path: Union[str, Path], rgb: np.ndarray) -> None:
    """Write an 8-bit RGB image (uint8 array [H, W, 3]) as a PNG file."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"write_png: expected an array [H, W, 3], got shape {rgb.shape}")
    height, width, _ = rgb.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit, RGB, no interlace
    data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + _chunk(b"IEND", b""))
    Path(path).write_bytes(data)


# A 5×7 font: 7 rows of 5 pixels per glyph, '#' = ink. A character cell is 9 rows: most
# glyphs fill rows 0–6; those with a descender (_DESCENDERS) fill rows 2–8.
_FONT_ROWS = {
    "a": ".....|.....|.###.|....#|.####|#...#|.####",
    "b": "#....|#....|#.##.|##..#|#...#|#...#|####.",
    "c": ".....|.....|.###.|#....|#....|#...#|.###.",
    "d": "....#|....#|.##.#|#..##|#...#|#...#|.####",
    "e": ".....|.....|.###.|#...#|#####|#....|.###.",
    "f": "..##.|.#..#|.#...|###..|.#...|.#...|.#...",
    "g": ".####|#...#|#...#|#...#|.####|....#|.###.",
    "h": "#....|#....|#.##.|##..#|#...#|#...#|#...#",
    "i": "..#..|.....|.##..|..#..|..#..|..#..|.###.",
    "j": "...#.|.....|..##.|...#.|...#.|#..#.|.##..",
    "k": "#....|#....|#..#.|#.#..|##...|#.#..|#..#.",
    "l": ".##..|..#..|..#..|..#..|..#..|..#..|.###.",
    "m": ".....|.....|##.#.|#.#.#|#.#.#|#...#|#...#",
    "n": ".....|.....|#.##.|##..#|#...#|#...#|#...#",
    "o": ".....|.....|.###.|#...#|#...#|#...#|.###.",
    "p": "####.|#...#|#...#|#...#|####.|#....|#....",
    "q": ".####|#...#|#...#|#...#|.####|....#|....#",
    "r": ".....|.....|#.##.|##..#|#....|#....|#....",
    "s": ".....|.....|.###.|#....|.###.|....#|####.",
    "t": ".#...|.#...|###..|.#...|.#...|.#..#|..##.",
    "u": ".....|.....|#...#|#...#|#...#|#..##|.##.#",
    "v": ".....|.....|#...#|#...#|#...#|.#.#.|..#..",
    "w": ".....|.....|#...#|#...#|#.#.#|#.#.#|.#.#.",
    "x": ".....|.....|#...#|.#.#.|..#..|.#.#.|#...#",
    "y": "#...#|#...#|#...#|#...#|.####|....#|.###.",
    "z": ".....|.....|#####|...#.|..#..|.#...|#####",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "#####|...#.|..#..|...#.|....#|#...#|.###.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    " ": ".....|.....|.....|.....|.....|.....|.....",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    "!": "..#..|..#..|..#..|..#..|..#..|.....|..#..",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
    "'": "..#..|..#..|.#...|.....|.....|.....|.....",
    '"': ".#.#.|.#.#.|.....|.....|.....|.....|.....",
    "-": ".....|.....|.....|#####|.....|.....|.....",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    ";": ".....|.##..|.##..|.....|.##..|..#..|.#...",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "/": ".....|....#|...#.|..#..|.#...|#....|.....",
    "&": ".##..|#..#.|#.#..|.#...|#.#.#|#..#.|.##.#",
    "%": "##...|##..#|...#.|..#..|.#...|#..##|...##",
    "*": ".....|..#..|#.#.#|.###.|#.#.#|..#..|.....",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.",
    ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "#": ".#.#.|.#.#.|#####|.#.#.|#####|.#.#.|.#.#.",
    "$": "..#..|.####|#.#..|.###.|..#.#|####.|..#..",
}
_DESCENDERS = set("gpqy")
_BOX = "#####|#...#|#...#|#...#|#...#|#...#|#####"
_FONT = {ch: np.array([[c == "#" for c in row] for row in rows.split("|")]) for ch, rows in _FONT_ROWS.items()}


def _glyph(ch: str) -> np.ndarray:
    """The 9 × 5 ink mask of one character's cell."""
    ch = ch.lower()
    g = _FONT.get(ch)
    if g is None:
        g = np.array([[c == "#" for c in row] for row in _BOX.split("|")])
    return np.pad(g, ((2, 0), (0, 0)) if ch in _DESCENDERS else ((0, 2), (0, 0)))


def render_text(text: str, scale: int = 2) -> np.ndarray:
    """A boolean ink mask [9·scale, 6·scale·len] of `text` in the 5×7 font (1 pixel spacing)."""
    if not text:
        return np.zeros((9 * scale, 0), dtype=bool)
    cells = [np.pad(_glyph(ch), ((0, 0), (0, 1))) for ch in text]
    mask = np.concatenate(cells, axis=1)
    return np.kron(mask, np.ones((scale, scale), dtype=bool)).astype(bool)


def _draw(img: np.ndarray, mask: np.ndarray, top: int, left: int, color: Sequence[int]) -> None:
    h = min(mask.shape[0], img.shape[0] - top)
    w = min(mask.shape[1], img.shape[1] - left)
    if h > 0 and w > 0:
        region = img[top : top + h, left : left + w]
        region[mask[:h, :w]] = color


def bar_chart_png(
    path: Union[str, Path],
    labels: Sequence[str],
    values: Sequence[float],
    title: Optional[str] = None,
    bar_width: int = 360,
    scale: int = 2,
) -> None:
    """Write a horizontal bar chart: one row per label, bars proportional to the values
    (the largest fills `bar_width` pixels), each value printed after its bar."""
    if len(labels) != len(values):
        raise ValueError(f"bar_chart_png: {len(labels)} labels but {len(values)} values")
    values = [float(v) for v in values]
    top_value = max([abs(v) for v in values] + [1e-12])
    char_w, char_h = 6 * scale, 9 * scale
    row_h, pad = char_h + 2 * scale, 4 * scale
    label_w = max([len(s) for s in labels] + [1]) * char_w
    value_w = 7 * char_w
    title_h = (char_h + 2 * pad) if title else pad
    width = pad + label_w + pad + bar_width + pad + value_w + pad
    height = title_h + row_h * len(labels) + pad
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    ink, bar, neg = (30, 30, 30), (70, 130, 180), (200, 90, 70)
    if title:
        _draw(img, render_text(title, scale), pad, pad, ink)
    for i, (label, v) in enumerate(zip(labels, values)):
        y = title_h + i * row_h
        text = render_text(label, scale)
        _draw(img, text, y + (row_h - char_h) // 2, pad + label_w - text.shape[1], ink)
        x0 = pad + label_w + pad
        length = int(round(bar_width * abs(v) / top_value))
        img[y + scale : y + row_h - scale, x0 : x0 + length] = bar if v >= 0 else neg
        _draw(img, render_text(f"{v:.3g}", scale), y + (row_h - char_h) // 2, x0 + length + pad, ink)
    write_png(path, img)


# The colour ramp of `heatmap_png`: white → dark blue (the stops of ColorBrewer's "Blues"),
# its lightness falling monotonically, so a darker cell always means a larger value.
_RAMP = np.array([(247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107)], dtype=np.float64)


def _ramp(t: np.ndarray) -> np.ndarray:
    """Colours (uint8 [..., 3]) of values t in [0, 1], linearly interpolated between `_RAMP`'s stops."""
    x = np.clip(t, 0.0, 1.0) * (len(_RAMP) - 1)
    lo = np.minimum(np.floor(x).astype(int), len(_RAMP) - 2)
    frac = (x - lo)[..., None]
    return np.round(_RAMP[lo] * (1 - frac) + _RAMP[lo + 1] * frac).astype(np.uint8)


def heatmap_png(
    path: Union[str, Path],
    matrix: np.ndarray,
    row_labels: Optional[Sequence[str]] = None,
    col_labels: Optional[Sequence[str]] = None,
    title: Optional[str] = None,
    cell: int = 24,
    scale: int = 2,
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
) -> None:
    """Write the heatmap of `matrix` [R, C] as a PNG file: `heatmap_image` (see there) saved
    with `write_png`. Values in [0, 1] are drawn on the range [0, 1], any other range is
    normalised to the matrix's minimum and maximum (unless vmin / vmax are given)."""
    write_png(path, heatmap_image(matrix, row_labels, col_labels, title, cell, scale, vmin, vmax))


def heatmap_image(
    matrix: np.ndarray,
    row_labels: Optional[Sequence[str]] = None,
    col_labels: Optional[Sequence[str]] = None,
    title: Optional[str] = None,
    cell: int = 24,
    scale: int = 2,
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
) -> np.ndarray:
    """The heatmap of a matrix [R, C] as an RGB image (uint8 [H, W, 3]): one square cell of
    `cell` pixels per entry, white for the smallest values to dark blue for the largest, with
    a colour bar on the right.

    Values are mapped linearly from [vmin, vmax] to the colour ramp (values outside are clipped).
    By default the range is [0, 1] when every value lies in it (attention weights, probabilities:
    the colours of two pictures can then be compared), otherwise the matrix's own minimum and
    maximum (the matrix is normalised); a constant matrix is drawn in the lightest colour.

    `row_labels` (one per row) are written left of the grid, `col_labels` (one per column)
    above it: horizontally when every label fits in its cell, otherwise turned 90° (read from
    bottom to top). Labels use the built-in 5×7 font at `scale`; a label of one space is drawn
    as "_" so that it stays visible. `title` is written above everything.
    """
    m = np.asarray(matrix, dtype=np.float64)  # errors say heatmap_png, the function users call
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"heatmap_png: expected a non-empty matrix [R, C], got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"heatmap_png: the matrix of shape {m.shape} has non-finite values (NaN or inf)")
    rows, cols = m.shape
    if row_labels is not None and len(row_labels) != rows:
        raise ValueError(f"heatmap_png: {len(row_labels)} row labels for a matrix of shape {m.shape}")
    if col_labels is not None and len(col_labels) != cols:
        raise ValueError(f"heatmap_png: {len(col_labels)} column labels for a matrix of shape {m.shape}")
    if cell < 2 or scale < 1:
        raise ValueError(f"heatmap_png: cell must be ≥ 2 and scale ≥ 1, got cell={cell}, scale={scale}")
    in_unit = m.min() >= 0.0 and m.max() <= 1.0
    lo = float(vmin) if vmin is not None else (0.0 if in_unit else float(m.min()))
    hi = float(vmax) if vmax is not None else (1.0 if in_unit else float(m.max()))
    if hi < lo:
        raise ValueError(f"heatmap_png: vmax ({hi}) is below vmin ({lo})")
    t = (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)

    def visible(label: str) -> str:
        return "_" if label == " " else str(label)

    char_h, pad = 9 * scale, 4 * scale
    row_texts = [render_text(visible(s), scale) for s in row_labels] if row_labels is not None else []
    col_texts = [render_text(visible(s), scale) for s in col_labels] if col_labels is not None else []
    if col_texts and any(c.shape[1] > cell for c in col_texts):
        col_texts = [np.rot90(c) for c in col_texts]  # turned: read from bottom to top
    label_w = max([c.shape[1] for c in row_texts] + [0])
    label_h = max([c.shape[0] for c in col_texts] + [0])
    title_h = char_h + pad if title else 0
    hi_text, lo_text = render_text(f"{hi:.3g}", scale), render_text(f"{lo:.3g}", scale)
    bar_w = max(cell // 2, 2 * scale)  # the colour bar, its two values right of it
    tick_w = max(hi_text.shape[1], lo_text.shape[1])
    grid_top = pad + title_h + (label_h + pad if col_texts else 0)
    grid_left = pad + (label_w + pad if row_texts else 0)
    grid_h, grid_w = rows * cell, cols * cell
    bar_left = grid_left + grid_w + 2 * pad
    title_text = render_text(title, scale) if title else None
    width = max(bar_left + bar_w + pad + tick_w + pad, pad + (title_text.shape[1] if title_text is not None else 0) + pad)
    height = grid_top + max(grid_h, 2 * char_h) + pad
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    ink, line = (30, 30, 30), (200, 200, 200)
    if title_text is not None:  # the picture is widened to hold the whole title
        _draw(img, title_text, pad, pad, ink)
    # The cells: each a square of its colour, separated by 1-pixel light-grey lines.
    colours = _ramp(t)
    img[grid_top : grid_top + grid_h + 1, grid_left : grid_left + grid_w + 1] = line
    for i in range(rows):
        for j in range(cols):
            y, x = grid_top + i * cell, grid_left + j * cell
            img[y + 1 : y + cell, x + 1 : x + cell] = colours[i, j]
    for i, text in enumerate(row_texts):  # right-aligned, centred on the row
        y = grid_top + i * cell + (cell - text.shape[0]) // 2
        _draw(img, text, max(y, 0), grid_left - pad - text.shape[1], ink)
    for j, text in enumerate(col_texts):  # centred on the column, bottom-aligned above the grid
        x = grid_left + j * cell + (cell - text.shape[1]) // 2
        _draw(img, text, grid_top - pad - text.shape[0], max(x, 0), ink)
    # The colour bar: the ramp from hi (top) to lo (bottom), labelled at both ends.
    bar_h = max(grid_h, 2 * char_h)
    ramp = _ramp(np.linspace(1.0, 0.0, bar_h))
    img[grid_top : grid_top + bar_h, bar_left : bar_left + bar_w] = ramp[:, None, :]
    _draw(img, hi_text, grid_top, bar_left + bar_w + pad, ink)
    _draw(img, lo_text, grid_top + bar_h - char_h, bar_left + bar_w + pad, ink)
    return img


def stack_images(images: Sequence[np.ndarray], gap: int = 8) -> np.ndarray:
    """RGB images (uint8 [H_i, W_i, 3]) one below the other, left-aligned on white, `gap`
    white pixels apart: one picture of several heatmaps."""
    if not images:
        raise ValueError("stack_images: expected at least one image")
    for i, im in enumerate(images):
        if im.ndim != 3 or im.shape[2] != 3:
            raise ValueError(f"stack_images: image {i} must have shape [H, W, 3], got {im.shape}")
    width = max(im.shape[1] for im in images)
    height = sum(im.shape[0] for im in images) + gap * (len(images) - 1)
    out = np.full((height, width, 3), 255, dtype=np.uint8)
    y = 0
    for im in images:
        out[y : y + im.shape[0], : im.shape[1]] = im
        y += im.shape[0] + gap
    return out
