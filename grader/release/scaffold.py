"""The starter repository's own files: README.md, pyproject.toml, the tests workflow, .gitignore.

    write_file(out_dir / "README.md", _readme(stage, manifest, tasks, notebooks))

What `grader.release.starter` writes beside the package, the public tests and the notebooks,
each as text made from the manifests (and the kit's pyproject.toml):

* `_readme`: the stage's handout, then the task table, setup, how to run the public tests,
  the rules, how to submit and how the grade is computed (as `grader.checks.runner`
  computes it);
* `_pyproject`: what a student installs (the library's dependencies, a `dev` extra, a
  `notebooks` extra for a stage with notebooks; never the grader's or PyTorch) and the
  kit's pytest configuration, every task marker registered;
* `_workflow`: CI that runs the public tests of the stage and the earlier ones on every push;
* `_GITIGNORE`.

The GitHub Classroom workflow is `grader.release.classroom`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from grader.trees.intake import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES
from grader.core.manifest import Manifest, Task, stage_number


def _toml_list(values: Iterable[str], indent: str = "    ") -> str:
    items = "".join(f"{indent}{json.dumps(v, ensure_ascii=False)},\n" for v in values)
    return "[\n" + items + "]"


def _requirement_name(requirement: str) -> str:
    """The normalized project name of a requirement: "minitorch-kit[grader]" -> "minitorch-kit"."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return re.sub(r"[-_.]+", "-", match.group(0)).lower() if match else ""


def _pyproject(stage: str, manifest: Manifest, root: Path) -> str:
    """The student's pyproject.toml: what a student installs, and the kit's pytest configuration.

    dependencies: the kit's (the library: NumPy, Numba, rich for the examples' progress bars);
    `dev`: the kit's `dev` without the kit's own extras: "minitorch-kit[grader]" (nbgrader,
    mutmut: the grader's) and "minitorch-kit[plot]" (matplotlib: the examples' pictures, optional);
    `notebooks`: the kit's, only when the stage has notebook parts.
    The kit's `grader` and `oracle` (PyTorch) extras never ship.
    """
    kit = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = kit.get("project", {})
    optional = project.get("optional-dependencies", {})
    kit_name = _requirement_name(project.get("name", "minitorch-kit"))
    extras = {"dev": [d for d in optional.get("dev", []) if _requirement_name(d) != kit_name]}
    if manifest.notebooks:
        extras["notebooks"] = list(optional.get("notebooks", ["jupyterlab>=4"]))
    pytest_cfg = kit.get("tool", {}).get("pytest", {}).get("ini_options", {})
    markers = pytest_cfg.get("markers", [])
    lines = [
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f'name = "minitorch-{stage}"',
        f"version = {json.dumps(project.get('version', '0.1.0'))}",
        f"description = {json.dumps(f'minitorch, assignment {stage.upper()}: {manifest.title}', ensure_ascii=False)}",
        'readme = "README.md"',
        f"requires-python = {json.dumps(project.get('requires-python', '>=3.10'))}",
        f"dependencies = {_toml_list(project.get('dependencies', []))}",
        "",
        "[project.optional-dependencies]",
        *(f"{key} = {_toml_list(values)}" for key, values in extras.items()),
        "",
        "[tool.setuptools.packages.find]",
        'include = ["minitorch*"]',
        "",
        "[tool.setuptools.package-data]",
        '"minitorch" = ["datasets/data/**/*"]',
        "",
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        # short tracebacks: a student's run of a task that is still stubs would print ~60
        # lines per failing test (1,800 for one task) with pytest's long default
        f"addopts = {json.dumps(pytest_cfg.get('addopts', '--strict-markers -ra') + ' --tb=short')}",
        f"markers = {_toml_list(markers)}",
    ]
    if pytest_cfg.get("filterwarnings"):
        lines.append(f"filterwarnings = {_toml_list(pytest_cfg['filterwarnings'])}")
    return "\n".join(lines) + "\n"


def _marker_expr(tasks: Iterable[Task]) -> str:
    return " or ".join(t.marker for t in tasks)


def _workflow(stage: str, tasks: list[Task]) -> str:
    env = ""
    if stage_number(stage) >= 3:
        env = '    env:\n      NUMBA_ENABLE_CUDASIM: "1"  # CUDA kernels run on the simulator\n'
    return (
        "name: tests\n"
        "on: [push, pull_request]\n"
        "jobs:\n"
        "  public-tests:\n"
        "    runs-on: ubuntu-latest\n"
        f"{env}"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - uses: actions/setup-python@v5\n"
        "        with:\n"
        '          python-version: "3.11"\n'
        "      - name: Install\n"
        '        run: python -m pip install -e ".[dev]"\n'
        "      - name: Public tests\n"
        f"        run: python -m pytest -m {json.dumps(_marker_expr(tasks))}\n"
    )


_GITIGNORE = """__pycache__/
*.py[co]
*.nbi
*.nbc
*.egg-info/
.pytest_cache/
.hypothesis/
.ipynb_checkpoints/
.venv/
"""


