"""Hostile submissions, graded in every isolation tier this machine provides (issue 14).

Each attack of `tests/grader/hostile` (a submission whose fence bodies try one thing the grader
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
the jail is tested in `tests/grader/test_grader_jail.py`.

Issue 26 (`hostile.neighbours`): two gradings at once (finding 2), two students one after
the other in one grader process (finding 7), the host's disk (finding 6); each also in a
simulated container without namespaces (`hostile.container`: the ``uid`` tier with no
network or IPC namespace of its own, tier ``uid-container`` in the test ids).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import ATTACKS, Attack
from hostile.container import container_path
from hostile.host import Outcome, copy_kit, run_attack
from hostile.neighbours import VICTIM, planted

from grader.core.fences import find_fences
from grader.core.manifest import load_manifest, repo_root

pytestmark = pytest.mark.grader

#: The tiers that jail student code (`grader.sandbox.tiers.TIERS` less "process").
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
    code = "import json; from grader.sandbox.tiers import tier_reasons; print(json.dumps(tier_reasons()))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=kit, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _honest(attack: Attack) -> dict[str, float]:
    """Graded task → the most it may score: its points when the attack leaves it alone,
    else the share of the checks the attack's body passes honestly (`Attack.earns`)."""
    out = {}
    for t in load_manifest(attack.stage).tasks:
        if attack.task in (None, t.id):
            earned = 1.0
            if t.id in attack.attacked_tasks():
                earned = sum(t.weight(c) for c in t.checks if c in attack.earns) / sum(
                    t.weight(c) for c in t.checks
                )
            out[t.id] = t.points * earned
    return out


def _hidden_check_line() -> str:
    """The first line of the docstring of the hidden checks of 1.4."""
    source = (repo_root() / "grader" / "checks" / "a1" / "task_1_4.py").read_text()
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
    return {
        "the grader's secret": outcome.secret,
        "the hidden checks' source": _hidden_check_line(),
        "the reference's source": _reference_line(),
    }


def _grade(attack: Attack, tier: str, tmp_path: Path, **kw) -> tuple[Outcome, list[str]]:
    kit = kw.pop("kit", None) or copy_kit(tmp_path / "kit", numba_cache=attack.stage == "a3")
    outcome = run_attack(attack, tier, kit, tmp_path / "run", **kw)
    return outcome, outcome.violations(_honest(attack), _leaks(outcome))


def _attack(name: str) -> Attack:
    return next(a for a in ATTACKS if a.name == name)


#: Issue 26's tiers: bubblewrap, the uid tier, and the uid tier in a container that forbids
#: namespaces (no bwrap, unshare or setpriv on PATH).
TIERS_26 = ("bwrap", "uid", "uid-container")


def _tier_env(tier: str, tmp_path: Path, tier_reasons: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The grader's tier and environment for one of `TIERS_26` (skips a tier not here)."""
    real = tier.split("-")[0]
    if tier_reasons[real]:
        pytest.skip(f"no {real} tier on this machine: {tier_reasons[real]}")
    if tier != "uid-container":
        return real, {}
    env = {"PATH": container_path(tmp_path)}
    probe = "from grader.sandbox.tiers import private_network; print(private_network())"
    out = subprocess.run(
        [sys.executable, "-c", probe], env=os.environ | env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out  # the container is simulated: no namespaces for the uid tier
    return real, env


@pytest.mark.parametrize("tier", ["uid-container"])
@pytest.mark.parametrize(
    "name", ["fill_the_disk", "write_home_and_tmp", "leave_for_the_next", "read_hidden_checks"]
)
def test_an_attack_is_contained_in_a_container(
    name: str, tier: str, tmp_path: Path, tier_reasons: dict[str, str]
) -> None:
    """The uid tier without namespaces (issue 26): the attacks of the host's shared places."""
    real, env = _tier_env(tier, tmp_path, tier_reasons)
    _, violations = _grade(_attack(name), real, tmp_path, env=env)
    assert not violations, f"{name} under {tier}:\n  - " + "\n  - ".join(violations)


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        out += kids
        todo += kids
    return out


def _victim_tree(victim: subprocess.Popen, timeout: float = 120.0) -> Path:
    """The tree of the victim's grading child, once it runs (it then waits in task 1.2)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and victim.poll() is None:
        for pid in _descendants(victim.pid):
            try:
                cwd = Path(os.readlink(f"/proc/{pid}/cwd"))  # bwrap's own is the grader's: not it
                if b"_grader_child.py" in Path(f"/proc/{pid}/cmdline").read_bytes() and cwd.name.startswith(
                    "tree"
                ):
                    return cwd
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"the victim's grading child never started (exit status {victim.poll()})")


@pytest.mark.parametrize("tier", TIERS_26)
def test_a_concurrent_grading_is_out_of_reach(
    tier: str, tmp_path: Path, tier_reasons: dict[str, str]
) -> None:
    """Finding 2: while another student's grading runs (held in its task 1.2), a submission
    that implements nothing looks for that grading's tree and runs its central_difference;
    it must score what it earns itself: nothing."""
    real, env = _tier_env(tier, tmp_path, tier_reasons)
    kit = copy_kit(tmp_path / "kit")
    from grader.release.examples import write_submission

    sub = write_submission(tmp_path / "victim", "a1", VICTIM)
    victim_env = (
        {k: v for k, v in os.environ.items() if k != "MINITORCH_KIT_ROOT"} | {"PYTHONPATH": str(kit)} | env
    )
    victim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grader.commands.cli",
            "run",
            str(sub),
            "-a",
            "a1",
            "--no-notebooks",
            "--timeout",
            "60",
            "--sandbox",
            real,
            "--json",
            str(tmp_path / "victim.json"),
        ],
        cwd=kit,
        env=victim_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    tree: Path | None = None
    try:
        tree = _victim_tree(victim)
        _, violations = _grade(_attack("steal_concurrent_tree"), real, tmp_path, kit=kit, env=env)
    finally:
        if tree is not None and victim.poll() is None:
            (tree / "release").touch()  # the victim goes on with its grading
        try:
            _, err = victim.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            victim.kill()
            _, err = victim.communicate()
    assert victim.returncode == 0, err.decode(errors="replace")[-2000:]
    graded = json.loads((tmp_path / "victim.json").read_text())["tests"]
    assert graded and all(t["score"] == t["max_score"] for t in graded), (
        graded
    )  # the victim was graded, undisturbed
    assert not violations, f"steal_concurrent_tree under {tier}:\n  - " + "\n  - ".join(violations)


@pytest.mark.parametrize("tier", TIERS_26)
def test_the_next_student_finds_nothing_left(tier: str, tmp_path: Path, tier_reasons: dict[str, str]) -> None:
    """Finding 7: student A leaves a file in /run/lock and a System V segment; student B,
    graded next by the same grader process, reads neither, and neither outlives grading."""
    real, env = _tier_env(tier, tmp_path, tier_reasons)
    kit = copy_kit(tmp_path / "kit")
    outcome = run_attack(
        _attack("read_what_was_left"),
        real,
        kit,
        tmp_path / "run",
        env=env,
        graded_before=(_attack("leave_for_the_next"),),
    )
    leaks = _leaks(outcome) | {"what the previous student left": planted(outcome.target.marker)}
    violations = outcome.violations(_honest(_attack("read_what_was_left")), leaks)
    assert not violations, f"under {tier}:\n  - " + "\n  - ".join(violations)


@pytest.mark.parametrize("tier, attack", list(_cases()))
def test_an_attack_is_contained(
    tier: str, attack: Attack, tmp_path: Path, tier_reasons: dict[str, str]
) -> None:
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
