"""``grader batch``: a whole class, in parallel, on Dask.

`run` (the parent loop) · `command` (its command line) · `engine` (the Dask cluster) ·
`submissions` (a folder, a Gradescope export or Classroom clones) · `worker` (the job a
worker runs) · `wall_clock` (one submission under a time limit, killed with all it started)
· `record` (an outcome → the reports and the gradebook row) · `gradebook` (gradebook.csv) ·
`screen` (progress and summary) · `nbgrader_export` (``grader nbgrader-export``) over
`nbgrader_scores` (the batch's grades as grade cells' scores) and `nbgrader_db` (nbgrader's
gradebook.db). Below: `core/` … `mutation/`.
"""
