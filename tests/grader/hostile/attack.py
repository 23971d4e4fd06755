"""What an attack is: a submission (fence bodies) that tries one thing the grader must stop.

An `Attack` is data. Its bodies are the fence bodies `grader.release.examples.write_submission`
takes; before they are written, `Attack.edits` puts one line in front of each,

    T = {"marker": "...", "kit": "...", "results": "...", "port": ..., "secret_name": "..."}

the `Target`: everything an attacker could want to know, handed over for free. Paths of a
kit or a results file can be guessed, so the suite assumes the worst and tells them; a jail
that holds only because a path is secret does not hold.

Two rules keep a failed jail harmless on the machine that runs the suite:

* an attack writes only into the kit that grades it, which the test makes as a throwaway
  copy (`T["kit"]`), never into the checkout it finds through the editable install;
* an attack signals or reads the environment only of processes that carry the test's own
  marker (``GRADER_HOSTILE_MARKER=<marker>`` in their environment), never anything else
  on the machine; bombs stop themselves (a bounded number of processes, of bytes, of
  seconds) even when no limit stops them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["MARKER_VAR", "SECRET_VAR", "Attack", "Body", "Target"]

#: Set in the grading process's environment: the only processes an attack may touch.
MARKER_VAR = "GRADER_HOSTILE_MARKER"
#: Set in the grading process's environment; its value must never reach the student.
SECRET_VAR = "GRADER_HOSTILE_SECRET"


@dataclass(frozen=True)
class Target:
    """What the attacker is told (worst case: it knows every path).

    Attributes:
        marker: a string unique to this run; it names the attack's files and processes,
            and anything the attack forges carries it, so it is never legitimately in a
            report.
        kit: the root of the kit that grades the submission (a copy made by the test).
        results: the path of the results file the grader will write.
        port: a port on 127.0.0.1 where the test listens.
    """

    marker: str
    kit: str
    results: str
    port: int

    def prelude(self) -> str:
        values = {
            "marker": self.marker,
            "kit": self.kit,
            "results": self.results,
            "port": self.port,
            "marker_var": MARKER_VAR,
            "secret_name": SECRET_VAR,
        }
        return f"T = {values!r}\n"


#: A fence body: source that uses `T`, or a function of the target that returns source
#: (for a body Numba compiles, where `T`, a dict, cannot be).
Body = str | Callable[[Target], str]


@dataclass(frozen=True)
class Attack:
    """One hostile submission.

    Attributes:
        name: the test id.
        hole: the issue's hole it probes ("1 processes", "2 reference", "3 writes") or
            "classic".
        about: one line: what it tries.
        stage: the stage it is graded for.
        bodies: (task, enclosing function) → fence body (`Body`).
        task: grade only this task (None: the whole stage, without notebooks).
        earns: checks of the attacked tasks that the body passes honestly (a slow but
            correct kernel passes its correctness check); the honest score counts them.
        needs_jail: plain process isolation lets it through (it is run only under a jail).
        status: the status the attacked task must get (classics: the grader handles them
            under every tier and every other task still passes); None for attacks whose
            point is a side effect, not the task's verdict.
        cli_args: extra arguments of ``grader run`` (a shorter --timeout, --memory).
        linger: seconds to watch the results file after the grader exits (an attack that
            would rewrite it later).
        extra: files added to the submission (path → text).
        gets_through: tier → why that tier cannot stop this attack (a documented limit of
            the tier, tested as an expected failure so that a change is noticed).
        slow: it compiles kernels and times them (tens of seconds; pytest's `slow` marker).
        says: words the attacked task's feedback must hold (with `status`: why it got it).
    """

    name: str
    hole: str
    about: str
    stage: str
    bodies: Mapping[tuple[str, str], Body]
    task: str | None = "1.1"
    earns: tuple[str, ...] = ()
    needs_jail: bool = True
    status: str | None = None
    cli_args: tuple[str, ...] = ()
    linger: float = 0.0
    extra: Mapping[str, str] = field(default_factory=dict)
    gets_through: Mapping[str, str] = field(default_factory=dict)
    slow: bool = False
    says: str = ""

    def edits(self, target: Target) -> dict[tuple[str, str], str]:
        """The fence bodies, with the target spelled out (a `T = {...}` line in front)."""
        return {
            key: body(target) if callable(body) else target.prelude() + body
            for key, body in self.bodies.items()
        }

    def attacked_tasks(self) -> set[str]:
        return {task for task, _ in self.bodies}