def _readme(stage: str, manifest: Manifest, tasks: list[Task], notebooks: list[str]) -> str:
    """The starter's README: the handout, then the task table, setup, tests, rules,
    submission and how the grade is computed (as `grader.checks.runner` computes it)."""
    handout = manifest.handout.read_text(encoding="utf-8").rstrip() + "\n"
    rows = [
        f"| {t.id} | {t.title} | {t.points:g} | {len(t.checks)} | `pytest -m {t.marker}` |"
        for t in manifest.tasks
    ]
    for part, path in zip(manifest.notebooks, notebooks):
        rows.append(
            f"| notebook | {part.title or part.name} (`{path}`) | {part.points:g} | its test cells | — |"
        )
    earlier = [t for t in tasks if t.stage != stage]
    speed = any(t.performance for t in manifest.tasks)
    these = ", ".join(f"`{n}`" for n in notebooks)
    notebook_setup = [
        f"The notebook part{'s' if len(notebooks) > 1 else ''} ({these}) need{'' if len(notebooks) > 1 else 's'} "
        'Jupyter: `python -m pip install -e ".[notebooks]"`, then `jupyter lab`. Fill in the cells '
        "marked `# YOUR CODE HERE` and run the notebook top to bottom before you submit.",
        "",
    ]
    parts = [
        handout,
        "---",
        "",
        f"## Tasks and points ({manifest.total_points:g} in all)",
        "",
        "| task | title | points | hidden checks | its public tests |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "## Getting started",
        "",
        "```bash",
        "python -m venv .venv && source .venv/bin/activate",
        'python -m pip install -e ".[dev]"     # NumPy, Numba, rich; pytest and hypothesis',
        "```",
        "",
        "PyTorch is not needed: minitorch is your own library on NumPy and Numba, and the public "
        "tests do not use PyTorch.",
        "",
        *(notebook_setup if notebooks else []),
        "## Running the public tests",
        "",
        "```bash",
        f"python -m pytest -m {manifest.tasks[0].marker}          # the public tests of one task",
        f'python -m pytest -m "{_marker_expr(manifest.tasks)}"   # all of this assignment',
        "```",
        "",
        "A task's tests fail with `NotImplementedError: Task X.Y` until you write it. The CI "
        "workflow (`.github/workflows/tests.yml`) runs the public tests of this assignment"
        + (" and of the earlier ones" if earlier else "")
        + " on every push. With GitHub Classroom, "
        "`.github/workflows/classroom.yml` also runs on every push: each task's public tests "
        "(`python -m pytest -q -x -m taskX_Y`) earn the task's points when they all pass, and the "
        "total shows in Classroom and the Actions tab. It is a preview: the grade comes from "
        "hidden checks, which can fail where the public tests pass.",
        "",
        "## Rules",
        "",
        "* Write your code **only between the markers** `# BEGIN SOLUTION X.Y` and "
        "`# END SOLUTION X.Y`, and keep the markers. The grader takes those regions from "
        "your files and nothing else: edits outside them (and new files) are ignored, so "
        "define any helper you need inside the fence.",
        '* A function holds `raise NotImplementedError("Task X.Y: …")` until you replace it.',
        "* Earlier assignments come filled in with the reference solution; later ones are stubs.",
        "",
        "## Submitting",
        "",
        "Submit this repository (as your course asks: an upload or a link) or a zip of it; what "
        "the grader needs is the `minitorch/` folder"
        + (f" and {these}" if notebooks else "")
        + ". Leave out `.venv/`: a zip may hold at most "
        f"{MAX_SUBMISSION_FILES:,} files and {MAX_SUBMISSION_BYTES // 2**20} MiB. For example:",
        "",
        "```bash",
        "zip -r submission.zip minitorch" + (" notebooks" if notebooks else "") + " -x '*/__pycache__/*'",
        "```",
        "",
        "Only the code between the markers is graded: the grader puts each of your fenced regions "
        "into its own copy of this release. A region that does not compile, or breaks the import of "
        "the package, is replaced by its stub: it costs that task only.",
        "",
        "## How the grade is computed",
        "",
        "Each task is graded by hidden checks (the table gives how many), such as: your outputs "
        "(and gradients) against the reference on generated inputs, your backward against central "
        "differences of your own forward, and properties such as broadcasting rules"
        + (", and the speed of your kernels" if speed else "")
        + ". A check passes or fails "
        "as a whole. A task's points are shared among its checks by weight (equal unless the "
        "assignment weighs one more): score = points × (weight of the checks passed) / (weight "
        "of all its checks). When a check runs out of time, the task's remaining checks are not "
        "run and score nothing.",
        *(
            [
                f"A notebook part's points are shared among its autograded test cells; a cell scores "
                "when it runs to its end on the values your cells computed."
            ]
            if notebooks
            else []
        ),
        "",
        "The public tests are a sample of what the checks test: a failing public test points to "
        "a failing check, but passing them all does not guarantee full marks.",
        "",
        "## Seeing your grade",
        "",
        "Your instructor grades the submission with the course kit's `grader run` (the hidden "
        "checks are not in this repository). Its report gives each task's points and, for a "
        "failed check, the call, the expected value and yours, and the task's hint. Before you "
        "submit, run the public tests: they are what you can check yourself.",
        "",
    ]
    return "\n".join(parts)
