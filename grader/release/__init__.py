"""What students receive, and the instructor's examples.

`starter` (a stage's starter repository) · `scaffold` (its README, pyproject.toml, tests
workflow and .gitignore) · `classroom` (its GitHub Classroom workflow) ·
`examples` (``grader example``: the stage's example submissions) · `standalone`
(invariant 5: each task's public tests stand alone). Below: `core/` … `grading/`.
"""
