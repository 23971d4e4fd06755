"""The jail (`grader.sandbox.jail`) and its tiers (`grader.sandbox.tiers`): whole-jail freeze and
kill, clean-up, fail-closed.

Attacks through whole submissions are in `tests/grader/test_grader_hostile.py`; here the jail's
own promises are tested on small programs, in every tier this machine provides.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from grader.sandbox import host as jail_host, jail, tiers
from grader.sandbox.jail import Jail
from grader.sandbox.tiers import SandboxUnavailable, choose_tier
from grader.grading.report import write_reports
from grader.core.results import GradeResult, TaskResult
from grader.sandbox.import_paths import child_import_paths

pytestmark = pytest.mark.grader

JAILED = [t for t in tiers.available_tiers() if t != "process"]
if not JAILED:
    JAILED = [
        pytest.param(
            "bwrap", marks=pytest.mark.skip(reason=f"no jail on this machine: {tiers.tier_reasons()}")
        )
    ]

#: A child that starts a grandchild escaping its session (setsid + double fork), tells the
#: parent it exists, then waits. The marker is in every process's command line.
ESCAPE = """
import os, sys, time
marker = sys.argv[1]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.set_inheritable(w, True)
        os.execv(sys.executable, [sys.executable, "-c", f"import os, time; os.write({w}, b'g'); time.sleep(600)", marker])
    os._exit(0)
os.read(r, 1)  # the grandchild runs
print("ready", flush=True)
time.sleep(600)
"""


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def _start(tier: str, tmp_path: Path, program: str, marker: str) -> Jail:
    tree = tmp_path / "tree"
    work = tmp_path / "work"
    tree.mkdir()
    work.mkdir()
    (tree / "prog.py").write_text(program)
    j = Jail(tier, tree, rw=[work])
    import subprocess

    j.popen(
        [sys.executable, "-I", "-S", str(tree / "prog.py"), marker],
        env={"PATH": "/usr/bin:/bin"},
        pass_fds=(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert j.proc is not None and j.proc.stdout is not None
    line = j.proc.stdout.readline()
    assert line.strip() == b"ready", (line, j.proc.stderr.read() if j.proc.poll() is not None else b"")
    return j


def _outside(j: Jail) -> set[int]:
    """bwrap's own monitor process: the host side of the jail, not a member."""
    return {j.proc.pid} if j.tier == "bwrap" and j.proc is not None else set()


@pytest.mark.parametrize("tier", JAILED)
def test_no_grandchild_outlives_the_jail(tier: str, tmp_path: Path) -> None:
    marker = f"jail-escape-{uuid.uuid4().hex}"
    j = _start(tier, tmp_path, ESCAPE, marker)
    try:
        inside = set(_processes_with(marker)) - _outside(j)
        assert inside <= set(j.members()), "a process of the jail is not counted as its member"
    finally:
        j.kill()
    assert _processes_with(marker) == [], "a process of the jail survived its kill"


@pytest.mark.parametrize("tier", JAILED)
def test_stop_freezes_every_process_of_the_jail(tier: str, tmp_path: Path) -> None:
    marker = f"jail-freeze-{uuid.uuid4().hex}"
    j = _start(tier, tmp_path, ESCAPE, marker)
    try:
        assert j.stop()
        states = {pid: jail_host.state(pid) for pid in _processes_with(marker) if pid not in _outside(j)}
        assert len(states) >= 2 and set(states.values()) == {"T"}, states
        j.cont()
        states = {pid: jail_host.state(pid) for pid in _processes_with(marker)}
        assert "T" not in states.values(), states
    finally:
        j.kill()


def test_the_uid_tier_removes_what_the_jail_left_in_tmp(tmp_path: Path) -> None:
    if "uid" not in tiers.available_tiers():
        pytest.skip(f"no uid tier here: {tiers.tier_reasons()['uid']}")
    marker = f"jail-litter-{uuid.uuid4().hex}"
    litter = Path("/tmp") / marker
    program = (
        f"open({str(litter)!r}, 'w').write('x'); print('ready', flush=True); import time; time.sleep(600)"
    )
    j = _start("uid", tmp_path, program, marker)
    assert litter.exists() and litter.stat().st_uid == j.uid
    j.kill()
    assert not litter.exists()


