"""The course kit's autograder and release tool (never shipped to students).

The grader is built in one-job layers; each module names what it must never do.

* `grader.manifest`, `grader.fences` — the stages (``assignments/aN-*/manifest.toml``) and
  the solution fences of ``minitorch/`` (parse, validate, render).
* intake: `grader.intake` — open a submission (directory or zip) safely, find its
  package and notebooks.
* release / trees: `grader.release` (student starter repositories) and `grader.trees`
  (the child trees the sandbox imports), both cut out of the one reference source;
  `grader.fence_guard` / `grader.import_guard` (a broken fence costs only its task).
* sandbox: `grader.jail` (the jail every child runs in: bubblewrap, an unprivileged uid, or
  a declared plain process), `grader.sandbox` (child processes, limits, output drains, the
  reference child),
  `grader.child` and `grader.executor` (the code that runs next to student code),
  `grader.protocol` (the wire format) and `grader.answers` (answers parsed in the parent).
* checks: `grader.checks` (the hidden checks and their registry), `grader.checks.runner`
  (run a check, grade a task), `grader.reference` (the reference in the parent);
  `grader.notebook_grading` (+ `notebooks`, `notebook_tests`, `notebook_judge`) — notebook
  parts: student cells run in the child, every test cell runs in the parent on their values.
* results: `grader.results` (CheckResult, TaskResult, GradeResult, Problem).
* report: `grader.report` (table, Gradescope JSON, JUnit XML).
* `grader.grading` — `grade()`, which only orchestrates the layers above;
  `grader.invariants` — `grader check`; `grader.examples` — `grader example`;
  `grader.cli` — the command line.

Importing the package imports nothing heavy; each command loads what it needs.

The grader's own dependencies are the kit's ``grader`` extra (``pip install -e ".[grader]"``;
the ``dev`` extra includes it). `missing_dependencies` names those not installed, so that the
``grader`` command says so in one line instead of failing later with a traceback.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["GRADER_EXTRA_HINT", "missing_dependencies"]

#: the command that installs what the `grader` command needs, run in the kit's folder
GRADER_EXTRA_HINT = 'pip install -e ".[grader]"'


def missing_dependencies() -> list[str]:
    """The top-level modules of the `grader` extra that cannot be found (none are imported)."""
    needed = ["rich", "nbgrader", "mutmut"]
    if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10 reads TOML with tomli
        needed.append("tomli")
    return [name for name in needed if importlib.util.find_spec(name) is None]
