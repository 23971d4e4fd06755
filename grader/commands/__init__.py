"""The command line and the commands that use every layer.

`cli` (``grader …``) · `invariants` (``grader check``) · `gradescope` (``grader
gradescope``, and what the autograder's scripts run) · `autograder_bundle` (the Gradescope
autograder zip it writes). The top layer.
"""
