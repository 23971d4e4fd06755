"""Solution fences and manifests: parsing, validation, rendering, and the real tree."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from grader.core.fences import FenceError, find_fences, package_fences, render, stub_line, student_bodies
from grader.core.manifest import (
    ManifestError,
    all_manifests,
    all_stages,
    load_manifest,
    stage_of_task,
    task_of_fence,
)

pytestmark = pytest.mark.grader

ROOT = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent(
    '''\
    import math


    def mul(x, y):
        """x · y"""
        # BEGIN SOLUTION 0.1
        return x * y
        # END SOLUTION 0.1


    class Box:
        def area(self):
            """w · h"""
            # BEGIN SOLUTION 0.2
            w = self.w
            return w * self.h
            # END SOLUTION 0.2


    def factory(fn):
        def _apply(xs):
            # BEGIN SOLUTION 0.2
            return [fn(x) for x in xs]
            # END SOLUTION 0.2

        return _apply
    '''
)


def test_find_fences_reads_task_lines_indent_body_and_function() -> None:
    fences = find_fences(SOURCE, "ops.py")
    assert [(f.task, f.begin, f.end, f.function) for f in fences] == [
        ("0.1", 6, 8, "mul"),
        ("0.2", 14, 17, "Box.area"),
        ("0.2", 22, 24, "factory._apply"),
    ]
    assert fences[0].indent == "    " and fences[1].indent == fences[2].indent == "        "
    assert fences[1].body == ("        w = self.w\n", "        return w * self.h\n")
    assert fences[0].stage == "a0"


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n", 2, "never closed"),
        ("def f():\n    return 1\n    # END SOLUTION 1.1\n", 3, "without a matching BEGIN"),
        (
            "def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n    # END SOLUTION 1.2\n",
            4,
            "closes the fence of task 1.1",
        ),
        (
            "def f():\n    # BEGIN SOLUTION 1.1\n    # BEGIN SOLUTION 1.1\n    x = 1\n    # END SOLUTION 1.1\n",
            3,
            "do not nest",
        ),
        ("def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n  # END SOLUTION 1.1\n", 4, "indentation"),
        ("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n", 2, "malformed"),
        ("def f():\n    ### BEGIN SOLUTION 1.1\n    return 1\n", 2, "malformed"),
    ],
)
def test_malformed_fences_are_errors_naming_file_and_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(FenceError) as info:
        find_fences(text, "minitorch/x.py")
    assert info.value.filename == "minitorch/x.py"
    assert info.value.line == line
    assert fragment in str(info.value) and f"minitorch/x.py:{line}:" in str(info.value)


@pytest.mark.parametrize(
    "text, tasks",
    [
        ("def f():\n    # BEGIN SOLUTION 1.1\n    # BEGIN SOLUTION 1.2\n", {"1.1", "1.2"}),
        ("def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n    # END SOLUTION 1.3\n", {"1.1", "1.3"}),
        ("def f():\n    ### BEGIN SOLUTION 1.1\n    return 1\n", {"1.1"}),
        ("def f():\n    # BEGIN SOLUTION\n    return 1\n", set()),
    ],
)
def test_fence_errors_name_the_tasks_of_their_markers(text: str, tasks: set) -> None:
    with pytest.raises(FenceError) as info:
        find_fences(text, "minitorch/x.py")
    assert set(info.value.tasks) == tasks


def test_marker_text_inside_other_lines_is_not_a_marker() -> None:
    text = 'def f():\n    """Write between # BEGIN SOLUTION 1.1 and its END."""\n    return 1\n'
    assert find_fences(text) == []


