"""The course kit's autograder and release tool (never shipped to students).

The grader is built in layers, one package each, lowest first; a module imports only from
its own package and those before it (tests/grader/test_architecture.py). Each package's
``__init__`` lists its modules; each module names what it must never do.

* `core` — the stages (``assignments/aN-*/manifest.toml``), the solution fences of
  ``minitorch/``, the results, student text as data.
* `trees` — open a submission safely; build the tree a child imports (a broken fence costs
  only its task).
* `sandbox` — the jail every child runs in (bubblewrap, a uid of its own, a plain process),
  the child processes and their limits; `sandbox.child` is the code that runs next to
  student code (standard library only) and the wire format.
* `checks` — the hidden checks (one folder per stage, one module per task), how a task is
  graded, the reference in the parent.
* `notebooks` — notebook parts: the student's cells run in the child, every test cell here.
* `grading` — `grade()` (orchestration only), one mistake one charge, the reports.
* `release` — starter repositories, the Classroom workflow, the example submissions.
* `mutation` — ``grader check --mutants``.
* `batch` — ``grader batch``: a whole class on Dask, the gradebook.
* `commands` — the command line, ``grader check``, the Gradescope bundle.

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
