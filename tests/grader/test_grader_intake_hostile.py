"""Intake of bad submissions (issue 26, findings 4, 8 and 13): whatever ONE submission
holds, it costs that submission only, and is said in one clear line.

* `grader batch`: a clone with a file name that is not UTF-8, or 1,500 nested folders, is
  a ``malformed`` row; the students after it are graded (finding 4).
* A folder submission gets the limits of a zip: a sparse 256 MiB notebook is refused by
  its size, never opened (finding 8).
* A folder without ``minitorch/`` and a corrupt zip score 0 of the stage's *full* points
  (notebook rows included) at once: no child started, one line on the terminal, the
  reports written (finding 13); ``grader batch`` gives the same rows.
* A student id never starts with ``= + - @`` (a formula in a spreadsheet).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hostile.container import SHARES_NETWORK

from grader.batch.run import BatchOptions, run_batch
from grader.batch.submissions import Submission, find_submissions, pack, safe_student_id
from grader.batch.worker import grade_job
from grader.commands.cli import main
from grader.release.examples import write_submission
from grader.grading.grade import grade
from grader.trees.intake import SubmissionError, open_submission
from grader.core.manifest import load_manifest
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
#: Stage A1 has a notebook part: its full points (100) include it, its tasks alone are 85.
A1_FULL = sum(t.points for t in load_manifest("a1").tasks) + sum(
    n.points for n in load_manifest("a1").notebooks
)
A1_ROWS = [t.id for t in load_manifest("a1").tasks] + [n.name for n in load_manifest("a1").notebooks]
NOTEBOOK = load_manifest("a1").notebooks[0].name  # backprop.ipynb


def _bad_name(folder: Path) -> bytes:
    """Create folder/notes<0xff>.py: a name that is not UTF-8 (only bytes paths can make it)."""
    path = os.fsencode(folder) + b"/notes\xff.py"
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    return path


def _nest(folder: Path, depth: int) -> None:
    """folder/d/d/…/d, `depth` folders deep, made one level at a time (no path is that long)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove a tree too deep for shutil.rmtree (it recurses once per level)."""
    subprocess.run(["rm", "-rf", str(path)], check=True)


def _rows(gradebook: Path) -> dict[str, dict[str, str]]:
    with open(gradebook, newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


# --------------------------------------------------------------------------- finding 4: the batch goes on


@pytest.fixture
def hostile_clones(tmp_path: Path):
    """GitHub Classroom clones: alice's holds a name that is not UTF-8, bob's 1,500 nested
    folders; carol (the reference) and dave (no code) come after them."""
    folder = tmp_path / "clones"
    for user in ("alice", "bob", "carol", "dave"):
        (folder / f"a0-ops-{user}" / ".git").mkdir(parents=True)
    write_submission(folder / "a0-ops-alice", "a0")
    _bad_name(folder / "a0-ops-alice")
    write_submission(folder / "a0-ops-bob", "a0")
    _nest(folder / "a0-ops-bob", 1500)
    write_submission(folder / "a0-ops-carol", "a0")
    (folder / "a0-ops-dave" / "README.md").write_text("I forgot the code\n", encoding="utf-8")
    yield folder
    _remove(folder / "a0-ops-bob")


def test_a_clone_with_a_bad_name_or_deep_folders_is_a_row_and_the_batch_goes_on(
    hostile_clones: Path, tmp_path: Path
) -> None:
    out = tmp_path / "grades"
    code = run_batch(
        hostile_clones,
        BatchOptions(
            stage="a0", out=out, workers=1, notebooks=False, quiet=True, allow_shared_network=SHARES_NETWORK
        ),
    )
    rows = _rows(out / "gradebook.csv")
    if any("runs grader" in row["reason"] for row in rows.values()):
        pytest.skip("the kit's source changed while the test ran (the worker has another grader version)")
    assert code == 0
    assert sorted(rows) == ["alice", "bob", "carol", "dave"]
    assert (
        rows["alice"]["status"] == "malformed"
        and "notes\\xff.py has a name that is not UTF-8" in rows["alice"]["reason"]
    )
    assert rows["bob"]["status"] == "malformed" and "nested more than" in rows["bob"]["reason"]
    assert (rows["carol"]["status"], rows["carol"]["total"], rows["carol"]["max"]) == ("graded", "100", "100")
    assert rows["dave"]["status"] == "malformed" and "no minitorch/ package" in rows["dave"]["reason"]
    for student in ("alice", "bob", "dave"):
        assert rows[student]["total"] == "0"
        report = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert report["score"] == 0


def _touch(path: Path) -> Path:
    path.touch()
    return path


@pytest.mark.parametrize(
    "make, said",
    [
        pytest.param(lambda d: _bad_name(d), "notes\\xff.py has a name that is not UTF-8", id="not-utf8"),
        pytest.param(lambda d: _nest(d, 1500), "folders nested more than 32 deep (d/d/d/", id="deep"),
        pytest.param(
            lambda d: os.mkfifo(d / "minitorch" / "pipe.py"),
            "minitorch/pipe.py is not a regular file",
            id="fifo",
        ),
        pytest.param(
            lambda d: (d / "notebooks").mkdir() or os.truncate(_touch(d / "notebooks" / NOTEBOOK), 2**30),
            "the submission holds more than 64 MiB (notebooks/backprop.ipynb: 1024 MiB)",
            id="sparse-1GiB",
        ),
    ],
)
def test_packing_refuses_what_one_folder_holds_and_never_raises(tmp_path: Path, make, said: str) -> None:
    sub = write_submission(tmp_path / "s" / "erin", "a0")
    make(sub)
    try:
        packed = pack(Submission("erin", sub, "erin"))
        assert packed.data is None and said in packed.refusal, packed.refusal
        assert (
            len(packed.sha256) == 64 and pack(Submission("erin", sub, "erin")).sha256 == packed.sha256
        )  # reproducible
        # `grader run` on the same folder refuses it for the same reason, at once
        with pytest.raises(SubmissionError, match=re.escape(said)):
            open_submission(sub, tmp_path / "w")
    finally:
        _remove(sub)


def test_a_loop_of_links_is_packed_as_a_link_for_the_workers_intake_to_refuse(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "s" / "eve", "a0")
    os.symlink("loop", sub / "loop")  # resolving it raised RuntimeError("Symlink loop")
    packed = pack(Submission("eve", sub, "eve"))
    assert packed.data is not None and not packed.refusal
    archive = tmp_path / "eve.zip"
    archive.write_bytes(packed.data)
    with pytest.raises(SubmissionError, match="symbolic link"):
        open_submission(archive, tmp_path / "w")


def test_a_file_that_vanishes_or_cannot_be_read_while_packing_is_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grader.batch.submissions as batch_intake

    sub = write_submission(tmp_path / "s" / "fay", "a0")
    listed = batch_intake.walk_folder

    def vanishing(root: Path):
        for entry in listed(root):
            if entry.rel == "minitorch/operators.py":
                os.unlink(entry.path)  # listed (its stat taken), gone before it is read
            yield entry

    monkeypatch.setattr(batch_intake, "walk_folder", vanishing)
    packed = pack(Submission("fay", sub, "fay"))
    assert (
        packed.data is None
        and "minitorch/operators.py cannot be read: No such file or directory" in packed.refusal
    )

    monkeypatch.setattr(batch_intake, "walk_folder", listed)
    real_open = os.open

    def denied(path, flags, *args, **kwargs):  # we run as root: permissions would not stop us
        if str(path).endswith("module.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    packed = pack(Submission("fay", sub, "fay"))
    assert packed.data is None and "minitorch/module.py cannot be read: Permission denied" in packed.refusal


def test_a_zip_submission_that_is_a_folder_or_vanished_is_a_row(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    write_submission(folder / "gus.zip", "a0")  # a folder named like a zip: packed as a folder
    (folder / "hal.zip").write_bytes(b"PK")
    found = {s.student: s for s in find_submissions(folder).submissions}
    assert pack(found["gus.zip"]).data is not None
    (folder / "hal.zip").unlink()  # gone between finding and packing
    packed = pack(found["hal"])
    assert packed.data is None and "hal.zip cannot be read" in packed.refusal


def test_a_student_id_never_starts_a_spreadsheet_formula() -> None:
    for text in ("=1+1", "+cmd", "-2", "@SUM(A1)", " @x", ".+x", "..-x", "\udcff=x", "=", "-"):
        sid = safe_student_id(text)
        assert sid and sid[0] not in "=+-@." and "\udcff" not in sid, (text, sid)
    assert safe_student_id("-alice") != safe_student_id("alice")
    assert safe_student_id("alice-b@x.edu+bob") == "alice-b@x.edu+bob"  # a Gradescope group, kept


# --------------------------------------------------------------------------- finding 8: a huge notebook


OPEN_WATCH = """
import os, re, sys
watched = os.path.realpath(sys.argv[1])

