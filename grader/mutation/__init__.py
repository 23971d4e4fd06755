"""``grader check --mutants``: how strong the hidden checks are.

`mutants` (mutants of every fence, and the stage's catalogue) · `analysis` (grade each
mutant, the verdicts, assignments/MUTATION.md). Below: `core/` … `release/`.
"""
