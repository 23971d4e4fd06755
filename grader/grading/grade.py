"""`grader run`: grade one submission for one stage — the orchestration, and only that.

    result = grade("submissions/alice.zip", "a1")        # -> GradeResult; nothing is written

The layers, in the order a run uses them:

1. intake (`grader.trees.intake`) opens the submission (a directory within the limits of a zip,
   or a zip extracted safely). A submission that cannot be opened, or holds no
   ``minitorch/`` (nor .py files) to grade, is refused right there (`refused_result`):
   every task and notebook part 0 with the reason as its message, the stage's full points
   as the maximum, no child started;
2. trees (`grader.trees.child_tree`) build the child tree: the reference outside fences, the
   student's fence bodies for this stage, the reference for earlier stages, stubs for
   later ones — and the `Problem`s found on the way;
3. the sandbox (`grader.sandbox.session`) runs that tree in a child process;
4. the checks (`grader.checks.runner`) send it probes, compare the answers with the
   reference (`grader.checks.reference`, in this process) and score each task;
   notebook parts are graded by `grader.notebooks.grading`;
5. results (`grader.core.results`) collect the rows, which `grader.grading.report` renders.

Student code only ever runs in a child; verdicts are decided only in this process, and
reports are written by the caller after every child is gone.

Failures cost only the task being graded: a check that runs past its timeout, a child that
dies, exits (``sys.exit`` / ``os._exit``), floods its output or sends garbage is killed
(with its whole process group), the task's remaining checks are skipped when it timed
out, and a fresh child is started for the next task. A fence body that does not compile,
leaves its function or breaks the import is replaced by the stub before the child runs
(`grader.grading.import_guard`): its task scores 0 and says why, the others are graded.

Scoring: a task's points are shared among its checks by their weights (the manifest's
``weights``, 1 unless stated: partial credit; `grader.checks.runner`); its status
is "passed" when every check passes, else that of its first failing check ("failed": a
wrong answer, "error": the student's code raised, "timeout").

One mistake, one charge (`grader.grading.one_charge`, on unless ``one_charge=False``): the failing
checks of a task that loses points in the student's whole tree are run again with the task
*alone* — in a tree where the stage's other tasks are the reference (or first, once a
task is shown wrong alone, in one tree where only the wrong tasks are: `second_looks`) —
and each that passes there counts, so that a wrong `strides_from_shape` costs 2.1 and not
2.2–2.4 too (and a notebook part that lost points while a task did has its cells run again
over the reference of every task: `one_charge.charge_notebook_once`). Only the verdicts of that second run
are kept (its tree holds reference code the student's code could print); the feedback comes
from the whole tree and says which checks passed only alone, and which other tasks fail.

``isolate=True`` grades *every* task alone, and shows what that run says — a diagnosis for
trusted code (`grader check` uses it: invariant 3). How a task is graded alone, for both
(`grader.grading.reference_trees.grade_alone`): `build_child_tree(..., isolate_task=X)`
writes a tree where the stage's *other* tasks hold the reference, within the limits below.

* What X's score depends on: the student's fences of X, and the fences that share state
  with them. A Function's forward (1.2, 2.3) fills the ``ctx`` its backward (1.3, 2.4)
  reads, and what it saves is the student's choice, so isolating either half splices
  the student's code of the whole Function class (`grader.core.shared_state`); a half
  left a stub takes the reference. A forward that raises or saves the wrong thing thus
  costs its backward too, as without ``--isolate``. Everything else of the other tasks
  (Scalar's operators, backpropagate, reduce_to_shape, …) is the reference's.
* What it assumes: that X uses the other tasks only through their documented contracts.
  Code of X that relies on a non-standard behaviour of the student's own Y is graded
  against the reference Y and may lose points that the whole tree gives (the default grade
  counts a check that passes in either tree, so it never loses them; ``isolate=True`` does).
* What it exposes: the reference code of the stage's other tasks is written into the
  child's tree, where student code can read or call it (each tree is deleted after its
  task; with ``isolate=True`` notebooks are graded in the last one). So ``isolate=True``
  is for diagnosis and `grader check`, never to grade submissions that could copy from
  it; the default grade keeps nothing of an alone run but its verdicts.

Performance checks (stage A3) time the student's kernel in its child and the reference
kernel in a `ReferenceChild` under the same limits and through the same channel; the
student's whole jail is stopped while the reference is timed, every timed call has fresh
inputs and its output checked (see `grader.checks.a3.speed`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Callable, Optional

from grader.checks import get_check
from grader.checks.base import GraderBug
from grader.checks.runner import grade_task
from .import_guard import broken_task_row, start_tree
from grader.trees.intake import NO_PACKAGE, SubmissionError, find_package, open_submission
from grader.sandbox.tiers import choose_tier
from grader.core.manifest import Manifest, load_manifest
from grader.notebooks.grading import grade_notebook
from .one_charge import charge_once, needs_second_look
from .reference_trees import grade_alone, grade_repaired, notebooks_alone
from .second_looks import second_looks
from grader.checks.reference import reference_executor
from grader.core.results import GradeResult, Problem, TaskResult
from grader.sandbox.session import Limits, ReferenceChild, Session
from grader.trees.child_tree import build_tree

__all__ = ["grade", "refusal", "refused_result"]


def grade(
    submission: Path | str,
    stage: str,
    *,
    task: Optional[str] = None,
    isolate: bool = False,
    one_charge: bool = True,
    limits: Limits = Limits(),
    notebooks: bool = True,
    progress: Optional[Callable[[TaskResult], None]] = None,
) -> GradeResult:
    """Grade `submission` (a directory or a zip) for `stage`; nothing is written anywhere.

    Args:
        task: grade only this task id.
        isolate: grade each task with the reference spliced in for the stage's other
            tasks, except the fences sharing state with it (see the module docstring).
        one_charge: run the failing checks of a task that loses points again with the task
            alone (the reference for the stage's other tasks) and count those that pass
            there (`grader.grading.one_charge`); false: the whole tree's rows are the grade.
        notebooks: autograde the stage's notebooks too (when the submission has them).
        progress: called with each row once it is final (a task graded again alone comes
            after the tasks that were not).

    Raises:
        ValueError: an unknown stage or task (a `ManifestError` for a bad manifest).
        GraderBug: the manifest names a check that does not exist, or the reference
            cannot be imported.
        SandboxUnavailable: ``limits.sandbox`` asks for a jail this machine cannot provide.
    """
    started = time.monotonic()
    manifest: Manifest = load_manifest(stage)
    tasks = list(manifest.tasks)
    if task is not None:
        tasks = [t for t in tasks if t.id == task]
        if not tasks:
            raise ValueError(
                f"stage {stage} has no task {task!r} (tasks: {', '.join(t.id for t in manifest.tasks)})"
            )
    reference = reference_executor()
    isolation = choose_tier(limits.sandbox)  # before anything runs: --sandbox=require fails closed here
    # Resolve every check first: a manifest naming an unknown check is a grader bug.
    for t in tasks:
        for name in t.checks:
            found = get_check(stage, name)
            if found is None or found.task != t.id:
                where = (
                    "no module registers" if found is None else f"is registered for task {found.task}, not"
                )
                raise GraderBug(
                    f"{manifest.directory.name}/manifest.toml: task {t.id} names check {name!r}, which {where} "
                    f"@check({t.id!r}, {name!r}) in grader/checks/{stage}/task_{t.id.replace('.', '_')}.py"
                )
    result = GradeResult(
        stage=stage,
        title=manifest.title,
        submission=str(submission),
        tasks=[],
        seconds=0.0,
        isolate=isolate,
        isolation=isolation,
    )
    scratch = Path(tempfile.mkdtemp(prefix="grader-"))
    sessions: list[Session] = []
    ref_child: Optional[ReferenceChild] = None
    try:
        try:
            sub_dir = open_submission(Path(submission), scratch)
            reason = "" if find_package(sub_dir) else NO_PACKAGE
        except (SubmissionError, OSError) as exc:
            reason = f"cannot read the submission: {exc}"
        if reason:  # nothing to grade: no child is started
            refused = refused_result(
                stage, str(submission), reason, task=task, notebooks=notebooks, isolation=isolation
            )
            result.tasks, result.problems = refused.tasks, refused.problems
            return result

        ref_child = ReferenceChild(scratch, limits)
        tree = scratch / "tree"
        alone = partial(grade_alone, stage, sub_dir, scratch, limits, isolation, reference, ref_child)
        if not isolate:
            session, problems = start_tree(
                partial(build_tree, stage, sub_dir, tree),
                partial(Session, tree, scratch, limits, tier=isolation),
            )
            result.problems.extend(problems)
            sessions.append(session)
            rows: list[TaskResult] = []
            for t in tasks:
                # `earlier`: the rows so far, so that a failure reached through an earlier
                # task's function says that it depends on that task (messages only)
                rows.append(
                    broken_task_row(t, problems)
                    or grade_task(t, stage, reference, session, limits, problems, ref_child, earlier=rows)
                )
            session.close()
            # the tasks to grade again alone (grader.grading.one_charge): those that lose points while
            # another task does too (when only one task was graded, the others are unknown)
            again = {
                t.id
                for t, row in zip(tasks, rows)
                if one_charge
                and (task is not None or any(r.score < r.max_points for r in rows if r is not row))
                and needs_second_look(t, row, problems, sub_dir)
            }
            if progress:
                for row in rows:
                    if row.id not in again:
                        progress(row)  # final already
            notebook_rows = [
                grade_notebook(nb, sub_dir, tree, scratch, limits)
                for nb in (manifest.notebooks if notebooks and task is None else ())
            ]
            result.output = "\n".join(o for o in session.outputs if o)
            # One mistake, one charge (grader.grading.one_charge): only now, with every child of the
            # whole tree gone, are trees holding the reference of other tasks written.
            shutil.rmtree(tree, ignore_errors=True)
            try:
                failing = {r.id for r in rows if r.score < r.max_points}
                looks = second_looks(
                    stage,
                    [(t, row) for t, row in zip(tasks, rows) if t.id in again],
                    failing,
                    lambda t, **kw: alone(t, result, last=False, **kw)[0],
                    partial(
                        grade_repaired,
                        stage,
                        sub_dir,
                        scratch,
                        limits,
                        isolation,
                        reference,
                        ref_child,
                        result,
                    ),
                )
            except GraderBug as exc:  # the whole tree's rows stand; the staff is told
                result.grader_errors.append(f"grading the tasks alone failed: {exc}")
                looks = {}
            # a task that still loses points is charged for its own mistake: those are the
            # causes the feedback of a task that passes alone names
            final = [
                charge_once(t, row, looks[t.id].row) if t.id in looks else row for t, row in zip(tasks, rows)
            ]
            for t, row in zip(tasks, rows):
                if t.id in looks:
                    look = looks[t.id]
                    row = charge_once(
                        t, row, look.row, [r for r in final if r.id != t.id], look.repaired, look.roots
                    )
                    if progress:
                        progress(row)
                _add_row(result, row, None)
            if one_charge:
                notebook_rows = notebooks_alone(
                    stage, manifest, sub_dir, scratch, limits, notebook_rows, result.tasks
                )
            for row in notebook_rows:
                _add_row(result, row, progress)
        else:
            outputs: list[str] = []
            for t in tasks:
                row, said = alone(t, result, last=t is tasks[-1])
                outputs += said
                _add_row(result, row, progress)
            result.output = "\n".join(o for o in outputs if o)
            if notebooks and task is None:
                for nb in manifest.notebooks:
                    # graded in the last task's tree, which holds the reference of the others
                    _add_row(
                        result,
                        grade_notebook(nb, sub_dir, scratch / f"tree-{tasks[-1].id}", scratch, limits),
                        progress,
                    )
    except GraderBug as exc:
        result.grader_errors.append(str(exc))
    finally:
        for s in sessions:
            s.close()
        if ref_child is not None:
            ref_child.close()
        shutil.rmtree(scratch, ignore_errors=True)
        result.seconds = time.monotonic() - started
    return result


def _add_row(result: GradeResult, row: TaskResult, progress: Optional[Callable[[TaskResult], None]]) -> None:
    result.tasks.append(row)
    result.grader_errors.extend(c.grader_error for c in row.checks if c.grader_error)
    if progress:
        progress(row)


def refused_result(
    stage: str,
    submission: str,
    reason: str,
    *,
    task: Optional[str] = None,
    notebooks: bool = True,
    isolation: str = "process",
) -> GradeResult:
    """The result of a submission that cannot be graded at all (`reason`: a zip that
    intake refuses, no ``minitorch/``): every row a grading would have (the stage's tasks,
    or `task`; its notebook parts unless `notebooks` is false or a task is named) scores 0
    with status "error" and `reason` as its one message, so that the maximum is the
    stage's full points (Gradescope shows 0 / 100, not 0 / 85); `reason` is the result's
    one problem. `grader batch` gives the same result (`grader.batch.worker.unreadable_result`)."""
    manifest = load_manifest(stage)
    rows = [
        TaskResult(t.id, t.title, t.points, 0.0, "error", reason)
        for t in manifest.tasks
        if task in (None, t.id)
    ]
    if notebooks and task is None:
        rows += [
            TaskResult(f"nb:{nb.name}", nb.title or nb.name, nb.points, 0.0, "error", reason, kind="notebook")
            for nb in manifest.notebooks
        ]
    return GradeResult(
        stage=stage,
        title=manifest.title,
        submission=submission,
        tasks=rows,
        seconds=0.0,
        isolation=isolation,
        problems=[Problem(reason)],
    )


def refusal(result: GradeResult) -> str:
    """The reason `result` is a refusal (`refused_result`: every row an error that ran no
    check, with the one problem as its message), else ""; `grader run` prints it as one line."""
    if len(result.problems) != 1 or not result.tasks:
        return ""
    reason = result.problems[0].message
    return (
        reason
        if all(r.status == "error" and not r.checks and r.message == reason for r in result.tasks)
        else ""
    )
