"""GitHub Classroom: the autograding workflow of a starter repository.

`grader release aN -o DIR` writes ``DIR/.github/workflows/classroom.yml`` (made here). On
every push GitHub runs it in the student's repository and Classroom shows the student (and
the instructor) the score of the **public tests**, task by task. The hidden checks are not in
the repository: the grade of record stays with the instructor's ``grader batch``.

The format is GitHub Classroom's autograding workflow, as Classroom's own template writes it:

    name: Autograding Tests                 # Classroom reads scores only from this name
    "on": [push, workflow_dispatch, repository_dispatch]
    permissions: {checks: write, actions: read, contents: read}
    jobs:
      run-autograding-tests:                # one job, with this name
        if: github.actor != 'github-classroom[bot]'   # not the commit that creates the repository
        steps:
          - checkout, setup-python, install (an ordinary `run:` step)
          - id: task0_1                     # one step per task of the stage
            uses: classroom-resources/autograding-command-grader@v1
            with: {test-name: "0.1 Operators", command: "python -m pytest -q -x -m task0_1",
                   timeout: 10, max-score: 40}
          - uses: classroom-resources/autograding-grading-reporter@v1
            env:  {TASK0_1_RESULTS: "${{steps.task0_1.outputs.result}}", ...}
            with: {runners: "task0_1,..."}

How the two actions behave (their source, not only their README):

* the **command grader** runs ``command`` in a shell and awards ``max-score`` when it exits
  with 0, nothing otherwise: a task scores all its points when all its public tests pass.
  It reads ``max-score`` with ``parseInt`` (so points must be whole numbers) and ``timeout``
  in minutes. It runs the command with only ``PATH`` and ``HOME`` of the job's environment:
  a job-level ``env:`` would not reach pytest. None is needed: ``tests/conftest.py`` puts
  Numba's CUDA on its simulator, and Numba caches compiled kernels in ``__pycache__`` of
  the checkout, so a kernel compiled by one step is loaded, not compiled again, by the next.
* the **reporter** finds each step's result in the variable ``<STEP ID IN CAPITALS>_RESULTS``
  and adds up the scores; ``runners`` lists the step ids.

A task's step id is its pytest marker (``task0_1``): the same name as in
``pytest -m task0_1``, which a student runs locally. Notebook parts are not in this workflow (their tests are hidden, as the checks are).
"""

from __future__ import annotations

import json

from grader.core.manifest import Manifest, Task, stage_number

__all__ = [
    "GRADER_ACTION",
    "JOB_ID",
    "REPORTER_ACTION",
    "WORKFLOW_NAME",
    "classroom_workflow",
    "max_score",
    "step_id",
    "test_command",
    "timeout_minutes",
]

#: Classroom takes the scores of a run only from a workflow of this name, with one job named JOB_ID.
WORKFLOW_NAME = "Autograding Tests"
JOB_ID = "run-autograding-tests"
GRADER_ACTION = "classroom-resources/autograding-command-grader@v1"
REPORTER_ACTION = "classroom-resources/autograding-grading-reporter@v1"

#: Minutes for one task's public tests (the reference takes 2-4 s a task up to A2; from A3 on
#: the tests compile Numba kernels, the A3 tasks and, the fast backend being the default,
#: every later layer: up to about 2 minutes a task on two busy cores with a cold cache).
PYTHON_TIMEOUT_MINUTES = 10
NUMBA_TIMEOUT_MINUTES = 20


def step_id(task: Task) -> str:
    """The workflow step of a task: its pytest marker, "0.1" → "task0_1"."""
    return task.marker


def test_command(task: Task) -> str:
    """The command graded for a task, run in the starter's root (pytest's ``testpaths``
    there is ``tests``): exit status 0 when every public test of the task passes.

    ``-x`` stops at the first failure: it settles the step's all-or-nothing score, and a
    failing Hypothesis test spends about 10 s shrinking its example (a fresh checkout has no
    example database), so an unfinished task would cost minutes on every push without it."""
    return f"python -m pytest -q -x -m {task.marker}"


def timeout_minutes(task: Task) -> int:
    """The time limit of a task's step: longer from A3 on (Numba compiles the kernels)."""
    return NUMBA_TIMEOUT_MINUTES if stage_number(task.stage) >= 3 else PYTHON_TIMEOUT_MINUTES


def max_score(task: Task) -> int:
    """A task's points as the whole number the command grader reads (``parseInt``).

    Raises:
        ValueError: the task's points are not a whole number (12.5 would be read as 12).
    """
    if task.points != int(task.points):
        raise ValueError(
            f"task {task.id} has {task.points:g} points: GitHub Classroom's "
            "command grader awards whole points only"
        )
    return int(task.points)


def _string(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)


def _grader_step(task: Task) -> list[str]:
    name = f"{task.id} {task.title}"
    return [
        f"      - name: {_string(name)}",
        f"        id: {step_id(task)}",
        f"        uses: {GRADER_ACTION}",
        "        with:",
        f"          test-name: {_string(name)}",
        f"          command: {_string(test_command(task))}",
        f"          timeout: {timeout_minutes(task)}",
        f"          max-score: {max_score(task)}",
    ]


def classroom_workflow(manifest: Manifest, python: str = "3.11") -> str:
    """The text of ``.github/workflows/classroom.yml`` for the stage of `manifest`: one graded
    step per task (its public tests, its points), then the reporter that adds them up.

    Raises:
        ValueError: a task's points are not a whole number (see `max_score`).
    """
    tasks = list(manifest.tasks)
    steps = [line for task in tasks for line in _grader_step(task)]
    results = [
        f'          {step_id(t).upper()}_RESULTS: "${{{{steps.{step_id(t)}.outputs.result}}}}"' for t in tasks
    ]
    lines = [
        f"# GitHub Classroom autograding of {manifest.id.upper()}: the public tests of each task, for its points",
        f"# ({sum(max_score(t) for t in tasks)} in all). Written by `grader release`; the hidden checks grade the submission.",
        f"name: {WORKFLOW_NAME}",
        '"on":',
        "  - push",
        "  - workflow_dispatch",
        "  - repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        f"  {JOB_ID}:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "      - name: Checkout code",
        "        uses: actions/checkout@v4",
        "      - name: Set up Python",
        "        uses: actions/setup-python@v5",
        "        with:",
        f"          python-version: {_string(python)}",
        "      - name: Install",
        '        run: python -m pip install -e ".[dev]"',
        *steps,
        "      - name: Autograding Reporter",
        f"        uses: {REPORTER_ACTION}",
        "        env:",
        *results,
        "        with:",
        f"          runners: {','.join(step_id(t) for t in tasks)}",
    ]
    return "\n".join(lines) + "\n"
