"""`grader release` and the grader's child trees.

One release per stage is written once per module (they are small trees); every property is
checked on all of them: deterministic, no reference code of the released stage or later,
nothing of grader/, stubs that raise NotImplementedError naming their task, earlier stages
filled, a package that imports.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from grader.core.fences import find_fences, package_fences, stub_line
from grader.core.manifest import all_manifests, all_stages, stage_number
from grader.trees.intake import SubmissionError, find_notebook, find_package, open_submission
from grader.core.manifest import ManifestError, load_manifest
from grader.release.starter import ReleaseError, release
from grader.trees.child_tree import build_child_tree, default_backend

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]
STAGES = all_stages(ROOT)
REFERENCE = package_fences(ROOT / "minitorch")
TITLES = {f: t.title for m in all_manifests(ROOT).values() for t in m.tasks for f in t.fences}


def _number(task: str) -> int:
    return int(task.split(".")[0])


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("releases")
    out = {}
    for stage in STAGES:
        result = release(stage, base / stage, repo_root=ROOT)
        assert result.files and result.out_dir == base / stage
        out[stage] = base / stage
    return out


# ---------------------------------------------------------------------------- release


def test_releases_are_deterministic(tmp_path: Path) -> None:
    for stage in STAGES:
        first = release(stage, tmp_path / "1" / stage, repo_root=ROOT)
        again = release(stage, tmp_path / "2" / stage, repo_root=ROOT)
        a, b = _files(first.out_dir), _files(again.out_dir)
        assert sorted(a) == sorted(b) == list(again.files), stage
        for name in a:
            assert a[name] == b[name], f"{stage}: {name} differs between two releases"


def test_release_layout(releases: dict[str, Path]) -> None:
    for stage, out in releases.items():
        files = set(_files(out))
        for needed in [
            "README.md",
            "pyproject.toml",
            ".github/workflows/tests.yml",
            ".gitignore",
            "minitorch/__init__.py",
            "minitorch/_release.py",
        ]:
            assert needed in files, f"{stage}: {needed} missing"
        assert not any("__pycache__" in f or f.endswith((".pyc", ".nbi", ".nbc")) for f in files)
        manifest = all_manifests(ROOT)[stage]
        for part in manifest.notebooks:
            assert f"notebooks/{part.name}" in files


def _normalize(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


def _public_lines() -> set[str]:
    """Normalized lines of the reference that are not inside any fence (they ship anyway)."""
    public: set[str] = set()
    for path in sorted((ROOT / "minitorch").rglob("*.py")):
        rel = f"minitorch/{path.relative_to(ROOT / 'minitorch').as_posix()}"
        inside = {i for f in REFERENCE.get(rel, []) for i in range(f.begin, f.end - 1)}  # 0-based body lines
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if i not in inside:
                public.add(_normalize(line))
    return public


def _texts(out: Path) -> dict[str, str]:
    """Every shipped file as text; notebooks as their cells' sources."""
    texts = {}
    for name, data in _files(out).items():
        text = data.decode("utf-8")
        if name.endswith(".ipynb"):
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        texts[name] = text
    return texts


def test_no_reference_code_of_the_stage_or_later_ships(releases: dict[str, Path]) -> None:
    public = _public_lines()
    for stage, out in releases.items():
        n = stage_number(stage)
        legit = set(public)
        secret_bodies = []
        for fences in REFERENCE.values():
            for f in fences:
                lines = {_normalize(line) for line in f.body}
                if _number(f.task) < n:
                    legit |= lines
                else:
                    secret_bodies.append(lines)
        secret = {line for body in secret_bodies for line in body} - legit
        secret = {line for line in secret if len(line) >= 8}
        assert secret, f"{stage}: nothing to protect?"
        for name, text in _texts(out).items():
            lines = {_normalize(line) for line in text.splitlines()}
            if name.startswith("tests/"):
                # Tests legitimately share short generic lines with solutions; what must not
                # appear is a whole solution body.
                for body in secret_bodies:
                    long = {line for line in body - legit if len(line) >= 16}
                    assert len(long) < 2 or not long <= lines, (
                        f"{stage}: {name} holds a solution body: {sorted(long)}"
                    )
            else:
                leaked = sorted(lines & secret)
                assert not leaked, f"{stage}: {name} holds reference code: {leaked[:5]}"


