"""Intake: open a submission safely and find what the grader takes from it.

A submission is a directory or a zip (a GitHub download nests one folder; a Gradescope
upload may hold the `.py` files flat). This layer

* extracts a zip, refusing absolute paths, ``..``, links and more than the size limits
  (`open_submission`);
* finds the student's ``minitorch/`` package (`find_package`) and submitted notebooks
  (`find_notebook`) without following links;
* reads one student source file, turning anything unusable (missing, a link, not a
  regular file, too large, not UTF-8) into a `Problem` instead of an exception
  (`read_student_file`).

It only reads and copies bytes: it never imports or runs anything from the submission and
knows nothing of fences, checks or scores.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Optional

from .results import Problem

__all__ = [
    "MAX_SOURCE_BYTES",
    "MAX_SUBMISSION_BYTES",
    "MAX_SUBMISSION_FILES",
    "SKIP_DIRS",
    "SubmissionError",
    "find_notebook",
    "find_package",
    "open_submission",
    "read_student_file",
]

#: Limits on what a submission may hold.
MAX_SUBMISSION_BYTES = 64 * 1024 * 1024
MAX_SUBMISSION_FILES = 5000
MAX_SOURCE_BYTES = 2 * 1024 * 1024

#: Folders that are never part of a package or a submission (caches, tool state).
SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", ".mypy_cache"})


class SubmissionError(ValueError):
    """A submission that cannot be read safely (unsafe zip, too large)."""


def _safe_name(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        return False
    return all(part not in ("..",) for part in re.split(r"[\\/]+", name))


def _extract_zip(archive: Path, dest: Path) -> None:
    """Extract a zip, refusing absolute paths, `..`, links and more than the size limits."""
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"{archive.name} is not a readable zip file: {e}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_SUBMISSION_FILES:
            raise SubmissionError(f"{archive.name} holds {len(infos)} entries (at most {MAX_SUBMISSION_FILES})")
        total = 0
        root = dest.resolve()
        for info in infos:
            name = info.filename
            if not _safe_name(name):
                raise SubmissionError(f"{archive.name}: unsafe path {name!r} in the zip")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise SubmissionError(f"{archive.name}: {name!r} is a symbolic link (not allowed)")
            target = (dest / name).resolve()
            if target != root and root not in target.parents:
                raise SubmissionError(f"{archive.name}: {name!r} points outside the submission")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                while True:
                    chunk = src.read(1 << 16)
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > MAX_SUBMISSION_BYTES:
                        raise SubmissionError(
                            f"{archive.name} unpacks to more than {MAX_SUBMISSION_BYTES // (1024 * 1024)} MiB"
                        )
                    out.write(chunk)


def open_submission(submission: Path, workdir: Path) -> Path:
    """The directory of a submission: itself, or a zip extracted (safely) into `workdir`.

    Raises:
        SubmissionError: neither a directory nor a zip, or an unsafe / too large zip.
    """
    submission = Path(submission)
    if submission.is_dir():
        return submission
    if submission.is_file() and zipfile.is_zipfile(submission):
        dest = Path(workdir) / "submission"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        _extract_zip(submission, dest)
        return dest
    raise SubmissionError(f"{submission} is neither a directory nor a zip file")


def _walk_dirs(root: Path, max_depth: int) -> list[Path]:
    """Directories under root (not following links), breadth first, sorted."""
    found, level = [], [root]
    for _ in range(max_depth):
        nxt = []
        for d in level:
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                if e.is_dir(follow_symlinks=False) and e.name not in SKIP_DIRS and not e.name.startswith("."):
                    nxt.append(Path(e.path))
        found.extend(nxt)
        level = nxt
    return found


def find_package(root: Path) -> Optional[Path]:
    """Where the student's `minitorch/` is: root/minitorch, else the shallowest folder
    named minitorch (a zip of a GitHub repo nests one level), else root itself when the
    .py files were uploaded flat; None if nothing looks like the package."""
    root = Path(root)
    direct = root / "minitorch"
    if direct.is_dir() and not direct.is_symlink():
        return direct
    for d in _walk_dirs(root, 3):
        if d.name == "minitorch" and any(d.glob("*.py")):
            return d
    if any(p.is_file() and not p.is_symlink() for p in root.glob("*.py")):
        return root
    return None


def find_notebook(root: Path, name: str) -> Optional[Path]:
    """The submitted notebook `name` (e.g. "backprop.ipynb"): root/notebooks/name, else
    the shallowest file of that name; None if absent. Links are not followed."""
    root = Path(root)
    for d in [root / "notebooks", root, *_walk_dirs(root, 3)]:
        p = d / name
        if p.is_file() and not p.is_symlink():
            return p
    return None


def read_student_file(package: Path, rel: Path) -> tuple[Optional[str], Optional[Problem]]:
    """(text, problem) of the student's `minitorch/<rel>`; text is None when the file
    cannot be used, and the problem (about the whole file) says why."""
    shown = f"minitorch/{rel.as_posix()}"
    path = package / rel

    def problem(message: str) -> tuple[None, Problem]:
        return None, Problem(f"{shown} {message}", file=shown)

    cur = package
    for part in rel.parts:
        cur = cur / part
        if cur.is_symlink():
            return problem("is a symbolic link — not accepted; its tasks are graded as not implemented")
    if not path.exists():
        return problem("missing — its tasks are graded as not implemented")
    if not path.is_file():
        return problem("is not a regular file — its tasks are graded as not implemented")
    if path.stat().st_size > MAX_SOURCE_BYTES:
        return problem(f"is larger than {MAX_SOURCE_BYTES // 1024} KiB — not accepted")
    try:
        return path.read_text(encoding="utf-8"), None
    except UnicodeDecodeError as e:
        return problem(f"is not UTF-8 text ({e.reason} at byte {e.start}) — its tasks are graded as not implemented")
