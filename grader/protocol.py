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

This module is copied next to the child's bootstrap (it imports nothing from the grader),
so both sides use the same code. It holds no checks, expected values or tolerances.
"""

from __future__ import annotations

import json
import math
import select
import socket
import struct
import time
from typing import Any

import numpy as np

#: dtypes allowed on the wire (anything else is refused by the decoder).
ALLOWED_DTYPES = {
    "<f8": np.float64,
    "<f4": np.float32,
    "<i8": np.int64,
    "<i4": np.int32,
    "|b1": np.bool_,
}
#: A frame larger than this is a protocol error (the child flooding the channel).
MAX_FRAME = 256 * 1024 * 1024
MAX_DIMS = 32

_TOTAL = struct.Struct("<Q")
_HEADER = struct.Struct("<I")


class ProtocolError(RuntimeError):
    """A frame that is malformed, too large, or holds values of a type we do not accept."""


class ChannelClosed(ProtocolError):
    """The other side closed the channel (the child exited or died)."""


class ChannelTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


# --------------------------------------------------------------------------- encoding


def encode(value: Any) -> bytes:
    """One frame holding `value` (plain values, nested lists/dicts, exact NumPy arrays).

    Callers tag anything else themselves (the child's executor turns tensors and foreign
    objects into tagged dicts before calling this).
    """
    blobs: list[bytes] = []
    tree = _to_tree(value, blobs)
    header = json.dumps({"body": tree, "blobs": [len(b) for b in blobs]}).encode("utf-8")
    total = _HEADER.size + len(header) + sum(len(b) for b in blobs)
    return b"".join([_TOTAL.pack(total), _HEADER.pack(len(header)), header, *blobs])


def _to_tree(value: Any, blobs: list[bytes]) -> Any:
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value
    if t is float:
        return value
    if t is list or t is tuple:
        return [_to_tree(v, blobs) for v in value]
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise ProtocolError(f"dict keys must be str, got {type(k).__name__}")
            out[k] = _to_tree(v, blobs)
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


def decode(frame: bytes) -> Any:
    """Rebuild the value of one frame (without its 8-byte length prefix).

    Arrays come back as fresh, writable, exact ``np.ndarray`` objects. Everything is
    validated: unknown tags, dtypes, negative or inconsistent shapes raise ProtocolError.
    """
    if len(frame) < _HEADER.size:
        raise ProtocolError("truncated frame")
    (hlen,) = _HEADER.unpack_from(frame, 0)
    start = _HEADER.size
    if hlen > len(frame) - start:
        raise ProtocolError("header longer than the frame")
    try:
        header = json.loads(frame[start : start + hlen].decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"malformed header: {exc}") from None
    if type(header) is not dict or set(header) != {"body", "blobs"}:
        raise ProtocolError("malformed header")
    sizes = header["blobs"]
    if type(sizes) is not list or not all(type(s) is int and s >= 0 for s in sizes):
        raise ProtocolError("malformed blob table")
    blobs = []
    pos = start + hlen
    for size in sizes:
        if pos + size > len(frame):
            raise ProtocolError("blob runs past the end of the frame")
        blobs.append(frame[pos : pos + size])
        pos += size
    if pos != len(frame):
        raise ProtocolError("trailing bytes after the last blob")
    try:
        return _from_tree(header["body"], blobs, depth=0)
    except RecursionError:
        raise ProtocolError("value nested too deeply") from None


def _from_tree(node: Any, blobs: list[bytes], depth: int) -> Any:
    if depth > 64:
        raise ProtocolError("value nested too deeply")
    t = type(node)
    if node is None or t in (bool, int, float, str):
        return node
    if t is list:
        return [_from_tree(v, blobs, depth + 1) for v in node]
    if t is not dict:
        raise ProtocolError(f"unexpected JSON value of type {t.__name__}")
    if node.get("__kind__") == "ndarray":
        return _array_from_tree(node, blobs)
    return {k: _from_tree(v, blobs, depth + 1) for k, v in node.items()}


def _array_from_tree(node: dict, blobs: list[bytes]) -> np.ndarray:
    if set(node) != {"__kind__", "blob", "dtype", "shape"}:
        raise ProtocolError("malformed array header")
    dtype_key, shape, index = node["dtype"], node["shape"], node["blob"]
    if dtype_key not in ALLOWED_DTYPES:
        raise ProtocolError(f"array dtype {dtype_key!r} is not accepted")
    if type(shape) is not list or len(shape) > MAX_DIMS or not all(type(s) is int and s >= 0 for s in shape):
        raise ProtocolError(f"malformed array shape {shape!r}")
    if type(index) is not int or not 0 <= index < len(blobs):
        raise ProtocolError("array refers to a missing blob")
    dtype = np.dtype(ALLOWED_DTYPES[dtype_key])
    count = math.prod(shape)
    blob = blobs[index]
    if len(blob) != count * dtype.itemsize:
        raise ProtocolError(f"array of shape {tuple(shape)} and dtype {dtype} needs {count * dtype.itemsize} bytes, got {len(blob)}")
    arr = np.frombuffer(blob, dtype=dtype, count=count).reshape(shape).copy()
    assert type(arr) is np.ndarray
    return arr


# --------------------------------------------------------------------------- transport


def send(sock: socket.socket, value: Any, deadline: float | None = None) -> None:
    """Encode `value` and write the whole frame.

    Args:
        deadline: a `time.monotonic()` instant; ChannelTimeout when the peer has not taken
            the whole frame by then (a child that stopped reading).
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
    """Read one frame and decode it.

    Args:
        deadline: a `time.monotonic()` instant; ChannelTimeout when it passes first.

    Raises:
        ChannelClosed: the peer closed the channel mid-frame or before one.
        ChannelTimeout, ProtocolError.
    """
    prefix = _recv_exact(sock, _TOTAL.size, deadline)
    (total,) = _TOTAL.unpack(prefix)
    if total > MAX_FRAME:
        raise ProtocolError(f"frame of {total} bytes is larger than the limit of {MAX_FRAME}")
    return decode(_recv_exact(sock, total, deadline))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
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
    return bytes(buf)
