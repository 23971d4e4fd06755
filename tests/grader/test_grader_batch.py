"""`grader batch`: finding a class's submissions, packing them into bytes, the gradebook,
and (marked slow) grading a class on a real local Dask cluster of two workers: the
reports and rows of every kind of submission, the same score on both workers, and a batch
killed with SIGKILL that resumes into the gradebook of an uninterrupted run."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from hostile.container import SHARES_NETWORK

from grader.batch.run import BatchOptions, Engine, run_batch
from grader.batch.submissions import BatchInputError, find_submissions, pack
from grader.batch.worker import grade_from_dict, grade_job, merge_task
from grader.commands.cli import main as cli_main
from grader.release.examples import write_submission
from grader.batch.gradebook import Gradebook, GradebookError, describe_change, grader_version, summarize
from grader.grading.grade import grade
from grader.trees.intake import SubmissionError, open_submission
from grader.release.starter import release
from grader.core.results import CheckResult, GradeResult, Problem, TaskResult
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["0.1", "0.2", "0.3"]  # stage A0, the fastest to grade
#: Columns that differ between two gradings of the same submission.
VOLATILE = ("seconds", "graded_at")


def _zip_folder(folder: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    return archive


def _rows(gradebook: Path) -> list[dict[str, str]]:
    with open(gradebook, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _stable(rows: list[dict[str, str]]) -> list[tuple]:
    return sorted(tuple((k, v) for k, v in row.items() if k not in VOLATILE) for row in rows)


# --------------------------------------------------------------------------- finding submissions


def test_a_folder_of_folders_and_zips_gives_one_student_each(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    (tmp_path / "bob smith.zip").write_bytes(b"PK")
    (tmp_path / "roster.csv").write_text("not a submission")
    (tmp_path / ".DS_Store").write_text("")
    (tmp_path / "__pycache__").mkdir()
    found = find_submissions(tmp_path)
    assert found.layout == "folders"
    assert [(s.student, s.path.name) for s in found.submissions] == [
        ("alice", "alice"),
        ("bob_smith", "bob smith.zip"),
    ]
    assert found.ignored == ["roster.csv"]


def test_a_gradescope_export_takes_the_ids_from_its_metadata(tmp_path: Path) -> None:
    for name in ("submission_101", "submission_102", "submission_103", "submission_104"):
        (tmp_path / name).mkdir()
    # the shape of Gradescope's export: Ruby-style keys, a Ruby-tagged score, a group
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_101:\n"
        "  :submitters:\n"
        "  - :name: Alice Liddell\n"
        "    :sid: '20231'\n"
        "    :email: alice@example.edu\n"
        "  :created_at: 2024-02-01 10:00:00.000000000 Z\n"
        "  :score: !ruby/object:BigDecimal 18:0.85e2\n"
        "  :status: processed\n"
        "submission_102:\n"
        "  :submitters:\n"
        "  - :name: Bob\n"
        "    :sid:\n"
        "    :email: bob@example.edu\n"
        "  - :name: Carol\n"
        "    :sid: 20233\n"
        "    :email: carol@example.edu\n"
        "submission_103:\n"
        "  :submitters:\n"
        "  - :name: Dan O'Neil\n",
        encoding="utf-8",
    )
    found = find_submissions(tmp_path)
    assert found.layout == "gradescope"
    assert {s.path.name: s.student for s in found.submissions} == {
        "submission_101": "20231",
        "submission_102": "bob@example.edu+20233",
        "submission_103": "Dan_O_Neil",
    }
    assert found.ignored == ["submission_104"]  # a folder the metadata does not name
    assert next(s for s in found.submissions if s.student == "20231").label == "submission_101 (20231)"


def test_github_classroom_clones_are_named_by_their_user(tmp_path: Path) -> None:
    for user in ("alice", "bob-smith"):
        (tmp_path / f"a1-scalar-{user}" / ".git").mkdir(parents=True)
    found = find_submissions(tmp_path)
    assert found.layout == "github-classroom"
    assert [s.student for s in found.submissions] == ["alice", "bob-smith"]
    assert [s.student for s in find_submissions(tmp_path, strip_prefix="a1-").submissions] == [
        "scalar-alice",
        "scalar-bob-smith",
    ]
    shutil.rmtree(tmp_path / "a1-scalar-alice" / ".git")  # not all clones: plain folders, names kept
    assert [s.student for s in find_submissions(tmp_path).submissions] == [
        "a1-scalar-alice",
        "a1-scalar-bob-smith",
    ]


def test_two_submissions_of_one_student_stop_the_batch(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice.zip").write_bytes(b"PK")
    with pytest.raises(BatchInputError, match="alice: alice, alice.zip"):
        find_submissions(tmp_path)


# --------------------------------------------------------------------------- packing


def test_packing_a_folder_is_deterministic_and_hashes_its_content(tmp_path: Path) -> None:
    sub = write_submission(tmp_path / "a" / "alice", "a0")
    (sub / ".git").mkdir()
    (sub / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (sub / "minitorch" / "__pycache__").mkdir()
    (sub / "minitorch" / "__pycache__" / "operators.cpython-311.pyc").write_bytes(b"\0")
    first = pack(find_submissions(tmp_path / "a").submissions[0])
    copy = tmp_path / "b" / "alice"
    time.sleep(0.01)
    shutil.copytree(sub, copy)  # new mtimes, same bytes
    second = pack(find_submissions(tmp_path / "b").submissions[0])
    assert first.data == second.data and first.sha256 == second.sha256 and not first.refusal
    names = zipfile.ZipFile(io.BytesIO(first.data)).namelist()
    assert "minitorch/operators.py" in names
    assert not any(".git" in n or "__pycache__" in n for n in names)
    # the worker's intake unpacks it into the same files
    archive = tmp_path / "alice.zip"
    archive.write_bytes(first.data)
    unpacked = open_submission(archive, tmp_path / "w")
    assert (unpacked / "minitorch" / "operators.py").read_bytes() == (
        sub / "minitorch" / "operators.py"
    ).read_bytes()
    with open(copy / "minitorch" / "operators.py", "a", encoding="utf-8") as f:
        f.write("\n")
    assert pack(find_submissions(tmp_path / "b").submissions[0]).sha256 != first.sha256


def test_a_link_out_of_the_tree_is_refused_and_one_inside_reaches_intake_as_a_link(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    sub = write_submission(tmp_path / "c" / "frank", "a0")
    os.symlink("/etc/passwd", sub / "minitorch" / "secret.py")
    packed = pack(find_submissions(tmp_path / "c").submissions[0])
    assert packed.data is None and "minitorch/secret.py is a symbolic link to /etc/passwd" in packed.refusal
    os.unlink(sub / "minitorch" / "secret.py")
    os.symlink("operators.py", sub / "minitorch" / "copy.py")
    packed = pack(find_submissions(tmp_path / "c").submissions[0])
    assert packed.data is not None and not packed.refusal
    archive = tmp_path / "frank.zip"
    archive.write_bytes(packed.data)
    with pytest.raises(SubmissionError, match="symbolic link"):
        open_submission(archive, tmp_path / "w")


# --------------------------------------------------------------------------- the gradebook


def _row(
    student: str,
    sha: str = "s1",
    version: str = "v1",
    status: str = "graded",
    points: str = "40",
    seconds: str = "1.0",
) -> dict[str, str]:
    return {
        "student": student,
        "status": status,
        "reason": "",
        "0.1": points,
        "0.2": "30",
        "0.3": "30",
        "total": str(int(points) + 60),
        "max": "100",
        "seconds": seconds,
        "sha256": sha,
        "grader_version": version,
        "graded_at": "2024-01-01T00:00:00+00:00",
        "source": student,
    }


def test_the_gradebook_keeps_history_and_tells_who_is_graded(tmp_path: Path) -> None:
    path = tmp_path / "out" / "gradebook.csv"
    book = Gradebook(path, TASKS)
    assert book.append(_row("alice"))
    assert not book.append(_row("alice", seconds="9.9"))  # the same grade again: no new row
    assert book.append(_row("alice", sha="s2", points="20"))  # a changed submission: a new row
    assert book.append(_row("bob", status="crashed"))
    assert book.append(_row("dave", status="grader-error"))
    book = Gradebook(path, TASKS)  # read back
    assert [r["total"] for r in book.rows] == ["100", "80", "100", "100"]
    assert book.latest["alice"]["sha256"] == "s2"
    assert book.is_current("alice", "s2", "v1")
    assert not book.is_current("alice", "s1", "v1")  # an older submission
    assert not book.is_current("alice", "s2", "v2")  # another grader
    assert not book.is_current("bob", "s1", "v1")  # crashed: graded again
    assert not book.is_current("dave", "s1", "v1")  # a grader error (a withheld speed verdict): graded again
    assert not book.is_current("carol", "s1", "v1")


def test_each_row_says_what_changed_since_the_students_previous_row(tmp_path: Path) -> None:
    book = Gradebook(tmp_path / "gradebook.csv", TASKS)
    book.append(_row("alice"))
    book.append(_row("alice", sha="s2", points="20"))
    book.append({**_row("alice", sha="s2", version="v2", points="20"), "change": "regrade 0.1"})
    book.append(_row("alice", sha="s2", version="v3", points="30"))
    book.append(_row("alice", sha="s2", version="v3", points="30", status="timeout"))
    history = [r["change"] for r in Gradebook(tmp_path / "gradebook.csv", TASKS).rows]
    assert history == [
        "first grading",
        "new submission: 0.1 40 → 20; total 100 → 80",
        "regrade 0.1",  # regraded, nothing moved: the row records the new grader version
        "new grader: 0.1 20 → 30; total 80 → 90",
        "graded again: status graded → timeout",
    ]
    assert (
        describe_change({**_row("bob"), "total": ""}, _row("bob", sha="s2"), TASKS)
        == "new submission: total — → 100"
    )


def _hand_result() -> GradeResult:
    def task(tid: str, score: float, error: str = "") -> TaskResult:
        check = CheckResult(
            name=f"check {tid}", kind="value", status="passed" if score else "failed", grader_error=error
        )
        return TaskResult(tid, f"title {tid}", 10.0, score, check.status, "", checks=[check], seconds=2.0)

    return GradeResult(
        stage="a0",
        title="A0",
        submission="alice",
        tasks=[task("0.1", 0.0, "the check broke"), task("0.2", 10.0)],
        seconds=5.0,
        problems=[
            Problem("minitorch/operators.py:3: a fence is missing", "minitorch/operators.py", 3, ("0.2",))
        ],
        grader_errors=["the check broke"],
    )


def test_a_grade_survives_its_json_and_a_regrade_replaces_one_task_only() -> None:
    previous = _hand_result()
    assert grade_from_dict(json.loads(json.dumps(dataclasses.asdict(previous)))) == previous
    fixed = GradeResult(
        stage="a0",
        title="A0",
        submission="alice",
        seconds=1.0,
        isolation="bwrap",
        tasks=[
            TaskResult(
                "0.1",
                "title 0.1",
                10.0,
                7.5,
                "failed",
                "m",
                checks=[CheckResult("c", "value", "failed")],
                seconds=1.0,
            )
        ],
    )
    merged = merge_task(previous, fixed, "0.1")
    assert [(t.id, t.score) for t in merged.tasks] == [("0.1", 7.5), ("0.2", 10.0)]
    assert merged.score == 17.5 and merged.seconds == 4.0 and merged.isolation == "bwrap"
    assert merged.grader_errors == []  # the fixed check's error is gone with its old row
    assert merged.problems == previous.problems
    assert previous.tasks[0].score == 0.0  # the previous result is not modified


def test_a_row_cut_short_by_a_kill_is_dropped_and_other_columns_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.csv"
    Gradebook(path, TASKS).append(_row("alice"))
    whole = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b"bob,graded,,40,3")
    book = Gradebook(path, TASKS)
    assert book.repaired and list(book.latest) == ["alice"] and path.read_bytes() == whole
    with pytest.raises(GradebookError, match="columns"):
        Gradebook(path, ["1.1", "1.2"])


def test_summary_bins_scores_and_groups_failures() -> None:
    rows = [
        _row("a", points="40", seconds="3.0"),
        _row("b", points="0", seconds="7.5"),
        _row("c", points="20", seconds="1.0"),
        {
            **_row("d", status="malformed"),
            "reason": "bad zip",
            "0.1": "0",
            "0.2": "0",
            "0.3": "0",
            "total": "0",
        },
        {
            **_row("e", status="crashed"),
            "reason": "KilledWorker",
            "0.1": "",
            "0.2": "",
            "0.3": "",
            "total": "",
            "max": "",
            "seconds": "",
        },
    ]
    summary = summarize(rows, {"0.1": 40, "0.2": 30, "0.3": 30, "total": 100})
    # 0.1: a 40/40, b 0, c 20/40 = 50 %, d 0 (e has no points)
    assert summary.histograms["0.1"] == [2, 0, 1, 0, 1]
    assert summary.means["0.1"] == pytest.approx(15.0)
    # totals: 100, 60, 80, 0
    assert summary.histograms["total"] == [1, 0, 1, 1, 1]
    assert [r["student"] for r in summary.slowest[:2]] == ["b", "a"]
    assert summary.failures == {("malformed", "bad zip"): ["d"], ("crashed", "KilledWorker"): ["e"]}
    assert summary.counts == {"graded": 3, "malformed": 1, "crashed": 1}


# --------------------------------------------------------------------------- a real cluster

EXPECTED_MALFORMED = {
    "dave": "dave.zip is neither a directory nor a zip file",  # a .zip that is not a zip
    "erin": "no minitorch/ package",  # a folder without the package
    "frank": "symbolic link to /etc/passwd, outside the submission",
    "grace": "unpacks to more than 64 MiB",  # a zip bomb
}


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seven A0 submissions: the reference, a fresh release, a zip with one wrong
    operator, a broken zip, a folder without minitorch/, a link out of the tree, a zip bomb."""
    base = tmp_path_factory.mktemp("batch")
    folder = base / "class"
    write_submission(folder / "alice", "a0")
    release("a0", folder / "bob")
    write_submission(base / "carol", "a0", {("0.1", "mul"): "return x + y"})
    _zip_folder(base / "carol", folder / "carol.zip")
    (folder / "dave.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    (folder / "erin").mkdir()
    (folder / "erin" / "README.md").write_text("I forgot the code", encoding="utf-8")
    write_submission(folder / "frank", "a0")
    os.symlink("/etc/passwd", folder / "frank" / "minitorch" / "secret.py")
    with zipfile.ZipFile(folder / "grace.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("minitorch/operators.py", b"\0" * (65 * 2**20))
    return folder


@pytest.mark.parametrize("missing", ["distributed", "cryptography"])
def test_a_batch_without_its_packages_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    """`cryptography` makes each batch's TLS certificate; distributed does not install it, so
    a fresh venv lacked it (the grader extra names it now)."""
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` raises ImportError
    assert cli_main(["batch", "-a", "a0", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        f"grader batch: {missing} is not installed" in err and 'pip install "minitorch-kit[grader]"' in err
    ), err
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def engine() -> Engine:
    """A real local Dask cluster of two single-threaded worker processes."""
    eng = Engine(workers=2)
    eng.start(allow_shared_network=SHARES_NETWORK)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def uninterrupted(
    class_folder: Path, engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("full")
    code = run_batch(
        class_folder,
        BatchOptions(stage="a0", out=out, quiet=True, allow_shared_network=SHARES_NETWORK),
        engine=engine,
    )
    return code, out


@pytest.mark.slow
def test_a_class_is_graded_on_two_workers_as_grader_run_grades_it(
    class_folder: Path, uninterrupted: tuple[int, Path]
) -> None:
    code, out = uninterrupted
    assert code == 0
    rows = {r["student"]: r for r in _rows(out / "gradebook.csv")}
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin", "frank", "grace"]
    assert (rows["alice"]["status"], rows["alice"]["total"], rows["alice"]["max"]) == ("graded", "100", "100")
    assert (rows["bob"]["status"], rows["bob"]["total"]) == ("graded", "0")  # a fresh release: stubs
    for student, reason in EXPECTED_MALFORMED.items():
        assert rows[student]["status"] == "malformed" and reason in rows[student]["reason"], rows[student]
        assert rows[student]["total"] == "0"
    assert rows["alice"]["grader_version"] == grader_version() and len(rows["alice"]["sha256"]) == 64
    # carol's zip gets exactly what `grader run` gives it
    direct = grade(class_folder / "carol.zip", "a0")
    assert direct.score < 100
    assert [rows["carol"][t.id] for t in direct.tasks] == [f"{t.score:g}" for t in direct.tasks]
    assert rows["carol"]["total"] == f"{direct.score:g}"
    for student, row in rows.items():
        report = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert f"{report['score']:g}" == row["total"]
        assert (out / student / "junit.xml").read_text(encoding="utf-8").startswith("<?xml")
        assert f"**Score: {row['total']} / 100**" in (out / student / "feedback.md").read_text(
            encoding="utf-8"
        )
    assert "operators.mul(" in (out / "carol" / "feedback.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_one_submission_gets_the_same_grade_on_both_workers(class_folder: Path, engine: Engine) -> None:
    sub = next(s for s in find_submissions(class_folder).submissions if s.student == "carol")
    packed = pack(sub)
    job = {
        "student": sub.student,
        "label": sub.label,
        "sha256": packed.sha256,
        "data": packed.data,
        "archive": "carol.zip",
        "stage": "a0",
        "limits": dataclasses.asdict(Limits()),
        "notebooks": True,
    }
    workers = sorted(engine.client.nthreads())
    assert len(workers) == 2
    outcomes = [engine.submit(job, worker=w).result() for w in workers]
    assert [o["worker"] for o in outcomes] == workers

    def verdicts(outcome: dict) -> list:
        return [
            (t["id"], t["score"], t["status"], [(c["name"], c["status"], c["message"]) for c in t["checks"]])
            for t in outcome["grade"]["tasks"]
        ]

    assert outcomes[0]["points"] == outcomes[1]["points"] and outcomes[0]["points"]["0.1"] < 40
    assert verdicts(outcomes[0]) == verdicts(outcomes[1])
    assert outcomes[0]["files"]["feedback.md"] == outcomes[1]["files"]["feedback.md"]
    assert grade_job({**job, "data": b"garbage"})["status"] == "malformed"  # off the cluster too


@pytest.mark.slow
def test_a_batch_killed_halfway_resumes_into_the_gradebook_of_an_uninterrupted_run(
    class_folder: Path, engine: Engine, uninterrupted: tuple[int, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    gradebook = out / "gradebook.csv"
    command = [
        sys.executable,
        "-m",
        "grader.batch.command",
        str(class_folder),
        "-a",
        "a0",
        "-o",
        str(out),
        "--workers",
        "2",
        "-q",
        *(["--allow-shared-network"] if SHARES_NETWORK else []),
    ]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        # frank's row (refused while packing) comes first; wait for two graded by a worker
        while time.monotonic() < deadline and proc.poll() is None:
            if gradebook.exists() and len(_rows(gradebook)) >= 3:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the batch ended before it could be killed"
        proc.send_signal(signal.SIGKILL)  # the parent only: its cluster must go with it
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    killed_rows = _rows(gradebook)
    assert 3 <= len(killed_rows) < 7
    with open(gradebook, "ab") as f:
        f.write(b"zed,graded,,40")  # a row cut short by the kill
    shutil.rmtree(out / killed_rows[-1]["student"])  # its reports lost: that student is graded again

    code = run_batch(
        class_folder,
        BatchOptions(stage="a0", out=out, quiet=True, allow_shared_network=SHARES_NETWORK),
        engine=engine,
    )

    resumed = _rows(gradebook)
    versions = {r["grader_version"] for r in resumed + _rows(uninterrupted[1] / "gradebook.csv")}
    if len(versions) > 1:
        pytest.skip(f"the kit's source changed while the test ran (grader versions {sorted(versions)})")
    assert code == 0
    assert resumed[: len(killed_rows)] == killed_rows  # nothing written before the kill was changed
    assert _stable(resumed) == _stable(_rows(uninterrupted[1] / "gradebook.csv"))
    for row in resumed:
        assert all(
            (out / row["student"] / name).is_file() for name in ("results.json", "junit.xml", "feedback.md")
        )


@pytest.mark.slow
def test_regrade_grades_one_task_again_and_keeps_the_rest_with_its_history(
    class_folder: Path, engine: Engine, uninterrupted: tuple[int, Path], tmp_path: Path
) -> None:
    """A check of 0.1 was fixed: the old grader gave carol 0 for it, and (to show what is
    kept) 1.5 for 0.2. `--regrade 0.1` must give her 0.1's true points and keep 0.2's."""
    out = tmp_path / "out"
    shutil.copytree(uninterrupted[1], out)
    gradebook = out / "gradebook.csv"
    rows = _rows(gradebook)
    carol = next(r for r in rows if r["student"] == "carol")
    true_01 = carol["0.1"]
    assert float(true_01) > 0
    for row in rows:  # the rows the old grader wrote
        row["grader_version"] = "0.1.0+old"
    carol.update({"0.1": "0", "0.2": "1.5", "total": f"{1.5 + float(carol['0.3']):g}"})
    with open(gradebook, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    old = json.loads((out / "carol" / "grade.json").read_text(encoding="utf-8"))
    for task in old["tasks"]:
        task["score"] = {"0.1": 0.0, "0.2": 1.5}.get(task["id"], task["score"])
    (out / "carol" / "grade.json").write_text(json.dumps(old), encoding="utf-8")

    assert (
        run_batch(
            class_folder,
            BatchOptions(stage="a0", out=out, quiet=True, allow_shared_network=SHARES_NETWORK, regrade="0.9"),
            engine=engine,
        )
        == 2
    )
    code = run_batch(
        class_folder,
        BatchOptions(stage="a0", out=out, quiet=True, allow_shared_network=SHARES_NETWORK, regrade="0.1"),
        engine=engine,
    )
    assert code == 0
    after = _rows(gradebook)
    assert after[: len(rows)] == rows  # the history is kept
    latest = {r["student"]: r for r in after}
    assert len(after) == 2 * len(rows) and all(
        r["grader_version"] == grader_version() for r in latest.values()
    )
    expected_total = f"{float(true_01) + 1.5 + float(carol['0.3']):g}"
    assert (latest["carol"]["0.1"], latest["carol"]["0.2"], latest["carol"]["total"]) == (
        true_01,
        "1.5",
        expected_total,
    )
    assert (
        latest["carol"]["change"]
        == f"regrade 0.1: 0.1 0 → {true_01}; total {carol['total']} → {expected_total}"
    )
    assert latest["alice"]["change"] == "regrade 0.1" and latest["alice"]["total"] == "100"
    assert latest["dave"]["change"] == "new grader"  # a bad zip has no grade to keep: graded in full
    report = json.loads((out / "carol" / "results.json").read_text(encoding="utf-8"))
    assert f"{report['score']:g}" == expected_total
    assert f"**Score: {expected_total} / 100**" in (out / "carol" / "feedback.md").read_text(encoding="utf-8")
    # run again: everyone is up to date, nothing is graded or written
    assert (
        run_batch(
            class_folder,
            BatchOptions(stage="a0", out=out, quiet=True, allow_shared_network=SHARES_NETWORK, regrade="0.1"),
            engine=engine,
        )
        == 0
    )
    assert _rows(gradebook) == after
