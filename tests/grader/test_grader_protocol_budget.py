"""The wire has a budget (issue 26, findings 5 and 3): no frame a child sends can cost the
parent more than a bounded amount of memory and time, or fail as anything but a
`ProtocolError` charged to the submission, or carry a string that cannot be written.

* One 16 MiB frame of ``[[],[],…]`` cost the parent 930 MiB and 11 s (5.6 million lists
  built by ``json.loads``, then copied): it is now refused before it is parsed.
* ``"shape": [2**63, 0]`` raised NumPy's ValueError, reported as a bug of the grader (from
  a notebook cell: the whole grade lost); every malformed frame is a ProtocolError now,
  which the hypothesis fuzz below checks on random, mutated and hostile frames.
* ``raise ValueError("\\ud800")`` sent a lone surrogate into the parent's reports: every
  decoded string, keys included, comes back with U+FFFD in its place.

The end-to-end tests grade hostile submissions with ``grader run`` in a subprocess: their
child writes such frames itself on its channel (the socket's descriptor is in the child's
``sys.argv``, which student code can read), from a task's fence and from a notebook cell.
Memory is measured (``tracemalloc``, the grader process's peak RSS); no test times anything.
"""

from __future__ import annotations

import gc
import json
import math
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results_json import by_number

from grader.sandbox.child import protocol
from grader.sandbox.answers import Answer, parse_answer
from grader.release.examples import write_submission
from grader.core.manifest import load_manifest, repo_root

pytestmark = pytest.mark.grader

MIB = 1024 * 1024


def frame_of(header: bytes | str, blobs: bytes = b"") -> bytes:
    """A frame (without the 8-byte prefix) with this raw header and blob bytes."""
    head = header.encode("utf-8", "surrogatepass") if isinstance(header, str) else header
    return protocol._HEADER.pack(len(head)) + head + blobs


def decode_header(body: str, blobs: str = "[]", data: bytes = b"") -> Any:
    return protocol.decode(frame_of(f'{{"body": {body}, "blobs": {blobs}}}', data))