def test_render_keeps_markers_and_chooses_bodies() -> None:
    out, problems = render(SOURCE, keep={"0.1"}, stub={"0.2"}, titles={"0.2": "Boxes"})
    assert problems == []
    assert "        return w * self.h\n" not in out
    assert "    return x * y\n" in out
    assert out.count("# BEGIN SOLUTION") == 3 and out.count("# END SOLUTION") == 3
    assert (
        '        raise NotImplementedError("Task 0.2: Boxes (Box.area) — write your code between the markers")\n'
        in out
    )
    assert '        raise NotImplementedError("Task 0.2: Boxes (factory._apply)' in out
    ast.parse(out)
    # The code outside the fences is untouched.
    assert out.splitlines()[:5] == SOURCE.splitlines()[:5]
    assert [f.body for f in find_fences(out)][0] == ("    return x * y\n",)


def test_render_requires_every_task_to_be_assigned_once() -> None:
    with pytest.raises(ValueError, match="0.2"):
        render(SOURCE, keep={"0.1"})
    with pytest.raises(ValueError, match="exactly one"):
        render(SOURCE, keep={"0.1", "0.2"}, stub={"0.2"})


def test_render_replace_splices_bodies_in_order_and_stubs_the_rest() -> None:
    out, problems = render(
        SOURCE, keep={"0.1"}, replace={"0.2": [["        return 42\n"]]}, filename="ops.py"
    )
    fences = find_fences(out)
    assert fences[1].body == ("        return 42\n",)
    assert fences[2].body == (stub_line(fences[2]),)
    assert (
        len(problems) == 1 and "ops.py:22" in problems[0].message and "factory._apply" in problems[0].message
    )
    assert (problems[0].file, problems[0].line, problems[0].tasks) == ("ops.py", 22, ("0.2",))


def test_student_bodies_match_by_function_even_when_a_fence_is_lost() -> None:
    student = SOURCE.replace("            w = self.w\n", "            w = self.w  # mine\n")
    # The student deleted the whole fence of Box.area and broke nothing else.
    lines = student.splitlines(keepends=True)
    del lines[13:17]
    broken = "".join(lines)
    parsed = student_bodies(broken, "ops.py")
    assert parsed.problems == ()
    out, problems = render(SOURCE, keep={"0.1"}, from_student={"0.2"}, student=parsed, filename="ops.py")
    fences = find_fences(out)
    assert fences[1].body == (stub_line(fences[1]),)  # lost: a stub, reported
    assert fences[2].body == ("        return [fn(x) for x in xs]\n",)  # not shifted into Box.area
    assert len(problems) == 1 and "Box.area" in problems[0].message


def test_damaged_student_markers_are_reported_and_that_fence_is_dropped() -> None:
    student = SOURCE.replace("    # END SOLUTION 0.1\n", "").replace("return x * y", "return y * x")
    student = student.replace("return w * self.h", "return self.h * w")
    parsed = student_bodies(student, "ops.py")
    assert len(parsed.problems) == 1 and "opened at line 6" in parsed.problems[0].message
    assert parsed.problems[0].file == "ops.py" and "0.1" in parsed.problems[0].tasks
    out, problems = render(SOURCE, from_student={"0.1", "0.2"}, student=parsed, filename="ops.py")
    fences = find_fences(out)
    assert fences[0].body == (stub_line(fences[0]),)
    assert any("0.1" in p.tasks for p in problems)
    # Fences after the damage still come through.
    assert fences[2].body == ("        return [fn(x) for x in xs]\n",)


def test_student_fences_that_match_nothing_are_reported() -> None:
    student = SOURCE + "\n\ndef extra():\n    # BEGIN SOLUTION 0.2\n    return 1\n    # END SOLUTION 0.2\n"
    _, problems = render(SOURCE, keep={"0.1"}, from_student={"0.2"}, student=student_bodies(student, "s.py"))
    assert any(
        "extra" in p.message and "matches no fence" in p.message and p.tasks == ("0.2",) for p in problems
    )


def test_student_lines_are_taken_verbatim() -> None:
    student = SOURCE.replace("    return x * y\n", "\treturn x*y  # tabs\n")
    out, _ = render(SOURCE, from_student={"0.1", "0.2"}, student=student_bodies(student, "s.py"))
    assert "\treturn x*y  # tabs\n" in out


# ---------------------------------------------------------------------------- the real tree


