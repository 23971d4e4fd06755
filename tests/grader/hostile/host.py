"""Grade an attack from outside and write down everything it changed.

    kit = copy_kit(tmp / "kit")                       # a throwaway kit grades it
    outcome = run_attack(attack, "bwrap", kit, tmp / "run")
    assert outcome.violations(honest, leaks) == []

`run_attack` writes the submission, listens on a port, records the kit's files, runs
``python -m grader.commands.cli run SUB -a STAGE --json OUT`` (from the kit copy, with a secret
and the test's marker in its environment) under `reaper.py`, and collects: the exit
status, whether the grader was ever stopped, the results file right after the grader
exited and a little later, the processes left behind, the kit's files, files left in
the host's shared directories, connections to the listener, and the grader's output.
`Outcome.violations` turns that into sentences, one per thing the jail let through.

``run_attack(..., graded_before=(a, b))`` grades `a` and `b` first, in the same grader process
(`sequence.py`, as a worker of ``grader batch`` grades one student after another), with
the same target; the outcome is the last one's. ``env`` adds to the grader's environment
(a ``PATH`` that simulates a container: `hostile.container`).
"""

from __future__ import annotations

import hashlib
import json
import zlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from results_json import is_details, task_tests

from grader.release.examples import write_submission

from .attack import MARKER_VAR, SECRET_VAR, Attack, Target
from .writes import HOST_DIRS

__all__ = ["Outcome", "copy_kit", "kit_files", "marked_processes", "run_attack", "sandbox_args"]

HERE = Path(__file__).resolve().parent
#: What a kit needs to grade: the library, the grader, the stage manifests, the notebooks.
KIT_PARTS = ("minitorch", "grader", "assignments", "solutions", "pyproject.toml")


def copy_kit(dest: Path, source: Path | None = None, numba_cache: bool = False) -> Path:
    """A copy of the kit at `source` (default: this checkout) at `dest`, for an attack to aim
    at. Bytecode is kept (still valid: the copies keep their times); Numba's caches only
    with `numba_cache` (the reference's compiled kernels, for A3: 20+ MB)."""
    root = source or Path(__file__).resolve().parents[3]
    dest.mkdir(parents=True)
    for part in KIT_PARTS:
        src = root / part
        if src.is_dir():
            shutil.copytree(
                src, dest / part, ignore=None if numba_cache else shutil.ignore_patterns("*.nbi", "*.nbc")
            )
        else:
            shutil.copy2(src, dest / part)
    return dest


