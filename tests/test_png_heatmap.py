"""The heatmap of `minitorch.examples.png` (library): a valid PNG, darker cells for larger
values, normalisation, labels (horizontal and turned), its errors, and several heatmaps
stacked into one picture."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from minitorch.examples.png import heatmap_image, heatmap_png, render_text, stack_images

pytestmark = pytest.mark.library

GRID_LINE = (200, 200, 200)
INK = (30, 30, 30)


def _read_png(path: Path) -> np.ndarray:
    """Decode an 8-bit RGB PNG written without filters, checking every chunk's CRC."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, order = 8, {}, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        chunks[kind] = chunks.get(kind, b"") + body
        order.append(kind)
        pos += 12 + length
    assert order[0] == b"IHDR" and order[-1] == b"IEND"
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, color) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, 1 + 3 * width)
    assert np.all(rows[:, 0] == 0)
    return rows[:, 1:].reshape(height, width, 3)


def _cell_colours(img: np.ndarray, shape: tuple[int, int], cell: int) -> np.ndarray:
    """The colour at the centre of every cell [R, C, 3]; the grid starts at the first pixel
    of the grid-line colour (scanning rows top to bottom, then left to right)."""
    is_line = (img == GRID_LINE).all(axis=2)
    ys, xs = np.nonzero(is_line)
    top = ys.min()
    left = xs[ys == top].min()
    r, c = shape
    centres_y = top + np.arange(r) * cell + cell // 2
    centres_x = left + np.arange(c) * cell + cell // 2
    return img[centres_y[:, None], centres_x[None, :]].astype(int)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


