"""``grader run``: one submission graded, and its reports.

`grade` (`grade()`: orchestration only) · `one_charge` (one mistake, one charge: a task
that lost points is graded again alone) · `import_guard` (an import failure traced to the
fence body responsible) · `report` (the table, Gradescope's results.json, JUnit XML).
Below: `core/` … `notebooks/`.
"""
