"""The header of the runs screen: runs by status, then the workers alive,
filter and sort. Two lines that never wrap, at any width from 80 columns."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.widgets import Static

from phasegate.ops import safe

from .._format import RUN_MARKS, tone

ORDER = (
    "blocked",
    "interrupted",
    "stalled",
    "failed",
    "waiting",
    "paused",
    "running",
    "reset",
    "completed",
    "cancelled",
)

#: The words used when the full ones do not fit on one line (at 80 columns
#: with every status present); each still beside its mark.
SHORT: dict[str, str] = {
    "blocked": "blocked",
    "interrupted": "intr",
    "stalled": "stall",
    "failed": "failed",
    "running": "run",
    "reset": "reset",
    "completed": "done",
    "waiting": "wait",
    "paused": "paused",
    "cancelled": "cxl",
}


TINY: dict[str, str] = {
    "blocked": "blk",
    "interrupted": "int",
    "stalled": "stl",
    "failed": "fail",
    "waiting": "wait",
    "paused": "paus",
    "running": "run",
    "reset": "rst",
    "completed": "",
    "cancelled": "",
}
"""The last resort before cutting (every status present at 80 columns): the
finished states by their marks alone (`ok`, `--`, listed in help), the rest
in three or four letters."""


SHORT_SORT: dict[str, str] = {
    "needs attention first": "attention",
    "needs attention first (reversed)": "attention, reversed",
}
"""The default sort's label when the full one does not fit."""


@dataclass(frozen=True)
class Header:
    """What the header says; `CountsBar.show` draws it for the width it has."""

    counts: dict[str, int]
    """Runs by status, over the whole store."""
    filter_label: str
    """The status filter in force ("all", "needs attention", ...)."""
    sort_label: str
    """The sort in force, in words."""
    text: str
    """The text filter ("": none)."""
    shown: str
    """Which rows the page shows ("rows 1-200 of 950"), or why none."""
    notice: str = ""
    """Said in reverse video, never dim (read-only must not be missed)."""
    workers: int | None = None
    """Workers alive (by their heartbeats); None until first read."""


def workers_label(n: int | None) -> Text:
    if n is None:
        return Text("")
    if n == 0:
        # Said plainly: a decision made now waits for a worker or for `e`.
        return Text("no worker alive", style="bold")
    return Text(f"{n} worker{'s' if n != 1 else ''} alive")


def counts_line(counts: dict[str, int], width: int, after: Text | None = None) -> Text:
    """Runs by status, then `after`: full words if all of it fits in
    `width`, else the short ones; cut with an ellipsis only past that."""
    for words in (None, SHORT, TINY):
        line = Text(f"{sum(counts.values())} runs", style="bold")
        for status in ORDER:
            n = counts.get(status, 0)
            if not n:
                continue
            mark, style = RUN_MARKS[status]
            line.append(" ")
            word = words[status] if words else status
            line.append(f"{mark} {n} {word}".rstrip(), style=tone(style))
        if after is not None and after.plain:
            line.append("  ")
            line.append_text(after)
        if line.cell_len <= width:
            break
    return line


class CountsBar(Static):
    """Counts by status, each with its word and mark (never colour alone)."""

    _last: Text | None = None
    header: Header | None = None
    """What the header says now (None until the first page is shown)."""

    def show(
        self,
        counts: dict[str, int],
        *,
        filter_label: str,
        sort_label: str,
        text: str,
        shown: str,
        notice: str = "",
        workers: int | None = None,
    ) -> None:
        """`workers` None keeps the count last shown."""
        if workers is None and self.header is not None:
            workers = self.header.workers
        self.header = Header(counts, filter_label, sort_label, text, shown, notice, workers)
        self._draw()

    def set_workers(self, workers: int) -> None:
        """Say how many workers are alive now (a timed look between page reads); redrawn only if it changed."""
        if self.header is not None and self.header.workers != workers:
            self.header = replace(self.header, workers=workers)
            self._draw()

    def set_notice(self, notice: str) -> None:
        """Say `notice` (reverse video) without waiting for the next read."""
        if self.header is not None and self.header.notice != notice:
            self.header = replace(self.header, notice=notice)
            self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        h = self.header
        if h is None:
            return
        width = self.content_size.width or self.app.size.width - 2
        # Tried in turn until both lines fit: then the sort said shortly,
        # then the workers moved up beside the counts; past that, cut.
        for workers_first, short_sort in ((False, False), (False, True), (True, True)):
            first, second = self._lines(h, width, workers_first=workers_first, short_sort=short_sort)
            if first.cell_len <= width and second.cell_len <= width:
                break
        first.truncate(width, overflow="ellipsis")
        second.truncate(width, overflow="ellipsis")
        drawn = Text("\n").join([first, second])
        if drawn == self._last:
            return  # a refresh that changed nothing here sends nothing
        self._last = drawn
        # Its height is fixed (two lines): no layout pass, so nothing else repaints.
        self.update(drawn, layout=False)

    @staticmethod
    def _lines(h: Header, width: int, *, workers_first: bool, short_sort: bool) -> tuple[Text, Text]:
        workers = workers_label(h.workers)
        first = counts_line(h.counts, width, workers if workers_first else None)
        second = Text()
        if h.notice:
            second.append(f" {h.notice} ", style="bold reverse")
            second.append("  ")
        if not workers_first and workers.plain:
            second.append_text(workers)
            second.append("  ")
        sort = SHORT_SORT.get(h.sort_label, h.sort_label) if short_sort else h.sort_label
        second.append(f"show: {h.filter_label}  sort: {sort}  ")
        if h.text:
            second.append("filter: ")
            second.append(safe(h.text), style="bold")  # literal: appended as text, never parsed
            second.append("  ")
        second.append(h.shown, style="dim")
        return first, second
