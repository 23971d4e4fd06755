"""Notebook parts: nbgrader releases them and autogrades submissions.

Autograding runs a Jupyter kernel (a few seconds each), so the cases are few and each one
counts: the solution scores full marks, the release scores 0, a partly right notebook
scores exactly its right part, and hostile notebooks cannot score more than their answers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

from grader.core.manifest import all_manifests
from grader.notebooks.parts import autograde_notebook, notebook_points, release_notebook

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "solutions" / "a1" / "backprop.ipynb"

PART1_RIGHT = "x, y, z = -2.0, 5.0, -4.0\ndf_dq, df_dx, df_dy, df_dz = -4.0, -4.0, -4.0, 3.0\n"
PART2_WRONG = "import math\ndsigma_dz = 0.5\ndf_dw0 = df_dx0 = df_dw1 = df_dx1 = df_dw2 = 1.0\n"


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nb") / "backprop.ipynb"
    release_notebook(SOURCE, out)
    return out


def _cells(path: Path) -> dict[str, dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in nb["cells"] if "nbgrader" in c["metadata"]}


def _student(released: Path, tmp_path: Path, answers: dict[str, str], edit=None) -> Path:  # noqa: ANN001
    nb = nbformat.read(str(released), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    if edit is not None:
        edit(nb)
    path = tmp_path / "submitted" / "backprop.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def _total(grades) -> float:  # noqa: ANN001
    return sum(g.points for g in grades)


# ---------------------------------------------------------------------------- release


def test_release_has_no_solution_or_hidden_test_code(released: Path) -> None:
    text = released.read_text(encoding="utf-8")
    for marker in ["BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS"]:
        assert marker not in text
    source = _cells(SOURCE)
    shipped = "\n".join("".join(c["source"]) for c in _cells(released).values())
    secret = []
    for cell in source.values():
        src = "".join(cell["source"])
        for start, end in [
            ("### BEGIN SOLUTION", "### END SOLUTION"),
            ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
        ]:
            if start in src:
                secret += [
                    line.strip() for line in src.split(start)[1].split(end)[0].splitlines() if line.strip()
                ]
    secret = [line for line in secret if len(line) >= 8]
    assert len(secret) > 10
    shipped_lines = {line.strip() for line in shipped.splitlines()}
    for line in secret:
        assert line not in shipped_lines, f"released notebook holds {line!r}"
    # Students see the stubs, and the visible part of every test cell.
    code = [c for c in _cells(released).values() if c["cell_type"] == "code"]
    assert sum("raise NotImplementedError()" in "".join(c["source"]) for c in code) == 2
    assert 'assert "dsigma_dz" in globals()' in shipped


def test_release_is_deterministic_and_clean(released: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.ipynb"
    release_notebook(SOURCE, again)
    assert again.read_bytes() == released.read_bytes()
    nb = json.loads(released.read_text(encoding="utf-8"))
    assert nb["metadata"] == {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for cell in nb["cells"]:
        assert cell["id"]
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
        meta = cell["metadata"]["nbgrader"]
        if meta.get("grade"):
            assert meta["locked"] and cell["metadata"]["editable"] is False
    nbformat.validate(nbformat.reads(released.read_text(encoding="utf-8"), as_version=4))


def test_manifest_points_match_the_notebook() -> None:
    parts = [(m, nb) for m in all_manifests(ROOT).values() for nb in m.notebooks]
    assert parts, "no stage has a notebook part"
    for manifest, part in parts:
        points = notebook_points(ROOT / "solutions" / part.path)
        assert points and sum(points.values()) == pytest.approx(part.points), f"{manifest.id}: {part.path}"
    assert notebook_points(SOURCE) == {"part1_tests": 6.0, "part2_local_tests": 3.0, "part2_grad_tests": 6.0}


# ---------------------------------------------------------------------------- autograde


def test_the_solution_scores_full_marks(tmp_path: Path) -> None:
    grades = autograde_notebook(SOURCE, SOURCE, tmp_path / "w")
    assert [g.cell_id for g in grades] == ["part1_tests", "part2_local_tests", "part2_grad_tests"]
    assert all(g.passed and g.points == g.max_points for g in grades), grades
    assert _total(grades) == 15


def test_the_released_notebook_scores_zero(released: Path, tmp_path: Path) -> None:
    grades = autograde_notebook(released, SOURCE, tmp_path / "w")
    assert _total(grades) == 0 and not any(g.passed for g in grades)
    assert "set df_dq" in grades[0].message  # the student's actionable reason


def test_hostile_edits_to_test_cells_and_points_do_not_raise_the_score(
    released: Path, tmp_path: Path
) -> None:
    def hostile(nb: nbformat.NotebookNode) -> None:
        cells = nb.cells
        for cell in cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id") == "part2_grad_tests":
                cell.source = "pass  # tests? what tests"
                meta["points"] = 100
                meta["locked"] = False
        # delete the other test of part 2, and add a bonus 'test cell' of our own
        nb.cells = [c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") != "part2_local_tests"]
        bonus = copy.deepcopy(nb.cells[-1])
        bonus.cell_type = "code"
        bonus.metadata = {
            "nbgrader": {
                "grade": True,
                "grade_id": "bonus",
                "locked": True,
                "points": 50,
                "schema_version": 3,
                "solution": False,
                "task": False,
            }
        }
        bonus.source = "pass"
        bonus.id = "bonus"
        bonus.outputs, bonus.execution_count = [], None
        nb.cells.append(bonus)

    student = _student(
        released, tmp_path, {"part1_answers": PART1_RIGHT, "part2_answers": PART2_WRONG}, hostile
    )
    grades = autograde_notebook(student, SOURCE, tmp_path / "w")
    by_id = {g.cell_id: g for g in grades}
    assert set(by_id) == {"part1_tests", "part2_local_tests", "part2_grad_tests"}
    assert by_id["part1_tests"].passed and by_id["part1_tests"].points == 6  # the honest part counts
    assert by_id["part2_grad_tests"].max_points == 6 and by_id["part2_grad_tests"].points == 0
    assert by_id["part2_local_tests"].points == 0  # restored from the source, and failing
    assert _total(grades) == 6


def test_hiding_tracebacks_or_killing_the_kernel_does_not_pass_tests(released: Path, tmp_path: Path) -> None:
    hide = (
        "ip = get_ipython()\n"
        "ip.set_custom_exc((BaseException,), lambda *a, **k: None)\n"
        "ip._showtraceback = lambda *a, **k: None\n"
        "import sys\nsys.stderr = sys.stdout\n"
    )
    student = _student(
        released,
        tmp_path / "hide",
        {"part1_answers": hide + "df_dq = df_dx = df_dy = df_dz = 0.0\n", "part2_answers": PART2_WRONG},
    )
    grades = autograde_notebook(student, SOURCE, tmp_path / "w1")
    assert _total(grades) == 0, grades

    die = "import os\nos._exit(0)\n"
    student = _student(released, tmp_path / "die", {"part1_answers": PART1_RIGHT + die})
    grades = autograde_notebook(student, SOURCE, tmp_path / "w2", timeout=20)
    assert _total(grades) == 0, grades
    assert all(g.message for g in grades)


def test_a_missing_or_broken_notebook_scores_zero_without_running(tmp_path: Path) -> None:
    grades = autograde_notebook(tmp_path / "nope.ipynb", SOURCE, tmp_path / "w")
    assert _total(grades) == 0 and len(grades) == 3 and "missing" in grades[0].message
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    grades = autograde_notebook(broken, SOURCE, tmp_path / "w2")
    assert _total(grades) == 0 and "could not read" in grades[0].message