def no_surrogates(value: Any) -> bool:
    """Every str in `value` (keys too) can be written as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, list):
        return all(no_surrogates(v) for v in value)
    if isinstance(value, dict):
        return all(no_surrogates(k) and no_surrogates(v) for k, v in value.items())
    return True


# ---------------------------------------------------------------------------- finding 5: the flood

#: Run in a fresh interpreter: one `mib` MiB frame of ``[[],[],…]`` through `protocol.recv`,
#: traced from the first byte read; prints the outcome and the traced peak.
FLOOD = textwrap.dedent("""
    import json, socket, struct, sys, threading, time, tracemalloc
    from grader.sandbox.child import protocol
    mib = int(sys.argv[1])
    n = mib * 1024 * 1024
    header = b'{"body":[' + b"[]," * ((n - 40) // 3) + b'[]],"blobs":[]}'
    frame = struct.pack("<I", len(header)) + header
    wire = struct.pack("<Q", len(frame)) + frame
    a, b = socket.socketpair()
    threading.Thread(target=b.sendall, args=(wire,), daemon=True).start()
    tracemalloc.start()
    try:
        protocol.recv(a, time.monotonic() + 600)
        outcome = "decoded"
    except protocol.ProtocolError as exc:
        outcome = "ProtocolError: " + str(exc)
    except BaseException as exc:
        outcome = type(exc).__name__ + ": " + str(exc)
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"outcome": outcome, "peak": peak}))
""")


def test_a_16_mib_frame_of_empty_lists_is_refused_before_it_is_parsed() -> None:
    out = subprocess.run(
        [sys.executable, "-c", FLOOD, "16"], capture_output=True, text=True, check=True, cwd=repo_root()
    )
    got = json.loads(out.stdout)
    assert got["outcome"].startswith("ProtocolError"), got
    # refused from its header's length, before its 16 MiB are read: nothing is built
    assert got["peak"] < 1 * MIB, got


@pytest.mark.parametrize(
    "body",
    [
        "[" + "[]," * (protocol.MAX_VALUES // 2 - 10) + "[]]",  # as many containers as the limit allows
        "[" + '"ab",' * (protocol.MAX_VALUES - 10) + '"ab"]',  # as many strings
        "[" + ",".join(["9" * 4299] * (protocol.MAX_HEADER // 4400)) + "]",  # the longest ints json reads
        '"' + "\\ud800" * (protocol.MAX_HEADER // 6 - 10) + '"',  # surrogates to replace, filling the header
    ],
    ids=["lists", "strings", "long-ints", "surrogates"],
)
def test_the_worst_frame_within_the_limits_costs_little(body: str) -> None:
    """The budget in figures: what the largest frames the limits let through cost (traced)."""
    frame = frame_of(f'{{"body": {body}, "blobs": []}}')
    tracemalloc.start()
    try:
        value = protocol.decode(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert no_surrogates(value)
    assert peak < 48 * MIB, peak


def test_a_frame_larger_than_the_limit_is_refused_unread() -> None:
    a, b = socket.socketpair()
    try:
        a.sendall(protocol._TOTAL.pack(256 * MIB))  # the second frame (the old limit, allowed)
        with pytest.raises(protocol.ProtocolError, match="larger than the limit"):
            protocol.recv(b, time.monotonic() + 5)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    "body",
    [
        "[" + "[]," * (protocol.MAX_VALUES // 2) + "[]]",  # more values than the limit
        '"' + "x" * (protocol.MAX_HEADER + 1) + '"',  # a header longer than the limit
    ],
)
def test_headers_beyond_the_limits_are_refused(body: str) -> None:
    with pytest.raises(protocol.ProtocolError, match="limit"):
        decode_header(body)


def test_the_value_count_bounds_what_the_parser_can_build() -> None:
    """`count_values` is an upper bound, so refusing by it bounds the objects made."""
    for value in ([[], [{}], {"a": [1, 2.5, None]}], {"k": {"j": "a,b:[{"}}, [], "x"):
        text = json.dumps(value).encode()
        made = _count(json.loads(text))
        assert made <= protocol.count_values(text)


def _count(v: Any) -> int:
    if isinstance(v, list):
        return 1 + sum(_count(x) for x in v)
    if isinstance(v, dict):
        return 1 + sum(1 + _count(x) for x in v.values())
    return 1


def test_the_encoder_keeps_to_the_same_limits() -> None:
    """The child learns before sending that an answer is too large (and says so)."""
    with pytest.raises(protocol.ProtocolError, match="limit"):
        protocol.encode([0] * protocol.MAX_VALUES)
    with pytest.raises(protocol.ProtocolError, match="nested"):
        deep: list = []
        for _ in range(protocol.MAX_DEPTH + 2):
            deep = [deep]
        protocol.encode(deep)
    assert protocol.decode(protocol.encode([0] * 1000)[8:]) == [0] * 1000


def test_decoding_counts_against_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame that arrived in time but whose decoding ends past the deadline is a timeout."""
    now = [100.0]
    monkeypatch.setattr(protocol, "time", type("Clock", (), {"monotonic": staticmethod(lambda: now[0])}))
    real = protocol.decode

    def slow_decode(frame: Any) -> Any:
        now[0] += 10.0
        return real(frame)

    monkeypatch.setattr(protocol, "decode", slow_decode)
    a, b = socket.socketpair()
    try:
        a.sendall(protocol.encode([1, 2]))
        with pytest.raises(protocol.ChannelTimeout):
            protocol.recv(b, 105.0)
        a.sendall(protocol.encode([1, 2]))
        assert protocol.recv(b, 200.0) == [1, 2]
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------------------- malformed frames

ARRAY = '{{"__kind__": "ndarray", "blob": {blob}, "dtype": {dtype}, "shape": {shape}}}'


