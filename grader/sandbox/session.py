"""The sandbox: student code runs only here, in child processes the parent controls.

    session = Session(tree, scratch, Limits())   # a child over `tree`, started on use
    answers = session.batch(programs, deadline)  # raw answers (`grader.sandbox.answers` parses them)

Each child is a `grader.sandbox.child_process.Child` (what it runs, what it can see and write,
how it starts and ends), under the `grader.sandbox.limits.Limits` of the run.

A `Session` is one tree's child, restarted after it hangs or dies (a failed import is
final: `ChildStartFailed`); a child that runs past its deadline, exits or floods its
output is killed with every process of its jail. `Session.pause` / `resume` stop and
continue every process of the jail (SIGSTOP / SIGCONT) while the reference is timed.

The `ReferenceChild` runs the kit's own minitorch in a child under the same limits and
through the same channel, so that performance checks time the student's kernel and the
reference kernel alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .child import protocol
from .child_process import Child, ChildStartFailed
from .limits import Limits
from .tiers import choose_tier
from grader.core.manifest import repo_root

__all__ = ["Limits", "ReferenceChild", "Session"]


class Session:
    """A child for one tree, restarted after it hangs or dies; a failed import is final."""

    def __init__(
        self,
        tree: Path,
        scratch: Path,
        limits: Limits,
        name: str = "child",
        own_cache: bool = True,
        tier: Optional[str] = None,
    ):
        self.tree, self.scratch, self.limits, self.name = tree, scratch, limits, name
        self.own_cache = own_cache
        self.tier = tier or choose_tier(limits.sandbox)
        self.child: Optional[Child] = None
        self.start_failure: Optional[ChildStartFailed] = None
        self.outputs: list[str] = []

    def ensure(self) -> Child:
        if self.start_failure is not None:
            raise self.start_failure
        if self.child is not None and self.child.alive():
            return self.child
        self.discard()
        child = Child(self.tree, self.scratch, self.limits, self.name, self.own_cache, self.tier)
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
        """Stop every process of the child's jail (SIGSTOP); True if there was one."""
        if self.child is not None and self.child.alive() and self.child.jail is not None:
            return self.child.jail.stop()
        return False

    def resume(self) -> None:
        if self.child is not None and self.child.jail is not None:
            self.child.jail.cont()

    def batch(self, programs: list[dict], deadline: float) -> list[Any]:
        child = self.ensure()
        reply = child.request({"cmd": "batch", "programs": programs}, deadline)
        if type(reply) is not dict or type(reply.get("answers")) is not list:
            raise protocol.ProtocolError("malformed reply to a batch")
        return reply["answers"]


class ReferenceChild:
    """A child running the kit's own minitorch, started on first use (performance checks).

    Trusted code, run under the same limits and through the same channel as the student's
    child, so that the two kernels are timed alike, but never jailed with it: in the
    ``bwrap`` tier the student's processes cannot see it (another PID namespace), in the
    ``uid`` tier they run as another uid. It uses the kit's Numba cache (the reference
    kernels compile once per machine, not once per grading run).
    """

    def __init__(self, scratch: Path, limits: Limits):
        self.scratch = scratch / "reference"
        self.limits = limits
        self.session: Optional[Session] = None

    def get(self) -> Session:
        if self.session is None:
            self.scratch.mkdir(parents=True, exist_ok=True)
            self.session = Session(
                repo_root(), self.scratch, self.limits, name="reference", own_cache=False, tier="process"
            )
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
