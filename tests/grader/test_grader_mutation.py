"""The mutation analysis (`grader check --mutants`): generating mutants, grading them, the verdicts.

Generation is checked on the whole of A0 (and a small file that holds every construct an
operator needs); grading end to end on single A0 mutants chosen by their description, so
the tests stay fast. The (a) verdict is shown by weakening task 0.1's hidden checks in
this process: a mutant the public tests catch must then be reported as a violation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.mutation import analysis as mutation
from grader.checks import get_check
from grader.checks.base import REGISTRY, Check
from grader.commands.cli import main as cli_main
from grader.release.examples import stage_files, submission_files
from grader.core.fences import find_fences
from grader.core.manifest import ManifestError, load_manifest, repo_root
from grader.mutation.catalogue import load_catalogue
from grader.mutation.mutants import OPERATORS, Mutant, file_mutants, generate
from grader.mutation.analysis import analyse, grade_mutant, select
from grader.mutation.report import render_markdown, update_markdown
from grader.mutation.verdicts import StageReport, Verdict
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader

FAST = Limits(check_timeout=8, start_timeout=60)

#: A fence holding every construct an operator of `grader.mutation.mutants` applies to.
EVERY_CONSTRUCT = '''\
def f(xs: list[int], flag: bool = True) -> list[int]:
    """Doc."""
    # BEGIN SOLUTION 9.1
    total, found = 0, False
    for x in xs:
        if x is None or not flag:
            continue
        total += x * 2
        found = True
    key = lambda v: v + 1
    match total:
        case 0:
            return []
        case _:
            pass
    return [key(total)] if found else []
    # END SOLUTION 9.1


def g() -> None:
    return None
'''


def _outside(text: str, rel: str) -> list[str]:
    """The lines of `text` that are not inside a fence body."""
    body = {i for f in find_fences(text, rel) for i in range(f.begin, f.end - 1)}
    return [line for i, line in enumerate(text.splitlines(keepends=True)) if i not in body]


def _changed_fences(before: str, after: str, rel: str) -> set[tuple[str, str]]:
    return {
        (a.task, a.function)
        for a, b in zip(find_fences(before, rel), find_fences(after, rel))
        if a.body != b.body
    }


def _one(stage: str, task: str, needle: str) -> Mutant:
    """The generated mutant of `task` whose description contains `needle`."""
    found = [m for m in generate(stage, [task]) if needle in m.description]
    assert len(found) == 1, [m.description for m in found]
    return found[0]


# --------------------------------------------------------------------------- generation


def test_a0_mutants_change_only_their_own_fence_and_compile() -> None:
    mutants = generate("a0")
    assert len(mutants) > 100
    reference = {rel: (repo_root() / rel).read_text(encoding="utf-8") for rel in stage_files("a0")}
    for m in mutants:
        before = reference[m.file]
        assert _outside(m.text, m.file) == _outside(before, m.file), m.id  # byte-identical outside
        assert _changed_fences(before, m.text, m.file) == {(m.task, m.function)}, m.id
        compile(m.text, m.file, "exec")
        assert m.id.startswith(f"{m.task}:{m.function}:{m.operator}:") and m.description.startswith(
            f"{m.file}:{m.line} "
        )
    assert len({m.id for m in mutants}) == len(mutants)
    assert len({m.text for m in mutants}) == len(mutants)  # no duplicates


def test_ids_are_stable_across_generations() -> None:
    first = [(m.id, m.text) for m in generate("a0")]
    file_mutants.cache_clear()
    assert [(m.id, m.text) for m in generate("a0")] == first


def test_every_operator_family_produces_mutants() -> None:
    on_a0 = {m.operator for m in generate("a0")}
    for family in (
        "swap_op",
        "number",
        "number_minus_one",
        "delete_statement",
        "noop_body",
        "early_return",
        "return_type",
        "arg_removal",
        "assignment",
        "if_exp",
        "keywords",
    ):
        assert family in on_a0, family
    made = file_mutants(EVERY_CONSTRUCT, "minitorch/every.py", frozenset({"9.1"}))
    assert {m.operator for m in made} == set(OPERATORS)
    assert all(m.function == "f" for m in made)  # g() has no fence: never mutated
    early = [m.description for m in made if m.operator == "early_return"]
    assert any("`return [key(total)] if found else []` inserted before `match total:`" in d for d in early), (
        early
    )
    wrapped = [m.description for m in made if m.operator == "return_type"]
    assert any("→ `return iter([key(total)] if found else [])`" in d for d in wrapped), wrapped


def test_a_file_without_fences_of_the_tasks_has_no_mutants() -> None:
    assert file_mutants(EVERY_CONSTRUCT, "minitorch/every.py", frozenset({"0.1"})) == ()


@pytest.mark.parametrize("stage", ["a0", "a1", "a2"])
def test_the_catalogue_loads_and_each_mistake_applies(stage: str) -> None:
    catalogue = load_catalogue(stage)
    assert len(catalogue.mistakes) >= 3
    tasks = {t.id for t in load_manifest(stage).tasks}
    for m in catalogue.mistakes:
        assert m.task in tasks and m.operator == "mistake" and m.why in m.description
        before = (repo_root() / m.file).read_text(encoding="utf-8")
        assert _outside(m.text, m.file) == _outside(before, m.file)
        assert _changed_fences(before, m.text, m.file) == {(m.task, m.function)}
    generated = {m.id for m in generate(stage)}
    stale = set(catalogue.equivalents) - generated
    assert not stale, (
        f"mutants.toml of {stage} marks mutants equivalent that no longer exist: {sorted(stale)}"
    )


def test_a_catalogue_mistake_for_a_missing_fence_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mutants.toml").write_text(
        '[[mistake]]\ntask = "0.1"\nfunction = "nowhere"\nwhy = "x"\nbody = "pass"\n'
    )
    monkeypatch.setattr("grader.mutation.catalogue.stage_dir", lambda stage: tmp_path)
    with pytest.raises(ManifestError, match="no fence of task 0.1 in nowhere"):
        load_catalogue("a0")


def test_a_sample_is_fixed_and_keeps_the_catalogue() -> None:
    catalogue = load_catalogue("a0")
    one = select("a0", ["0.1", "0.2"], catalogue, 3)
    assert [m.id for m in one] == [m.id for m in select("a0", ["0.1", "0.2"], catalogue, 3)]
    generated = [m for m in one if m.operator != "mistake"]
    assert sorted(m.task for m in generated) == ["0.1"] * 3 + ["0.2"] * 3
    assert {m.id for m in catalogue.mistakes if m.task in ("0.1", "0.2")} <= {m.id for m in one}


# --------------------------------------------------------------------------- verdicts


#: A mutant of task 0.1 that nothing outside 0.1 calls.
LOG_BACK = "`return d / x` → `return d * x`"


def test_a_wrong_log_back_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    mutant = _one("a0", "0.1", LOG_BACK)
    monkeypatch.setattr(mutation, "select", lambda *args: [mutant])
    report = analyse("a0", task="0.1", limits=FAST)
    (verdict,) = report.verdicts
    assert verdict.killed and verdict.score < verdict.max_points and not verdict.others
    assert report.ok and not report.problems
    (row,) = report.tasks()
    assert (row.task, row.mutants, row.killed, row.score) == ("0.1", 1, 1, 100.0)


def test_another_task_whose_score_moves_is_violation_b() -> None:
    mutant = _one("a0", "0.1", LOG_BACK)
    reference = {t.id: t.points for t in load_manifest("a0").tasks}
    assert not grade_mutant("a0", submission_files("a0"), mutant, FAST, reference).others
    reference["0.3"] = 0.0  # as if the reference had scored 0 on 0.3: the mutant moved it
    verdict = grade_mutant("a0", submission_files("a0"), mutant, FAST, reference)
    assert len(verdict.others) == 1 and verdict.others[0].startswith("task 0.3 scored 30/30 (reference 0)")


def test_hidden_checks_weaker_than_the_public_tests_are_violation_a(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in load_manifest("a0").task("0.1").checks:  # every hidden check of 0.1 now passes anything
        chk = get_check("a0", name)
        monkeypatch.setitem(
            REGISTRY, ("a0", name), Check(chk.task, chk.stage, chk.name, chk.kind, lambda ctx: None, chk.doc)
        )
    mutant = _one("a0", "0.1", LOG_BACK)
    monkeypatch.setattr(mutation, "select", lambda *args: [mutant])
    report = analyse("a0", task="0.1", limits=FAST)
    (verdict,) = report.verdicts
    assert not verdict.killed
    assert verdict.public_failed and verdict.public.startswith(
        "failed: FAILED tests/public/test_operators.py"
    ), verdict.public
    assert not report.problems  # the public tests pass on the unmutated tree
    assert report.failures() == [verdict] and not report.ok
    assert report.tasks()[0].violations_a == 1
    assert "(a) survivors that fail the public tests" in render_markdown(report)


# --------------------------------------------------------------------------- the report


def _report(stage: str, killed: bool) -> StageReport:
    m = Mutant(
        f"{stage}:f:swap_op:00000000",
        "0.1" if stage == "a0" else "1.1",
        "f",
        "minitorch/x.py",
        "swap_op",
        3,
        "minitorch/x.py:3 f: `a` → `b`",
        "",
    )
    return StageReport(
        stage, "all mutants", [Verdict(m, 0.0 if killed else 10.0, 10.0, "failed", public="passed")]
    )


def test_markdown_keeps_the_other_stages(tmp_path: Path) -> None:
    path = tmp_path / "MUTATION.md"
    update_markdown(path, _report("a1", killed=True))
    update_markdown(path, _report("a0", killed=False))
    text = path.read_text()
    assert text.index("## a0") < text.index("## a1")
    assert "`a0:f:swap_op:00000000`" in text and "| 0.1 | 1 | 0 | 0 | 1 | 0.0 |" in text
    update_markdown(path, _report("a0", killed=True))
    text = path.read_text()
    assert text.count("## a0") == 1 and "| 0.1 | 1 | 1 | 0 | 0 | 100.0 |" in text and "## a1" in text


@pytest.mark.parametrize(
    "sample, task, written", [(None, None, True), (3, None, True), (3, "0.1", False), (None, "0.1", False)]
)
def test_a_run_of_a_whole_stage_writes_its_section_sampled_or_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sample: "int | None", task: "str | None", written: bool
) -> None:
    # the slow stages are sampled (--sample N): their section says so; one task's run writes nothing
    def fake_analyse(
        stage: str, *, task: "str | None" = None, sample: "int | None" = None, **_: object
    ) -> StageReport:
        scope = (
            "all mutants"
            if sample is None
            else f"a sample of {sample} generated mutants per task + the catalogue"
        )
        report = _report(stage, killed=True)
        report.scope = scope + ("" if task is None else f", task {task} only")
        return report

    monkeypatch.setattr(mutation, "analyse", fake_analyse)
    monkeypatch.setattr(mutation, "repo_root", lambda: tmp_path)
    (tmp_path / "assignments").mkdir()
    assert mutation.main(["a0"], task=task, sample=sample) == 0
    path = tmp_path / mutation.MARKDOWN
    assert path.is_file() == written
    if written:
        assert ("a sample of 3 generated mutants per task" in path.read_text()) == (sample == 3)


def test_check_options_of_the_mutation_analysis_need_mutants(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["check", "-a", "a0", "--task", "0.1"]) == 2
    assert "--mutants" in capsys.readouterr().err


def _catalogue_limits(stage: str) -> Limits:
    """FAST for the pure-Python stages; the grader's own limits where checks compile Numba
    kernels. A mutant's tree is a fresh copy, so each of its checks compiles cold, and on
    CI's two cores the kernels of task 3.1 once took longer than FAST's 24 s: a timeout
    that charged task 3.1 for a mistake of task 3.3, which the grader itself would not."""
    return FAST if stage in ("a0", "a1", "a2") else Limits()


def _catalogue_cases() -> list:
    return [
        pytest.param(stage, m, id=m.id)
        for stage in ("a0", "a1", "a2", "a3", "a4", "a6")
        for m in load_catalogue(stage).mistakes
    ]


@pytest.mark.parametrize("stage, mistake", _catalogue_cases())
def test_every_catalogue_mistake_loses_points_on_its_own_task_only(stage: str, mistake: Mutant) -> None:
    """The real students' mistakes of the issue (lt returning a bool, a recursive
    topological_sort, a no-op to_index / broadcast_index, …), graded end to end: each
    loses points on its own task, and (one mistake, one charge) no other task's score moves."""
    reference = {t.id: t.points for t in load_manifest(stage).tasks}
    verdict = grade_mutant(stage, submission_files(stage), mistake, _catalogue_limits(stage), reference)
    assert not verdict.errors, verdict.errors
    assert verdict.killed, f"{mistake.description}: {verdict.message}"
    assert not verdict.others, verdict.others