@pytest.fixture(scope="module")
def reference_fences() -> dict:
    return package_fences(ROOT / "minitorch")


def test_every_fence_in_minitorch_is_inside_a_function_after_its_docstring(reference_fences: dict) -> None:
    assert reference_fences, "minitorch/ has no fences"
    for rel, fences in reference_fences.items():
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for f in fences:
            owners = [fn for fn in funcs if fn.lineno < f.begin <= fn.end_lineno]
            assert owners, f"{rel}:{f.begin}: fence {f.task} is not inside a function body"
            fn = max(owners, key=lambda n: n.lineno)
            doc = fn.body[0]
            if (
                isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                assert f.begin > doc.end_lineno, (
                    f"{rel}:{f.begin}: fence {f.task} starts before the docstring ends"
                )


def test_every_fence_maps_to_a_manifest_task(reference_fences: dict) -> None:
    manifests = all_manifests(ROOT)
    for rel, fences in reference_fences.items():
        for f in fences:
            assert f.stage in manifests, f"{rel}:{f.begin}: stage {f.stage} of fence {f.task} has no manifest"
            task = task_of_fence(f.task, ROOT)
            assert task.stage == f.stage


def test_every_fence_task_is_in_the_task_table(reference_fences: dict) -> None:
    table = (ROOT / "assignments" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| (\d+\.\d+) \|", table, flags=re.M))
    used = {f.task for fences in reference_fences.values() for f in fences}
    assert used <= listed, f"fence ids missing from assignments/README.md: {sorted(used - listed)}"


def test_manifests_load_and_each_stage_is_worth_100_points() -> None:
    stages = all_stages(ROOT)
    assert stages[:3] == ["a0", "a1", "a2"]
    for stage in stages:
        m = load_manifest(stage, ROOT)
        assert m.id == stage and m.title
        assert m.total_points == pytest.approx(100), f"{stage}: points sum to {m.total_points}"
        assert m.handout.is_file() and m.handout.read_text(encoding="utf-8").strip()
        for t in m.tasks:
            assert t.checks and t.fences and t.hint
            for test in t.public_tests:
                path = ROOT / test
                assert path.is_file(), f"{stage} task {t.id}: {test} does not exist"
                assert t.marker in path.read_text(encoding="utf-8"), f"{test} has no test marked {t.marker}"


# ---------------------------------------------------------------------------- manifest validation


def _kit(tmp_path: Path, manifest: str) -> Path:
    (tmp_path / "minitorch").mkdir()
    (tmp_path / "minitorch" / "m.py").write_text(
        "def f():\n    # BEGIN SOLUTION 1.1\n    return 1\n    # END SOLUTION 1.1\n", encoding="utf-8"
    )
    (tmp_path / "assignments" / "a1-demo").mkdir(parents=True)
    (tmp_path / "assignments" / "a1-demo" / "manifest.toml").write_text(
        textwrap.dedent(manifest), encoding="utf-8"
    )
    return tmp_path


GOOD = """\
    id = "a1"
    title = "Demo"
    [[tasks]]
    id = "1.1"
    title = "One"
    points = 100
    fences = ["1.1"]
    checks = ["one"]
    """


def test_a_valid_manifest_loads(tmp_path: Path) -> None:
    m = load_manifest("a1", _kit(tmp_path, GOOD))
    assert m.tasks[0].fences == ("1.1",) and m.tasks[0].marker == "task1_1"
    assert m.total_points == 100 and m.slug == "a1-demo"
    assert task_of_fence("1.1", tmp_path).id == "1.1"
    assert stage_of_task("12.3") == "a12"


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda s: s + 'colour = "red"\n', "unknown key(s) colour"),
        (lambda s: s.replace('checks = ["one"]', 'checks = ["one"]\nspeed = 1'), "unknown key(s) speed"),
        (lambda s: s + s[s.index("[[tasks]]") :], "duplicate task id 1.1"),
        (lambda s: s.replace('fences = ["1.1"]', 'fences = ["1.2"]'), "no '# BEGIN SOLUTION 1.2' fence"),
        (lambda s: s.replace('fences = ["1.1"]', 'fences = ["2.1"]'), "not a fence id of stage a1"),
        (lambda s: s.replace('id = "a1"', 'id = "a2"'), "folder is for stage a1"),
        (lambda s: s.replace("points = 100", "points = -1"), "positive number"),
        (lambda s: s.replace('checks = ["one"]', "checks = []"), "must not be empty"),
        (lambda s: s + '[[notebooks]]\npath = "a1/nope.ipynb"\npoints = 5\n', "does not exist"),
        (lambda s: s + "[tasks.performance]\nmax_ratio = 2.0\nwarmup = 3\n", "unknown key(s) warmup"),
        (
            lambda s: s.replace('title = "Demo"', 'title = "Demo"\n[gradescope]\ndetails = "later"'),
            "[gradescope].details = 'later' is not a Gradescope visibility (allowed: visible, after_due_date, after_published, hidden)",
        ),
        (
            lambda s: s.replace('title = "Demo"', 'title = "Demo"\n[gradescope]\nscore = "visible"'),
            "unknown key(s) score in [gradescope] (allowed: visibility, details, stdout_visibility)",
        ),
        (
            lambda s: s.replace('title = "Demo"', 'title = "Demo"\ngradescope = "visible"'),
            "[gradescope] must be a table",
        ),
        (lambda s: s.replace('title = "One"', "title = "), "invalid TOML"),
    ],
)
def test_invalid_manifests_are_clear_errors(tmp_path: Path, edit, fragment: str) -> None:
    root = _kit(tmp_path, edit(textwrap.dedent(GOOD)))
    with pytest.raises(ManifestError) as info:
        load_manifest("a1", root)
    assert fragment in str(info.value)
    assert "manifest.toml" in str(info.value)


