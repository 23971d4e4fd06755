"""The private channel between the grader (parent) and the student's process (child).

One message is one frame::

    u64 total length | u32 header length | header (UTF-8 JSON) | blob 0 | blob 1 | …

The JSON header holds a tree of plain values (dict with str keys, list, str, int, float,
bool, None; NaN and ±inf allowed). NumPy arrays travel outside the JSON as raw bytes: the
tree holds ``{"__kind__": "ndarray", "blob": i, "dtype": "<f8", "shape": [2, 3]}`` and blob
``i`` holds the C-ordered values.

Why not pickle: the parent must never unpickle what the child sends (unpickling runs code
the child chose). Decoding here only parses JSON and rebuilds arrays with
``np.frombuffer`` from a short list of dtypes, so whatever arrives is an exact
``np.ndarray`` of a known dtype or a plain Python value; an object that compares equal to
everything, a NumPy subclass or a lying ``__array__`` cannot survive the trip.

Why a budget (issue 26): the child chooses every byte of a frame, and JSON amplifies. One
16 MiB header of ``[[],[],…]`` made the parent build 5.6 million lists, 930 MiB and 11 s,
outside every deadline. So before `json.loads` builds anything, `decode` counts the
header's ``[ { , :`` (C-speed ``bytes.count``): every JSON value or key but the first
follows one of them, so the count bounds the objects the parser can make. With the header's
bytes (`MAX_HEADER`), the values (`MAX_VALUES`), the nesting (`MAX_DEPTH`) and the frame
(`MAX_FRAME`) bounded, decoding any frame costs the parent at most a few tens of MiB besides
the arrays' bytes, and a fraction of a second. Every way a frame can be wrong is a
`ProtocolError` (the child's fault, charged to the submission), never another exception
that would read as a bug of the grader. Strings come back valid: a lone surrogate (JSON
``"\\ud800"``, which no UTF-8 text can hold) becomes U+FFFD, in keys too, so that no report
writer meets one later.

The encoder keeps to the same limits, so the child learns before sending that an answer is
too large (and says so in a normal answer), instead of the parent refusing the frame.

This module is copied next to the child's bootstrap (it imports nothing from the grader),
so both sides use the same code. It holds no checks, expected values or tolerances.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import re
import select
import socket
import struct
import time
from typing import Any, Iterator

import numpy as np

#: dtypes allowed on the wire (anything else is refused by the decoder).
ALLOWED_DTYPES = {
    "<f8": np.float64,
    "<f4": np.float32,
    "<i8": np.int64,
    "<i4": np.int32,
    "|b1": np.bool_,
}

# The limits of one frame. Measured on the reference (`grader run` of every stage a0-a6,
# notebooks included, every frame the parent decodes): the largest frame 3,539,850 bytes
# (a3, the speed checks' arrays; the largest blob 589,824 bytes), the largest header 60,144
# bytes and 10,026 values (a1), the deepest nesting 14 (a0), 192 arrays in one frame (a5).
# Each limit leaves a margin of about 20x or more over those figures.

#: Bytes of a whole frame (header and arrays): 19x the largest measured.
MAX_FRAME = 64 * 1024 * 1024
#: Bytes of the JSON header: 70x the largest measured.
MAX_HEADER = 4 * 1024 * 1024
#: JSON values and keys in a header (bounded by counting ``[ { , :``): 50x the largest measured.
MAX_VALUES = 500_000
#: Nesting of the decoded tree: 4.5x the deepest measured.
MAX_DEPTH = 64
#: Dimensions of an array.
MAX_DIMS = 32

_TOTAL = struct.Struct("<Q")
_HEADER = struct.Struct("<I")
#: UTF-16 surrogates: alone in a str (JSON "\\udc80"), they cannot be written as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


class ProtocolError(RuntimeError):
    """A frame that is malformed, too large, or holds values of a type we do not accept."""


class ChannelClosed(ProtocolError):
    """The other side closed the channel (the child exited or died)."""


class ChannelTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


def count_values(header: bytes) -> int:
    """An upper bound on the JSON values and keys `header` can hold, at C speed.

    Each value or key but the root follows a ``[``, ``{``, ``,`` or ``:`` (strings holding
    those characters only make the bound looser).
    """
    return 1 + header.count(b"[") + header.count(b"{") + header.count(b",") + header.count(b":")


def _check_sizes(frame_bytes: int, header_bytes: int) -> None:
    """Refuse a frame or header longer than the limits (both sides use it)."""
    if frame_bytes > MAX_FRAME:
        raise ProtocolError(f"a frame of {frame_bytes} bytes is larger than the limit of {MAX_FRAME}")
    if header_bytes > MAX_HEADER:
        raise ProtocolError(f"a header of {header_bytes} bytes is larger than the limit of {MAX_HEADER}")


def _check_values(header: bytes) -> None:
    """Refuse a header that could hold more values than the limit (both sides use it)."""
    values = count_values(header)
    if values > MAX_VALUES:
        raise ProtocolError(f"a header of up to {values} values is more than the limit of {MAX_VALUES}")


# --------------------------------------------------------------------------- encoding


def encode(value: Any) -> bytes:
    """One frame holding `value` (plain values, nested lists/dicts, exact NumPy arrays).

    Callers tag anything else themselves (the child's executor turns tensors and foreign
    objects into tagged dicts before calling this).

    Raises:
        ProtocolError: a value that cannot travel, or a frame beyond the limits.
    """
    blobs: list[bytes] = []
    tree = _to_tree(value, blobs, 0)
    header = json.dumps({"body": tree, "blobs": [len(b) for b in blobs]}).encode("utf-8")
    total = _HEADER.size + len(header) + sum(len(b) for b in blobs)
    _check_sizes(total, len(header))
    _check_values(header)
    return b"".join([_TOTAL.pack(total), _HEADER.pack(len(header)), header, *blobs])


def _to_tree(value: Any, blobs: list[bytes], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested more than {MAX_DEPTH} deep cannot be sent")
    t = type(value)
    if value is None or t is bool or t is str or t is int or t is float:
        return value
    if t is list or t is tuple:
        return [_to_tree(v, blobs, depth + 1) for v in value]
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise ProtocolError(f"dict keys must be str, got {type(k).__name__}")
            out[k] = _to_tree(v, blobs, depth + 1)
        if out.get("__kind__") == "ndarray":  # the decoder would take it for an array
            raise ProtocolError("a dict tagged as an array cannot be sent")
        return out
    if isinstance(value, np.ndarray):
        return _array_to_tree(value, blobs)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return _array_to_tree(np.asarray(value), blobs)
    raise ProtocolError(f"cannot send a value of type {t.__module__}.{t.__qualname__}")


def _array_to_tree(arr: np.ndarray, blobs: list[bytes]) -> dict:
    # np.array(..., copy=True) of a subclass with subok=False gives a plain ndarray copy.
    plain = np.array(arr, copy=True, subok=False, order="C")
    dtype = plain.dtype.newbyteorder("<") if plain.dtype.byteorder == ">" else plain.dtype
    key = dtype.str
    if key not in ALLOWED_DTYPES:
        raise ProtocolError(f"arrays of dtype {plain.dtype} cannot be sent")
    plain = plain.astype(dtype, copy=False)
    blobs.append(plain.tobytes(order="C"))
    return {"__kind__": "ndarray", "blob": len(blobs) - 1, "dtype": key, "shape": list(plain.shape)}


# --------------------------------------------------------------------------- decoding


def decode(frame: bytes | bytearray | memoryview) -> Any:
    """Rebuild the value of one frame (without its 8-byte length prefix).

    Arrays come back as fresh, writable, exact ``np.ndarray`` objects; strings hold no lone
    surrogate (each becomes U+FFFD). The limits are checked before the JSON is parsed, so
    any frame costs at most the budget of the module docstring.

    Raises:
        ProtocolError: anything malformed (unknown tags or dtypes, shapes that do not fit
            their bytes, a header that is not UTF-8 JSON) or beyond a limit; nothing else.
    """
    view = memoryview(frame).cast("B")
    if len(view) < _HEADER.size:
        raise ProtocolError("truncated frame")
    (hlen,) = _HEADER.unpack_from(view, 0)
    start = _HEADER.size
    if hlen > len(view) - start:
        raise ProtocolError("header longer than the frame")
    _check_sizes(len(view), hlen)
    raw = bytes(view[start : start + hlen])
    _check_values(raw)
    with _no_gc():
        return _decode_checked(raw, view, start + hlen)


def _decode_checked(raw: bytes, view: memoryview, end: int) -> Any:
    """The value of a frame whose header `raw` (ending at `end` in `view`) is within the limits."""
    try:
        header = json.loads(str(raw, "utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError, an int of 5000 digits
        raise ProtocolError(f"malformed header: {str(exc)[:200]}") from None
    if type(header) is not dict or set(header) != {"body", "blobs"}:
        raise ProtocolError("malformed header")
    sizes = header["blobs"]
    if type(sizes) is not list or not all(type(s) is int and s >= 0 for s in sizes):
        raise ProtocolError("malformed blob table")
    if end + sum(sizes) != len(view):
        raise ProtocolError("the blob table does not match the frame's length")
    blobs, pos = [], end
    for size in sizes:
        blobs.append(view[pos : pos + size])
        pos += size
    tree = _Tree(blobs)
    body = tree.rebuild(header["body"], 0)
    if len(tree.used) != len(blobs):
        raise ProtocolError("a blob that no array refers to")
    return body


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while a header's objects are built.

    JSON's containers cannot form cycles, yet each few hundred of them start a collection
    that walks all of them again: with the collector on, the largest header the limits
    allow took 2.5x as long to decode. Restored even on error, and only by the call that
    paused it (two threads may decode at once).
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


class _Tree:
    """Rebuild a decoded JSON tree in place: arrays from their blobs, strings made valid."""

    def __init__(self, blobs: list[memoryview]):
        self.blobs = blobs
        self.used: set[int] = set()

    def rebuild(self, node: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ProtocolError(f"value nested more than {MAX_DEPTH} deep")
        t = type(node)
        if t is str:
            return _valid_str(node)
        if node is None or t is bool or t is int or t is float:
            return node
        if t is list:
            for i, v in enumerate(node):
                if type(v) in (list, dict, str):
                    node[i] = self.rebuild(v, depth + 1)
            return node
        if t is not dict:
            raise ProtocolError(f"unexpected JSON value of type {t.__name__}")
        if node.get("__kind__") == "ndarray":
            return self._array(node)
        if not all(k.isascii() for k in node):
            node = {_valid_str(k): v for k, v in node.items()}
        for k, v in node.items():
            if type(v) in (list, dict, str):
                node[k] = self.rebuild(v, depth + 1)
        return node

    def _array(self, node: dict) -> np.ndarray:
        if set(node) != {"__kind__", "blob", "dtype", "shape"}:
            raise ProtocolError("malformed array header")
        dtype_key, shape, index = node["dtype"], node["shape"], node["blob"]
        if type(dtype_key) is not str or dtype_key not in ALLOWED_DTYPES:
            raise ProtocolError(f"array dtype {str(dtype_key)[:40]!r} is not accepted")
        if (
            type(shape) is not list
            or len(shape) > MAX_DIMS
            or not all(type(s) is int and 0 <= s <= MAX_FRAME for s in shape)
            or math.prod(s for s in shape if s) > MAX_FRAME
        ):
            raise ProtocolError(f"malformed array shape {str(shape)[:100]}")
        if type(index) is not int or not 0 <= index < len(self.blobs):
            raise ProtocolError("array refers to a missing blob")
        if index in self.used:
            raise ProtocolError("two arrays refer to the same blob")
        self.used.add(index)
        dtype = np.dtype(ALLOWED_DTYPES[dtype_key])
        count = math.prod(shape)
        blob = self.blobs[index]
        if len(blob) != count * dtype.itemsize:
            raise ProtocolError(
                f"array of shape {tuple(shape)} and dtype {dtype} needs {count * dtype.itemsize} bytes, got {len(blob)}"
            )
        try:
            arr = np.frombuffer(blob, dtype=dtype, count=count).reshape(shape).copy()
        except (ValueError, TypeError) as exc:  # defence in depth: the checks above should catch it
            raise ProtocolError(f"malformed array: {str(exc)[:200]}") from None
        assert type(arr) is np.ndarray
        return arr


def _valid_str(s: str) -> str:
    """`s` with each lone surrogate replaced by U+FFFD (JSON joins escaped pairs itself)."""
    return s if s.isascii() else _SURROGATE.sub("\ufffd", s)


# --------------------------------------------------------------------------- transport


def send(sock: socket.socket, value: Any, deadline: float | None = None) -> None:
    """Encode `value` and write the whole frame.

    Args:
        deadline: a `time.monotonic()` instant; ChannelTimeout when the peer has not taken
            the whole frame by then (a child that stopped reading).

    Raises:
        ProtocolError: `value` cannot travel (`encode`); ChannelTimeout, ChannelClosed.
    """
    frame = encode(value)
    try:
        if deadline is not None:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(frame)
    except socket.timeout:
        raise ChannelTimeout("the other side stopped reading") from None
    except (BrokenPipeError, ConnectionResetError):
        raise ChannelClosed("the other side closed the channel") from None
    finally:
        if deadline is not None:
            sock.settimeout(None)


def recv(sock: socket.socket, deadline: float | None = None) -> Any:
    """Read one frame and decode it, all within `deadline`.

    A frame or header announced longer than the limits is refused before it is read.

    Args:
        deadline: a `time.monotonic()` instant; ChannelTimeout when it passes first, or
            while the frame is decoded (decoding is bounded, but it is the check's time).

    Raises:
        ChannelClosed: the peer closed the channel mid-frame or before one.
        ChannelTimeout, ProtocolError.
    """
    (total,) = _TOTAL.unpack(_recv_exact(sock, _TOTAL.size, deadline))
    if total > MAX_FRAME:
        raise ProtocolError(f"frame of {total} bytes is larger than the limit of {MAX_FRAME}")
    frame = _recv_exact(sock, min(total, _HEADER.size), deadline)
    if len(frame) == _HEADER.size:
        _check_sizes(total, _HEADER.unpack(frame)[0])
    value = decode(_recv_exact(sock, total, deadline, frame))
    if deadline is not None and time.monotonic() > deadline:
        raise ChannelTimeout("the answer came, but decoding it ran past the deadline")
    return value


def _recv_exact(
    sock: socket.socket, n: int, deadline: float | None, buf: bytearray | None = None
) -> bytearray:
    """`buf` (or a new buffer) filled to `n` bytes from `sock`; grown as bytes arrive, so a
    length announced but never sent costs nothing, and returned without a copy."""
    buf = bytearray() if buf is None else buf
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("no answer before the deadline")
            ready, _, _ = select.select([sock], [], [], left)
            if not ready:
                raise ChannelTimeout("no answer before the deadline")
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        buf += chunk
    return buf
