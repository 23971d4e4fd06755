"""A stage's catalogue, ``assignments/<stage>/mutants.toml``: real mistakes and proven equivalents.

    catalogue = load_catalogue("a1")      # real students' mistakes + proven equivalents

A ``[[mistake]]`` (task, function, why, body) is a mistake students made: `body` replaces
the fence of `task` in `function`, and the result is a `Mutant` of operator "mistake",
graded in every run (sampled or not) and a failure when it survives. An ``[[equivalent]]``
(id, why) is a generated mutant that behaves exactly like the reference on every input the
task's contract allows, with the reason: it is not counted against the mutation score. A
stage without the file has an empty catalogue; anything else malformed is a `ManifestError`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Mapping

from grader.release.examples import splice, stage_files
from grader.core.fences import find_fences
from grader.core.manifest import ManifestError, repo_root, stage_dir
from .mutants import Mutant, _finish

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Catalogue", "load_catalogue"]


@dataclass(frozen=True)
class Catalogue:
    """A stage's `mutants.toml`: mistakes (always graded) and id → why of equivalents."""

    mistakes: tuple[Mutant, ...] = ()
    equivalents: Mapping[str, str] = field(default_factory=dict)


def load_catalogue(stage: str) -> Catalogue:
    """`assignments/<stage>/mutants.toml` (an empty catalogue when there is none).

    Raises:
        ManifestError: unknown keys, a mistake whose fence does not exist or whose body
            does not compile, an equivalent without an id or a reason.
    """
    path = stage_dir(stage) / "mutants.toml"
    if not path.is_file():
        return Catalogue()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(data) - {"mistake", "equivalent"}
    if unknown:
        raise ManifestError(
            f"{path}: unknown table(s) {', '.join(sorted(unknown))} (allowed: mistake, equivalent)"
        )
    files = {rel: (repo_root() / rel).read_text(encoding="utf-8") for rel in stage_files(stage)}
    mistakes = []
    for n, entry in enumerate(data.get("mistake", []), 1):
        if set(entry) != {"task", "function", "why", "body"}:
            raise ManifestError(
                f"{path}: mistake #{n} needs exactly task, function, why, body (has {', '.join(sorted(entry))})"
            )
        rel = next(
            (
                r
                for r, t in files.items()
                if any((f.task, f.function) == (entry["task"], entry["function"]) for f in find_fences(t, r))
            ),
            None,
        )
        if rel is None:
            raise ManifestError(
                f"{path}: mistake #{n}: no fence of task {entry['task']} in {entry['function']} in stage {stage}"
            )
        mutant = _finish(
            files[rel],
            splice(files[rel], entry["task"], entry["function"], entry["body"], rel),
            rel,
            "mistake",
            entry["why"],
        )
        if mutant is None:
            raise ManifestError(
                f"{path}: mistake #{n} ({entry['task']} {entry['function']}): the body does not compile or changes nothing"
            )
        mistakes.append(mutant)
    equivalents = {}
    for n, entry in enumerate(data.get("equivalent", []), 1):
        if set(entry) != {"id", "why"} or not str(entry["why"]).strip():
            raise ManifestError(f"{path}: equivalent #{n} needs exactly id and why (a reason)")
        equivalents[entry["id"]] = entry["why"]
    return Catalogue(tuple(mistakes), equivalents)
