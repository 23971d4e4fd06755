"""Notebook parts: the student's cells run in the child, every test cell in the parent.

`parts` (release a notebook with nbgrader, run a submitted one) · `plans` (a test cell
split between the student's kernel and the grader) · `judge` (a test cell run here, on
plain data) · `grading` (a stage's notebook parts as graded tasks). Below: `core/`,
`trees/`, `sandbox/`.
"""
