"""The phase frontier drawn as a strip: each phase marked done, partial,
open, failed or degraded, and the frontier pointed at."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from phasegate import Frontier, PhaseView
from phasegate.ops import safe

from .._format import PHASE_MARKS, marked

LEGEND = "[x] done  [~] partial  [ ] open  [!] failed  [-] degraded"


def strip(phases: Sequence[PhaseView], frontier: Frontier, width: int = 0) -> Text:
    """The strip, the frontier line, and the marks' legend: beside the
    frontier when it fits in `width` columns, else on a line of its own
    (never wrapped mid-legend at 80 columns)."""
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
    used = len(tail.plain.rsplit("\n", 1)[-1])
    tail.append("   " if width and used + 3 + len(LEGEND) <= width else "\n")
    tail.append(LEGEND, style="dim")
    line.append_text(tail)
    return line


class PhaseStrip(Static):
    """One line of phases, then where the frontier is."""

    _shown: tuple[Sequence[PhaseView], Frontier] | None = None

    def text(self, phases: Sequence[PhaseView], frontier: Frontier) -> Text:
        """The strip for this widget's width (kept, to be drawn again on a resize)."""
        self._shown = (phases, frontier)
        self._width = self.content_size.width
        return strip(phases, frontier, self._width or self.app.size.width - 4)

    def show(self, phases: Sequence[PhaseView], frontier: Frontier) -> None:
        """Draw the strip of `phases` and the `frontier` for the widget's width."""
        self.update(self.text(phases, frontier))

    _width = 0

    def on_resize(self) -> None:
        # Only a new width can move the legend; a layout pass that changed
        # nothing else must not start another.
        width = self.content_size.width
        if self._shown is not None and width != self._width:
            self._width = width
            self.update(strip(*self._shown, width))
