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
``._@+-``; anything else becomes ``_``). Two submissions with the same id stop the batch
before anything is graded: the grade of one would silently replace the other's.

Submissions travel to the workers as **bytes, never as paths** (a worker may run on
another machine). `pack` turns a submission into the zip a worker unpacks:

* a zip is sent as it is (the worker opens it with `grader.intake`, which refuses unsafe
  paths, links and zip bombs, exactly as ``grader run`` does);
* a folder is zipped here, in a fixed order with fixed dates. Hidden entries (``.git``,
  ``.DS_Store``) and caches are left out: the grader never reads them. A symbolic link is
  never followed: one that points out of the submission is refused here (the worker never
  sees the submission), one inside it is stored as a link, which the worker's intake
  refuses as it refuses a link in an uploaded zip. A folder over intake's size limits is
  refused here, before it is read whole.

The sha256 of a submission is that of the zip's bytes, or, for a folder, of its content
(each entry's kind, path and bytes, in order): it does not change when the folder is
copied or touched, and it changes with any byte the grader could read. The gradebook keeps
it to know whether a submission was graded before (`grader.gradebook`).

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
from typing import Any, Iterator, Optional

from .intake import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES, SKIP_DIRS

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


def safe_student_id(text: str) -> str:
    """`text` as a folder name: letters, digits and ``._@+-``; no leading dot."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]", "_", text.strip()).lstrip(".")
    if not cleaned or cleaned in RESERVED_NAMES:
        cleaned = "_" + cleaned
    return cleaned


# --------------------------------------------------------------------------- finding


def find_submissions(folder: Path | str, strip_prefix: Optional[str] = None) -> Found:
    """The submissions in `folder`, one per student (see the module docstring).

    Raises:
        BatchInputError: `folder` is not a directory, or two submissions have the same id.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BatchInputError(f"{folder} is not a folder of submissions")
    entries, ignored = [], []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name in SKIP_DIRS or entry.name == GRADESCOPE_METADATA:
            continue
        is_zip = entry.name.lower().endswith(".zip") and entry.is_file(follow_symlinks=False)
        if entry.is_dir(follow_symlinks=False) or is_zip:
            entries.append(Path(entry.path))
        else:
            ignored.append(entry.name)  # a stray file, or a link to a submission (never followed)

    metadata = folder / GRADESCOPE_METADATA
    if metadata.is_file():
        names = _gradescope_submitters(metadata)
        layout = "gradescope"
        subs = []
        for path in entries:
            if path.name in names:
                subs.append(Submission(safe_student_id(names[path.name]), path, f"{path.name} ({names[path.name]})"))
            else:
                ignored.append(path.name)
    else:
        prefix = strip_prefix if strip_prefix is not None else _classroom_prefix(entries)
        layout = "github-classroom" if prefix else "folders"
        subs = [Submission(safe_student_id(_student_name(p, prefix)), p, p.name) for p in entries]

    by_id: dict[str, list[str]] = {}
    for s in subs:
        by_id.setdefault(s.student, []).append(s.path.name)
    clashes = {sid: names for sid, names in by_id.items() if len(names) > 1}
    if clashes:
        listed = "; ".join(f"{sid}: {', '.join(names)}" for sid, names in sorted(clashes.items()))
        raise BatchInputError(f"several submissions have the same student id ({listed}); keep one per student")
    return Found(sorted(subs, key=lambda s: s.student), layout, ignored)


def _student_name(path: Path, prefix: str) -> str:
    name = path.name[: -len(".zip")] if path.name.lower().endswith(".zip") and path.is_file() else path.name
    return name[len(prefix):] if prefix and name.startswith(prefix) and len(name) > len(prefix) else name


def _classroom_prefix(entries: list[Path]) -> str:
    """GitHub Classroom's ``<assignment>-`` prefix: the longest prefix ending in ``-`` that
    all names share, when there are at least two and every one is a git clone; else ""."""
    if len(entries) < 2 or not all(p.is_dir() and (p / ".git").exists() for p in entries):
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
    """The bytes a worker receives for `sub`, their hash, or why it is refused."""
    if sub.path.is_dir():
        return _pack_folder(sub.path)
    size = sub.path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        return Packed(None, _sha256_of_file(sub.path), f"{sub.path.name} is larger than {MAX_SUBMISSION_BYTES // 2**20} MiB")
    data = sub.path.read_bytes()
    return Packed(data, hashlib.sha256(data).hexdigest())


def _sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _pack_folder(root: Path) -> Packed:
    """Zip the folder `root` (see the module docstring), hashing what it holds."""
    digest = hashlib.sha256()
    buffer = io.BytesIO()
    refusal = ""
    total_bytes = count = 0
    real_root = root.resolve()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for rel, path in _walk(root):
            count += 1
            if count > MAX_SUBMISSION_FILES:
                refusal = f"the folder holds more than {MAX_SUBMISSION_FILES} files"
                break
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                target = os.readlink(path)
                digest.update(f"link\0{rel}\0{target}\0".encode())
                resolved = (path.parent / target).resolve()
                if resolved != real_root and real_root not in resolved.parents:
                    refusal = f"{rel} is a symbolic link to {target}, outside the submission"
                    break
                info = _zip_info(rel, stat.S_IFLNK | 0o777)
                zf.writestr(info, target)
            elif stat.S_ISREG(mode):
                data = path.read_bytes()
                total_bytes += len(data)
                if total_bytes > MAX_SUBMISSION_BYTES:
                    refusal = f"the folder holds more than {MAX_SUBMISSION_BYTES // 2**20} MiB"
                    break
                digest.update(f"file\0{rel}\0{len(data)}\0".encode())
                digest.update(data)
                zf.writestr(_zip_info(rel, stat.S_IFREG | 0o644), data)
            else:
                refusal = f"{rel} is not a regular file"
                break
    if refusal:
        digest.update(f"refused\0{refusal}".encode())
        return Packed(None, digest.hexdigest(), refusal)
    return Packed(buffer.getvalue(), digest.hexdigest())


def _zip_info(rel: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(rel, date_time=ZIP_DATE)
    info.create_system = 3  # Unix: the mode bits below are read as such
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """(posix path relative to root, path) of every entry under root that is not a
    folder, depth first in name order; hidden entries and caches left out; links are
    listed, never followed."""
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name in SKIP_DIRS:
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            yield from ((f"{entry.name}/{rel}", p) for rel, p in _walk(path))
        else:
            yield entry.name, path