def kit_files(kit: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file of the kit (caches aside)."""
    out = {}
    for path in sorted(kit.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[path.relative_to(kit).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def marked_processes(marker: str) -> dict[int, str]:
    """pid → command line of every process whose command line holds `marker`."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found[int(name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:300]
    return found


def sandbox_args(tier: str, kit: Path) -> list[str]:
    """The ``grader run`` option that picks `tier` (none for a grader from before the jail)."""
    if not any((kit / "grader" / p).is_file() for p in ("jail.py", "sandbox/jail.py")):
        assert tier == "process", f"the grader in {kit} has no jail, so no tier {tier!r}"
        return []
    return ["--sandbox", tier]


@dataclass
class Outcome:
    """What one graded attack left behind (see the module docstring)."""

    attack: Attack
    tier: str
    target: Target
    secret: str
    report: dict
    stdout: str
    stderr: str
    kit_changed: list[str]
    host_files: list[str]
    connections: int
    marked: dict[int, str] = field(default_factory=dict)
    declares_tier: bool = True  # a grader from before the jail does not say which tier graded

    def results(self) -> dict | None:
        try:
            data = json.loads(self.report["results_at_exit"] or "")
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def violations(self, honest: dict[str, float], leaks: dict[str, str]) -> list[str]:
        """One sentence per thing the attack got through; empty when it was contained.

        Args:
            honest: graded task id → the most it may score (in the order the results
                list the tasks).
            leaks: name → a string that must not reach the student (a secret, a line of
                the hidden checks, a line of the reference).
        """
        return [*self._grading(), *self._results(honest), *self._host(), *self._shown(leaks)]

    def _grading(self) -> list[str]:
        """Grading ran to its end, on its own."""
        r, out = self.report, []
        if r["timed_out"]:
            out.append("the grader never finished (killed by the test)")
        if r["stopped"]:
            out.append("the grading process was stopped by a signal (the test continued it)")
        if r["rc"] != 0:
            out.append(f"grading did not complete: exit status {r['rc']}; stderr: {self.stderr[-800:]!r}")
        if r["left"]:
            out.append(f"{len(r['left'])} processes left running, e.g. {r['left'][:3]}")
        if self.marked:
            out.append(f"processes of the attack alive: {list(self.marked.values())[:3]}")
        return out

    def _results(self, honest: dict[str, float]) -> list[str]:
        """The results file is the grader's, honest, and stays so."""
        text, data, out = self.report["results_at_exit"], self.results(), []
        if text is None:
            return ["no results file"]
        if data is None:
            return [f"the results file is not a results object: {text[:200]!r}"]
        if self.target.marker in text:
            out.append(f"the results file was forged: {text[:200]!r}")
        tests = data.get("tests", [])
        numbers = [t.get("number") for t in tests if not is_details(t)]  # a details test is worth nothing
        if numbers != list(honest):
            out.append(f"the results list tasks {numbers}, expected {list(honest)}")
        score = data.get("score")
        if not isinstance(score, (int, float)) or score > sum(honest.values()) + 1e-9:
            out.append(f"score {score!r} is above the honest {sum(honest.values()):g}")
        elif abs(sum(t.get("score", 0) for t in tests) - score) > 1e-6:
            out.append(f"score {score} is not the sum of the tasks' scores")
        for t in tests:
            if t.get("number") in honest and t.get("score", 0) > honest[t["number"]] + 1e-9:
                out.append(
                    f"task {t['number']} scored {t['score']}, above its honest {honest[t['number']]:g}"
                )
        out += [
            f"task {t.get('number')}: its details test scores {t.get('score')!r}"
            for t in tests
            if is_details(t) and t.get("score") != 0
        ]
        if self.attack.status is not None:
            out += _statuses(task_tests(data), self.attack)
        isolation = data.get("extra_data", {}).get("isolation")
        if self.declares_tier and isolation != self.tier:
            out.append(f"the results say isolation {isolation!r}, but tier {self.tier!r} was asked for")
        later = self.report["results_later"]
        if later != text:
            out.append(f"the results file changed after the grader exited: {str(later)[:200]!r}")
        return out

    def _host(self) -> list[str]:
        """The kit and the host are as they were."""
        out = []
        if self.kit_changed:
            out.append(f"the kit changed: {self.kit_changed[:5]}")
        if self.host_files:
            out.append(f"files left on the host: {self.host_files}")
        if self.connections:
            out.append(f"the test's listener got {self.connections} connection(s)")
        return out

    def _shown(self, leaks: dict[str, str]) -> list[str]:
        """What the student sees (the results file, the grader's output) holds nothing secret
        and nothing the submission wrote into the grader's own output."""
        out = []
        if self.target.marker in self.stdout + self.stderr:
            out.append("the grader's own output holds text forged by the submission")
        seen = "\n".join([self.report["results_at_exit"] or "", self.stdout, self.stderr])
        out += [f"{name} is visible to the student" for name, value in leaks.items() if value in seen]
        return out


def _statuses(tests: list[dict], attack: Attack) -> list[str]:
    out = []
    for t in tests:
        status = t.get("extra_data", {}).get("status")
        attacked = t.get("number") in attack.attacked_tasks()
        want = attack.status if attacked else "passed"
        if status != want:
            out.append(
                f"task {t.get('number')}: status {status!r}, expected {want!r} ({t.get('output', '')[:300]!r})"
            )
        elif attacked and attack.says and attack.says not in t.get("output", ""):
            out.append(
                f"task {t.get('number')}: the feedback does not say {attack.says!r} ({t.get('output', '')[:300]!r})"
            )
    return out


def shm_key(marker: str) -> int:
    """The System V key the attacks of a run use (`hostile.neighbours.SHM_KEY`)."""
    return zlib.crc32(marker.encode()) & 0x7FFFFFFF


def ipc_left(marker: str) -> list[str]:
    """System V objects of the run's key still alive (any kind), as ``kind id``."""
    left = []
    for kind in ("shm", "sem", "msg"):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        for line in lines[1:]:
            fields = line.split()
            if fields and int(fields[0]) == shm_key(marker):
                left.append(f"{kind} {fields[1]}")
    return left


def _remove_ipc(left: list[str]) -> None:
    """Remove what an attack left, whatever the jail did (``ipcrm``'s call, by id)."""
    import ctypes

    libc = ctypes.CDLL(None)
    for item in left:
        kind, ident = item.split()
        {
            "shm": lambda i: libc.shmctl(i, 0, None),
            "sem": lambda i: libc.semctl(i, 0, 0, None),
            "msg": lambda i: libc.msgctl(i, 0, None),
        }[kind](int(ident))


def run_attack(
    attack: Attack,
    tier: str,
    kit: Path,
    work: Path,
    *,
    timeout: float = 240.0,
    env: dict[str, str] | None = None,
    graded_before: tuple[Attack, ...] = (),
) -> Outcome:
    """Grade `attack` with the kit at `kit` under `tier`; see the module docstring."""
    work.mkdir(parents=True)
    (work / "out").mkdir()
    marker = f"hostile{secrets.token_hex(6)}"
    secret = secrets.token_hex(16)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        target = Target(marker, str(kit), str(work / "out" / "results.json"), listener.getsockname()[1])
        sub = write_submission(work / "submission", attack.stage, attack.edits(target), attack.extra)
        before = kit_files(kit)
        runs = []
        for i, a in enumerate([*graded_before, attack]):
            path = (
                sub
                if a is attack
                else write_submission(work / f"before-{i}", a.stage, a.edits(target), a.extra)
            )
            results = target.results if a is attack else str(work / "out" / f"before-{i}.json")
            run = [
                "run",
                str(path),
                "-a",
                a.stage,
                "--json",
                results,
                "--no-notebooks",
                "--timeout",
                "8",
                *a.cli_args,
                *sandbox_args(tier, kit),
            ]
            runs.append(run + (["--task", a.task] if a.task else []))
        if graded_before:  # one grader process grades them all, one after another
            argv = [sys.executable, str(HERE / "sequence.py"), json.dumps(runs)]
        else:
            argv = [sys.executable, "-m", "grader.commands.cli", *runs[0]]
        spec = {
            "argv": argv,
            "cwd": str(
                kit
            ),  # `-m grader.commands.cli` imports the grader of the kit in cwd, not the checkout's
            "env": {
                "PYTHONPATH": str(kit),
                MARKER_VAR: marker,
                SECRET_VAR: secret,
                "COLUMNS": "200",
                **(env or {}),
            },
            "unset": ["MINITORCH_KIT_ROOT"],
            "stdout": str(work / "stdout"),
            "stderr": str(work / "stderr"),
            "timeout": timeout,
            "results": target.results,
            "linger": attack.linger,
        }
        proc = subprocess.run(
            [sys.executable, str(HERE / "reaper.py"), json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout + 120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        connections = 0
        while True:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                break
            conn.close()
            connections += 1
    after = kit_files(kit)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    host = [str(Path(d) / marker) for d in HOST_DIRS if (Path(d) / marker).exists()]
    for path in host:  # leave nothing behind, even when the attack got through
        shutil.rmtree(path) if Path(path).is_dir() else Path(path).unlink()
    ipc = ipc_left(marker)
    _remove_ipc(ipc)
    host += [f"System V {item} (key {shm_key(marker)})" for item in ipc]
    marked = marked_processes(marker)
    for pid in marked:  # started by this test's attack: end them, by pid
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return Outcome(
        attack,
        tier,
        target,
        secret,
        report,
        _text(work / "stdout"),
        _text(work / "stderr"),
        changed,
        host,
        connections,
        marked,
        declares_tier=bool(sandbox_args(tier, kit)),
    )


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