def test_valid_png_with_the_expected_size(tmp_path: Path) -> None:
    m = np.random.default_rng(0).dirichlet(np.ones(5), size=3)
    cell = 20
    heatmap_png(tmp_path / "h.png", m, cell=cell)
    data = (tmp_path / "h.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    img = _read_png(tmp_path / "h.png")
    assert img.shape == (height, width, 3)
    # the grid (3 × 5 cells of 20 pixels, plus the closing line) and a colour bar fit in it
    assert height >= 3 * cell + 1 and width > 5 * cell + 1
    assert _cell_colours(img, m.shape, cell).shape == (3, 5, 3)


def test_larger_values_give_darker_cells(tmp_path: Path) -> None:
    values = np.array([[0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]])
    heatmap_png(tmp_path / "h.png", values, cell=16)
    colours = _cell_colours(_read_png(tmp_path / "h.png"), values.shape, 16)[0]
    lum = _luminance(colours)
    assert np.all(np.diff(lum) < 0), lum  # strictly darker as the value grows
    assert lum[0] > 240 and lum[-1] < 60  # white-ish to dark
    assert colours[-1, 2] > colours[-1, 0]  # the dark end is blue

    # a transposed matrix gives the same colours, cell by cell
    heatmap_png(tmp_path / "t.png", values.T, cell=16)
    np.testing.assert_array_equal(_cell_colours(_read_png(tmp_path / "t.png"), values.T.shape, 16)[:, 0], colours)


def test_other_ranges_are_normalised(tmp_path: Path) -> None:
    unit = np.array([[0.0, 0.5], [0.25, 1.0]])
    heatmap_png(tmp_path / "u.png", unit, cell=12)
    heatmap_png(tmp_path / "s.png", unit * 10 - 3, cell=12)  # [-3, 7]: min and max of the matrix
    u = _cell_colours(_read_png(tmp_path / "u.png"), unit.shape, 12)
    s = _cell_colours(_read_png(tmp_path / "s.png"), unit.shape, 12)
    np.testing.assert_array_equal(u, s)
    # inside [0, 1] the range stays [0, 1]: a matrix of small weights is not stretched
    heatmap_png(tmp_path / "small.png", unit * 0.2, cell=12)
    small = _cell_colours(_read_png(tmp_path / "small.png"), unit.shape, 12)
    assert _luminance(small[1, 1]) > _luminance(u[1, 1]) + 50
    # an explicit range is used as given, values outside are clipped
    heatmap_png(tmp_path / "v.png", unit * 0.2, cell=12, vmin=0.0, vmax=0.2)
    np.testing.assert_array_equal(_cell_colours(_read_png(tmp_path / "v.png"), unit.shape, 12), u)
    heatmap_png(tmp_path / "c.png", np.array([[5.0, 9.0]]), cell=12, vmin=0.0, vmax=1.0)
    clipped = _cell_colours(_read_png(tmp_path / "c.png"), (1, 2), 12)
    np.testing.assert_array_equal(clipped[0, 0], clipped[0, 1])
    np.testing.assert_array_equal(clipped[0, 0], u[1, 1])
    # a constant matrix: the lightest colour everywhere, no division by zero
    heatmap_png(tmp_path / "k.png", np.full((2, 2), 4.0), cell=12)
    k = _cell_colours(_read_png(tmp_path / "k.png"), (2, 2), 12)
    np.testing.assert_array_equal(k, np.broadcast_to(u[0, 0], k.shape))


def test_labels_and_title_change_pixels(tmp_path: Path) -> None:
    m = np.eye(3)
    heatmap_png(tmp_path / "plain.png", m, cell=24)
    heatmap_png(tmp_path / "rows.png", m, row_labels=["a", "b", "c"], cell=24)
    heatmap_png(tmp_path / "cols.png", m, col_labels=["x", " ", "z"], cell=24)
    heatmap_png(tmp_path / "long.png", m, col_labels=["<sos>", "hello", "z"], cell=24)
    heatmap_png(tmp_path / "title.png", m, title="attention", cell=24)
    names = ("plain", "rows", "cols", "long", "title")
    plain, rows, cols, long, titled = (_read_png(tmp_path / f"{n}.png") for n in names)

    def ink(img: np.ndarray) -> int:
        return int((img == INK).all(axis=2).sum())

    base = ink(plain)  # the colour bar's two values
    assert ink(rows) > base and ink(cols) > base and ink(titled) > base
    # row labels go left of the grid: it moves right, by at least a character's width
    assert rows.shape[1] >= plain.shape[1] + 12 and rows.shape[0] == plain.shape[0]
    # column labels go above: one character fits a cell (horizontal, one line of text high) ...
    assert cols.shape[1] == plain.shape[1] and plain.shape[0] + 18 <= cols.shape[0] < plain.shape[0] + 40
    # ... five characters do not, so they are turned: as high as five characters are wide
    assert long.shape[0] >= plain.shape[0] + 5 * 12
    # a space label is drawn visibly ("_"): more ink than a blank label
    heatmap_png(tmp_path / "blank.png", m, col_labels=["x", "", "z"], cell=24)
    assert ink(cols) > ink(_read_png(tmp_path / "blank.png"))
    # the cells themselves are unchanged by labels
    for img in (rows, cols, long, titled):
        np.testing.assert_array_equal(_cell_colours(img, m.shape, 24), _cell_colours(plain, m.shape, 24))


def test_errors_name_the_function_and_the_shape(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"heatmap_png.*\(3,\)"):
        heatmap_png(tmp_path / "e.png", np.ones(3))
    with pytest.raises(ValueError, match=r"heatmap_png.*\(0, 2\)"):
        heatmap_png(tmp_path / "e.png", np.ones((0, 2)))
    with pytest.raises(ValueError, match=r"heatmap_png: 2 row labels.*\(3, 2\)"):
        heatmap_png(tmp_path / "e.png", np.ones((3, 2)), row_labels=["a", "b"])
    with pytest.raises(ValueError, match=r"heatmap_png: 3 column labels.*\(3, 2\)"):
        heatmap_png(tmp_path / "e.png", np.ones((3, 2)), col_labels=["a", "b", "c"])
    with pytest.raises(ValueError, match="heatmap_png.*non-finite"):
        heatmap_png(tmp_path / "e.png", np.array([[0.5, np.nan]]))
    with pytest.raises(ValueError, match="heatmap_png.*vmax"):
        heatmap_png(tmp_path / "e.png", np.ones((2, 2)), vmin=1.0, vmax=0.0)
    assert not (tmp_path / "e.png").exists()


def test_heatmap_image_is_what_heatmap_png_writes_and_images_stack(tmp_path: Path) -> None:
    m = np.array([[0.2, 0.8], [1.0, 0.0]])
    img = heatmap_image(m, row_labels=["a", "b"], col_labels=["c", "d"], title="t", cell=10)
    heatmap_png(tmp_path / "h.png", m, row_labels=["a", "b"], col_labels=["c", "d"], title="t", cell=10)
    np.testing.assert_array_equal(_read_png(tmp_path / "h.png"), img)
    small = heatmap_image(m[:1], cell=10)
    both = stack_images([img, small], gap=5)
    assert both.shape == (img.shape[0] + 5 + small.shape[0], max(img.shape[1], small.shape[1]), 3)
    np.testing.assert_array_equal(both[: img.shape[0], : img.shape[1]], img)
    np.testing.assert_array_equal(both[img.shape[0] + 5 :, : small.shape[1]], small)
    assert (both[img.shape[0] : img.shape[0] + 5] == 255).all()  # the gap is white
    with pytest.raises(ValueError, match="stack_images"):
        stack_images([])
    with pytest.raises(ValueError, match=r"stack_images: image 1.*\(4, 4\)"):
        stack_images([img, np.zeros((4, 4), np.uint8)])


def test_a_title_wider_than_the_grid_widens_the_picture() -> None:
    title = "attention - predicted positive (p = 0.996)"
    image = heatmap_image(np.full((1, 2), 0.5), title=title)
    text = render_text(title, 2)
    assert image.shape[1] >= text.shape[1]
    band = image[: 8 + text.shape[0]]  # the title's rows (above the grid)
    inked = np.flatnonzero((band != 255).any(axis=(0, 2)))
    last_ink_of_text = np.flatnonzero(text.any(axis=0))[-1]  # render_text gives a bool mask [h, w]
    assert inked[-1] >= last_ink_of_text, "the end of the title was cut off"
