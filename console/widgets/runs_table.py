"""The runs list: one page of runs at a time, paged as the cursor moves."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Self

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.message import Message
from textual.widgets import DataTable

from phasegate import ClaimView, RunStatus, RunSummary
from phasegate.ops import safe

from .._format import age, age_now, apart, plain, run_status, shared_ends
from ..progressbar import bar, pace
from ..waits import summary_reason, waits_for_answer

#: (key, label, width or None for "what is left", store order when sorted by it)
COLUMNS: tuple[tuple[str, str, int | None, str], ...] = (
    ("run_id", "run id", 18, "run_id"),
    ("workflow", "workflow", 12, "workflow"),
    ("status", "status", 14, "status"),
    ("frontier", "frontier", 14, "frontier"),
    ("age", "ckpt", 5, "-last_checkpoint_at"),
    ("reason", "needs attention because", None, "attention"),
)


def column_widths(total: int) -> dict[str, int]:
    """Fit the table to the terminal: fixed columns, the reason takes the
    rest. The run id, which the operator reads and types into `phasegate
    decide`, comes first: below 100 columns the workflow column goes (the
    run id usually names it) before the id is cut."""
    widths = {k: w for k, _l, w, _o in COLUMNS if w is not None}
    if total < 100:
        del widths["workflow"]
        widths.update(run_id=22, age=4)
    elif total < 110:
        widths.update(run_id=24, workflow=10)
    else:
        widths.update(run_id=min(32, 26 + (total - 110) // 4))
    padding = 2 * (len(widths) + 1)
    used = sum(widths.values()) + padding + 1  # the vertical scrollbar
    widths["reason"] = max(10, total - used)
    return widths


def frontier(r: RunSummary, width: int = 40) -> str:
    """`2/5 analyze +4`: phases done, the frontier phase, steps done in it.
    Cut to `width` in the phase name, so the numbers always show."""
    if r.frontier_index >= r.phase_count:
        return f"{r.phase_count}/{r.phase_count} done"
    head = f"{r.frontier_index}/{r.phase_count} "
    steps = f" +{r.steps_done}" if r.steps_done else ""
    phase = r.frontier_phase or "-"
    room = max(1, width - len(head) - len(steps))
    if len(phase) > room:
        phase = phase[: room - 1] + "…"
    return head + phase + steps


def shown_decided(r: RunSummary) -> bool:
    """A stopped run an operator has already answered: it waits for the
    worker (or a resume), not for a person, and says so."""
    return r.pending_decision and r.needs_attention


class RunsTable(DataTable[Text]):
    """A DataTable holding one page of runs. Moving past either end of the
    page asks for the next or previous one, so memory stays bounded however
    many runs the store holds."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="runs.down"),
        Binding("k", "cursor_up", "Up", show=False, id="runs.up"),
        # "Top" and "Bottom", as the detail and help say it.
        Binding("g", "first", "Top", show=False, id="runs.first"),
        Binding("G", "last", "Bottom", show=False, id="runs.last"),
    ]

    @dataclass
    class PageRequested(Message):
        """The cursor went past the edge of the page."""

        table: RunsTable
        """The table whose cursor went past its page."""
        where: str
        """"next", "previous", "first" or "last"."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.has_next = False
        """More runs after this page."""
        self.has_previous = False
        """More runs before this page."""
        self._shown_cells: dict[str, dict[str, Text]] = {}
        """What each row shows, by run id then column (to repaint only what changed)."""
        self.widths: dict[str, int] = column_widths(80)
        """The columns shown and their widths (set for the terminal's width)."""
        self.marked: set[str] = set()
        """Runs the operator marked (space): their run id shows `*`."""
        self._ends: dict[str, tuple[int, int]] = {}
        """Each shown id's characters shared with its neighbours (`shared_ends`)."""

    def set_columns(self, width: int) -> None:
        """Size the columns for a terminal `width` columns wide (every row is drawn again)."""
        self.widths = column_widths(width)
        self._shown_cells = {}
        self.clear(columns=True)
        for key, label, _w, _order in COLUMNS:
            if key in self.widths:
                self.add_column(label, width=self.widths[key], key=key)

    def show(
        self,
        rows: Sequence[RunSummary],
        now: float,
        claims: Mapping[str, ClaimView] | None = None,
        waiting: Mapping[str, str] | None = None,
    ) -> None:
        """Show `rows` in this order. The same runs in the same order (a live
        refresh) update only the cells whose text changed, so only they repaint.
        `claims`: who is looking at which of them; `waiting`: what waits for
        a second operator on which; both said first in the reason."""
        now = age_now(now)
        held, wait = claims or {}, waiting or {}
        # What tells each id from its neighbours on the page stays when it is cut.
        self._ends = shared_ends([safe(r.run_id) for r in rows])
        new = {r.run_id: self._cells(r, now, held.get(r.run_id), wait.get(r.run_id, "")) for r in rows}
        keys = [str(row.key.value) for row in self.ordered_rows]
        if keys == list(new) and len(new) == len(rows) and self._shown_cells.keys() == new.keys():
            changed: list[tuple[str, str]] = []
            # `update_cell` repaints the whole table (every row, ~4 KB at
            # 80x24); its own refresh is held back and only the cells that
            # changed are repainted (an age ticking is five cells a row).
            self._rows_only = True
            try:
                for run_id, cells in new.items():
                    old = self._shown_cells[run_id]
                    diff = [(k, c) for k, c in cells.items() if (c.plain, c.style) != (old[k].plain, old[k].style)]
                    for key, cell in diff:
                        self.update_cell(run_id, key, cell)
                        changed.append((run_id, key))
            finally:
                self._rows_only = False
            for run_id, key in changed:
                self.refresh_coordinate(Coordinate(self.get_row_index(run_id), self.get_column_index(key)))
            self._shown_cells = new
            return
        self.clear()
        self._shown_cells = {}
        for r in rows:
            if r.run_id in self._shown_cells:
                continue  # one row a run, whatever the page held
            cells = self._shown_cells[r.run_id] = new[r.run_id]
            self.add_row(*cells.values(), key=r.run_id)

    def _cells(self, r: RunSummary, now: float, claim: ClaimView | None = None, waiting: str = "") -> dict[str, Text]:
        id_width = self.widths.get("run_id", 22)
        shown = safe(r.run_id)
        ends = self._ends.get(shown, (0, 0))
        if r.run_id in self.marked:
            # A mark, not a colour: it reads the same under NO_COLOR.
            run_id = Text("* ", style="bold") + plain(apart(shown, id_width - 2, *ends), style="bold")
        else:
            # Escaped before it is cut, so the cut never splits an escape.
            run_id = plain(apart(shown, id_width, *ends))
        cells = {
            "run_id": run_id,
            "workflow": plain(r.workflow),
            "status": run_status("decided" if shown_decided(r) else r.status.value, asking=waits_for_answer(r)),
            "frontier": plain(frontier(r, self.widths.get("frontier", 14))),
            "age": Text(age(None if r.last_checkpoint_at is None else now - r.last_checkpoint_at)),
            "reason": plain(summary_reason(r, now) or "-"),
        }
        if r.progress is not None and r.status in (RunStatus.RUNNING, RunStatus.STALLED, RunStatus.INTERRUPTED):
            # The phase's bar in place of its frontier, and its pace before
            # the reason: what a running run's row has to say.
            cells["frontier"] = bar(r.progress, r.status, now, self.widths.get("frontier", 14))
            paced = pace(r.progress, r.status, now)
            if paced:
                reason = Text(f"{paced}; " if r.reason else paced, style="bold")
                cells["reason"] = reason + plain(summary_reason(r, now) or "")
        said = [waiting] if waiting else []
        if claim is not None:
            said.append(claim.said(now))
        if said:
            # Escaped already (`ClaimView.said`, and `waiting` by its caller): shown as plain text.
            cells["reason"] = Text("; ".join(said) + "; ", style="bold")
            cells["reason"].append_text(plain(summary_reason(r, now) or "-"))
        return {k: cells[k] for k, *_rest in COLUMNS if k in self.widths}

    _rows_only = False

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        """Textual's repaint, except the whole-table one `update_cell` asks for while only some rows changed:
        those rows are repainted instead."""
        if self._rows_only and not regions and not layout and not recompose:
            return self  # a whole-table repaint asked by `update_cell`: the changed rows are repainted instead
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def run_id_at(self, row: int) -> str | None:
        """The run id of row `row`, or None past the table's rows."""
        if 0 <= row < self.row_count:
            key = self.coordinate_to_cell_key(Coordinate(row, 0)).row_key
            return str(key.value)
        return None

    def index_of(self, run_id: str) -> int | None:
        """The row showing `run_id`, or None when it is not on the page."""
        try:
            return self.get_row_index(run_id)
        except Exception:  # noqa: BLE001 - RowDoesNotExist: the run left this page
            return None

    def _edge(self, where: str, inner: Callable[[], None], at_edge: bool, more: bool) -> None:
        if at_edge and more:
            self.post_message(self.PageRequested(self, where))
        else:
            inner()

    # Textual's own cursor keys also repaint the mouse's hover row, one more
    # row sent per key over a slow link: these move the cursor only.
    def _down(self) -> None:
        self.cursor_coordinate = self.cursor_coordinate.down()

    def _up(self) -> None:
        self.cursor_coordinate = self.cursor_coordinate.up()

    def action_cursor_down(self) -> None:
        """Down a row; past the page's last, the next page is asked for."""
        self._edge("next", self._down, self.cursor_row >= self.row_count - 1, self.has_next)

    def action_cursor_up(self) -> None:
        """Up a row; before the page's first, the previous page is asked for."""
        self._edge("previous", self._up, self.cursor_row <= 0, self.has_previous)

    def action_page_down(self) -> None:
        """Down a screenful; at the page's last row, the next page is asked for."""
        self._edge("next", super().action_page_down, self.cursor_row >= self.row_count - 1, self.has_next)

    def action_page_up(self) -> None:
        """Up a screenful; at the page's first row, the previous page is asked for."""
        self._edge("previous", super().action_page_up, self.cursor_row <= 0, self.has_previous)

    def action_first(self) -> None:
        """To the list's first run (its first page, if this is not it)."""
        if self.has_previous:
            self.post_message(self.PageRequested(self, "first"))
        else:
            self.move_cursor(row=0)

    def action_last(self) -> None:
        """To the list's last run (its last page, if this is not it)."""
        if self.has_next:
            self.post_message(self.PageRequested(self, "last"))
        else:
            self.move_cursor(row=max(self.row_count - 1, 0))

    def action_scroll_top(self) -> None:
        """Home: `action_first`."""
        self.action_first()

    def action_scroll_bottom(self) -> None:
        """End: `action_last`."""
        self.action_last()