@pytest.mark.parametrize(
    "shape, data",
    [
        (f"[{2**63}, 0]", b""),  # numpy: maximum supported dimension exceeded (a ValueError before)
        (f"[{2**64}]", b""),
        ("[0" + ", 0" * protocol.MAX_DIMS + "]", b""),  # too many dimensions
        ("[0, 4294967296, 4294967296, 4294967296]", b""),  # a zero-size array too large for numpy
        ("[-1]", b""),
        ("[true]", b"\0"),
        ("[1.0]", b"\0" * 8),
        ("[NaN]", b""),
        ("[Infinity]", b""),
        ('["2"]', b"\0" * 16),
        ("[[2]]", b"\0" * 16),
        ("3", b"\0" * 24),
        ("null", b""),
        (f"[{2**40}, {2**40}]", b"\0" * 8),
    ],
    ids=lambda v: str(v)[:30],
)
def test_a_malformed_shape_is_a_protocol_error(shape: str, data: bytes) -> None:
    body = ARRAY.format(blob=0, dtype='"<f8"', shape=shape)
    with pytest.raises(protocol.ProtocolError):
        decode_header(body, f"[{len(data)}]", data)


@pytest.mark.parametrize(
    "body, blobs, data",
    [
        (
            ARRAY.format(blob=0, dtype='["<f8"]', shape="[1]"),
            "[8]",
            b"\0" * 8,
        ),  # unhashable dtype (a TypeError before)
        (ARRAY.format(blob=0, dtype='{"a": 1}', shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob=0, dtype="8", shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob=0, dtype='"|O"', shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob="true", dtype='"<f8"', shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob="0.0", dtype='"<f8"', shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob=-1, dtype='"<f8"', shape="[1]"), "[8]", b"\0" * 8),
        (ARRAY.format(blob=2**70, dtype='"<f8"', shape="[1]"), "[8]", b"\0" * 8),
        (
            "["
            + ARRAY.format(blob=0, dtype='"<f8"', shape="[1]")
            + ", "
            + ARRAY.format(blob=0, dtype='"<f8"', shape="[1]")
            + "]",
            "[8]",
            b"\0" * 8,
        ),  # one blob, two arrays: a copy each, as often as the child likes
        ("1", "[8]", b"\0" * 8),  # a blob no array refers to
        ("1", f"[{2**70}]", b""),  # a blob table past the frame
        ("1", "[-8, 16]", b"\0" * 8),
        ("1", "[true]", b"\0"),
        ("1", '{"0": 8}', b"\0" * 8),
        ('{"__kind__": "ndarray"}', "[]", b""),
        ('{"__kind__": "ndarray", "blob": 0, "dtype": "<f8", "shape": [0], "x": 1}', "[0]", b""),
        ("1" * 5000, "[]", b""),  # Python's int-string limit: a ValueError inside json
        ("[" * 5000 + "]" * 5000, "[]", b""),  # RecursionError inside json
        ("[" * 100 + "]" * 100, "[]", b""),  # deeper than MAX_DEPTH
        ('"\udc80"', "[]", b""),  # not UTF-8 (a surrogate written raw, not escaped)
    ],
    ids=lambda v: str(v)[:30],
)
def test_a_malformed_frame_is_a_protocol_error(body: str, blobs: str, data: bytes) -> None:
    with pytest.raises(protocol.ProtocolError):
        decode_header(body, blobs, data)
    assert gc.isenabled()  # paused while the header is parsed, and back on


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\0\0",
        struct.pack("<I", 99) + b"{}",
        frame_of(b'{"body": 1}'),
        frame_of(b'{"body": 1, "blobs": []}x'),
        frame_of(b"\xff\xfe"),
        frame_of(b"[1, 2]"),
        frame_of(b'{"body": 1, "blobs": [], "blobs": []}') + b"x",
    ],
)
def test_a_broken_envelope_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(raw)


def test_a_dict_that_looks_like_an_array_cannot_be_sent() -> None:
    with pytest.raises(protocol.ProtocolError, match="tagged as an array"):
        protocol.encode({"__kind__": "ndarray", "blob": 0})


