"""The phase frontier drawn as a strip: each phase marked done, partial,
open, failed or degraded, and the frontier pointed at."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from .._format import PHASE_MARKS, marked


def strip(phases: list[dict[str, Any]], frontier: dict[str, Any]) -> Text:
    line = Text()
    for i, p in enumerate(phases):
        if i:
            line.append(" > ")
        part = marked(PHASE_MARKS, p["state"], p["name"])
        if p["name"] == frontier.get("phase") and frontier.get("index", 0) < frontier.get("of", 0):
            part.stylize("reverse")
        line.append_text(part)
    done = frontier.get("index", 0) >= frontier.get("of", 0)
    tail = Text("\n")
    if done:
        tail.append(f"frontier: all {frontier.get('of', 0)} phases done")
    else:
        tail.append("frontier: ")
        tail.append(str(frontier.get("phase")), style="bold")
        tail.append(
            f" (phase {frontier.get('index', 0) + 1} of {frontier.get('of', 0)}, "
            f"{frontier.get('steps_done', 0)} step(s) done in it)"
        )
    tail.append("   [x] done  [~] partial  [ ] open  [!] failed  [-] degraded", style="dim")
    line.append_text(tail)
    return line


class PhaseStrip(Static):
    """One line of phases, then where the frontier is."""

    def show(self, phases: list[dict[str, Any]], frontier: dict[str, Any]) -> None:
        self.update(strip(phases, frontier))
