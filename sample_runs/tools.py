"""Simulated tools for the research agent: a flaky web search, a slow page
fetch, and a costly summariser (standing in for a model call).

Everything is generated deterministically from the query, so a demo run reads
the same every time; the flakiness is deterministic too (some queries time out
on their first try).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

TOOLS_VERSION = "toolbox-2026.11"
"""The tool registry version written to `tools.json`, probed by the research workflow."""

_WORDS = (
    "capacity cost efficiency grid lithium storage demand policy supply chain recycling cycle "
    "degradation safety thermal market forecast subsidy deployment europe china pilot study"
).split()


class ToolTimeout(Exception):
    """The tool did not answer in time: worth one more try."""


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


class Toolbox:
    """The tools one agent run may call, as described by `tools.json` in its folder."""

    def __init__(self, workdir: str | Path, *, pace: float = 1.0) -> None:
        self.workdir = Path(workdir)
        self.pace = pace
        self.registry: dict[str, Any] = json.loads((self.workdir / "tools.json").read_text())
        self._tries: dict[str, int] = {}

    def _sleep(self, seconds: float) -> None:
        if seconds * self.pace > 0:
            time.sleep(seconds * self.pace)

    def search(self, query: str) -> list[dict[str, str]]:
        """Top results for a query. Flaky: about half the queries time out once."""
        n = self._tries.get(query, 0) + 1
        self._tries[query] = n
        self._sleep(0.02)
        if n == 1 and _h(query) % 2 == 0:
            raise ToolTimeout(f"search timed out for {query!r}")
        index = self.registry.get("search_index", "web")
        out = []
        for i in range(3):
            seed = _h(f"{query}:{i}")
            slug = "-".join(_WORDS[(seed >> (8 * k)) % len(_WORDS)] for k in range(3))
            out.append({"url": f"https://{index}.example/{slug}", "title": slug.replace("-", " ").title()})
        return out

    def fetch(self, url: str) -> dict[str, str]:
        """A page's text. Slow: it waits on the network."""
        self._sleep(0.05)
        seed = _h(url)
        words = [_WORDS[(seed >> (5 * k)) % len(_WORDS)] for k in range(24)]
        return {"url": url, "text": " ".join(words).capitalize() + "."}

    def summarize(self, question: str, texts: list[str]) -> dict[str, Any]:
        """A finding for one question from the pages read for it. Costly (a model call)."""
        self._sleep(0.05)
        seed = _h(question + "".join(texts))
        confidence = ("low", "medium", "high")[seed % 3]
        key = sorted({w for t in texts for w in t.lower().strip(".").split()})[:4]
        return {
            "question": question,
            "finding": f"The sources point to {', '.join(key)}.",
            "confidence": confidence,
            "sources": len(texts),
        }
