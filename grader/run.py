"""`grader run`: grade one submission for one stage, student code in a child process.

The parent (this module) is trusted: it holds the reference ``minitorch`` (imported from
the kit) and the hidden checks (`grader.checks`). For each task of the stage it runs the
task's checks; a check sends *probes* — "build these inputs, call this, run backward,
return the arrays" — to a child process and compares what comes back with what the same
probe gives on the reference, here. Results are decided only here.

The child process
    ``python -I -S _grader_child.py`` started with a clean environment, in its own process
    session, cwd = its tree (a temporary directory holding ``minitorch/`` as built by
    `grader.release.build_child_tree`: the student's fenced bodies for this stage, the
    reference for earlier stages, stubs for later ones), ``PYTHONPATH`` = that tree, and
    ``sys.path`` = that tree + the standard library + third-party packages (never the
    kit's own directory). It checks that ``minitorch.__file__`` lies in its tree, limits
    its address space (``RLIMIT_AS``, 4 GiB by default) and talks to the parent only over
    an inherited socket (length-prefixed JSON + raw array bytes; `grader.protocol`). Its
    stdout/stderr go to pipes the parent drains into a capped buffer and never parses.

What the child can see: its tree, the probe programs (inputs and the calls to make), the
copies of `grader/child.py` and `grader/protocol.py` that run it, and anything the
operating system lets any process of this user read. What it never receives: expected
values, tolerances, verdicts, the hidden checks, the output paths. A child cannot raise a
score by exiting early, printing, patching NumPy or writing files: reports are written by
the parent after every child is gone, atomically. (The grader is not an OS sandbox: run
it in a container or as an unprivileged user when submissions may be hostile — a child
can read any file its user can, e.g. the kit itself.)

Failures cost only the task being graded: a check that runs past its timeout, a child that
dies, exits (``sys.exit`` / ``os._exit``), floods its output or sends garbage is killed
(with its whole process group), the task's remaining checks are skipped when it timed
out, and a fresh child is started for the next task.

Notebooks: when the stage's manifest lists notebooks and the submission holds one, it is
autograded after the code tasks, in a fresh child that alone gets a copy of the source
notebook (nbgrader must insert the hidden test cells next to the student's cells and run
them in a kernel). This is the one verdict computed inside a child: the parent accepts
only per-cell points, clamped to the maxima it reads from the source itself, so a
notebook can at worst claim its own points, never a code task's.

Scoring: a task's points are shared equally among its checks (partial credit); its status
is "passed" when every check passes, else that of its first failing check ("failed": a
wrong answer, "error": the student's code raised, "timeout").

``--isolate`` grades each task in a tree where every *other* task of the stage has the
reference solution spliced in, so one broken task cannot break the others. This exposes
the reference code of the stage's other tasks to the child: use it for diagnosis and for
`grader check`, not for grading submissions that could copy from it.

Performance checks (stage A3) time the student's kernel in its child and the reference
kernel in a second child that runs the kit's own minitorch under the same limits and
through the same channel. The parent measures round trips of a probe that runs the kernel
N times, minus the round trip of the same probe with N = 0, alternating student and
reference over several rounds, and compares the best per-run times with the manifest's
``max_ratio``. While the reference is timed the student's process group is stopped
(SIGSTOP), so it cannot slow the reference down. (Timings are the one thing not
bit-for-bit deterministic; thresholds are set with a wide margin and a ratio over the
limit is measured a second time.)
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import protocol
from .checks import get_check
from .checks.base import CheckContext, CheckFailed, GraderBug, StudentError
from .checks.probe import ErrorInfo, parse_error
from .manifest import Manifest, NotebookPart, Task, load_manifest, repo_root

HERE = Path(__file__).resolve().parent

#: Statuses a task or check can have.
STATUSES = ("passed", "failed", "error", "timeout")


@dataclass(frozen=True)
class Limits:
    """Resource limits of a grading run.

    Attributes:
        check_timeout: wall-clock seconds the child may spend on one check (a check may
            scale it, e.g. for Numba compilation).
        start_timeout: seconds to start a child and import the submission.
        notebook_timeout: seconds for autograding one notebook.
        mem_mb: the child's address-space limit in MiB (0: none).
        output_cap: bytes of the child's stdout/stderr kept (the rest is counted, dropped).
    """

    check_timeout: float = 60.0
    start_timeout: float = 120.0
    notebook_timeout: float = 300.0
    mem_mb: int = 4096
    output_cap: int = 16 * 1024


# --------------------------------------------------------------------------- results


@dataclass
class CheckResult:
    name: str
    kind: str
    status: str
    message: str = ""
    details: str = ""
    seconds: float = 0.0
    grader_error: str = ""


@dataclass
class TaskResult:
    """One row of the report: a task (or a notebook part)."""

    id: str
    title: str
    max_points: float
    score: float
    status: str
    message: str
    feedback: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    kind: str = "task"


@dataclass
class GradeResult:
    stage: str
    title: str
    submission: str
    tasks: list[TaskResult]
    seconds: float
    isolate: bool = False
    problems: list[str] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)
    output: str = ""

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tasks), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_points for t in self.tasks), 4)


# --------------------------------------------------------------------------- the reference


def reference_executor() -> Any:
    """An `Executor` over the kit's reference ``minitorch``, imported in this process.

    Fast and CUDA backends are mapped to the simple one: the expected values are the same
    numbers, without compiling anything in the parent.
    """
    from .child import Executor

    root = repo_root()
    if "minitorch" not in sys.modules and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mt = importlib.import_module("minitorch")
    where = Path(mt.__file__).resolve()
    if root / "minitorch" not in where.parents:
        raise GraderBug(f"the reference minitorch was imported from {where}, not from the kit at {root}")
    return Executor(mt, None, backend_map={"fast": "simple", "cuda": "simple"}, aliases=REFERENCE_ALIASES)


#: Kernels of the fast backends and the simple kernels (same signatures, same numbers)
#: that the parent runs instead to know the expected values.
REFERENCE_ALIASES = {
    "minitorch.FastBackend": "minitorch.SimpleBackend",
    "minitorch.CudaBackend": "minitorch.SimpleBackend",
    "minitorch.fast_ops.tensor_map": "minitorch.tensor_ops.tensor_map",
    "minitorch.fast_ops.tensor_zip": "minitorch.tensor_ops.tensor_zip",
    "minitorch.fast_ops.tensor_reduce": "minitorch.tensor_ops.tensor_reduce",
    "minitorch.fast_ops.tensor_matmul_parallel": "minitorch.tensor_ops.tensor_matmul",
    "minitorch.fast_ops.tensor_matmul": "minitorch.tensor_ops.tensor_matmul",
}


def child_import_paths() -> list[str]:
    """Third-party directories the child may import from (NumPy, Numba, nbgrader …).

    The parent's ``sys.path`` minus the current directory and any directory that holds the
    kit's ``minitorch`` or ``grader`` (an editable install or the checkout itself); a
    ``site-packages`` that holds an installed copy stays (the child tree comes first).
    """
    root = repo_root().resolve()
    out = []
    for p in sys.path:
        if not p:
            continue
        rp = Path(p).resolve()
        if rp == root or not rp.is_dir():
            continue
        if ((rp / "minitorch").is_dir() or (rp / "grader").is_dir()) and not (rp / "numpy").is_dir():
            continue
        if str(rp) not in out:
            out.append(str(rp))
    return out


# --------------------------------------------------------------------------- the child


class ChildStartFailed(Exception):
    """The child could not import the submission (or died/hung doing it)."""

    def __init__(self, status: str, message: str, error: Optional[ErrorInfo] = None, details: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.error = error
        self.details = details


class _Drain(threading.Thread):
    """Read a pipe to its end, keeping the first `cap` bytes and counting the rest."""

    def __init__(self, pipe: Any, cap: int):
        super().__init__(daemon=True)
        self.pipe, self.cap = pipe, cap
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        s = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            s += f"\n… ({self.total - len(self.kept)} more bytes dropped)"
        return s


class Child:
    """One child process running `grader/child.py` over a tree."""

    def __init__(self, tree: Path, scratch: Path, limits: Limits, name: str = "child", own_cache: bool = True):
        self.tree, self.scratch, self.limits, self.name = tree, scratch, limits, name
        self.own_cache = own_cache
        self.proc: Optional[subprocess.Popen] = None
        self.sock: Optional[socket.socket] = None
        self.drains: list[_Drain] = []
        self.hello: dict = {}

    def _runtime(self) -> Path:
        rt = self.scratch / "runtime"
        if not rt.is_dir():
            rt.mkdir(parents=True)
            shutil.copyfile(HERE / "child.py", rt / "_grader_child.py")
            shutil.copyfile(HERE / "protocol.py", rt / "_grader_protocol.py")
            nb = HERE / "notebooks.py"
            if nb.is_file():
                shutil.copyfile(nb, rt / "_grader_notebooks.py")
        return rt

    def _env(self) -> dict[str, str]:
        home = self.scratch / "home"
        tmp = self.scratch / "tmp"
        home.mkdir(exist_ok=True)
        tmp.mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(self.tree),  # for processes the child starts (a notebook kernel)
            "PYTHONDONTWRITEBYTECODE": "1",
            "NUMBA_ENABLE_CUDASIM": os.environ.get("NUMBA_ENABLE_CUDASIM", "1"),
            "MPLBACKEND": "Agg",
        }
        if self.own_cache:  # a submission's compiled kernels stay in its own scratch
            env["NUMBA_CACHE_DIR"] = str(self.scratch / "numba-cache")
        for key, value in os.environ.items():
            if key.startswith(("NUMBA_", "OMP_", "MKL_", "OPENBLAS_")) and key not in env and key != "NUMBA_CACHE_DIR":
                env[key] = value
        return env

    def start(self) -> dict:
        """Start the process and wait for its hello (raises ChildStartFailed)."""
        runtime = self._runtime()
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        args = {
            "fd": child_sock.fileno(),
            "tree": str(self.tree),
            "runtime": str(runtime),
            "paths": child_import_paths(),
            "mem_mb": self.limits.mem_mb,
        }
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(runtime / "_grader_child.py"), json.dumps(args)],
                cwd=str(self.tree),
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(child_sock.fileno(),),
                start_new_session=True,
            )
        finally:
            child_sock.close()
        self.sock = parent_sock
        self.drains = [_Drain(self.proc.stdout, self.limits.output_cap), _Drain(self.proc.stderr, self.limits.output_cap)]
        for d in self.drains:
            d.start()
        deadline = time.monotonic() + self.limits.start_timeout
        try:
            msg = protocol.recv(self.sock, deadline)
        except protocol.ChannelTimeout:
            self.kill()
            raise ChildStartFailed("timeout", f"importing your code took longer than {self.limits.start_timeout:.0f} s", details=self.output_tail()) from None
        except protocol.ProtocolError as exc:
            code = self.kill()
            raise ChildStartFailed("error", f"the grading process ended while importing your code ({_exit_text(code)})", details=self.output_tail()) from None
        hello = msg.get("hello") if type(msg) is dict else None
        if type(hello) is not dict:
            self.kill()
            raise ChildStartFailed("error", "the grading process sent a malformed greeting")
        if "error" in hello:
            err = parse_error(hello["error"])
            self.kill()
            raise ChildStartFailed("error", f"your code does not import: {err.type}: {err.message.splitlines()[0] if err.message else ''}", err, err.format())
        self.hello = hello
        return hello

    def request(self, message: dict, deadline: float) -> Any:
        """Send one command and wait for its reply (protocol exceptions propagate)."""
        assert self.sock is not None
        protocol.send(self.sock, message, deadline)
        return protocol.recv(self.sock, deadline)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> Optional[int]:
        """Kill the child and everything in its process group; return its exit status."""
        code = None
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        for d in self.drains:
            d.join(timeout=2)
        return code

    def close(self) -> None:
        """Ask the child to exit, then make sure it and its group are gone."""
        if self.sock is not None and self.alive():
            try:
                protocol.send(self.sock, {"cmd": "exit"}, time.monotonic() + 2)
                self.proc.wait(timeout=2)  # type: ignore[union-attr]
            except (protocol.ProtocolError, subprocess.TimeoutExpired, OSError):
                pass
        self.kill()

    def output_tail(self, limit: int = 2000) -> str:
        """What the child printed (stdout then stderr), capped."""
        parts = []
        for label, d in zip(("stdout", "stderr"), self.drains):
            text = d.text().strip()
            if text:
                parts.append(f"[{self.name} {label}]\n{text[-limit:]}")
        return "\n".join(parts)


def _exit_text(code: Optional[int]) -> str:
    if code is None:
        return "it did not exit"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class Session:
    """A child for one tree, restarted after it hangs or dies; a failed import is final."""

    def __init__(self, tree: Path, scratch: Path, limits: Limits, name: str = "child", own_cache: bool = True):
        self.tree, self.scratch, self.limits, self.name = tree, scratch, limits, name
        self.own_cache = own_cache
        self.child: Optional[Child] = None
        self.start_failure: Optional[ChildStartFailed] = None
        self.starts = 0
        self.outputs: list[str] = []

    def ensure(self) -> Child:
        if self.start_failure is not None:
            raise self.start_failure
        if self.child is not None and self.child.alive():
            return self.child
        self.discard()
        child = Child(self.tree, self.scratch, self.limits, self.name, self.own_cache)
        self.starts += 1
        try:
            child.start()
        except ChildStartFailed as exc:
            self.start_failure = exc
            self.outputs.append(child.output_tail())
            raise
        self.child = child
        return child

    def discard(self) -> Optional[int]:
        code = None
        if self.child is not None:
            code = self.child.kill()
            self.outputs.append(self.child.output_tail())
            self.child = None
        return code

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.outputs.append(self.child.output_tail())
            self.child = None

    def pause(self) -> bool:
        """Stop the child's whole process group (SIGSTOP); True if there was one."""
        if self.child is not None and self.child.alive():
            try:
                os.killpg(self.child.proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
                return True
            except (ProcessLookupError, PermissionError):
                return False
        return False

    def resume(self) -> None:
        if self.child is not None and self.child.proc is not None:
            try:
                os.killpg(self.child.proc.pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass

    def batch(self, programs: list[dict], deadline: float) -> list[Any]:
        child = self.ensure()
        reply = child.request({"cmd": "batch", "programs": programs}, deadline)
        if type(reply) is not dict or type(reply.get("answers")) is not list:
            raise protocol.ProtocolError("malformed reply to a batch")
        return reply["answers"]


# --------------------------------------------------------------------------- grading


def _task_status(checks: list[CheckResult]) -> tuple[str, str]:
    for c in checks:
        if c.status != "passed":
            return c.status, c.message
    return "passed", "all checks passed"


def run_check(
    name: str,
    stage: str,
    session: Session,
    reference: Any,
    limits: Limits,
    extra: Optional[dict] = None,
) -> CheckResult:
    """Run one check against a session's child; every failure becomes a CheckResult."""
    chk = get_check(stage, name)
    if chk is None:
        raise GraderBug(f"the manifest of {stage} names check {name!r}, which grader/checks/{stage}.py does not define")
    budget = [limits.check_timeout * chk.timeout_scale]
    started = time.monotonic()

    def run_child(programs: list[dict]) -> list[Any]:
        t0 = time.monotonic()
        try:
            return session.batch(programs, t0 + max(budget[0], 0.0))
        finally:
            budget[0] -= time.monotonic() - t0

    ctx = CheckContext(chk, run_child, reference, extra={**(extra or {}), "session": session, "limits": limits})
    result = CheckResult(name=name, kind=chk.kind, status="passed", message="passed")
    try:
        try:
            session.ensure()
        except ChildStartFailed as exc:
            result.status, result.message, result.details = exc.status, exc.message, exc.details
            return result
        note = chk.fn(ctx)
        if isinstance(note, str) and note:
            result.message = note
    except CheckFailed as exc:
        result.status, result.message, result.details = "failed", exc.message, exc.details
    except StudentError as exc:
        result.status, result.message = "error", exc.message
        result.details = "\n".join(x for x in (exc.details, "Traceback (your code):\n" + exc.error.format()) if x)
    except protocol.ChannelTimeout:
        session.discard()
        scaled = limits.check_timeout * chk.timeout_scale
        result.status, result.message = "timeout", f"no answer within {scaled:.0f} s (an infinite loop?)"
    except protocol.ChannelClosed:
        code = session.discard()
        result.status = "error"
        result.message = f"the grading process ended during this check ({_exit_text(code)}): sys.exit(), os._exit() or a crash in your code?"
        result.details = session.outputs[-1] if session.outputs else ""
    except protocol.ProtocolError as exc:
        session.discard()
        result.status, result.message = "error", f"the grading process sent a malformed answer ({exc})"
    except ChildStartFailed as exc:  # a restart inside the check failed
        result.status, result.message, result.details = exc.status, exc.message, exc.details
    except Exception as exc:  # noqa: BLE001 - a bug in the check or the reference: grading failed
        session.discard()
        result.status, result.message = "error", "internal grader error (not your fault; tell the course staff)"
        result.grader_error = f"{stage}/{name}: {type(exc).__name__}: {exc}"
        result.details = ""
    finally:
        result.seconds = time.monotonic() - started
    return result


def grade_task(task: Task, stage: str, session: Session, reference: Any, limits: Limits, problems: list[str], extra: Optional[dict] = None) -> TaskResult:
    """Run a task's checks; partial credit per check; stop after a timeout."""
    started = time.monotonic()
    results: list[CheckResult] = []
    timed_out = False
    for name in task.checks:
        if timed_out:
            results.append(CheckResult(name, "", "timeout", "skipped: an earlier check of this task timed out"))
            continue
        res = run_check(name, stage, session, reference, limits, {**(extra or {}), "task": task})
        results.append(res)
        timed_out = res.status == "timeout"
    passed = sum(r.status == "passed" for r in results)
    score = round(task.points * passed / len(results), 4) if results else 0.0
    status, message = _task_status(results)
    mine = [p for p in problems if _concerns(p, task)]
    return TaskResult(
        id=task.id,
        title=task.title,
        max_points=task.points,
        score=score,
        status=status,
        message=message,
        feedback=_feedback(task, results, mine),
        checks=results,
        seconds=time.monotonic() - started,
    )


def _task_files(task: Task) -> set[str]:
    """The files (``minitorch/…``) holding the task's fences."""
    from .fences import package_fences

    fences = package_fences(repo_root() / "minitorch")
    return {rel for rel, fs in fences.items() if any(f.task in task.fences for f in fs)}


def _concerns(problem: str, task: Task) -> bool:
    """Whether a problem message of build_child_tree is about this task."""
    if re.search(rf"\b(task|SOLUTION) {re.escape(task.id)}\b", problem):
        return True
    if re.search(r"\b(task|SOLUTION) \d+\.\d+\b", problem):
        return False
    files = _task_files(task)
    return any(problem.startswith(f) or f" {f}" in problem for f in files) or not problem.startswith("minitorch/")


def _feedback(task: Task, results: list[CheckResult], problems: list[str]) -> str:
    lines = []
    shown: set[str] = set()
    for r in results:
        mark = "✓" if r.status == "passed" else "✗"
        lines.append(f"{mark} {r.name} ({r.kind or 'check'}): {r.status}" + ("" if r.status == "passed" else f" — {r.message}"))
        if r.status != "passed" and r.details:
            if r.details in shown:
                lines.append("    (details as above)")
                continue
            shown.add(r.details)
            lines.extend("    " + line for line in r.details.splitlines())
    if problems:
        lines.append("Problems with the submitted files:")
        lines.extend(f"  {p}" for p in problems)
    if any(r.status != "passed" for r in results) and task.hint:
        lines.append(f"Hint: {task.hint}")
    return "\n".join(lines)


def grade_notebook(nb: NotebookPart, submission: Path, tree: Path, scratch: Path, limits: Limits) -> TaskResult:
    """Autograde one notebook in a fresh child (nbgrader executes the student's cells)."""
    from .release import find_notebook

    started = time.monotonic()
    source = repo_root() / "solutions" / nb.path
    row = TaskResult(id=f"nb:{nb.name}", title=nb.title or nb.name, max_points=nb.points, score=0.0, status="failed", message="", kind="notebook")
    try:
        from .notebooks import notebook_points
    except ImportError as exc:  # the rest of the run must still complete and report
        row.status, row.message = "error", f"cannot autograde notebooks here ({exc}): install nbgrader"
        row.seconds = time.monotonic() - started
        return row
    student = find_notebook(submission, nb.name)
    if student is None:
        row.message = f"{nb.name} is not in the submission"
        row.seconds = time.monotonic() - started
        return row
    work = scratch / f"notebook-{nb.name}"
    (work / "source" / Path(nb.path).parent).mkdir(parents=True)
    (work / "student").mkdir()
    shutil.copyfile(source, work / "source" / nb.path)
    shutil.copyfile(student, work / "student" / nb.name)
    maxima = notebook_points(source)  # computed here, from the trusted source
    session = Session(tree, scratch, limits, name="notebook")
    try:
        child = session.ensure()
        reply = child.request(
            {"cmd": "notebook", "student": str(work / "student" / nb.name), "source": str(work / "source" / nb.path), "workdir": str(work / "run")},
            time.monotonic() + limits.notebook_timeout,
        )
        result = reply.get("notebook") if type(reply) is dict else None
        if type(result) is not dict:
            raise protocol.ProtocolError("malformed notebook reply")
        if "error" in result:
            err = parse_error(result["error"])
            row.status, row.message = "error", f"autograding failed: {err.type}: {err.message[:200]}"
        else:
            cells = result.get("ok")
            if type(cells) is not list:
                raise protocol.ProtocolError("malformed notebook grades")
            got: dict[str, float] = {}
            msgs = []
            for cell in cells:
                if type(cell) is not list or len(cell) != 5 or type(cell[0]) is not str or type(cell[1]) not in (int, float):
                    raise protocol.ProtocolError("malformed notebook grade")
                got[cell[0]] = float(cell[1])
                msgs.append(f"{cell[0]}: {str(cell[4])[:300]}")
            total = sum(maxima.values())
            earned = sum(min(max(got.get(gid, 0.0), 0.0), mx) for gid, mx in maxima.items())
            row.score = round(nb.points * earned / total, 4) if total > 0 else 0.0
            row.status = "passed" if total > 0 and earned >= total else "failed"
            row.message = f"{earned:g} of {total:g} notebook points"
            row.feedback = "\n".join(msgs)
    except ChildStartFailed as exc:
        row.status, row.message, row.feedback = exc.status, exc.message, exc.details
    except protocol.ChannelTimeout:
        row.status, row.message = "timeout", f"autograding took longer than {limits.notebook_timeout:.0f} s"
    except protocol.ProtocolError as exc:
        row.status, row.message = "error", f"the notebook grading process failed ({exc})"
    finally:
        session.close()
    row.seconds = time.monotonic() - started
    return row


def grade(
    submission: Path | str,
    stage: str,
    *,
    task: Optional[str] = None,
    isolate: bool = False,
    limits: Limits = Limits(),
    notebooks: bool = True,
    progress: Optional[Callable[[TaskResult], None]] = None,
) -> GradeResult:
    """Grade `submission` (a directory or a zip) for `stage`; nothing is written anywhere.

    Args:
        task: grade only this task id.
        isolate: grade each task with the reference spliced in for the stage's other tasks.
        notebooks: autograde the stage's notebooks too (when the submission has them).
        progress: called with each finished row.
    """
    from .release import SubmissionError, build_child_tree, open_submission

    started = time.monotonic()
    manifest: Manifest = load_manifest(stage)
    tasks = list(manifest.tasks)
    if task is not None:
        tasks = [t for t in tasks if t.id == task]
        if not tasks:
            raise ValueError(f"stage {stage} has no task {task!r} (tasks: {', '.join(t.id for t in manifest.tasks)})")
    reference = reference_executor()
    # Resolve every check first: a manifest naming an unknown check is a grader bug.
    for t in tasks:
        for name in t.checks:
            if get_check(stage, name) is None:
                raise GraderBug(f"{manifest.directory.name}/manifest.toml: task {t.id} names check {name!r}, which grader/checks/{stage}.py does not define")
    result = GradeResult(stage=stage, title=manifest.title, submission=str(submission), tasks=[], seconds=0.0, isolate=isolate)
    scratch = Path(tempfile.mkdtemp(prefix="grader-"))
    sessions: list[Session] = []
    ref_session: Optional[_ReferenceChild] = None
    try:
        try:
            sub_dir = open_submission(Path(submission), scratch)
        except (SubmissionError, OSError) as exc:
            for t in tasks:
                result.tasks.append(TaskResult(t.id, t.title, t.points, 0.0, "error", f"cannot read the submission: {exc}"))
            result.problems.append(str(exc))
            return result

        def build(tree: Path, isolate_task: Optional[str]) -> list[str]:
            probs = build_child_tree(stage, sub_dir, tree, isolate_task=isolate_task)
            return [str(p) for p in probs]

        ref_session = _ReferenceChild(scratch, limits)
        extra = {"reference_child": ref_session}
        if not isolate:
            tree = scratch / "tree"
            problems = build(tree, None)
            result.problems.extend(problems)
            session = Session(tree, scratch, limits)
            sessions.append(session)
            for t in tasks:
                row = grade_task(t, stage, session, reference, limits, problems, extra)
                _add_row(result, row, progress)
        else:
            tree = scratch / "tree"
            for t in tasks:
                tree = scratch / f"tree-{t.id}"
                problems = build(tree, t.id)
                result.problems.extend(p for p in problems if p not in result.problems)
                session = Session(tree, scratch / f"s-{t.id}", limits)
                (scratch / f"s-{t.id}").mkdir()
                sessions.append(session)
                row = grade_task(t, stage, session, reference, limits, problems, extra)
                session.close()
                if t is not tasks[-1]:
                    # this tree holds the reference of the stage's other tasks: a later
                    # task's child must not find it
                    shutil.rmtree(tree, ignore_errors=True)
                _add_row(result, row, progress)
        for s in sessions:
            s.close()
        if notebooks and task is None:
            for nb in manifest.notebooks:
                row = grade_notebook(nb, sub_dir, tree, scratch, limits)
                _add_row(result, row, progress)
        result.output = "\n".join(o for s in sessions for o in s.outputs if o)
    except GraderBug as exc:
        result.grader_errors.append(str(exc))
    finally:
        for s in sessions:
            s.close()
        if ref_session is not None:
            ref_session.close()
        shutil.rmtree(scratch, ignore_errors=True)
        result.seconds = time.monotonic() - started
    return result


def _add_row(result: GradeResult, row: TaskResult, progress: Optional[Callable[[TaskResult], None]]) -> None:
    result.tasks.append(row)
    result.grader_errors.extend(c.grader_error for c in row.checks if c.grader_error)
    if progress:
        progress(row)


class _ReferenceChild:
    """A child running the kit's own minitorch, started on first use (performance checks).

    Trusted code, run under the same limits and through the same channel as the student's
    child, so that the two kernels are timed alike. It uses the kit's Numba cache (the
    reference kernels compile once per machine, not once per grading run).
    """

    def __init__(self, scratch: Path, limits: Limits):
        self.scratch = scratch / "reference"
        self.limits = limits
        self.session: Optional[Session] = None

    def get(self) -> Session:
        if self.session is None:
            self.scratch.mkdir(parents=True, exist_ok=True)
            self.session = Session(repo_root(), self.scratch, self.limits, name="reference", own_cache=False)
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
