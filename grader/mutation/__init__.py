"""``grader check --mutants``: how strong the hidden checks are.

`mutants` (mutants of every fence) · `catalogue` (the stage's `mutants.toml`: real mistakes,
proven equivalents) · `analysis` (grade each mutant, decide the verdicts) · `verdicts` (what
grading a mutant found, per task and per stage) · `report` (the table, assignments/MUTATION.md).
Below: `core/` … `release/`.
"""
