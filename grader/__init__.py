"""The course kit's autograder and release tool (never shipped to students).

* `grader.fences` — the solution fences of `minitorch/` (parse, validate, render).
* `grader.manifest` — `assignments/aN-*/manifest.toml`: stages, tasks, points, checks.
* `grader.release` — `grader release`: student starter repositories, and the trees the
  sandboxed child imports when grading.
* `grader.notebooks` — nbgrader: release and autograde the notebook parts (`solutions/`).
* `grader.run`, `grader.child`, `grader.checks`, `grader.report`, `grader.cli` — `grader run`
  and `grader check`: hidden checks in a trusted parent, student code in a child process.

Importing the package imports nothing heavy; each command loads what it needs.
"""
