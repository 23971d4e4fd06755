"""The command line and the commands that use every layer.

`cli` (``grader …``) · `invariants` (``grader check``) · `gradescope` (``grader
gradescope``: the Gradescope autograder zip, and what its scripts run). The top layer.
"""
