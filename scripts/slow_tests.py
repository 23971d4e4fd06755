"""Write tests/slow_tests.txt: the tests left out of the quick subset (``pytest -m "not slow"``).

    python -m pytest -p no:cacheprovider --junitxml=/tmp/suite.xml      # a full run, timed
    python scripts/slow_tests.py /tmp/suite.xml --budget 25              # → tests/slow_tests.txt

The quick subset is the fastest tests of the run whose times add up to at most `--budget`
seconds (pytest's start-up and collection come on top); every other test is listed as
slow. A test's time in the JUnit file includes its fixtures, and the first test of a module
also pays for compiling its kernels, so the list follows what a run really costs.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def node_id(classname: str, name: str) -> str:
    """pytest's node id from JUnit's ``classname`` (``tests.test_x`` or ``tests.test_x.TestY``)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (ROOT / path).is_file():
            return "::".join([path, *parts[cut:], name])
    raise ValueError(f"no test file for {classname}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("junit", type=Path, help="JUnit XML of a full run")
    parser.add_argument(
        "--budget", type=float, default=25.0, help="seconds the quick subset may take (default 25)"
    )
    parser.add_argument("-o", "--out", type=Path, default=ROOT / "tests" / "slow_tests.txt")
    args = parser.parse_args()
    times = sorted(
        (float(case.get("time", 0.0)), node_id(case.get("classname", ""), case.get("name", "")))
        for case in ET.parse(args.junit).getroot().iter("testcase")
        if case.find("skipped") is None
    )
    total, quick = 0.0, 0
    for seconds, _ in times:
        if total + seconds > args.budget:
            break
        total += seconds
        quick += 1
    slow = sorted(node for _, node in times[quick:])
    args.out.write_text("".join(f"{node}\n" for node in slow), encoding="utf-8")
    print(
        f"quick subset: {quick} tests, {total:.1f} s in the timed run; {len(slow)} listed slow in {args.out}"
    )


if __name__ == "__main__":
    main()
