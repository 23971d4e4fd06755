"""Batch intake: find the students' submissions in a folder and pack each one into bytes.

    found = find_submissions(Path("exports/a1"))        # -> Found: one Submission per student
    packed = pack(found.submissions[0])                  # -> Packed: zip bytes + sha256

`grader batch` grades a whole class. Its SUBMISSIONS folder holds one submission per
student, in one of three layouts (`find_submissions` tells them apart):

* **folders**: one folder or zip per student; the student id is the name
  (``alice/``, ``bob.zip`` → ``alice``, ``bob``).
* **gradescope**: Gradescope's "export submissions" folder: ``submission_metadata.yml``
  and one folder per submission (``submission_123456/``). The metadata maps each folder to
  its submitters (``:submitters: [{:name:, :sid:, :email:}]``); the student id is the
  ``:sid:`` (else the email, else the name), group members joined with ``+``.
* **github-classroom**: a folder of git clones named ``<assignment>-<github-user>``
  (``a1-scalar-alice``); the student id is the user: the name without the prefix that
  every clone shares (or the one given with ``--strip-prefix``).

A student id names a folder under OUT, so it is made safe for a file name (letters, digits,
``._@+-``; anything else becomes ``_``; never a leading ``= + - @``, which a spreadsheet
reads as a formula). Two submissions with the same id stop the batch before anything is
graded: the grade of one would silently replace the other's. That, and a SUBMISSIONS
folder that cannot be read, are the only reasons a batch stops: whatever ONE submission
holds is found when it is packed and costs that submission only.

Submissions travel to the workers as **bytes, never as paths** (a worker may run on
another machine). `pack` turns a submission into the zip a worker unpacks:

* a zip is sent as it is (the worker opens it with `grader.trees.intake`, which refuses unsafe
  paths, links and zip bombs, exactly as ``grader run`` does);
* a folder is zipped here, in a fixed order with fixed dates. Hidden entries (``.git``,
  ``.DS_Store``) and caches are left out: the grader never reads them. A symbolic link is
  never followed: one that points out of the submission is refused here (the worker never
  sees the submission), one inside it is stored as a link, which the worker's intake
  refuses as it refuses a link in an uploaded zip. The folder is walked by
  `grader.trees.intake.walk_folder` (iteratively, at most `MAX_SUBMISSION_DEPTH` deep) and held
  to a zip's limits by each entry's `stat` before it is read (`FolderBudget`), each file
  read with a cap (`read_capped`): a sparse 1 GiB notebook is refused unread.

`pack` never raises because of what a submission holds: a name that is not UTF-8, deep
nesting, a FIFO or device, a file that cannot be read or vanishes, a zip over the limits
or gone: each is a refusal naming the entry (`Packed.refusal`), which the batch records as
a ``malformed`` row with every task at 0. ``grader run`` refuses the same folders for the
same reasons (`grader.trees.intake.check_folder`).

The sha256 of a submission is that of the zip's bytes, or, for a folder, of its content
(each entry's kind, path and bytes, in order): it does not change when the folder is
copied or touched, and it changes with any byte the grader could read. The gradebook keeps
it to know whether a submission was graded before (`grader.batch.gradebook`).

This module reads files; it never extracts, imports or runs anything of a submission.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from grader.trees.intake import (
    MAX_SUBMISSION_BYTES,
    SKIP_DIRS,
    FolderBudget,
    FolderEntry,
    SubmissionError,
    read_capped,
    shown_name,
    walk_folder,
)

__all__ = ["BatchInputError", "Found", "Packed", "Submission", "find_submissions", "pack", "safe_student_id"]

#: Gradescope's export writes this file next to the submission folders.
GRADESCOPE_METADATA = "submission_metadata.yml"

#: Names under OUT that are not student folders.
RESERVED_NAMES = frozenset({"gradebook.csv"})

#: Every entry of a packed folder gets this date, so that packing twice gives the same bytes.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class BatchInputError(ValueError):
    """The SUBMISSIONS folder cannot be graded as a batch (missing, duplicate student ids)."""


@dataclass(frozen=True)
class Submission:
    """One student's submission: `student` is the id (a safe file name), `path` the folder
    or zip in SUBMISSIONS, `label` what the reports show (``submission_1 (Alice Smith)``)."""

    student: str
    path: Path
    label: str


@dataclass
class Found:
    """The submissions of a SUBMISSIONS folder, sorted by student id; `layout` is
    "folders", "gradescope" or "github-classroom"; `ignored` the names that are not
    submissions (a roster.csv, a folder that the Gradescope metadata does not name, …)."""

    submissions: list[Submission]
    layout: str
    ignored: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Packed:
    """A submission ready to travel: `data` the zip's bytes (None when `refusal` says why
    the submission is not sent), `sha256` its hash (see the module docstring)."""

    data: Optional[bytes]
    sha256: str
    refusal: str = ""


#: First characters that make a spreadsheet read a cell as a formula (the gradebook is a CSV
#: that instructors open in one): a student id never starts with one.
FORMULA_STARTS = ("=", "+", "-", "@")


def safe_student_id(text: str) -> str:
    """`text` as a folder name and a gradebook cell: letters, digits and ``._@+-``
    (anything else, a byte that is not UTF-8 included, becomes ``_``); no leading dot; no
    leading ``= + - @`` (a formula in a spreadsheet): ``_`` is put in front, so that
    ``-alice`` and ``alice`` stay two ids."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]", "_", text.strip()).lstrip(".")
    if not cleaned or cleaned in RESERVED_NAMES or cleaned.startswith(FORMULA_STARTS):
        cleaned = "_" + cleaned
    return cleaned


