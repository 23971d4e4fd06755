"""Hostile submissions for `tests/grader/test_grader_hostile.py` (issue 14: a grader that cannot be fooled).

Each attack is a submission — the reference with some fence bodies replaced — that tries
one thing the grader must stop, grouped by the issue's holes:

* `escapes`   — hole 1, the child reaches the grader's processes, results and network;
* `reference` — hole 2, the child reads and runs the reference and the hidden checks;
* `writes`    — hole 3, the child writes into the kit, home and shared scratch;
* `speed`     — hole 4, as far as a jail decides it: stopping the reference while it is timed;
* `classics`  — exits, forged output, bombs, NaN, lying objects, an infinite loop;
* `neighbours` — issue 26: a concurrent grading's tree, what the previous student left on
  the same worker, the host's disk filled.

The rest of hole 4 (remembered answers, skipped repeats) and hole 5 (notebook verdicts,
fence escapes) are properties of the checks and of the tree, not of the jail: their
attacks are in `tests/grader/test_grader_speed_gaming.py`, `tests/grader/test_grader_notebook_forgery.py`
and `tests/grader/test_grader_fence_escape.py`.

`attack` says what an attack is, `snippets` holds code that several attacks share,
`host` grades an attack from outside and records what it changed, and `reaper.py` is the
process that runs the grader so that nothing it leaves behind escapes notice.
"""

from __future__ import annotations

from . import classics, escapes, neighbours, reference, speed, writes
from .attack import Attack, Target

ATTACKS: list[Attack] = [
    *escapes.ATTACKS,
    *reference.ATTACKS,
    *writes.ATTACKS,
    *speed.ATTACKS,
    *classics.ATTACKS,
    *neighbours.ATTACKS,
]

__all__ = ["ATTACKS", "Attack", "Target"]
