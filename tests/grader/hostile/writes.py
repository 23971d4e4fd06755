"""Hole 3: the child writes where it must not — the kit that grades it, home, shared scratch.

A poisoned ``minitorch/fast_ops.py`` slows the reference that a later speed check times; a
line appended to ``grader/checks/a1/task_1_1.py`` changes later gradings. The attack writes into the
kit it is told (`T["kit"]`, the test's throwaway copy), never into a checkout it finds.
"""

from __future__ import annotations

from .attack import Attack

WRITE_KIT = r"""
import os
for rel in ("minitorch/fast_ops.py", "grader/checks/a1/task_1_1.py"):
    try:
        with open(os.path.join(T["kit"], rel), "a") as fh:
            fh.write(f"\nimport time; time.sleep(0.01)  # {T['marker']}\n")
    except OSError:
        pass
try:
    with open(os.path.join(T["kit"], "minitorch", T["marker"] + ".py"), "w") as fh:
        fh.write("POISON = True\n")
except OSError:
    pass
return 0.0
"""

#: Directories outside the child's own scratch where a file would outlive grading.
HOST_DIRS = ("/root", "/tmp", "/var/tmp", "/dev/shm", "/run/lock")

WRITE_HOST = f"""
import os
for d in {HOST_DIRS!r}:
    try:
        with open(os.path.join(d, T["marker"]), "w") as fh:
            fh.write("left behind by a submission")
    except OSError:
        pass
return 0.0
"""

ATTACKS = [
    Attack(
        "write_into_kit",
        "3 writes",
        "append to the kit's minitorch/fast_ops.py and grader/checks/a1/task_1_1.py, add a module to minitorch/",
        "a1",
        {("1.1", "central_difference"): WRITE_KIT},
    ),
    Attack(
        "write_home_and_tmp",
        "3 writes",
        "leave files in root's home, /tmp, /var/tmp, /dev/shm and /run/lock",
        "a1",
        {("1.1", "central_difference"): WRITE_HOST},
    ),
]
