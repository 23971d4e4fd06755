"""Hostile submissions, graded in every isolation tier this machine provides (issue 14).

Each attack of `tests/hostile` (a submission whose fence bodies try one thing the grader
must stop) is graded the way a course grades it — ``grader run SUB -a a1 --json OUT
--sandbox TIER``, in a process of its own — by a throwaway copy of the kit, and watched
from outside (`hostile.host`). Whatever the attack does, it must end with:

* grading completed (exit status 0, never stopped, never killed) and a results file that
  the grader wrote: valid, listing the graded tasks, saying which tier graded it, with a
  score no higher than the honest one (the points of the tasks the attack leaves alone)
  and unchanged after the grader exited;
* no process left running (the grader runs under a child subreaper: `hostile/reaper.py`);
* the kit byte-for-byte unchanged, no file left in root's home, /tmp, /var/tmp, /dev/shm,
  no connection to a port the test listens on;
* nothing of the grader's environment (a secret set for the run), the hidden checks or
  the reference in what the student sees (the results file and the grader's output).

The jail-specific attacks run in the jail tiers only (``bwrap``, ``uid``): without a jail
they get through, as the "before" table of the issue's note shows and
`test_without_a_jail_an_attack_gets_through` proves on one of them. The classics run in
every tier, ``process`` included. A tier this machine cannot provide is skipped with the
reason; a known limit of a tier (the ``uid`` tier has no network namespace) is an expected
failure, strict, so that a change shows. ``--sandbox=require`` refusing to grade without
the jail is tested in `tests/test_grader_jail.py`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import ATTACKS, Attack
from hostile.host import Outcome, copy_kit, run_attack

from grader.fences import find_fences
from grader.manifest import load_manifest, repo_root

pytestmark = pytest.mark.grader

#: The tiers that jail student code (`grader.jail.TIERS` less "process").
JAIL_TIERS = ("bwrap", "uid")


def _cases():
    for attack in ATTACKS:
        for tier in JAIL_TIERS:
            why = attack.gets_through.get(tier)
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            yield pytest.param(tier, attack, id=f"{tier}-{attack.name}", marks=marks + _slow(attack))
        if not attack.needs_jail:
            yield pytest.param("process", attack, id=f"process-{attack.name}", marks=_slow(attack))


def _slow(attack: Attack) -> list:
    return [pytest.mark.slow] if attack.slow else []


@pytest.fixture(scope="session")
def tier_reasons(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """For each tier, '' when a kit copy (what grades the attacks) can use it here, else why not."""
    kit = copy_kit(tmp_path_factory.mktemp("tiers") / "kit")
    env = {k: v for k, v in os.environ.items() if k != "MINITORCH_KIT_ROOT"}
    code = "import json; from grader.jail import tier_reasons; print(json.dumps(tier_reasons()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=kit, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _honest(attack: Attack) -> dict[str, float]:
    """Graded task → the most it may score: its points when the attack leaves it alone,
    else the share of the checks the attack's body passes honestly (`Attack.earns`)."""
    out = {}
    for t in load_manifest(attack.stage).tasks:
        if attack.task in (None, t.id):
            earned = 1.0
            if t.id in attack.attacked_tasks():
                earned = sum(t.weight(c) for c in t.checks if c in attack.earns) / sum(t.weight(c) for c in t.checks)
            out[t.id] = t.points * earned
    return out


def _hidden_check_line() -> str:
    """The first line of the docstring of the hidden checks of 1.4."""
    source = (repo_root() / "grader" / "checks" / "a1_backprop.py").read_text()
    line = (ast.get_docstring(ast.parse(source)) or "").splitlines()[0]
    assert len(line) > 40, line  # distinctive enough not to turn up by chance
    return line


def _reference_line() -> str:
    """The first line of the reference's backpropagation (a fence body of 1.4)."""
    text = (repo_root() / "minitorch" / "autodiff.py").read_text()
    fence = next(f for f in find_fences(text, "minitorch/autodiff.py") if f.function == "backpropagate")
    line = next(line.strip() for line in fence.body if line.strip() and not line.strip().startswith("#"))
    assert len(line) > 30, line
    return line


def _leaks(outcome: Outcome) -> dict[str, str]:
    return {"the grader's secret": outcome.secret, "the hidden checks' source": _hidden_check_line(),
            "the reference's source": _reference_line()}


def _grade(attack: Attack, tier: str, tmp_path: Path) -> tuple[Outcome, list[str]]:
    kit = copy_kit(tmp_path / "kit", numba_cache=attack.stage == "a3")
    outcome = run_attack(attack, tier, kit, tmp_path / "run")
    return outcome, outcome.violations(_honest(attack), _leaks(outcome))


@pytest.mark.parametrize("tier, attack", list(_cases()))
def test_an_attack_is_contained(tier: str, attack: Attack, tmp_path: Path, tier_reasons: dict[str, str]) -> None:
    if tier_reasons[tier]:
        pytest.skip(f"no {tier} tier on this machine: {tier_reasons[tier]}")
    _, violations = _grade(attack, tier, tmp_path)
    assert not violations, f"{attack.name} ({attack.about}) under {tier}:\n  - " + "\n  - ".join(violations)


def test_without_a_jail_an_attack_gets_through(tmp_path: Path) -> None:
    """The suite can fail: in the ``process`` tier the child reads the hidden checks into its
    feedback, and the watcher sees it; the results and the grader's output say that no jail
    graded them."""
    attack = next(a for a in ATTACKS if a.name == "read_hidden_checks")
    outcome, violations = _grade(attack, "process", tmp_path)
    assert "the hidden checks' source is visible to the student" in violations, violations
    assert "the reference's source is visible to the student" in violations, violations
    results = outcome.results()
    assert results is not None and results["extra_data"]["isolation"] == "process"
    assert "WARNING: sandbox 'process'" in outcome.stdout