def _names_read_after_a_fence(text: str, fences: list) -> list[str]:
    """Every name the code after a fence reads that only the fence assigns, in the function
    around the fence: with the release's stub (a raise) such code can never run, and a
    student's body that names its result differently breaks it in a way the handout does
    not explain."""

    def stored(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return node.id
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return node.name
        if isinstance(node, ast.alias):
            return (node.asname or node.name).split(".")[0]
        return node.arg if isinstance(node, ast.arg) else None

    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, kinds)]
    found = []
    for fence in fences:
        around = [fn for fn in functions if fn.lineno < fence.begin and fn.end_lineno > fence.end]
        if not around:
            continue
        fn = max(around, key=lambda n: n.lineno)  # the innermost
        inside, outside = set(), set()
        for node in ast.walk(fn):
            name = stored(node)
            if name is None or node is fn:
                continue
            line = getattr(node, "lineno", fence.begin - 1)
            in_fence = fence.begin < line < fence.end and not isinstance(node, ast.arg)
            (inside if in_fence else outside).add(name)
        found += [
            f"{fence.function} (fence {fence.task}) line {node.lineno} reads {node.id}"
            for node in ast.walk(fn)
            if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.lineno > fence.end
            and node.id in inside - outside
        ]
    return found


def test_no_code_after_a_fence_reads_a_name_only_the_fence_defines(reference_fences: dict) -> None:
    wrong = [
        f"{rel}: {problem}"
        for rel, fences in reference_fences.items()
        for problem in _names_read_after_a_fence((ROOT / rel).read_text(encoding="utf-8"), fences)
    ]
    assert not wrong, "return the fence's result, or assign a name defined before it:\n" + "\n".join(wrong)


def test_a_name_read_after_the_fence_that_only_the_fence_defines_is_found() -> None:
    source = textwrap.dedent(
        """\
        def layer_norm(x, eps):
            rows = x
            # BEGIN SOLUTION 6.4
            normalised = rows / eps
            rows = rows + 0
            # END SOLUTION 6.4
            return normalised, rows
        """
    )
    found = _names_read_after_a_fence(source, find_fences(source, "ln.py"))
    assert found == ["layer_norm (fence 6.4) line 7 reads normalised"]
