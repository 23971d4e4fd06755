"""From a submission to the tree a child imports.

`intake` (open a directory or zip safely) · `child_tree` (the child's tree: the student's
fences of the stage, the reference before, stubs after) · `outside_code` (the student's code
outside the fences, compared with the release's) · `fence_guard` (a body that does not
compile or leaves its function is stubbed and costs only its task). Below: `core/`.
"""
