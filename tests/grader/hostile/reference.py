"""Hole 2: the child reads and runs the reference, and reads the hidden checks.

The kit is looked for everywhere a student would look (`snippets.KIT_ROOTS`: the path it is
told, /work/main, PWD, PYTHONPATH, the parent's cwd and environment, the editable install's
finder in site-packages). Without a kit in reach each body falls back to a no-op, so the
honest score of the attacked tasks is what a no-op scores: nothing.
"""

from __future__ import annotations

from .attack import Attack
from .snippets import KIT_ROOTS, REFERENCE

DELEGATE_CENTRAL = (
    REFERENCE
    + r"""
ref = _reference()
if ref is None:
    return 0.0
return ref.central_difference(f, *vals, arg=arg, epsilon=epsilon)
"""
)

DELEGATE_TOPOSORT = (
    REFERENCE
    + r"""
ref = _reference()
return [] if ref is None else ref.topological_sort(variable)
"""
)

DELEGATE_BACKPROP = (
    REFERENCE
    + r"""
ref = _reference()
if ref is not None:
    ref.backpropagate(variable, deriv)
"""
)

# The hidden checks of 1.4 and the reference's backpropagation, shown in the feedback.
READ_CHECKS = (
    KIT_ROOTS
    + r"""
leaked = []
for root in _kit_roots():
    for rel in ("grader/checks/a1/task_1_4.py", "minitorch/autodiff.py"):
        try:
            with open(os.path.join(root, rel)) as fh:
                text = fh.read()
        except OSError:
            continue
        start = text.find("def backpropagate") if rel.startswith("minitorch") else 0
        leaked.append(text[start:start + 900])
    if leaked:
        break
print("\n".join(leaked))
raise RuntimeError("\n".join(leaked) or "nothing found")
"""
)

ATTACKS = [
    Attack(
        "import_reference",
        "2 reference",
        "find the kit and delegate central_difference, topological_sort and backpropagate to the reference",
        "a1",
        {
            ("1.1", "central_difference"): DELEGATE_CENTRAL,
            ("1.4", "topological_sort"): DELEGATE_TOPOSORT,
            ("1.4", "backpropagate"): DELEGATE_BACKPROP,
        },
        task=None,
    ),
    Attack(
        "read_hidden_checks",
        "2 reference",
        "read the hidden checks' source (and the reference's) and raise it into the feedback",
        "a1",
        {("1.1", "central_difference"): READ_CHECKS},
    ),
]
