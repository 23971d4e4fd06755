"""The student's starter repository: what it installs and what its README tells a student.

A starter (`grader release aN`) installs the library (NumPy, Numba, rich for the examples'
progress bars), `dev` = the public tests' tools (pytest, hypothesis) and, in a stage with
notebook parts, `notebooks` = Jupyter. Never the grader's packages (nbgrader, mutmut) nor
PyTorch. Its README says how to run the public tests, that PyTorch is not needed, how to
submit, how the grade is computed and how to see it. The kit's own extras keep the grader
apart, and `grader` without them says in one line what to install.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from grader.checks.runner import task_score
from grader.core.manifest import all_manifests, stage_number
from grader.release.scaffold import _pyproject, _readme
from grader.release.starter import release
from grader.core.results import CheckResult

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = all_manifests(ROOT)
NOTEBOOK_STAGES = [s for s, m in MANIFESTS.items() if m.notebooks]
PLAIN_STAGES = [s for s, m in MANIFESTS.items() if not m.notebooks]
NEVER_SHIPPED = {"nbgrader", "mutmut", "torch", "minitorch-kit", "jupyter", "jupyterlab", "notebook"}


def _name(requirement: str) -> str:
    """The normalized project name of a requirement string ("Rich>=13" -> "rich")."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _names(requirements: list[str]) -> set[str]:
    return {_name(r) for r in requirements}


def _tasks_through(stage: str) -> list:
    return [t for s, m in MANIFESTS.items() if stage_number(s) <= stage_number(stage) for t in m.tasks]


@pytest.fixture(scope="module")
def a2_starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real release of a stage without notebooks (the files a student gets)."""
    assert "a2" in PLAIN_STAGES
    out = tmp_path_factory.mktemp("starter") / "a2"
    release("a2", out, repo_root=ROOT)
    return out


def _module_level_imports(path: Path) -> set[str]:
    """Top-level packages imported by the statements of a module's body (not inside functions)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


# ---------------------------------------------------------------------------- pyproject