#: Words that name the reference's faster code, and the `minitorch/accel/` files whose
#: presence in a release lets its files use them.
_ACCEL_WORDS = {"tuned": "tuned_", "fused": "fused_"}
#: What a student reads (the corpora under minitorch/datasets/data are text, not the kit's).
_READ_SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".yml", ".yaml", ".cfg", ".sh"}


def test_no_released_file_names_faster_code_the_release_lacks(releases: dict[str, Path]) -> None:
    """A student reads what the release gives them: no file of it names the reference's
    tuned backend or fused layers unless the release ships some of them (issue 28)."""
    for stage, out in releases.items():
        accel = {p.name for p in (out / "minitorch" / "accel").glob("*.py")} - {"__init__.py"}
        for word, prefix in _ACCEL_WORDS.items():
            if any(name.startswith(prefix) for name in accel):
                continue
            pattern = re.compile(rf"(?<![A-Za-z]){word}(?![A-Za-z])", re.IGNORECASE)
            named = sorted(
                name
                for name, text in _texts(out).items()
                if Path(name).suffix in _READ_SUFFIXES and pattern.search(text)
            )
            assert not named, f"{stage}: {named} mention {word!r} code that {stage} does not ship"
        if stage_number(stage) <= 3:
            assert not (out / "minitorch" / "accel").exists(), f"{stage} ships minitorch/accel/"
            assert "fast_tuned" not in "".join(_texts(out).values())
        else:  # from A4 on, the package ships with the modules of the earlier stages
            assert (out / "minitorch" / "accel" / "__init__.py").is_file() and accel, stage


def test_nothing_of_the_grader_ships(releases: dict[str, Path]) -> None:
    # grader/examples holds sample submissions (made from the reference); everything else
    # in grader/ is the grader itself and its hidden checks.
    grader_files = {
        p.read_bytes()
        for p in (ROOT / "grader").rglob("*")
        if p.is_file() and p.stat().st_size > 0 and "examples" not in p.relative_to(ROOT / "grader").parts
    }
    for stage, out in releases.items():
        for name, data in _files(out).items():
            assert not name.startswith("grader"), f"{stage}: {name}"
            assert data not in grader_files, f"{stage}: {name} is a copy of a grader file"
            if name.endswith(".py"):
                tree = ast.parse(data.decode("utf-8"))
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        assert all(a.name.split(".")[0] != "grader" for a in node.names), f"{stage}: {name}"
                    if isinstance(node, ast.ImportFrom) and node.level == 0:
                        assert (node.module or "").split(".")[0] != "grader", f"{stage}: {name}"
        pyproject = tomllib.loads((out / "pyproject.toml").read_text(encoding="utf-8"))
        assert "scripts" not in pyproject["project"]
        assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["minitorch*"]


def test_fences_are_stubbed_from_the_stage_on_and_filled_before(releases: dict[str, Path]) -> None:
    for stage, out in releases.items():
        n = stage_number(stage)
        for rel, ref_fences in REFERENCE.items():
            text = (out / rel).read_text(encoding="utf-8")
            ast.parse(text, rel)  # still Python
            shipped = find_fences(text, rel)
            assert [(f.task, f.function) for f in shipped] == [(f.task, f.function) for f in ref_fences], rel
            for ref, got in zip(ref_fences, shipped):
                if _number(ref.task) < n:
                    assert got.body == ref.body, f"{stage}: {rel}:{got.begin} should hold the reference"
                else:
                    assert got.body == (stub_line(ref, TITLES.get(ref.task)),), f"{stage}: {rel}:{got.begin}"
                    assert f'"Task {ref.task}: ' in got.body[0]