# ---------------------------------------------------------------------------- finding 3: surrogates


def test_lone_surrogates_become_replacement_characters_keys_included() -> None:
    error = {
        "type": "ValueError",
        "mro": ["ValueError\ud800"],
        "message": "\ud800 and \udfff",
        "traceback": [],
    }
    got = protocol.decode(protocol.encode({"error": error, "\udc80key": {"\ud83d": ["\ud800"]}})[8:])
    assert got["error"]["message"] == "\ufffd and \ufffd"
    assert got["error"]["mro"] == ["ValueError\ufffd"]
    assert got["\ufffdkey"] == {"\ufffd": ["\ufffd"]}
    assert no_surrogates(got)
    answer = parse_answer({"error": got["error"]})
    assert answer.error is not None and answer.error.message.encode("utf-8") == "\ufffd and \ufffd".encode()


def test_escaped_surrogate_pairs_and_other_text_come_back_as_they_were() -> None:
    text = "😀 é 中 \u2028 \x00 ascii"
    assert decode_header('"\\ud83d\\ude00"') == "😀"
    assert protocol.decode(protocol.encode({text: [text]})[8:]) == {text: [text]}


# ---------------------------------------------------------------------------- fuzz

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["ndarray", "__kind__", "tensor", "<f8", "|b1", "\ud800", "ok", "error"]),
)


def _hostile_arrays(children: st.SearchStrategy) -> st.SearchStrategy:
    """Array tags with fields drawn from anything: the shapes, dtypes and blob indices a
    hostile child could write."""
    dims = st.one_of(
        st.integers(min_value=-2, max_value=4),
        st.integers(min_value=2**31, max_value=2**65),
        st.booleans(),
        st.floats(),
        st.none(),
        st.text(max_size=2),
    )
    return st.fixed_dictionaries(
        {
            "__kind__": st.just("ndarray"),
            "blob": st.one_of(st.integers(min_value=-1, max_value=3), st.booleans(), st.floats(), children),
            "dtype": st.one_of(st.sampled_from([*protocol.ALLOWED_DTYPES, "|O", "<U1", ">f8"]), children),
            "shape": st.one_of(st.lists(dims, max_size=5), children),
        },
        optional={"extra": children},
    )


JSON_TREES = st.recursive(
    JSON_LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=4), children, max_size=4),
        _hostile_arrays(children),
    ),
    max_leaves=20,
)


def _outcome(frame: bytes) -> Any:
    """Decode `frame` and parse it as an answer: every outcome is a value or a ProtocolError."""
    try:
        value = protocol.decode(frame)
    except protocol.ProtocolError:
        return None
    assert no_surrogates(value)
    try:
        assert isinstance(parse_answer(value), Answer)
    except protocol.ProtocolError:
        pass
    return value


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(raw: bytes) -> None:
    _outcome(raw)
    _outcome(frame_of(raw))


@FUZZ
@given(
    body=JSON_TREES,
    sizes=st.lists(st.integers(min_value=-1, max_value=24), max_size=3),
    junk=st.binary(max_size=40),
    extra=st.booleans(),
)
def test_fuzz_hostile_headers(body: Any, sizes: list[int], junk: bytes, extra: bool) -> None:
    header = {"body": body, "blobs": sizes, **({"more": 1} if extra else {})}
    text = json.dumps(header).encode()
    data = (junk * 8)[: max(sum(s for s in sizes if s > 0), 0)]
    _outcome(frame_of(text, data))
    _outcome(frame_of(text, junk))


SENDABLE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(),
        st.text(max_size=6),
        st.builds(np.array, st.lists(st.floats(allow_nan=False), max_size=4)),
        st.builds(lambda n: np.arange(n, dtype=np.int32).reshape(n, 1), st.integers(0, 3)),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=15,
)


