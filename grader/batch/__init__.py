"""``grader batch``: a whole class, in parallel, on Dask.

`run` (the parent loop) · `engine` (the Dask cluster) · `submissions` (a folder, a
Gradescope export or Classroom clones) · `worker` (the job a worker runs) · `wall_clock`
(one submission under a time limit, killed with all it started) · `record` (an outcome →
the reports and the gradebook row) · `gradebook` (gradebook.csv) · `screen` (progress and
summary) · `nbgrader_export` (``grader nbgrader-export``). Below: `core/` … `mutation/`.
"""