def test_the_public_folder_imports_nothing_from_the_other_test_folders() -> None:
    """Only tests/public/ ships, so a public test that imported an oracle, reference or grader
    test module would break in every student's tree (and show them what they should not see)."""
    others = {
        p.stem
        for folder in ("oracle", "reference", "grader")
        for p in (ROOT / "tests" / folder).rglob("*.py")
    }
    others |= {
        p.name for p in (ROOT / "tests" / "grader").iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    }
    assert "test_view_strides" in others and "hostile" in others  # the scan sees the folders
    wrong = []
    for path in sorted((ROOT / "tests" / "public").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            wrong += [f"{path.name} imports {n}" for n in names if n.split(".")[0] in others]
    assert not wrong, wrong


def test_release_module_names_the_stage_and_backend(releases: dict[str, Path]) -> None:
    for stage, out in releases.items():
        namespace: dict = {}
        exec((out / "minitorch" / "_release.py").read_text(encoding="utf-8"), namespace)
        assert namespace["STAGE"] == stage
        assert namespace["DEFAULT_BACKEND"] == default_backend(stage)
    assert [default_backend(s) for s in ["a0", "a1", "a2", "a3", "a4", "a5"]] == ["simple"] * 4 + ["fast"] * 2
    assert not (ROOT / "minitorch" / "_release.py").exists(), "the reference tree must not have a _release.py"


def test_public_tests_ship_with_their_helpers_and_registered_markers(releases: dict[str, Path]) -> None:
    manifests = all_manifests(ROOT)
    for stage, out in releases.items():
        n = stage_number(stage)
        tasks = [t for s, m in manifests.items() if stage_number(s) <= n for t in m.tasks]
        expected = {p for t in tasks for p in t.public_tests}
        later = {
            p for s, m in manifests.items() if stage_number(s) > n for t in m.tasks for p in t.public_tests
        }
        shipped = {name for name in _files(out) if name.startswith("tests/public/test_")}
        assert shipped == expected, stage
        assert not (later - expected) & shipped
        # the public folder only: no oracle, reference or grader test reaches a student
        outside = {
            name for name in _files(out) if name.startswith("tests/") and not name.startswith("tests/public/")
        }
        assert outside == {"tests/conftest.py"}, (stage, outside)
        for name in shipped:
            for mod in re.findall(
                r"^from (\w+) import", (out / name).read_text(encoding="utf-8"), flags=re.M
            ):
                if (ROOT / "tests" / "public" / f"{mod}.py").is_file():
                    assert (out / "tests" / "public" / f"{mod}.py").is_file(), (
                        f"{stage}: helper {mod}.py missing"
                    )
        config = tomllib.loads((out / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
            "ini_options"
        ]
        registered = {m.split(":")[0] for m in config["markers"]}
        assert (
            {t.marker for t in tasks} <= registered
            and "--strict-markers" in config["addopts"]
            and "--tb=short" in config["addopts"]
        )
        workflow = (out / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")
        for t in tasks:
            assert t.marker in workflow
        readme = (out / "README.md").read_text(encoding="utf-8")
        assert manifests[stage].handout.read_text(encoding="utf-8").strip() in readme
        assert "only between the markers" in readme
        for t in manifests[stage].tasks:
            assert f"pytest -m {t.marker}" in readme


STUB_SCRIPT = textwrap.dedent(
    """
    import importlib, inspect, json, sys
    import minitorch  # the release must import with every stub in place
    assert minitorch.__file__.startswith(sys.argv[1]), minitorch.__file__
    results = []
    for module_name, qualname, task in json.loads(sys.argv[2]):
        module = importlib.import_module(module_name)
        parts = qualname.split(".")
        owner = getattr(module, parts[0])
        if len(parts) == 1:
            fn, args = getattr(owner, "py_func", owner), []
        else:
            raw = inspect.getattr_static(owner, parts[1])
            if isinstance(raw, staticmethod):
                fn, args = raw.__func__, []
            elif isinstance(raw, classmethod):
                fn, args = raw.__func__, [owner]
            elif isinstance(raw, property):
                fn, args = raw.fget, [object.__new__(owner)]
            else:
                fn, args = raw, [object.__new__(owner)]
        params = inspect.signature(fn).parameters.values()
        args += [None for p in params if p.default is p.empty
                 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][len(args):]
        kwargs = {p.name: None for p in params if p.default is p.empty and p.kind is p.KEYWORD_ONLY}
        try:
            fn(*args, **kwargs)
            results.append([module_name, qualname, task, "returned", ""])
        except BaseException as e:
            results.append([module_name, qualname, task, type(e).__name__, str(e)])
    print(json.dumps(results))
    """
)


def _stubbed_functions(out: Path, n: int) -> list[list[str]]:
    """(module, qualname, task) of module-level functions and methods whose body starts
    with a stub of a task of stage ≥ n."""
    found = []
    for rel in REFERENCE:
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        text = (out / rel).read_text(encoding="utf-8")
        fences = find_fences(text, rel)
        tree = ast.parse(text)
        defs = [(node.name, node) for node in tree.body if isinstance(node, ast.FunctionDef)]
        for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
            defs += [(f"{cls.name}.{f.name}", f) for f in cls.body if isinstance(f, ast.FunctionDef)]
        starts = {f.begin + 1: f.task for f in fences if _number(f.task) >= n}  # the stub's line
        for qualname, node in defs:
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                body = body[1:]
            if body and body[0].lineno in starts and isinstance(body[0], ast.Raise):
                found.append([module, qualname, starts[body[0].lineno]])
    return found


@pytest.mark.parametrize("stage", STAGES)
def test_released_package_imports_and_stubs_raise_naming_their_task(
    releases: dict[str, Path], stage: str
) -> None:
    out = releases[stage]
    targets = _stubbed_functions(out, stage_number(stage))
    # A6's functions check their arguments before the fence, so few start with a stub there
    assert len(targets) >= (1 if stage == "a6" else 5), f"{stage}: too few stubs found to check"
    env = {**os.environ, "PYTHONPATH": str(out), "NUMBA_ENABLE_CUDASIM": "1", "MINITORCH_BACKEND": ""}
    env.pop("MINITORCH_BACKEND")
    proc = subprocess.run(
        [sys.executable, "-c", STUB_SCRIPT, str(out), json.dumps(targets)],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == len(targets)
    for module, qualname, task, kind, message in results:
        assert kind == "NotImplementedError", f"{module}.{qualname}: {kind} {message}"
        assert message.startswith(f"Task {task}: ") and "between the markers" in message, message


@pytest.mark.slow
def test_public_tests_of_a_release_pass_for_earlier_stages_and_fail_for_its_own(
    releases: dict[str, Path],
) -> None:
    out = releases["a1"]
    env = {k: v for k, v in os.environ.items() if k != "MINITORCH_BACKEND"}
    env["PYTHONPATH"] = str(out)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            "tests/public/test_operators.py",
            "tests/public/test_autodiff.py",
            "-m",
            "task0_2 or task1_1",
        ],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    passed = re.findall(r"^PASSED (\S+)", proc.stdout, flags=re.M)
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.M)
    assert passed and failed, proc.stdout[-3000:]
    assert all(p.startswith("tests/public/test_operators.py") for p in passed), passed
    assert all(f.startswith("tests/public/test_autodiff.py") for f in failed), failed
    assert "NotImplementedError" in proc.stdout


def test_release_refuses_a_non_empty_directory_and_unknown_stages(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(
        ReleaseError,
        match="not empty: choose an empty folder, or --force to replace an earlier release there",
    ):
        release("a0", tmp_path / "x", repo_root=ROOT)
    with pytest.raises(ReleaseError, match="not empty"):
        release("a0", tmp_path / "x", repo_root=ROOT, force=True)  # not an earlier release
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    release("a0", tmp_path / "y", repo_root=ROOT)
    release("a0", tmp_path / "y", repo_root=ROOT, force=True)  # replaces an earlier release
    with pytest.raises(ReleaseError, match="no assignment"):
        release("a9", tmp_path / "z", repo_root=ROOT)


# ---------------------------------------------------------------------------- child trees


def _tree_fences(tree: Path) -> dict[str, list]:
    return package_fences(tree / "minitorch")


def test_the_reference_as_a_submission_gives_the_reference_for_its_stage(tmp_path: Path) -> None:
    problems = build_child_tree("a1", ROOT, tmp_path / "t", repo_root=ROOT)
    assert problems == []
    got = _tree_fences(tmp_path / "t")
    for rel, ref_fences in REFERENCE.items():
        for ref, f in zip(ref_fences, got[rel]):
            if _number(ref.task) <= 1:
                assert f.body == ref.body
            else:
                assert f.body == (stub_line(ref, TITLES.get(ref.task)),)
    release_py = (tmp_path / "t" / "minitorch" / "_release.py").read_text()
    assert 'STAGE = "a1"' in release_py and 'DEFAULT_BACKEND = "simple"' in release_py


def _student(releases: dict[str, Path], stage: str, tmp_path: Path) -> Path:
    student = tmp_path / "student"
    shutil.copytree(releases[stage], student)
    return student


def test_student_bodies_are_spliced_and_edits_outside_fences_ignored(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    student = _student(releases, "a0", tmp_path)
    ops = student / "minitorch" / "operators.py"
    text = ops.read_text(encoding="utf-8")
    add = find_fences(text)[2]
    assert add.function == "add"
    text = text.replace(add.body[0], "    return y + x  # student\n", 1)
    text = text.replace("import math\n", "import math\nimport os  # outside a fence: ignored\n", 1)
    ops.write_text(text, encoding="utf-8")
    problems = build_child_tree("a0", student, tmp_path / "t", repo_root=ROOT)
    # the edit outside the fences is dropped, with a note (`outside_code.outside_code_problem`)
    assert [(p.file, p.tasks) for p in problems] == [("minitorch/operators.py", ("0.1", "0.2"))]
    assert "code outside the task markers is not graded (`import os" in problems[0].message
    out = (tmp_path / "t" / "minitorch" / "operators.py").read_text(encoding="utf-8")
    fences = {f.function: f for f in find_fences(out)}
    assert fences["add"].body == ("    return y + x  # student\n",)
    assert fences["mul"].body == (stub_line(fences["mul"], TITLES["0.1"]),)
    assert "import os" not in out
    # Earlier stages: none; later stages: stubs even if the student filled them.
    assert (tmp_path / "t" / "minitorch" / "autodiff.py").read_text() == (
        releases["a0"] / "minitorch" / "autodiff.py"
    ).read_text()


def test_missing_files_and_fences_become_stubs_with_problems(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    student = _student(releases, "a1", tmp_path)
    (student / "minitorch" / "autodiff.py").unlink()
    fn = student / "minitorch" / "scalar_functions.py"
    text = fn.read_text(encoding="utf-8")
    first = find_fences(text)[0]
    lines = text.splitlines(keepends=True)
    del lines[first.begin - 1 : first.end]  # the student removed one fence, markers and all
    fn.write_text("".join(lines), encoding="utf-8")
    problems = build_child_tree("a1", student, tmp_path / "t", repo_root=ROOT)
    assert any(
        p.message.startswith("minitorch/autodiff.py missing")
        and p.file == "minitorch/autodiff.py"
        and not p.tasks
        for p in problems
    ), problems
    lost = [p for p in problems if f"task {first.task} in {first.function}" in p.message]
    assert (
        len(lost) == 1 and lost[0].tasks == (first.task,) and lost[0].file == "minitorch/scalar_functions.py"
    ), problems
    tree = _tree_fences(tmp_path / "t")
    assert all(
        f.body[0].strip().startswith("raise NotImplementedError")
        for f in tree["minitorch/autodiff.py"]
        if f.task.startswith("1.")
    )


def test_isolating_a_task_fills_the_others_of_the_stage(releases: dict[str, Path], tmp_path: Path) -> None:
    student = _student(releases, "a1", tmp_path)  # all stubs
    problems = build_child_tree("a1", student, tmp_path / "t", isolate_task="1.1", repo_root=ROOT)
    assert problems == []
    by_task: dict[str, set[bool]] = {}
    ref = {(rel, i): f for rel, fs in REFERENCE.items() for i, f in enumerate(fs)}
    for rel, fences in _tree_fences(tmp_path / "t").items():
        for i, f in enumerate(fences):
            by_task.setdefault(f.task, set()).add(f.body == ref[(rel, i)].body)
    assert by_task["1.1"] == {False}
    assert by_task["1.2"] == by_task["1.3"] == by_task["1.4"] == {True}
    assert by_task["0.1"] == {True} and by_task["2.1"] == {False}
    with pytest.raises(ValueError, match="not a task of stage a1"):
        build_child_tree("a1", student, tmp_path / "t", isolate_task="2.1", repo_root=ROOT)


def test_a_syntax_error_is_stubbed_and_reported(releases: dict[str, Path], tmp_path: Path) -> None:
    # a body that does not compile costs its own task only (grader/trees/fence_guard.py)
    student = _student(releases, "a1", tmp_path)
    path = student / "minitorch" / "autodiff.py"
    text = path.read_text(encoding="utf-8")
    f = find_fences(text)[0]
    path.write_text(text.replace(f.body[0], "    return (((\n", 1), encoding="utf-8")
    problems = build_child_tree("a1", student, tmp_path / "t", repo_root=ROOT)
    assert len(problems) == 1 and problems[0].tasks == (f.task,) and "does not compile" in problems[0].message
    tree = (tmp_path / "t" / "minitorch" / "autodiff.py").read_text(encoding="utf-8")
    assert "    return (((\n" not in tree and find_fences(tree)[0].body == f.body  # the release's stub


def test_zip_submissions_nested_or_flat_give_the_same_tree(releases: dict[str, Path], tmp_path: Path) -> None:
    student = _student(releases, "a0", tmp_path)
    build_child_tree("a0", student, tmp_path / "from-dir", repo_root=ROOT)
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(student.rglob("*")):
            if p.is_file():
                zf.write(p, "repo-main/" + p.relative_to(student).as_posix())  # GitHub's layout
    assert build_child_tree("a0", archive, tmp_path / "from-zip", repo_root=ROOT) == []
    assert _files(tmp_path / "from-dir") == _files(tmp_path / "from-zip")
    # open_submission + find_package, as grader run uses them
    root = open_submission(archive, tmp_path / "work")
    assert find_package(root) == root / "repo-main" / "minitorch"
    assert find_notebook(root, "nothing.ipynb") is None


@pytest.mark.parametrize("name", ["../evil.py", "/etc/evil.py", "a/../../evil.py"])
def test_unsafe_zips_are_refused(tmp_path: Path, name: str) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("minitorch/operators.py", "x = 1\n")
        zf.writestr(name, "boom\n")
    with pytest.raises(SubmissionError, match="unsafe path|outside"):
        build_child_tree("a0", archive, tmp_path / "t", repo_root=ROOT)
    assert not (tmp_path / "evil.py").exists()


def test_zip_symlinks_and_directory_symlinks_are_refused(releases: dict[str, Path], tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("minitorch/operators.py")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, str(ROOT / "minitorch" / "operators.py"))
    with pytest.raises(SubmissionError, match="symbolic link"):
        build_child_tree("a0", archive, tmp_path / "t", repo_root=ROOT)
    # A directory submission whose file links to the reference gets nothing from it.
    student = _student(releases, "a0", tmp_path)
    (student / "minitorch" / "operators.py").unlink()
    (student / "minitorch" / "operators.py").symlink_to(ROOT / "minitorch" / "operators.py")
    problems = build_child_tree("a0", student, tmp_path / "t2", repo_root=ROOT)
    assert any("symbolic link" in p.message for p in problems)
    got = find_fences((tmp_path / "t2" / "minitorch" / "operators.py").read_text(encoding="utf-8"))
    assert all(f.body[0].strip().startswith("raise NotImplementedError") for f in got)


def test_a_zip_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import grader.trees.intake as intake

    monkeypatch.setattr(intake, "MAX_SUBMISSION_BYTES", 100_000)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("minitorch/big.py", "0" * 1_000_000)
    with pytest.raises(SubmissionError, match="more than"):
        open_submission(archive, tmp_path / "w")


def test_a_submission_without_the_package_stubs_everything(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("hello")
    problems = build_child_tree("a0", tmp_path / "empty", tmp_path / "t", repo_root=ROOT)
    assert problems and "no minitorch/ package" in problems[0].message
    assert problems[0].file is None and problems[0].tasks == ()


# ---------------------------------------------------------------------------- reference-only files

_KIT_MANIFEST = """id = "{stage}"
title = "Stage {stage}"
{extra}
[[tasks]]
id = "{n}.1"
title = "Task {n}.1"
points = 100
fences = ["{n}.1"]
checks = ["c"]
"""

_KIT_SOURCE = '''"""A package of two stages."""


def f(x):
    """Stage 0."""
    # BEGIN SOLUTION 0.1
    return x + 1
    # END SOLUTION 0.1


def g(x):
    """Stage 1."""
    # BEGIN SOLUTION 1.1
    return x * 2
    # END SOLUTION 1.1
'''


def _kit(tmp_path: Path, reference_only: str = 'reference_only = ["minitorch/tuned.py"]') -> Path:
    """A small kit: stages a0 and a1; a0 withholds minitorch/tuned.py."""
    kit = tmp_path / "kit"
    (kit / "minitorch").mkdir(parents=True)
    (kit / "tests").mkdir()
    shutil.copyfile(ROOT / "pyproject.toml", kit / "pyproject.toml")
    (kit / "minitorch" / "__init__.py").write_text("from .ops import f, g\n")
    (kit / "minitorch" / "ops.py").write_text(_KIT_SOURCE)
    (kit / "minitorch" / "tuned.py").write_text("FAST = True  # the stage's technique, outside fences\n")
    for stage, n, extra in (("a0", 0, reference_only), ("a1", 1, "")):
        folder = kit / "assignments" / f"{stage}-stage"
        folder.mkdir(parents=True)
        (folder / "manifest.toml").write_text(_KIT_MANIFEST.format(stage=stage, n=n, extra=extra))
        (folder / "README.md").write_text(f"# Stage {stage}\n")
    return kit


def test_reference_only_files_ship_from_the_next_stage_on(tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    assert load_manifest("a0", kit).reference_only == ("minitorch/tuned.py",)
    assert load_manifest("a1", kit).reference_only == ()
    a0 = release("a0", tmp_path / "a0", repo_root=kit)
    a1 = release("a1", tmp_path / "a1", repo_root=kit)
    assert "minitorch/tuned.py" not in a0.files and "minitorch/ops.py" in a0.files
    assert "minitorch/tuned.py" in a1.files
    # child trees: the same rule (graded a0: withheld; graded a1: shipped)
    build_child_tree("a0", tmp_path / "a0", tmp_path / "t0", repo_root=kit)
    build_child_tree("a1", tmp_path / "a1", tmp_path / "t1", repo_root=kit)
    assert not (tmp_path / "t0" / "minitorch" / "tuned.py").exists()
    assert (tmp_path / "t0" / "minitorch" / "ops.py").is_file()
    assert (tmp_path / "t1" / "minitorch" / "tuned.py").read_text() == (
        kit / "minitorch" / "tuned.py"
    ).read_text()


@pytest.mark.parametrize(
    "entry, message",
    [
        ('reference_only = ["minitorch/nothing.py"]', "does not exist"),
        ('reference_only = ["tests/x.py"]', "must be a path under minitorch/"),
        ('reference_only = ["minitorch/../pyproject.toml"]', "must be a path under minitorch/"),
        ('reference_only = ["minitorch/ops.py"]', "holds solution fences"),
        ('reference_only = ["minitorch/__init__.py"]', "cannot be withheld"),
        ('reference_only = "minitorch/tuned.py"', "must be a list of strings"),
        ('reference_only = ["minitorch/tuned.py", "minitorch/tuned.py"]', "duplicates"),
        ('reference_onyl = ["minitorch/tuned.py"]', "unknown key"),
    ],
)
def test_reference_only_entries_are_validated(tmp_path: Path, entry: str, message: str) -> None:
    kit = _kit(tmp_path, entry)
    with pytest.raises(ManifestError, match=message):
        load_manifest("a0", kit)


def test_the_kits_reference_only_files_follow_the_rule(releases: dict[str, Path], tmp_path: Path) -> None:
    manifests = all_manifests(ROOT)
    for stage, m in manifests.items():
        for rel in m.reference_only:
            for other in STAGES:
                shipped = (releases[other] / rel).is_file()
                assert shipped == (stage_number(other) > stage_number(stage)), (
                    f"{rel} in the release of {other}"
                )
            # the child trees of the stage and of the next one
            later = [s for s in STAGES if stage_number(s) == stage_number(stage) + 1]
            for graded in [stage, *later]:
                tree = tmp_path / f"tree-{stage}-{graded}"
                build_child_tree(graded, ROOT, tree, repo_root=ROOT)
                assert (tree / rel).is_file() == (graded != stage), f"{rel} in the child tree of {graded}"
