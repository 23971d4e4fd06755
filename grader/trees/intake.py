"""Intake: open a submission safely and find what the grader takes from it.

A submission is a directory or a zip (a GitHub download nests one folder; a Gradescope
upload may hold the `.py` files flat). This layer

* extracts a zip, refusing absolute paths, ``..``, links and more than the size limits
  (`open_submission`); a folder gets the same limits (`check_folder`: the names, the
  nesting, the number of files and their total size, by `stat` alone: nothing of it is read
  before its size is known), so that ``grader run DIR`` refuses what a zip of DIR would be
  refused for, and what ``grader batch`` refuses when it packs DIR (`walk_folder`, shared);
* finds the student's ``minitorch/`` package (`find_package`) and submitted notebooks
  (`find_notebook`) without following links;
* reads one student source file, turning anything unusable (missing, a link, not a
  regular file, too large, unreadable, not UTF-8) into a `Problem` instead of an exception
  (`read_student_file`); every read is capped (`read_capped`).

Whatever one submission holds (a name that is not UTF-8, thousands of nested folders, a
FIFO, a file that vanishes or cannot be read) is a `SubmissionError` naming the entry
(`shown_name`: printable, whatever its bytes), never another exception.

It only reads and copies bytes: it never imports or runs anything from the submission and
knows nothing of fences, checks or scores.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from grader.core.results import Problem

__all__ = [
    "MAX_SOURCE_BYTES",
    "MAX_SUBMISSION_BYTES",
    "MAX_SUBMISSION_DEPTH",
    "MAX_SUBMISSION_FILES",
    "NO_PACKAGE",
    "SKIP_DIRS",
    "FolderBudget",
    "FolderEntry",
    "SubmissionError",
    "check_folder",
    "find_notebook",
    "find_package",
    "open_submission",
    "read_capped",
    "read_student_file",
    "shown_name",
    "walk_folder",
]

#: Limits on what a submission may hold.
MAX_SUBMISSION_BYTES = 64 * 1024 * 1024
MAX_SUBMISSION_FILES = 5000
MAX_SOURCE_BYTES = 2 * 1024 * 1024
#: How deep a submission's folders may nest (a repository needs a handful of levels).
MAX_SUBMISSION_DEPTH = 32

#: Why a submission without the package is not graded (`find_package` finds nothing).
NO_PACKAGE = "no minitorch/ package found in the submission (nor .py files at its top): nothing to grade"

#: Folders that are never part of a package or a submission (caches, tool state).
SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", ".mypy_cache"})


class SubmissionError(ValueError):
    """A submission that cannot be read safely (unsafe zip, too large)."""


def shown_name(name: str) -> str:
    """`name` (a path of a submission) as a message may print it: bytes that are not UTF-8
    as ``\\xNN`` (``os.scandir`` hands them over as surrogates, which no encoder takes),
    control characters escaped, so that the name can neither break a report nor a line."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _safe_name(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        return False
    return all(part not in ("..",) for part in re.split(r"[\\/]+", name))


def _depth(name: str) -> int:
    """How many folders deep the zip entry `name` lies."""
    return len([part for part in re.split(r"[\\/]+", name) if part]) - 1


#: Errors of an unpacked path that come from the zip's names (too long, a file where a
#: folder must go), not from this machine (a full disk): the zip is refused for them.
_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOTDIR, errno.EEXIST, errno.EISDIR})

#: What zipfile raises on a damaged, encrypted or exotic archive.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError)