def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.path.realpath(os.fsdecode(args[0])) == watched:
            os.write(2, b"OPENED THE NOTEBOOK\\n")
            os._exit(3)

sys.addaudithook(hook)
from grader.commands.cli import main
code = main(sys.argv[2:])
# VmHWM: this process's own peak (ru_maxrss keeps the peak of pytest, which started it, across exec)
print("PEAK_KIB", re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
sys.exit(code)
"""


def test_a_sparse_256_mib_notebook_in_a_folder_is_refused_without_being_opened(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "ivy", "a1")
    notebook = sub / "notebooks" / NOTEBOOK
    notebook.parent.mkdir(exist_ok=True)
    with open(notebook, "wb") as f:
        f.truncate(256 * 2**20)  # sparse: 256 MiB to read, nothing on disk
    report = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-c", OPEN_WATCH, str(notebook), "run", str(sub), "-a", "a1", "--json", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "notebooks/backprop.ipynb: 256 MiB" in proc.stdout
    peak = int(proc.stdout.split("PEAK_KIB")[1].split()[0]) * 1024
    assert peak < 256 * 2**20, (
        f"the parent held {peak / 2**20:.0f} MiB"
    )  # reading the notebook alone takes more
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["score"] == 0 and sum(t["max_score"] for t in data["tests"]) == A1_FULL


# --------------------------------------------------------------------------- finding 13: refused at once


def _damaged_deflate(path: Path) -> Path:
    """A zip whose directory is intact but whose compressed bytes are not."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("minitorch/operators.py", "def mul(x, y):\n    return x * y\n" * 200)
    data = bytearray(buffer.getvalue())
    start = 30 + len("minitorch/operators.py")  # after the local header: the deflate stream
    data[start : start + 40] = b"\xff" * 40
    path.write_bytes(bytes(data))
    return path


def _no_package(folder: Path) -> Path:
    (folder / "sub").mkdir()
    (folder / "sub" / "README.md").write_text("I forgot the code\n", encoding="utf-8")
    return folder / "sub"


def _not_a_zip(folder: Path) -> Path:
    (folder / "sub.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    return folder / "sub.zip"


@pytest.mark.parametrize(
    "make, said",
    [
        pytest.param(_no_package, "no minitorch/ package found", id="no-package"),
        pytest.param(_not_a_zip, "sub.zip is neither a directory nor a zip file", id="corrupt-zip"),
        pytest.param(lambda d: _damaged_deflate(d / "sub.zip"), "cannot be unpacked", id="damaged-zip"),
    ],
)
def test_a_submission_with_nothing_to_grade_scores_zero_of_the_full_points_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, make, said: str
) -> None:
    sub = make(tmp_path)
    report, junit = tmp_path / "out" / "results.json", tmp_path / "out" / "junit.xml"
    code = main(["run", str(sub), "-a", "a1", "--json", str(report), "--junit", str(junit)])
    assert code == 0  # graded: the student got 0 (cli.py's docstring)
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    assert len(lines) == 1 and said in lines[0] and f"0 / {A1_FULL:g}" in lines[0], lines
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["score"] == 0 and [t["number"] for t in data["tests"]] == A1_ROWS
    assert sum(t["max_score"] for t in data["tests"]) == A1_FULL
    assert all(said in t["output"] for t in data["tests"])
    assert junit.read_text(encoding="utf-8").startswith("<?xml")

    result = grade(sub, "a1", limits=Limits(check_timeout=8))
    assert all(not row.checks and row.status == "error" for row in result.tasks)  # no child was started
    assert result.max_score == A1_FULL and [p.message for p in result.problems] == [result.tasks[0].message]


def test_batch_refuses_a_corrupt_zip_with_the_rows_of_grader_run(tmp_path: Path) -> None:
    job = {
        "student": "jo",
        "label": "jo.zip",
        "sha256": "0" * 64,
        "data": b"PK\x03\x04 garbage",
        "archive": "jo.zip",
        "stage": "a1",
        "limits": {},
        "notebooks": True,
    }
    outcome = grade_job(job)
    assert outcome["status"] == "malformed" and outcome["max"] == A1_FULL and outcome["total"] == 0
    assert list(outcome["points"]) == [t.id for t in load_manifest("a1").tasks] + [f"nb:{NOTEBOOK}"]
    (tmp_path / "jo.zip").write_bytes(job["data"])
    ran = grade(tmp_path / "jo.zip", "a1")  # what `grader run jo.zip` gives
    assert [(t["id"], t["max_points"]) for t in outcome["grade"]["tasks"]] == [
        (t.id, t.max_points) for t in ran.tasks
    ]


def test_a_zip_too_deep_or_with_a_file_in_the_way_is_refused_as_such(tmp_path: Path) -> None:
    for name, entries in {"deep.zip": ["d/" * 40 + "x.py"], "clash.zip": ["a", "a/b.py"]}.items():
        archive = tmp_path / name
        with zipfile.ZipFile(archive, "w") as zf:
            for entry in entries:
                zf.writestr(entry, "x = 1\n")
        with pytest.raises(SubmissionError, match="folders deep|cannot be unpacked"):
            open_submission(archive, tmp_path / name.replace(".zip", ""))


def test_a_source_file_that_cannot_be_read_is_a_problem_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.trees.intake import read_student_file

    package = write_submission(tmp_path / "kim", "a0") / "minitorch"
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if str(path).endswith("operators.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    text, problem = read_student_file(package, Path("operators.py"))
    assert text is None and "cannot be read: Permission denied" in problem.message
