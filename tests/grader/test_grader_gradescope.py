"""`grader gradescope` (`grader.commands.gradescope`): the Gradescope autograder zip, run as Gradescope runs it.

The bundle of A0 is built once (`build_bundle`), then each test unpacks it into a fresh
temporary ``autograder/`` shaped like Gradescope's (``source/`` = the zip,
``run_autograder`` copied next to it, ``submission/``, ``results/``) and runs
``run_autograder`` as a real process, with ``MINITORCH_AUTOGRADER_ROOT`` pointing at that
folder and ``MINITORCH_AUTOGRADER_PYTHON`` at this interpreter (setup.sh, which installs
system-wide, is not run: its syntax and the files it names are checked instead).

The hostile submission reuses the hole-2 attack of `tests/grader/hostile/reference.py` (read the
hidden checks and the reference from every place a kit might be, told the bundle's path)
and the leak lines of `tests/grader/test_grader_hostile.py`.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from hostile.attack import Attack, Target
from hostile.reference import READ_CHECKS
from results_json import by_number, task_tests
from test_grader_hostile import _hidden_check_line, _reference_line

from grader.commands.cli import main
from grader.release.examples import write_submission
from grader.commands import gradescope as gradescope_bundle
from grader.grading import grade as grading
from grader.commands.autograder_bundle import GRADING_DISTRIBUTIONS, PYTHON_VAR, ROOT_VAR, build_bundle
from grader.commands.gradescope import SANDBOX_VAR
from grader.core.manifest import load_manifest, repo_root
from grader.release.starter import release

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.grader

STAGE = "a0"
#: The hidden checks' file and the reference's file that the attack reads (hostile.reference).
ATTACK = Attack(
    "read_the_bundle",
    "2 reference",
    "read the bundle's hidden checks and reference into the feedback",
    STAGE,
    {("0.1", "mul"): READ_CHECKS},
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(STAGE, tmp_path_factory.mktemp("bundle") / "autograder.zip").path


@pytest.fixture
def autograder(bundle: Path):
    """A fresh Gradescope-shaped ``autograder/`` in a folder other uids may traverse (as
    ``/`` is on Gradescope), so that only the bundle's own permissions keep the kit from them."""
    top = Path(tempfile.mkdtemp(prefix="gradescope-test-"))
    os.chmod(top, 0o711)
    root = top / "autograder"
    (root / "submission").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():  # as unzip does: the files, then their Unix modes
            zf.extract(info, root / "source")
            os.chmod(root / "source" / info.filename, info.external_attr >> 16 & 0o7777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    yield root
    shutil.rmtree(top)


def run_autograder(root: Path, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``root/run_autograder`` as Gradescope does; its exit status and results.json."""
    environ = {k: v for k, v in os.environ.items() if k != "MINITORCH_KIT_ROOT"}
    environ.update({ROOT_VAR: str(root), PYTHON_VAR: sys.executable, "COLUMNS": "200", **env})
    proc = subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc, json.loads((root / "results" / "results.json").read_text())


def task_points() -> dict[str, float]:
    return {t.id: t.points for t in load_manifest(STAGE).tasks}


# ---------------------------------------------------------------------------------- the zip


def test_the_zip_has_gradescope_layout_and_the_kit(bundle: Path) -> None:
    root = repo_root()
    with zipfile.ZipFile(bundle) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        for name in ("setup.sh", "run_autograder", "requirements.txt"):  # at the zip's root, not in a folder
            assert name in infos, sorted(infos)[:10]
        for name in ("setup.sh", "run_autograder", "scripts/install-sandbox.sh"):
            mode = infos[name].external_attr >> 16
            assert infos[name].create_system == 3 and stat.S_ISREG(mode) and mode & 0o111 == 0o111, (
                name,
                oct(mode),
            )
        assert infos["requirements.txt"].external_attr >> 16 & 0o111 == 0
        kit = [n for n in infos if "/" in n or n == "pyproject.toml"]
        for name in (
            "grader/checks/a0/task_0_1.py",
            "grader/commands/gradescope.py",
            "assignments/a0-operators/manifest.toml",
            "minitorch/operators.py",
            "solutions/a1/backprop.ipynb",
            "pyproject.toml",
        ):
            assert name in kit
        assert not [n for n in kit if "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc"))]
        for name in kit:  # the kit as it is here, byte for byte
            assert zf.read(name) == (root / name).read_bytes(), name


def test_the_pins_are_exact_and_cover_what_grading_imports(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as zf:
        lines = zf.read("requirements.txt").decode().splitlines()
    pins = dict(line.split("==") for line in lines if not line.startswith("#"))
    assert all(name and value for name, value in pins.items()), lines
    for name in [*GRADING_DISTRIBUTIONS, "llvmlite", "traitlets"]:  # numba needs llvmlite; IPython, traitlets
        assert pins.get(name) == version(name), (name, pins.get(name))
    for name, pinned in pins.items():
        assert pinned == version(name), name
    assert not {"torch", "mutmut", "nbgrader", "pytest", "minitorch-kit"} & set(pins)
    # `import minitorch` in the jail needs every dependency of the library
    library = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    names = {re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower() for dep in library}
    assert names <= set(GRADING_DISTRIBUTIONS), names - set(GRADING_DISTRIBUTIONS)


def test_setup_sh_parses_and_names_files_of_the_bundle(bundle: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        zf.extract("setup.sh", tmp_path)
        zf.extract("run_autograder", tmp_path)
        setup = zf.read("setup.sh").decode()
    for script in ("setup.sh", "run_autograder"):
        checked = subprocess.run(
            ["bash", "-n", str(tmp_path / script)], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, checked.stderr
    for name in ("requirements.txt", "scripts/install-sandbox.sh"):
        assert name in setup and name in names
    assert (
        "install-sandbox.sh --uid-tier" in setup and 'grader.commands.gradescope selftest "$STAGE"' in setup
    )
    assert f'STAGE="{STAGE}"' in setup and f"NEED_MINOR={sys.version_info[1]}" in setup


def test_the_same_kit_gives_the_same_bundle(bundle: Path, tmp_path: Path) -> None:
    again = build_bundle(STAGE, tmp_path / "again.zip").path
    assert again.read_bytes() == bundle.read_bytes()


def test_the_cli_writes_the_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "autograder.zip"
    assert main(["gradescope", STAGE, "-o", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None and "run_autograder" in zf.namelist()
    assert main(["gradescope", "a9", "-o", str(tmp_path / "x.zip")]) == 2
    assert "a9" in capsys.readouterr().err and not (tmp_path / "x.zip").exists()


# ------------------------------------------------------------------------ run_autograder


@pytest.fixture
def jailed_autograder(autograder: Path, tiers: dict[str, str]) -> Path:
    """`autograder` on a machine where run_autograder has a jail to grade in (it grades in
    one only): skipped, saying why, where neither tier runs (no scripts/install-sandbox.sh,
    and a Python that imports a readable copy of the kit, as a venv inside a clone does)."""
    if tiers["bwrap"] and tiers["uid"]:
        pytest.skip(
            f"run_autograder grades only in a jail, and this machine gives the bundle none: "
            f"bwrap: {tiers['bwrap']}; uid: {tiers['uid']}"
        )
    return autograder


def test_a_fresh_release_scores_zero_on_every_task(jailed_autograder: Path, tmp_path: Path) -> None:
    autograder = jailed_autograder
    fresh = release(STAGE, tmp_path / "release").out_dir
    shutil.copytree(fresh, autograder / "submission", dirs_exist_ok=True)  # uploaded as a folder
    proc, results = run_autograder(autograder)
    assert proc.returncode == 0, proc.stderr
    assert [t["number"] for t in task_tests(results)] == list(task_points())
    assert results["score"] == 0 and all(t["score"] == 0 for t in results["tests"]), results["output"]
    assert results["extra_data"]["isolation"] in ("bwrap", "uid")


def test_the_reference_uploaded_as_a_zip_scores_full_marks(jailed_autograder: Path, tmp_path: Path) -> None:
    autograder = jailed_autograder
    reference = write_submission(tmp_path / "repo", STAGE)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:  # a GitHub download: one folder around the repository
        for path in sorted(reference.rglob("*.py")):
            zf.write(path, f"minitorch-main/{path.relative_to(reference).as_posix()}")
    (autograder / "submission" / "minitorch-main.zip").write_bytes(buffer.getvalue())
    proc, results = run_autograder(autograder)
    assert proc.returncode == 0, proc.stderr
    points = task_points()
    assert {t["number"]: t["score"] for t in task_tests(results)} == points, results["output"]
    assert results["score"] == sum(points.values())
    assert "graded in" in proc.stdout  # the table, for the instructor (Gradescope's stdout)


@pytest.mark.parametrize(
    "files, said",
    [
        pytest.param({"README.md": "my homework\n"}, "no minitorch/ package found", id="no_package"),
        pytest.param({"homework.zip": "PK\x03\x04 not really a zip\n"}, "homework.zip", id="bad_zip"),
    ],
)
def test_a_broken_submission_gets_zero_and_a_message(
    jailed_autograder: Path, files: dict[str, str], said: str
) -> None:
    autograder = jailed_autograder  # run_autograder asks for a jail before it reads the submission
    for rel, text in files.items():
        (autograder / "submission" / rel).write_text(text)
    proc, results = run_autograder(autograder)
    assert proc.returncode == 0, proc.stderr
    assert results["score"] == 0 and said in results["output"], results["output"]
    assert [t["number"] for t in task_tests(results)] == list(task_points())


@pytest.mark.parametrize(
    "env, said",
    [
        pytest.param(
            {PYTHON_VAR: "/nonexistent/python"}, "The autograder failed (exit status 127)", id="no_python"
        ),
        pytest.param({SANDBOX_VAR: "process"}, "grades only in a jail", id="process_tier_refused"),
    ],
)
def test_when_grading_fails_the_results_still_say_so(
    autograder: Path, env: dict[str, str], said: str
) -> None:
    write_submission(autograder / "submission", STAGE)  # would score full marks
    (autograder / "results").mkdir()
    (autograder / "results" / "results.json").write_text('{"score": 100.0}')  # a stale file never counts
    proc, results = run_autograder(autograder, **env)
    assert proc.returncode == 0, proc.stderr
    assert (
        results["score"] == 0 and said in results["output"] and "tell the course staff" in results["output"]
    ), results


def test_a_run_stopped_while_grading_leaves_a_zero_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gradescope's time limit kills the autograder mid-grading: the placeholder written
    before grading stays (here the kill is a SystemExit raised where grading would run)."""

    def killed(*args: object, **kwargs: object) -> None:
        raise SystemExit("killed by the time limit")

    monkeypatch.setattr(gradescope_bundle, "jail_tier", lambda request: "bwrap")
    monkeypatch.setattr(grading, "grade", killed)
    (tmp_path / "submission").mkdir()
    with pytest.raises(SystemExit):
        gradescope_bundle.grade_submission(STAGE, tmp_path)
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0 and "did not finish" in results["output"], results


# ------------------------------------------------------------------- out of the student's reach


@pytest.fixture(scope="module")
def tiers(bundle: Path) -> dict[str, str]:
    """For each tier, '' when the unpacked bundle (kit o-rwx, as run_autograder leaves it)
    can use it on this machine, else why not."""
    top = Path(tempfile.mkdtemp(prefix="gradescope-tiers-"))
    try:
        with zipfile.ZipFile(bundle) as zf:
            zf.extractall(top / "source")
        os.chmod(top / "source", 0o750)
        code = "import json; from grader.sandbox.tiers import tier_reasons; print(json.dumps(tier_reasons()))"
        env = {k: v for k, v in os.environ.items() if k != "MINITORCH_KIT_ROOT"}
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=top / "source",
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)
    finally:
        shutil.rmtree(top)


def hostile_submission(autograder: Path) -> None:
    target = Target(
        "gradescopehostile",
        kit=str(autograder / "source"),
        results=str(autograder / "results" / "results.json"),
        port=9,
    )
    write_submission(autograder / "submission", STAGE, ATTACK.edits(target))


@pytest.mark.parametrize("tier", ["bwrap", "uid"])
def test_student_code_cannot_read_the_bundles_checks_or_reference(
    autograder: Path, tier: str, tiers: dict[str, str]
) -> None:
    if tiers[tier]:
        pytest.skip(f"no {tier} tier on this machine: {tiers[tier]}")
    hostile_submission(autograder)
    kit = autograder / "source"
    assert kit.stat().st_mode & 0o007 == 0o005  # unpacked: readable by others, until run_autograder runs
    proc, results = run_autograder(autograder, **{SANDBOX_VAR: tier})
    assert proc.returncode == 0, proc.stderr
    assert kit.stat().st_mode & 0o007 == 0, oct(kit.stat().st_mode)
    assert results["extra_data"]["isolation"] == tier
    mul = by_number(results)["0.1"]
    assert mul["score"] < mul["max_score"] and "nothing found" in mul["output"], mul["output"][:500]
    seen = json.dumps(results) + proc.stdout + proc.stderr
    assert _hidden_check_line() not in seen and _reference_line() not in seen


def test_without_a_jail_the_same_attack_reads_them(autograder: Path) -> None:
    """The test above can fail: graded by the bundle's kit with no jail, the attack finds the
    bundle (it is told its path) and its feedback holds the hidden checks and the reference."""
    hostile_submission(autograder)
    out = autograder / "results" / "process.json"
    environ = {k: v for k, v in os.environ.items() if k != "MINITORCH_KIT_ROOT"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.commands.cli",
            "run",
            str(autograder / "submission"),
            "-a",
            STAGE,
            "--task",
            "0.1",
            "--sandbox",
            "process",
            "--json",
            str(out),
        ],
        cwd=autograder / "source",
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    shown = out.read_text()
    assert _hidden_check_line() in shown and _reference_line() in shown