@FUZZ
@given(
    value=SENDABLE,
    cuts=st.lists(st.tuples(st.integers(min_value=0), st.binary(max_size=3)), min_size=1, max_size=4),
)
def test_fuzz_mutated_frames(value: Any, cuts: list[tuple[int, bytes]]) -> None:
    """A valid frame with bytes replaced, inserted or cut off: a value or a ProtocolError."""
    frame = bytearray(protocol.encode(value)[8:])
    for at, new in cuts:
        at %= len(frame) + 1
        if new:
            frame[at : at + 1] = new
        else:
            del frame[at:]
    _outcome(bytes(frame))


@FUZZ
@given(SENDABLE)
def test_fuzz_what_is_sent_comes_back(value: Any) -> None:
    got = protocol.decode(protocol.encode(value)[8:])
    assert _same(got, value)


def _same(got: Any, sent: Any) -> bool:
    """`got` is `sent` as it travels (tuples as lists; st.text() draws no surrogates)."""
    if isinstance(sent, np.ndarray):
        return type(got) is np.ndarray and got.dtype == sent.dtype and np.array_equal(got, sent)
    if isinstance(sent, float) and math.isnan(sent):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(sent, dict):
        return (
            type(got) is dict and list(got) == list(sent) and all(_same(got[k], v) for k, v in sent.items())
        )
    if isinstance(sent, (list, tuple)):
        return type(got) is list and len(got) == len(sent) and all(_same(g, s) for g, s in zip(got, sent))
    return type(got) is type(sent) and got == sent


# ---------------------------------------------------------------------------- end to end

#: Fence-body code: `_send_raw(header)` writes one frame, as the student chooses it, on the
#: child's channel to the grader (its descriptor is in the child's argv), before the
#: child's own reply. One-line strings only (a fence body is indented as a whole).
SEND_RAW = r"""
import json, os, struct, sys
def _send_raw(header, blobs=b""):
    frame = struct.pack("<I", len(header)) + header + blobs
    data = memoryview(struct.pack("<Q", len(frame)) + frame)
    fd = json.loads(sys.argv[1])["fd"]
    while len(data):
        data = data[os.write(fd, data):]
"""

#: The issue's flood: 16 MiB of ``[[],[],…]``, once per child (so once per check).
FLOOD_BODY = (
    SEND_RAW
    + r"""
if not os.environ.get("FLOODED"):
    os.environ["FLOODED"] = "1"
    _send_raw(b'{"body":[' + b"[]," * (16 * 1024 * 1024 // 3 - 10) + b'[]],"blobs":[]}')
return 0.0
"""
)

#: An array whose shape NumPy refuses (the grader raised ValueError: an internal error).
BAD_SHAPE = (
    b'{"body":{"__kind__":"ndarray","blob":0,"dtype":"<f8","shape":[9223372036854775808,0]},"blobs":[0]}'
)
BAD_SHAPE_BODY = SEND_RAW + f"_send_raw({BAD_SHAPE!r})\nreturn []\n"

SURROGATE_BODY = 'raise ValueError("lone \\ud800 surrogate")\n'

#: `grader run` with the grading process's peak RSS (KiB) on stderr's last line. The peak is
#: VmHWM, the high-water mark of this process's own memory: ``getrusage``'s ru_maxrss keeps
#: the peak of the process that started it across exec (pytest's, over 1 GiB in a full run).
GRADER_RUN = (
    "import re, sys\nfrom grader.commands.cli import main\nrc = main(sys.argv[1:])\n"
    "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
    "print('PEAK_RSS_KIB', peak, file=sys.stderr)\nsys.exit(rc)\n"
)


def grader_run(sub: Path, *args: str) -> tuple[int, dict, int, str]:
    """(exit status, results.json, the grader's peak RSS in KiB, stderr) of ``grader run SUB -a a1``."""
    out = sub.parent / "results.json"
    proc = subprocess.run(
        [sys.executable, "-c", GRADER_RUN, "run", str(sub), "-a", "a1", "--json", str(out), "-q", *args],
        capture_output=True,
        text=True,
        cwd=repo_root(),
        timeout=900,
    )
    peak = int(proc.stderr.rsplit("PEAK_RSS_KIB", 1)[1].split()[0]) if "PEAK_RSS_KIB" in proc.stderr else 0
    results = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    return proc.returncode, results, peak, proc.stderr


