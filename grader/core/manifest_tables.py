"""The tables of a manifest.toml, read with their types: every mistake a `ManifestError`
that names the file.

    r = TableReader(path, "tasks[0]", raw, {"id", "title", "points", "fences"})
    r.string("title"); r.points("points"); r.strings("fences", required=True)
    r.fail("duplicate task id 1.1")      # ManifestError("<path>: duplicate task id 1.1")

A `TableReader` refuses a key its table does not allow, and a value of the wrong type or
an empty one where one is required. The entries that need more than a type are checked
here too: a task's ``weights`` (`read_weights`) and a ``reference_only`` file
(`check_reference_only`). What the tables mean, and how they make a `Manifest`, is
`grader.core.manifest`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

from .fences import find_fences

__all__ = ["ManifestError", "TableReader", "check_reference_only", "read_weights"]


class ManifestError(ValueError):
    """An invalid manifest; the message names the file."""


class TableReader:
    """Typed access to one TOML table, with errors that name the file and the table."""

    def __init__(self, path: Path, where: str, table: Any, allowed: set[str]) -> None:
        self.path, self.where = path, where
        if not isinstance(table, dict):
            self.fail(f"{where} must be a table")
        unknown = sorted(set(table) - allowed)
        if unknown:
            self.fail(
                f"unknown key(s) {', '.join(unknown)} in {where} (allowed: {', '.join(sorted(allowed))})"
            )
        self.table = table

    def fail(self, message: str) -> NoReturn:
        raise ManifestError(f"{self.path}: {message}")

    def string(self, key: str, default: str | None = None) -> str:
        if key not in self.table:
            if default is None:
                self.fail(f"{self.where} needs {key!r}")
            return default  # type: ignore[return-value]
        v = self.table[key]
        if not isinstance(v, str) or (default is None and not v.strip()):
            self.fail(f"{self.where}.{key} must be a non-empty string, got {v!r}")
        return v

    def points(self, key: str) -> float:
        v = self.table.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            self.fail(f"{self.where}.{key} must be a positive number, got {v!r}")
        return float(v)

    def strings(self, key: str, required: bool) -> tuple[str, ...]:
        v = self.table.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            self.fail(f"{self.where}.{key} must be a list of strings, got {v!r}")
        if required and not v:
            self.fail(f"{self.where}.{key} must not be empty")
        if len(set(v)) != len(v):
            self.fail(f"{self.where}.{key} has duplicates: {v!r}")
        return tuple(v)


def read_weights(r: TableReader, raw: Any, checks: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``weights = { check = 2.0 }``: names among the task's checks, positive finite numbers."""
    if not isinstance(raw, dict):
        r.fail(f"{r.where}: weights must be a table such as {{ {checks[0]} = 2.0 }}, got {raw!r}")
    for name, w in raw.items():
        if name not in checks:
            r.fail(f"{r.where}: weights names {name!r}, which is not one of its checks ({', '.join(checks)})")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w < float("inf"):
            r.fail(f"{r.where}: the weight of {name} must be a positive number, got {w!r}")
    return tuple((n, float(raw[n])) for n in checks if n in raw)


def check_reference_only(top: TableReader, rel: str, root: Path) -> None:
    """A reference-only file: an existing file of minitorch/ (not _release.py) without fences."""
    parts = rel.split("/")
    if not re.fullmatch(r"minitorch/[A-Za-z0-9_./-]+", rel) or any(p in ("", ".", "..") for p in parts):
        top.fail(
            f"reference_only entry {rel!r} must be a path under minitorch/, e.g. 'minitorch/accel/tuned_ops.py'"
        )
    if rel == "minitorch/_release.py" or rel.endswith("/__init__.py"):
        top.fail(f"reference_only entry {rel!r} cannot be withheld (the package needs it)")
    if not (root / rel).is_file():
        top.fail(f"reference_only file {rel} does not exist")
    if rel.endswith(".py") and find_fences((root / rel).read_text(encoding="utf-8"), rel):
        top.fail(f"reference_only file {rel} holds solution fences: its tasks would vanish from the release")
