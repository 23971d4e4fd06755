"""A tiny PNG writer and a horizontal bar chart, with the standard library and NumPy only.

    write_png("img.png", rgb)                           # rgb: uint8 array [H, W, 3]
    bar_chart_png("saliency.png", ["a", "gem"], [0.2, 1.3], title="saliency")

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

__all__ = ["write_png", "bar_chart_png", "render_text"]


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
