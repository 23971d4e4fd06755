"""Each benchmark writes its own sections of BENCHMARKS.md and leaves the others as they are."""

from __future__ import annotations

import os


def replace_section(path: str, title: str, body: str) -> None:
    """Replace the section ``## {title}`` of the Markdown file `path` (up to the next ``## ``
    heading) with `body`, or append it; the file is replaced in one step (never half-written)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmarks\n"
    heading = f"## {title}\n"
    section = heading + "\n" + body.strip("\n") + "\n"
    start = text.find(heading)
    if start >= 0:
        following = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("\n" + text[following + 1 :] if following >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
