"""The phase frontier drawn as a strip: each phase marked done, partial,
open, failed or degraded, and the frontier pointed at."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from phasegate import Frontier, PhaseView, safe

from .._format import PHASE_MARKS, marked


def strip(phases: Sequence[PhaseView], frontier: Frontier) -> Text:
    line = Text()
    for i, p in enumerate(phases):
        if i:
            line.append(" > ")
        part = marked(PHASE_MARKS, p.state, p.name)
        if p.name == frontier.phase and frontier.index < frontier.of:
            part.stylize("reverse")
        line.append_text(part)
    done = frontier.index >= frontier.of
    tail = Text("\n")
    if done:
        tail.append(f"frontier: all {frontier.of} phases done")
    else:
        tail.append("frontier: ")
        tail.append(safe(frontier.phase), style="bold")
        tail.append(f" (phase {frontier.index + 1} of {frontier.of}, {frontier.steps_done} step(s) done in it)")
    tail.append("   [x] done  [~] partial  [ ] open  [!] failed  [-] degraded", style="dim")
    line.append_text(tail)
    return line


class PhaseStrip(Static):
    """One line of phases, then where the frontier is."""

    def show(self, phases: Sequence[PhaseView], frontier: Frontier) -> None:
        self.update(strip(phases, frontier))