@pytest.mark.parametrize("venv_inside", [False, True], ids=["kit", "kit-with-a-venv-inside"])
def test_the_bwrap_tier_sees_nothing_of_the_kit(
    venv_inside: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing under the kit's path is visible in the jail but the way to a runtime folder
    mounted below it (a venv inside the clone, as the starter README prescribes: its mount
    point makes the clone's path exist, empty — issue 26, finding 12's false alarm)."""
    if "bwrap" not in tiers.available_tiers():
        pytest.skip(f"no bubblewrap here: {tiers.tier_reasons()['bwrap']}")
    from grader.sandbox import bwrap as jail_bwrap
    from grader.core.manifest import repo_root

    kit = repo_root()
    if venv_inside:  # a clone holding its venv: the venv is mounted, the kit beside it is not
        kit = tmp_path / "clone"
        shutil.copytree(
            repo_root() / "minitorch",
            kit / "minitorch",
            ignore=shutil.ignore_patterns("__pycache__", "*.nb*"),
        )
        (kit / ".venv" / "lib").mkdir(parents=True)
        (kit / ".venv" / "lib" / "venv-file").write_text("part of the runtime")
        runtime = [*jail_bwrap.runtime_dirs(), kit / ".venv"]
        monkeypatch.setattr(jail_bwrap, "runtime_dirs", lambda: runtime)
    report = tmp_path / "work" / "seen.json"
    program = (
        "import json, os, sys\n"
        f"kit = {str(kit)!r}\n"
        "visible = [os.path.join(d, n) for d, dirs, files in os.walk(kit) for n in dirs + files] if os.path.exists(kit) else []\n"
        "seen = {'kit': os.path.exists(kit), 'visible': visible, 'home': os.path.exists(os.path.expanduser('~root')) and os.listdir(os.path.expanduser('~root')),"
        " 'uid': os.getuid(), 'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), 'ppid': os.getppid()}\n"
        f"open({str(report)!r}, 'w').write(json.dumps(seen))\n"
        "print('ready', flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    j = _start("bwrap", tmp_path, program, "kit-probe")
    j.kill()
    seen = json.loads(report.read_text())
    mounted = [str(d) for d in jail_bwrap.runtime_dirs()]
    # at most the mount points of runtime folders below the kit, and what they hold
    outside = [
        p
        for p in seen["visible"]
        if not any(p == m or p.startswith(m + "/") or m.startswith(p + "/") for m in mounted)
    ]
    assert outside == [], f"the jail sees the kit: {outside[:10]}"
    # the kit's package itself, not a venv's files that name it (its editable finder, dist-info)
    package = str(kit / "minitorch")
    assert not any(p == package or p.startswith(package + "/") for p in seen["visible"]), package
    # the kit's folder exists in the jail only as the way to a runtime folder below it (a venv)
    assert seen["kit"] == any(m.startswith(str(kit) + "/") for m in mounted)
    assert seen["uid"] == jail.JAIL_UID
    assert seen["procs"] == [1, 2] and seen["ppid"] == 1  # only the jail's own init and itself
    assert not seen["home"] or set(seen["home"]) <= {".pyenv"}  # at most the mount point of the runtime


def test_require_fails_closed_without_the_strong_jail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        tiers, "tier_reasons", lambda: {"bwrap": "bubblewrap is not installed", "uid": "", "process": ""}
    )
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        choose_tier("require")
    assert choose_tier("auto") == "uid"
    with pytest.raises(ValueError, match="unknown sandbox"):
        choose_tier("docker")


def test_grade_refuses_before_running_anything(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from grader.commands import cli

    monkeypatch.setattr(
        tiers,
        "tier_reasons",
        lambda: {"bwrap": "bubblewrap is not installed", "uid": "not root", "process": ""},
    )
    out = tmp_path / "results.json"
    code = cli.main(["run", str(tmp_path), "-a", "a0", "--sandbox", "require", "--json", str(out)])
    assert code == 2 and not out.exists()


def test_the_child_import_path_holds_only_the_python_installation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))  # like the directory of a script run as `python /tmp/x.py`
    paths = child_import_paths()
    assert str(tmp_path.resolve()) not in paths
    assert any(Path(p, "numpy").is_dir() for p in paths)


def _result() -> GradeResult:
    row = TaskResult("0.1", "Operators", 10.0, 7.0, "failed", "one check failed")
    return GradeResult(
        stage="a0", title="Fundamentals", submission="sub", tasks=[row], seconds=1.0, isolation="bwrap"
    )


def test_a_results_path_that_is_a_directory_keeps_the_grade(tmp_path: Path) -> None:
    bad = tmp_path / "results.json"
    bad.mkdir()
    problems = write_reports(_result(), bad, tmp_path / "junit.xml")
    assert len(problems) == 1 and "cannot write" in problems[0] and "kept in" in problems[0]
    kept = Path(problems[0].rsplit("kept in ", 1)[1])
    try:
        data = json.loads(kept.read_text())
        assert data["score"] == 7.0 and data["extra_data"]["isolation"] == "bwrap"
    finally:
        kept.unlink()
    assert b'name="isolation" value="bwrap"' in (tmp_path / "junit.xml").read_bytes()


@pytest.fixture
def readable_clone() -> Path:
    """A world-readable clone of the kit (its minitorch only) in a folder others may enter,
    as a newcomer's clone is before `scripts/install-sandbox.sh` runs; removed after."""
    top = Path(tempfile.mkdtemp(prefix="readable-clone-"))
    os.chmod(top, 0o755)
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "minitorch",
        top / "clone" / "minitorch",
        ignore=shutil.ignore_patterns("__pycache__", "*.nb*"),
    )
    for p in [top, *top.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    yield top
    shutil.rmtree(top, ignore_errors=True)


POINTERS = {
    # setuptools' editable install: a .pth importing a finder whose MAPPING names the clone
    "editable-finder": lambda clone: {
        "__editable__.minitorch_kit-0.1.0.pth": "import __editable___minitorch_kit_0_1_0_finder; __editable___minitorch_kit_0_1_0_finder.install()\n",
        "__editable___minitorch_kit_0_1_0_finder.py": f"MAPPING = {{'minitorch': {str(clone / 'minitorch')!r}}}\n",
    },
    # an old-style editable install (or a hand-made .pth): the clone's path on a line
    "pth-path": lambda clone: {"minitorch-kit.pth": f"{clone}\n"},
}


@pytest.mark.parametrize("pointer", sorted(POINTERS))
def test_the_uid_tier_refuses_a_readable_editable_install(
    pointer: str, readable_clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 12: an import folder of the child holds an editable install pointing at a
    clone that other users can read; the child could load the reference from it, so the
    uid tier refuses to grade, naming the copy and the pointer."""
    if os.geteuid() != 0 or tiers.tier_reasons()["uid"]:
        pytest.skip(f"no uid tier here: {tiers.tier_reasons()['uid'] or 'not root'}")
    site = readable_clone / "venv" / "site-packages"  # an import folder of the child (a venv's)
    site.mkdir(parents=True)
    clone = readable_clone / "clone"
    for name, text in POINTERS[pointer](clone).items():
        (site / name).write_text(text)
    for p in [site.parent, site, *site.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    monkeypatch.syspath_prepend(str(site))
    assert str(site) in child_import_paths()
    tiers.tier_reasons.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable) as refused:
            choose_tier("uid")
    finally:
        tiers.tier_reasons.cache_clear()
    message = str(refused.value)
    assert str(clone / "minitorch" / "autodiff.py") in message and str(site) in message, message


def test_install_sandbox_prepares_a_clone_with_its_venv_inside(readable_clone: Path) -> None:
    """`scripts/install-sandbox.sh --uid-tier` in a clone whose venv lies inside it (as the
    starter README prescribes): the venv stays usable by other users (the jail's Python
    runs from it), the kit's sources become unreadable to them."""
    if os.geteuid() != 0 or shutil.which("bwrap") is None:
        pytest.skip("needs root and bubblewrap installed (the script would install it)")
    clone = readable_clone / "clone"
    (clone / "scripts").mkdir()
    shutil.copy2(Path(__file__).resolve().parents[2] / "scripts" / "install-sandbox.sh", clone / "scripts")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    env = os.environ | {"PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", str(clone / "scripts" / "install-sandbox.sh"), "--uid-tier"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    nobody = dict(
        user=65534, group=65534, extra_groups=[], capture_output=True, text=True, cwd="/", check=False
    )
    python = str(clone / ".venv" / "bin" / "python")
    ran = subprocess.run([python, "-I", "-c", "import sys; print(sys.prefix)"], **nobody)
    assert ran.returncode == 0 and ran.stdout.strip() == str(clone / ".venv"), ran
    for secret in (clone / "minitorch" / "autodiff.py", clone / "scripts" / "install-sandbox.sh"):
        read = subprocess.run([python, "-I", "-S", "-c", f"open({str(secret)!r}).read()"], **nobody)
        assert read.returncode != 0 and "Permission denied" in read.stderr, (secret, read)
    listed = subprocess.run([python, "-I", "-S", "-c", f"import os; os.listdir({str(clone)!r})"], **nobody)
    assert listed.returncode != 0, "the clone can be listed by other users"


def _uid_tier() -> None:
    if "uid" not in tiers.available_tiers():
        pytest.skip(f"no uid tier here: {tiers.tier_reasons()['uid']}")


def test_a_uid_is_leased_to_one_jail_at_a_time() -> None:
    """Finding 2: no two live jails share a uid, in one grader or in two; a grader that dies
    gives its uids back (the kernel drops its locks)."""
    _uid_tier()
    from grader.sandbox.uid import UidLease

    a, b = UidLease.acquire(), UidLease.acquire()
    try:
        assert a.uid != b.uid
        assert UidLease._try(a.uid, a.path) is None  # held, even within this process
    finally:
        a.release()
        b.release()
    code = "from grader.sandbox.uid import UidLease; import sys, time; l = UidLease.acquire(); print(l.uid, l.path, flush=True); time.sleep(600)"
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        uid, path = holder.stdout.readline().split()
        assert UidLease._try(int(uid), Path(path)) is None  # another grader's
    finally:
        holder.kill()
        holder.wait()
    again = UidLease._try(int(uid), Path(path))
    assert again is not None
    again.release()


def test_uid_jails_read_nothing_of_each_other(tmp_path: Path) -> None:
    """Finding 2: two uid jails at once get two uids; nothing of either's tree or scratch
    is readable, writable or searchable by other users, and one cannot open the other's."""
    _uid_tier()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    program = "print('ready', flush=True); import time; time.sleep(600)"
    ja = _start("uid", tmp_path / "a", program, f"jail-a-{uuid.uuid4().hex}")
    jb = _start("uid", tmp_path / "b", program, f"jail-b-{uuid.uuid4().hex}")
    try:
        assert ja.uid != jb.uid
        for p in [tmp_path / "a", *(tmp_path / "a").rglob("*"), tmp_path / "b", *(tmp_path / "b").rglob("*")]:
            assert not p.lstat().st_mode & 0o007, f"{p} is open to other users: {oct(p.lstat().st_mode)}"
        peek = f"open({str(tmp_path / 'b' / 'tree' / 'prog.py')!r}).read()"
        out = subprocess.run(
            [sys.executable, "-I", "-S", "-c", peek],
            user=ja.uid,
            group=ja.uid,
            extra_groups=[],
            capture_output=True,
            text=True,
            cwd="/",
            check=False,
        )
        assert out.returncode != 0 and "Permission denied" in out.stderr, out
    finally:
        ja.kill()
        jb.kill()
    for p in (tmp_path / "a", tmp_path / "b"):  # closed again: root's alone
        assert p.stat().st_uid == 0 and p.stat().st_gid == 0 and not p.stat().st_mode & 0o077


def test_a_dead_graders_uid_is_swept_and_not_reused_while_its_folders_last(tmp_path: Path) -> None:
    """A grader killed mid-jail (a wall clock) leaves its lease's record: `sweep_abandoned`
    removes the uid's litter in the shared folders, and the uid is not leased again while
    a folder it was given still exists."""
    _uid_tier()
    from grader.sandbox.uid import UidLease, sweep_abandoned

    given = tmp_path / "scratch"
    given.mkdir()
    litter = Path("/tmp") / f"jail-abandoned-{uuid.uuid4().hex}"
    code = (
        "import os, sys, time; from pathlib import Path; from grader.sandbox.uid import UidLease\n"
        "l = UidLease.acquire(); l.hold([Path(sys.argv[1])])\n"
        "fd = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY, 0o600); os.fchown(fd, l.uid, l.uid)\n"
        "print(l.uid, l.path, flush=True); time.sleep(600)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(given), str(litter)], stdout=subprocess.PIPE, text=True
    )
    try:
        uid, path = holder.stdout.readline().split()
    finally:
        holder.kill()
        holder.wait()
    assert litter.exists() and litter.stat().st_uid == int(uid)
    assert int(uid) in sweep_abandoned()
    assert not litter.exists()
    assert UidLease._try(int(uid), Path(path)) is None  # its folder still exists: passed over
    given.rmdir()
    sweep_abandoned()
    again = UidLease._try(int(uid), Path(path))
    assert again is not None
    again.release()
