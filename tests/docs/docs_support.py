"""Reading the documentation as the tests check it: its pages, their fenced
code blocks and the marker before each block.

A block preceded by `<!-- run -->` is executed by `test_code_blocks.py`; a
block preceded by `<!-- prints -->` is what the `run` block before it prints.
A marker may name a file after it (`<!-- run newsletter.py -->`: the Python
block is saved under that name, as the page tells its reader to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import ROOT

DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.M | re.S)
MARKER = re.compile(r"<!--\s*([\w-]+)(?:\s+([\w.-]+))?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    """The page, relative to the repository root."""
    line: int
    """The line of its opening fence (1-based)."""
    lang: str
    """The fence's language (`python`, `bash`, ...; "" when none)."""
    body: str
    """The code between the fences."""
    marker: str | None
    """The `<!-- marker -->` on the last non-blank line before it, if any."""
    file: str | None = None
    """The file name the marker gives (`<!-- run newsletter.py -->`), if any."""

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every Markdown page of the site, and the README (not the notes other
    branches leave in docs/notes-*.md, which mkdocs.yml excludes too)."""
    return sorted(p for p in DOCS.rglob("*.md") if not p.name.startswith("notes-")) + [ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of `page`, in order."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        out.append(
            Block(
                page=page.relative_to(ROOT),
                line=text.count("\n", 0, m.start()) + 1,
                lang=m.group("lang"),
                body=m.group("body"),
                marker=marker.group(1) if marker else None,
                file=marker.group(2) if marker else None,
            )
        )
    return out


def all_blocks() -> list[Block]:
    """Every fenced code block of the site and the README."""
    return [b for p in pages() for b in blocks(p)]
