"""``grader run``: one submission graded, and its reports.

`grade` (`grade()`: orchestration only) · `one_charge` (one mistake, one charge: a task
that lost points is graded again alone) · `second_looks` (in which trees, in what order) ·
`reference_trees` (grading in the trees that hold reference code of the stage's tasks) ·
`import_guard` (an import failure traced to the fence body responsible) · `report` (the
table, Gradescope's results.json, JUnit XML).
Below: `core/` … `notebooks/`.
"""