def test_a_starter_installs_the_library_and_the_test_tools_only(a2_starter: Path) -> None:
    project = tomllib.loads((a2_starter / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dependencies = _names(project["dependencies"])
    extras = project.get("optional-dependencies", {})
    assert {"numpy", "numba"} <= dependencies, dependencies
    assert set(extras) == {"dev"}, f"a stage without notebooks ships only the dev extra, not {sorted(extras)}"
    assert _names(extras["dev"]) == {"pytest", "hypothesis"}, extras["dev"]
    everything = dependencies | {n for reqs in extras.values() for n in _names(reqs)}
    assert not everything & NEVER_SHIPPED, f"the starter installs {sorted(everything & NEVER_SHIPPED)}"


def test_every_library_import_of_the_starter_is_a_dependency_and_rich_is_one_for_the_examples(
    a2_starter: Path,
) -> None:
    """What the shipped package imports at module level is installed; nothing else is.

    rich is a library dependency because minitorch/examples import it (progress bars).
    """
    dependencies = _names(
        tomllib.loads((a2_starter / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    )
    imported: dict[str, set[str]] = {}
    for path in sorted((a2_starter / "minitorch").rglob("*.py")):
        for name in _module_level_imports(path) - set(sys.stdlib_module_names) - {"minitorch"}:
            imported.setdefault(name, set()).add(path.relative_to(a2_starter).as_posix())
    assert set(imported) <= dependencies, {n: sorted(f) for n, f in imported.items() if n not in dependencies}
    assert dependencies <= set(imported), (
        f"installed but never imported by the starter: {sorted(dependencies - set(imported))}"
    )
    assert imported.get("rich") and all(f.startswith("minitorch/examples/") for f in imported["rich"]), (
        imported.get("rich")
    )


@pytest.mark.parametrize("stage", NOTEBOOK_STAGES)
def test_a_stage_with_notebooks_adds_a_jupyter_extra_that_its_handout_and_readme_name(stage: str) -> None:
    manifest = MANIFESTS[stage]
    project = tomllib.loads(_pyproject(stage, manifest, ROOT))["project"]
    extras = project["optional-dependencies"]
    assert set(extras) == {"dev", "notebooks"} and _names(extras["notebooks"]) == {"jupyterlab"}, extras
    assert _names(extras["dev"]) == {"pytest", "hypothesis"}
    command = 'pip install -e ".[notebooks]"'
    assert command in manifest.handout.read_text(encoding="utf-8"), (
        f"the {stage} handout does not name {command}"
    )
    notebooks = [f"notebooks/{part.name}" for part in manifest.notebooks]
    readme = _readme(stage, manifest, _tasks_through(stage), notebooks)
    assert command in readme and "jupyter lab" in readme
    assert all(f"`{n}`" in readme for n in notebooks)
    assert "zip -r submission.zip minitorch notebooks" in readme


def test_the_kit_keeps_the_grader_in_its_own_extra_and_dev_still_installs_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert not _names(project["dependencies"]) & {"nbgrader", "mutmut", "torch", "pytest"}, project[
        "dependencies"
    ]
    assert {"rich", "nbgrader", "mutmut"} <= _names(extras["grader"])
    # `.ci/run` installs ".[dev,oracle]": dev must bring the grader's packages with it
    assert "minitorch-kit[grader]" in extras["dev"] and {"pytest", "hypothesis"} <= _names(extras["dev"])
    assert _names(extras["oracle"]) == {"torch"}
    assert '-e ".[dev,oracle]"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_kit_ships_its_licence_and_its_type_hints() -> None:
    """LICENSE holds the licence pyproject names; both packages are marked typed (PEP 561)
    and the marker is package data, so a wheel carries it."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    for package in ("minitorch", "grader"):
        assert (ROOT / package / "py.typed").is_file(), package
        assert "py.typed" in data["tool"]["setuptools"]["package-data"][package], package


def test_grader_without_its_extra_says_in_one_line_what_to_install() -> None:
    hide = "import sys; sys.modules['nbgrader'] = None; sys.modules['mutmut'] = None\n"
    run = "import sys; from grader.commands.cli import main; sys.exit(main(['--help']))\n"
    proc = subprocess.run(
        [sys.executable, "-c", hide + run], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "nbgrader" in lines[0] and "mutmut" in lines[0] and 'pip install -e ".[grader]"' in lines[0]
    assert proc.stdout == ""
    complete = subprocess.run(
        [sys.executable, "-c", run], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert complete.returncode == 0 and "usage: grader" in complete.stdout, complete.stderr


# ---------------------------------------------------------------------------- README


def _section(readme: str, title: str) -> str:
    """The text of the README's section `## title` (up to the next `## `)."""
    assert f"\n## {title}\n" in readme, f"no section {title!r}"
    return readme.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_says_how_to_install_and_run_the_public_tests_without_pytorch(a2_starter: Path) -> None:
    readme = (a2_starter / "README.md").read_text(encoding="utf-8")
    tasks = MANIFESTS["a2"].tasks
    assert 'python -m pip install -e ".[dev]"' in _section(readme, "Getting started")
    assert "PyTorch is not needed" in readme
    tests = _section(readme, "Running the public tests")
    assert f"python -m pytest -m {tasks[0].marker} " in tests
    assert f'python -m pytest -m "{" or ".join(t.marker for t in tasks)}"' in tests
    assert ".[notebooks]" not in readme, "a stage without notebooks names no Jupyter extra"


def test_the_readme_says_how_to_submit_and_what_is_graded(a2_starter: Path) -> None:
    readme = (a2_starter / "README.md").read_text(encoding="utf-8")
    submit = _section(readme, "Submitting")
    assert "zip" in submit and "`minitorch/`" in submit and "`.venv/`" in submit
    assert "Only the code between the markers is graded" in submit
    assert "zip -r submission.zip minitorch " in submit


def test_the_readme_explains_the_grade_as_the_runner_computes_it(a2_starter: Path) -> None:
    readme = (a2_starter / "README.md").read_text(encoding="utf-8")
    grade = _section(readme, "How the grade is computed")
    assert "shared among its checks by weight" in grade
    assert "score = points × (weight of the checks passed) / (weight of all its checks)" in grade
    assert "public tests are a sample" in grade
    # the formula the README states is the runner's: a task with unequal weights
    task = next(t for t in MANIFESTS["a2"].tasks if t.weights)
    passed = task.checks[: len(task.checks) // 2]
    results = [CheckResult(n, "", "passed" if n in passed else "failed", "") for n in task.checks]
    by_readme = task.points * sum(task.weight(n) for n in passed) / sum(task.weight(n) for n in task.checks)
    assert task_score(task, results) == pytest.approx(by_readme, abs=1e-4)
    # the table gives each task's number of hidden checks
    for t in MANIFESTS["a2"].tasks:
        assert f"| {t.id} | {t.title} | {t.points:g} | {len(t.checks)} | `pytest -m {t.marker}` |" in readme
    seeing = _section(readme, "Seeing your grade")
    assert "`grader run`" in seeing and "public tests" in seeing