def _extract_zip(archive: Path, dest: Path) -> None:
    """Extract a zip, refusing absolute paths, `..`, links, deep nesting and more than
    the size limits; a damaged archive is refused as such (`SubmissionError`)."""
    try:
        zf = zipfile.ZipFile(archive)
    except (*_ZIP_ERRORS, OSError) as e:
        raise SubmissionError(f"{archive.name} is not a readable zip file: {e}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_SUBMISSION_FILES:
            raise SubmissionError(
                f"{archive.name} holds {len(infos)} entries (at most {MAX_SUBMISSION_FILES})"
            )
        total = 0
        root = dest.resolve()
        for info in infos:
            try:
                total = _extract_entry(zf, info, archive, dest, root, total)
            except _ZIP_ERRORS as e:
                raise SubmissionError(
                    f"{archive.name}: {shown_name(info.filename)!r} cannot be unpacked: {e}"
                ) from None
            except OSError as e:
                if e.errno not in _NAME_ERRNOS:
                    raise
                raise SubmissionError(
                    f"{archive.name}: {shown_name(info.filename)!r} cannot be unpacked: {e.strerror}"
                ) from None


def _extract_entry(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, dest: Path, root: Path, total: int
) -> int:
    """Extract one entry of `zf` under `dest` (checked first); return the bytes unpacked so far."""
    name = info.filename
    if not _safe_name(name):
        raise SubmissionError(f"{archive.name}: unsafe path {shown_name(name)!r} in the zip")
    if _depth(name) > MAX_SUBMISSION_DEPTH:
        raise SubmissionError(
            f"{archive.name}: {shown_name(name)[:200]!r} lies more than {MAX_SUBMISSION_DEPTH} folders deep"
        )
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise SubmissionError(f"{archive.name}: {name!r} is a symbolic link (not allowed)")
    target = (dest / name).resolve()
    if target != root and root not in target.parents:
        raise SubmissionError(f"{archive.name}: {name!r} points outside the submission")
    if info.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return total
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
    return total


def open_submission(submission: Path, workdir: Path) -> Path:
    """The directory of a submission: itself (within the limits of a zip: `check_folder`),
    or a zip extracted (safely) into `workdir`.

    Raises:
        SubmissionError: neither a directory nor a zip, an unsafe / too large / damaged
            zip, or a folder that a zip of it would be refused for.
    """
    submission = Path(submission)
    if submission.is_dir():
        check_folder(submission)
        return submission
    if submission.is_file() and zipfile.is_zipfile(submission):
        dest = Path(workdir) / "submission"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        _extract_zip(submission, dest)
        return dest
    raise SubmissionError(f"{submission} is neither a directory nor a zip file")


# --------------------------------------------------------------------------- folders


@dataclass(frozen=True)
class FolderEntry:
    """An entry of a folder submission: `rel` its posix path from the root (UTF-8:
    `walk_folder` refuses any other name), `path`, and its `lstat`."""

    rel: str
    path: Path
    stat: os.stat_result


def walk_folder(root: Path) -> Iterator[FolderEntry]:
    """Every entry under `root`, depth first in name order (a folder, then its entries);
    hidden entries and caches left out (the grader never reads them); links listed,
    never followed.

    Iterative, with a depth limit: no nesting can exhaust Python's stack.

    Raises:
        SubmissionError: a name that is not UTF-8 (no zip, report or gradebook can hold
            it), folders nested more than `MAX_SUBMISSION_DEPTH` deep, or an entry that
            cannot be listed (no permission, vanished).
    """
    stack = [("", iter(_listing(Path(root), "")))]
    while stack:
        prefix, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        rel = prefix + entry.name
        _check_utf8(rel)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as e:
            raise SubmissionError(f"{shown_name(rel)} cannot be read: {e.strerror or e}") from None
        if stat.S_ISDIR(info.st_mode):
            if len(stack) >= MAX_SUBMISSION_DEPTH:
                raise SubmissionError(
                    f"folders nested more than {MAX_SUBMISSION_DEPTH} deep ({shown_name(rel)[:100]}…)"
                )
            yield FolderEntry(rel, Path(entry.path), info)
            stack.append((rel + "/", iter(_listing(Path(entry.path), rel))))
        else:
            yield FolderEntry(rel, Path(entry.path), info)


def _listing(folder: Path, rel: str) -> list[os.DirEntry]:
    """The entries of `folder` that the grader may read, sorted by name (no more than a
    submission may hold: a folder of a million entries is refused, not listed)."""
    where = shown_name(rel) if rel else "the submission folder"
    entries = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not e.name.startswith(".") and e.name not in SKIP_DIRS:
                    entries.append(e)
                    if len(entries) > MAX_SUBMISSION_FILES:
                        raise SubmissionError(f"{where} holds more than {MAX_SUBMISSION_FILES} entries")
    except OSError as e:
        raise SubmissionError(f"{where} cannot be read: {e.strerror or e}") from None
    return sorted(entries, key=lambda e: e.name)


def _check_utf8(rel: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise SubmissionError(
            f"{shown_name(rel)} has a name that is not UTF-8 text: rename or remove it"
        ) from None


class FolderBudget:
    """The limits of a zip (`MAX_SUBMISSION_FILES` entries, folders included as in a zip;
    `MAX_SUBMISSION_BYTES` in all), counted over a folder's entries; `add` raises
    `SubmissionError` naming the entry that crosses one, so that a file too large is
    refused by its size, before it is read."""

    def __init__(self) -> None:
        self.files = self.bytes = 0

    def add(self, entry: FolderEntry) -> None:
        self.files += 1
        if self.files > MAX_SUBMISSION_FILES:
            raise SubmissionError(f"the submission holds more than {MAX_SUBMISSION_FILES} files and folders")
        if stat.S_ISREG(entry.stat.st_mode):
            self.bytes += entry.stat.st_size
            if self.bytes > MAX_SUBMISSION_BYTES:
                raise SubmissionError(
                    f"the submission holds more than {MAX_SUBMISSION_BYTES // 2**20} MiB "
                    f"({shown_name(entry.rel)}: {_mib(entry.stat.st_size)})"
                )

    @property
    def bytes_left(self) -> int:
        return MAX_SUBMISSION_BYTES - self.bytes


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size < 2**20 * 10 else f"{size // 2**20} MiB"


def check_folder(root: Path) -> None:
    """Refuse a folder submission that a zip of it would be refused for: a name that is
    not UTF-8, deep nesting, too many files or bytes (their sizes by `stat`: nothing is
    read), an entry that is neither a file, a folder nor a link (a FIFO would block its
    reader). Links stay: the readers below refuse them file by file.

    Raises:
        SubmissionError: the first such entry, named.
    """
    budget = FolderBudget()
    for entry in walk_folder(root):
        budget.add(entry)
        mode = entry.stat.st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            raise SubmissionError(f"{shown_name(entry.rel)} is not a regular file (a FIFO, socket or device)")


def read_capped(path: Path, limit: int, shown: str) -> bytes:
    """The bytes of the regular file `path`, reading at most `limit` + 1 of them: never
    more than the limits allow, whatever the file became since it was listed.

    Raises:
        SubmissionError: not a regular file now (a link or a FIFO swapped in: never
            followed nor waited on), larger than `limit`, or unreadable (gone, no permission).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise SubmissionError(f"{shown} cannot be read: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SubmissionError(f"{shown} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise SubmissionError(f"{shown} cannot be read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SubmissionError(f"{shown} is larger than {_mib(limit)}")
    return data


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
        data = read_capped(path, MAX_SOURCE_BYTES, shown)  # capped: the file may have grown since
    except SubmissionError as e:
        return problem(
            f"{str(e).removeprefix(shown).strip()} — not accepted; its tasks are graded as not implemented"
        )
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return problem(
            f"is not UTF-8 text ({e.reason} at byte {e.start}) — its tasks are graded as not implemented"
        )