def _tests(results: dict) -> dict[str, dict]:
    return by_number(results)


PART1_RIGHT = "x, y, z = -2.0, 5.0, -4.0\ndf_dq, df_dx, df_dy, df_dz = -4.0, -4.0, -4.0, 3.0\n"


def _notebook_with(answers: dict[str, str]) -> str:
    """The a1 notebook as released, with these answer cells (grade id → code)."""
    from grader.notebooks.parts import release_notebook

    part = load_manifest("a1").notebooks[0]
    with tempfile.TemporaryDirectory() as tmp:
        release_notebook(repo_root() / "solutions" / part.path, Path(tmp) / part.name)
        nb = nbformat.read(str(Path(tmp) / part.name), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nbformat.writes(nb, version=4)


@pytest.fixture(scope="module")
def honest_tasks_hostile_notebook(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, int, str]:
    """The reference's task code, and a notebook whose part 2 cell sends a malformed frame
    (its part 1 is right: 6 of 15 points)."""
    part = load_manifest("a1").notebooks[0]
    cell = SEND_RAW + f"_send_raw({BAD_SHAPE!r})\n"
    notebook = _notebook_with({"part1_answers": PART1_RIGHT, "part2_answers": cell})
    sub = write_submission(
        tmp_path_factory.mktemp("nb") / "sub", "a1", extra={f"notebooks/{part.name}": notebook}
    )
    return grader_run(sub)


def test_a_malformed_frame_from_a_notebook_cell_costs_that_notebook_part_only(
    honest_tasks_hostile_notebook: tuple[int, dict, int, str],
) -> None:
    rc, results, _, stderr = honest_tasks_hostile_notebook
    assert rc == 0, stderr[-2000:]
    tests = _tests(results)
    for task in ("1.1", "1.2", "1.3", "1.4"):
        assert tests[task]["score"] == tests[task]["max_score"], tests[task]["output"]
    nb = tests[load_manifest("a1").notebooks[0].name]
    assert nb["score"] == 6, nb["output"]
    assert "not run: the notebook's process sent a malformed reply (malformed array shape" in nb["output"]
    assert "not your fault" not in results["output"]


def test_hostile_frames_from_the_tasks_cost_those_tasks_and_little_memory(
    tmp_path: Path, honest_tasks_hostile_notebook: tuple[int, dict, int, str]
) -> None:
    """1.1 floods (16 MiB per check), 1.4 sends a shape NumPy refuses, 1.2 raises with a
    lone surrogate: each task scores 0 with a message about the submission, the run
    completes (exit 0, no grader error), and the grading process's peak memory stays
    within 128 MiB of an honest run's (the flood alone cost 930 MiB before)."""
    sub = write_submission(
        tmp_path / "sub",
        "a1",
        {
            ("1.1", "central_difference"): FLOOD_BODY,
            ("1.4", "topological_sort"): BAD_SHAPE_BODY,
            ("1.2", "Scalar.relu"): SURROGATE_BODY,
        },
    )
    rc, results, peak, stderr = grader_run(sub, "--no-notebooks")
    assert rc == 0, stderr[-2000:]
    tests = _tests(results)
    assert (
        tests["1.1"]["score"] == 0
        and "the grading process sent a malformed answer (a header of" in tests["1.1"]["output"]
    )
    assert tests["1.4"]["score"] == 0 and "malformed array shape" in tests["1.4"]["output"]
    assert (
        tests["1.2"]["score"] < tests["1.2"]["max_score"]
        and "lone \ufffd surrogate" in tests["1.2"]["output"]
    )
    assert "not your fault" not in json.dumps(results)
    honest_peak = honest_tasks_hostile_notebook[2]
    assert 0 < peak < honest_peak + 128 * 1024, (peak, honest_peak)
