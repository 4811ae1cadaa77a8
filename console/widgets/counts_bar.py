"""The header line of the runs screen: runs by status, filter and sort."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from phasegate import safe

from .._format import RUN_MARKS, tone

ORDER = ("blocked", "interrupted", "stalled", "failed", "running", "reset", "completed")


class CountsBar(Static):
    """Counts by status, each with its word and mark (never colour alone)."""

    _last: Text | None = None

    def show(
        self, counts: dict[str, int], *, filter_label: str, sort_label: str, text: str, shown: str, notice: str = ""
    ) -> None:
        """`notice`: said in reverse video, never dim (read-only must not be missed)."""
        total = sum(counts.values())
        line = Text(f"{total} runs ", style="bold")
        for status in ORDER:
            n = counts.get(status, 0)
            if not n:
                continue
            mark, style = RUN_MARKS[status]
            line.append(" ")
            line.append(f"{mark} {n} {status}", style=tone(style))
        second = Text(f"show: {filter_label}  sort: {sort_label}  ")
        if text:
            second.append("filter: ")
            second.append(safe(text), style="bold")  # literal: appended as text, never parsed
            second.append("  ")
        second.append(shown, style="dim")
        if notice:
            second.append("  ")
            second.append(f" {notice} ", style="bold reverse")
        shown = Text("\n").join([line, second])
        if shown == self._last:
            return  # a refresh that changed nothing here sends nothing
        self._last = shown
        self.update(shown)
