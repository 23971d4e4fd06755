"""Grade several submissions one after another in ONE grader process, as a worker of
``grader batch`` does (what one student leaves there must not reach the next).

    python sequence.py '[["run", SUB1, "-a", "a1", ...], ["run", SUB2, ...]]'

Each list is the arguments of one ``grader`` command (`grader.commands.cli.main`); the exit status
is the last one's, after every earlier one exited 0.
"""

from __future__ import annotations

import json
import sys

from grader.commands.cli import main

if __name__ == "__main__":
    runs = json.loads(sys.argv[1])
    for args in runs[:-1]:
        code = main(args)
        if code != 0:
            sys.exit(f"grader {' '.join(args)}: exit status {code}")
    sys.exit(main(runs[-1]))
