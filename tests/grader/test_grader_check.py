"""`grader check`: the invariants hold for the stages without notebooks (fast enough for
the suite; `grader check` runs all stages)."""

from __future__ import annotations

import pytest

from grader.commands.invariants import check_stage, main
from grader.sandbox.session import Limits

pytestmark = pytest.mark.grader


@pytest.mark.parametrize("stage", ["a0", "a2"])
def test_invariants_hold(stage: str) -> None:
    invariants = check_stage(stage, Limits(check_timeout=30))
    names = [i.name for i in invariants]
    assert names[0] == "reference scores full marks" and names[1] == "fresh release scores zero"
    assert sum(n.startswith("breaking task") for n in names) >= 3
    failed = [f"{i.name}: {i.detail}" for i in invariants if not i.ok]
    assert not failed, failed


def test_check_reports_a_broken_invariant(monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that passes everything: the fresh release no longer scores zero.
    from grader.checks import base

    key = ("a0", "map")
    original = base.REGISTRY[key]
    monkeypatch.setitem(
        base.REGISTRY,
        key,
        base.Check(original.task, original.stage, original.name, original.kind, lambda ctx: None, "", 1.0),
    )
    invariants = check_stage("a0", Limits(check_timeout=30))
    bad = {i.name for i in invariants if not i.ok}
    assert "fresh release scores zero" in bad
    assert any(n.startswith("breaking task 0.2") for n in bad)


def test_cli_check_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from grader.commands import invariants as check_module

    monkeypatch.setattr(
        check_module,
        "check_stage",
        lambda stage, limits, console=None, **kw: [check_module.Invariant(stage, "x", True, "", 0.0)],
    )
    assert main(["a0"]) == 0
    monkeypatch.setattr(
        check_module,
        "check_stage",
        lambda stage, limits, console=None, **kw: [check_module.Invariant(stage, "x", False, "why", 0.0)],
    )
    assert main(["a0"]) == 1
