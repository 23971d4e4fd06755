"""What every layer of the grader speaks: the stages and the results.

`manifest` (the stages, ``assignments/aN-*/manifest.toml``) · `manifest_tables` (its TOML
tables read with their types) · `gradescope_settings` (its ``[gradescope]`` table) ·
`fences` (the solution fences of ``minitorch/``: parse, validate, render) · `shared_state`
(fences that share state) · `results` (Problem, CheckResult, TaskResult, GradeResult) ·
`safe_text` (student text is data, at every boundary) · `console` (every rich Console of
the grader). Imports nothing of the grader outside `core/`.
"""