# --------------------------------------------------------------------------- finding


def find_submissions(folder: Path | str, strip_prefix: Optional[str] = None) -> Found:
    """The submissions in `folder`, one per student (see the module docstring).

    Only what is wrong with the folder as a whole raises; what one submission holds is
    found when it is packed (`pack`), and costs that submission only. Names are kept as
    they are (`Submission.path`), and shown printable (`Submission.label`, `ignored`).

    Raises:
        BatchInputError: `folder` is not a readable directory, or two submissions have the same id.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BatchInputError(f"{folder} is not a folder of submissions")
    try:
        with os.scandir(folder) as it:
            listing = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise BatchInputError(f"{folder} cannot be read: {exc.strerror or exc}") from None
    entries, ignored = [], []
    for entry in listing:
        if entry.name.startswith(".") or entry.name in SKIP_DIRS or entry.name == GRADESCOPE_METADATA:
            continue
        is_zip = entry.name.lower().endswith(".zip") and entry.is_file(follow_symlinks=False)
        if entry.is_dir(follow_symlinks=False) or is_zip:
            entries.append(Path(entry.path))
        else:
            ignored.append(shown_name(entry.name))  # a stray file, or a link to a submission (never followed)

    metadata = folder / GRADESCOPE_METADATA
    if metadata.is_file():
        names = _gradescope_submitters(metadata)
        layout = "gradescope"
        subs = []
        for path in entries:
            if path.name in names:
                subs.append(
                    Submission(
                        safe_student_id(names[path.name]),
                        path,
                        f"{shown_name(path.name)} ({names[path.name]})",
                    )
                )
            else:
                ignored.append(shown_name(path.name))
    else:
        prefix = strip_prefix if strip_prefix is not None else _classroom_prefix(entries)
        layout = "github-classroom" if prefix else "folders"
        subs = [Submission(safe_student_id(_student_name(p, prefix)), p, shown_name(p.name)) for p in entries]

    by_id: dict[str, list[str]] = {}
    for s in subs:
        by_id.setdefault(s.student, []).append(shown_name(s.path.name))
    clashes = {sid: names for sid, names in by_id.items() if len(names) > 1}
    if clashes:
        listed = "; ".join(f"{sid}: {', '.join(names)}" for sid, names in sorted(clashes.items()))
        raise BatchInputError(
            f"several submissions have the same student id ({listed}); keep one per student"
        )
    return Found(sorted(subs, key=lambda s: s.student), layout, ignored)


def _student_name(path: Path, prefix: str) -> str:
    name = path.name[: -len(".zip")] if path.name.lower().endswith(".zip") and path.is_file() else path.name
    return name[len(prefix) :] if prefix and name.startswith(prefix) and len(name) > len(prefix) else name


def _classroom_prefix(entries: list[Path]) -> str:
    """GitHub Classroom's ``<assignment>-`` prefix: the longest prefix ending in ``-`` that
    all names share, when there are at least two and every one is a git clone; else ""."""
    if len(entries) < 2 or not all(p.is_dir() and os.path.lexists(p / ".git") for p in entries):
        return ""
    common = os.path.commonprefix([p.name for p in entries])
    return common[: common.rfind("-") + 1]


def _gradescope_submitters(metadata: Path) -> dict[str, str]:
    """Submission folder → its submitters' ids (``:sid:``, else email, else name), joined
    with ``+`` for a group."""
    import yaml  # PyYAML: a dependency of Dask, which `grader batch` needs anyway

    class TolerantLoader(yaml.SafeLoader):
        """Safe loading that reads an unknown tag (Ruby's ``!ruby/object:BigDecimal``
        score) as None instead of failing: only the submitters are read."""

    TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        data = yaml.load(metadata.read_text(encoding="utf-8"), Loader=TolerantLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BatchInputError(f"{metadata} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise BatchInputError(f"{metadata} is not a mapping of submission folders")
    names = {}
    for folder_name, record in data.items():
        submitters = record.get(":submitters") if isinstance(record, dict) else None
        ids = [_submitter_id(s) for s in submitters or [] if isinstance(s, dict)]
        ids = [i for i in ids if i]
        if ids:
            names[str(folder_name)] = "+".join(ids)
    return names


def _submitter_id(submitter: dict[str, Any]) -> str:
    for key in (":sid", ":email", ":name"):
        value = submitter.get(key)
        if value not in (None, ""):
            return str(value)
    return ""


# --------------------------------------------------------------------------- packing


def pack(sub: Submission) -> Packed:
    """The bytes a worker receives for `sub`, their hash, or why it is refused.

    Never raises because of what the submission holds (a name that is not UTF-8, deep
    nesting, a FIFO, an unreadable or vanishing file, a zip over the limits): each is a
    refusal naming the entry, which the batch records as a ``malformed`` row and goes on.
    """
    try:
        if sub.path.is_dir():
            return _pack_folder(sub.path)
        return _pack_zip(sub.path)
    except SubmissionError as exc:
        return _refused(hashlib.sha256(f"{sub.path.name}\0".encode("utf-8", "surrogateescape")), str(exc))
    except OSError as exc:  # the submission itself went away or cannot be read
        return _refused(
            hashlib.sha256(f"{sub.path.name}\0".encode("utf-8", "surrogateescape")),
            f"{shown_name(sub.path.name)} cannot be read: {exc.strerror or exc}",
        )


def _refused(digest: Any, refusal: str) -> Packed:
    """A refusal: its hash is that of what was read before it, and the reason."""
    digest.update(f"refused\0{refusal}".encode("utf-8", "backslashreplace"))
    return Packed(None, digest.hexdigest(), refusal)


def _pack_zip(path: Path) -> Packed:
    """A zip travels as it is, when within the size limit (checked before it is read;
    one over it is hashed by its name and size, never read)."""
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        digest = hashlib.sha256(f"zip\0{size}\0".encode())
        return _refused(digest, f"{shown_name(path.name)} is larger than {MAX_SUBMISSION_BYTES // 2**20} MiB")
    data = read_capped(path, MAX_SUBMISSION_BYTES, shown_name(path.name))
    return Packed(data, hashlib.sha256(data).hexdigest())


def _pack_folder(root: Path) -> Packed:
    """Zip the folder `root` (see the module docstring), hashing what it holds; the first
    entry the limits or the kinds refuse ends it with a refusal (nothing read past it)."""
    digest = hashlib.sha256()
    buffer = io.BytesIO()
    budget = FolderBudget()
    real_root = Path(os.path.realpath(root))
    try:
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            for entry in walk_folder(root):
                budget.add(entry)  # by its stat: a file over the limits is refused unread
                _pack_entry(entry, zf, digest, budget, real_root)
    except SubmissionError as exc:
        return _refused(digest, str(exc))
    return Packed(buffer.getvalue(), digest.hexdigest())


def _pack_entry(
    entry: FolderEntry, zf: zipfile.ZipFile, digest: Any, budget: FolderBudget, real_root: Path
) -> None:
    """Hash and zip one entry of a folder: a file (read with a cap), a link (as a link),
    nothing for a folder (its files carry its path).

    Raises:
        SubmissionError: a link out of the submission, an entry that is neither a file,
            a folder nor a link, one that cannot be read (or vanished) now.
    """
    rel, mode = entry.rel, entry.stat.st_mode
    if stat.S_ISDIR(mode):
        return
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(entry.path)
        except OSError as exc:
            raise SubmissionError(f"{shown_name(rel)} cannot be read: {exc.strerror or exc}") from None
        digest.update(f"link\0{rel}\0{target}\0".encode("utf-8", "surrogateescape"))
        resolved = Path(os.path.realpath(entry.path))  # never raises, even on a loop of links
        if resolved != real_root and real_root not in resolved.parents:
            raise SubmissionError(
                f"{shown_name(rel)} is a symbolic link to {shown_name(target)}, outside the submission"
            )
        zf.writestr(_zip_info(rel, stat.S_IFLNK | 0o777), target.encode("utf-8", "surrogateescape"))
    elif stat.S_ISREG(mode):
        # at most what is left of the limit (+1): a file that grew since its stat is refused, unread
        data = read_capped(entry.path, budget.bytes_left + entry.stat.st_size, shown_name(rel))
        digest.update(f"file\0{rel}\0{len(data)}\0".encode())
        digest.update(data)
        zf.writestr(_zip_info(rel, stat.S_IFREG | 0o644), data)
    else:
        raise SubmissionError(f"{shown_name(rel)} is not a regular file (a FIFO, socket or device)")


def _zip_info(rel: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(rel, date_time=ZIP_DATE)
    info.create_system = 3  # Unix: the mode bits below are read as such
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
