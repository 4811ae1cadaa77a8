"""The runs screen: every run, those that need a decision first."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Input, Rule, Static

from phasegate import PhasegateError, RunSummary, RunView
from phasegate.ops import safe

from .. import groups, service
from .._format import hashes
from ..context import ConsoleContext
from ..waits import summary_reason
from ..widgets import CountsBar, KeyBar, RunsTable
from ..widgets.runs_table import COLUMNS
from ._group_actions import GroupDecider
from ._run_actions import RunActions
from .detail import DetailScreen

SORTS: tuple[tuple[str, str], ...] = (("attention", "needs attention first"),) + tuple(
    (order, label) for _k, label, _w, order in COLUMNS[:-1]
)
"""The sort cycle: needs attention first (the default), then each column."""

#: What the list says, in the table and in its header, when a filter matches nothing.
NO_MATCH = "no runs match: f or Esc changes the filter"


class RunsScreen(RunActions):
    """Runs by attention; Enter opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="runs.open"),
        Binding("slash", "filter", "Filter", id="runs.filter"),
        Binding("f", "cycle_status", "Show", id="runs.status_filter"),
        Binding("s", "cycle_sort", "Sort", id="runs.sort"),
        Binding("S", "reverse_sort", "Reverse", show=False, id="runs.reverse_sort"),
        Binding("escape", "clear_filter", "Clear", show=False, id="runs.clear_filter"),
        Binding("o", "resort", "Re-sort", show=False, id="runs.resort"),
        Binding(
            "space", "mark", "Mark the run (a decision key then decides every marked run)", show=False, id="runs.mark"
        ),
        Binding("n", "new_stop", "Jump to a run that stopped since you looked", show=False, id="runs.new_stop"),
    ]

    AUTO_FOCUS = "#runs"

    PALETTE: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("runs: filter by text", "run id, workflow or reason (/)", "filter"),
        ("runs: cycle status filter", "all, needs attention, blocked, running, failed, completed (f)", "cycle_status"),
        ("runs: cycle sort column", "needs attention first, or by a column (s)", "cycle_sort"),
        ("runs: reverse sort", "(S)", "reverse_sort"),
        ("runs: re-sort now", "put rows that changed back in order (o)", "resort"),
        ("runs: mark or unmark the run", "a decision key then decides every marked run at once (space)", "mark"),
        ("runs: jump to a new stop", "a run that stopped since you last looked at it (n)", "new_stop"),
    )

    @dataclass
    class PageLoaded(Message):
        """A page was read (with the run under the cursor, on a refresh)."""

        page: service.ListedPage
        """The page, as one read of the store."""
        cursor: str
        """Where the cursor goes: "keep", "live" (keep, and hold the rows in place), "first" or "last"."""
        generation: int
        """Which request it answers; an older answer arriving late is dropped."""
        selection_generation: int = 0
        """Which read of the selection the page's selected run answers (as `SelectionLoaded`'s)."""

    @dataclass
    class WorkersCounted(Message):
        """The timed look at the workers' heartbeats came back."""

        alive: int
        """Workers alive now."""

    @dataclass
    class SelectionLoaded(Message):
        """The run under the cursor was read."""

        view: RunView | None
        """The run, or None when it could not be read."""
        allowed: list[str]
        """The actions that fit it (read with it)."""
        generation: int
        """Which read of the selection it answers; an older one arriving late is dropped."""

    def __init__(self, ctx: ConsoleContext, *, page_size: int = 200) -> None:
        super().__init__(ctx)
        self.page_size = page_size
        """Rows read per page."""
        self.page_offset = 0
        """Where the page shown starts in the list (kept as the screen pages by keyset)."""
        self.filter_index = 0
        """The status filter (an index into `service.STATUS_FILTERS`; f cycles it)."""
        self.text = ""
        """The text filter ("": none; / edits it)."""
        self.sort_index = 0
        """The sort (an index into `SORTS`; s cycles it)."""
        self.descending = False
        """The sort is reversed (S)."""
        self._width = 0
        self._selected: str | None = None
        self._generation = 0
        self._selection_generation = 0
        self._shown: list[str] = []
        """The run ids in the order the table shows them."""
        self.out_of_order = 0
        """Rows a live refresh left where they were (or added at the end)
        instead of moving them under the operator's cursor."""
        self.marked: dict[str, None] = {}
        """Runs marked with space, in the order marked: a decision key then
        applies to all of them (one group decision), not to the cursor's run."""
        self.groups = GroupDecider(self, ctx)
        """Builds and writes one decision for every marked run."""
        self.new_stops: dict[str, None] = {}
        """Runs that stopped (needs attention) while the console watched, until
        the operator's cursor lands on them: the header says how many."""
        self._attention: dict[str, bool] = {}
        """Whether each run seen needed attention when last shown."""

    def compose(self) -> ComposeResult:
        yield CountsBar(id="counts")
        yield Input(placeholder="filter: run id, workflow or reason (Enter keeps it, Esc clears)", id="filter")
        yield RunsTable(id="runs")
        # Under the table's header when a filter matches nothing: a line of
        # its own, not a row, so the cursor has no run to open or decide.
        yield Static(NO_MATCH, id="nomatch")
        # Apart from the why line, so a new why repaints only its own lines.
        yield Rule(id="rule")
        yield Static(id="why")
        # No palette key (? Help names it): the footer keeps to 80 columns.
        yield KeyBar()

    WORKERS_EVERY: ClassVar[float] = 5.0
    """Seconds between looks at the workers' heartbeats: a worker that dies
    commits nothing, so no change event would tell the header."""

    LIVENESS_EVERY: ClassVar[float] = 2.0
    """Seconds between looks at the leases of the runs shown: a process that
    dies or freezes writes nothing, so only the clock can tell."""

    def on_mount(self) -> None:
        self._layout(self.app.size.width)
        self.load()
        self._workers_timer = self.set_interval(self.WORKERS_EVERY, self._count_workers)
        self._liveness_timer = self.set_interval(self.LIVENESS_EVERY, self._relive)

    _workers_timer: Timer | None = None
    _liveness_timer: Timer | None = None

    def _relive(self) -> None:
        """Judge the shown rows' liveness again from the leases they were read
        with (a pid check each, no store read), and tick their ages. A status
        that moved (a holder died, froze or woke) is read again from the store:
        its counts, reason and keys change with it."""
        page = self._page
        if page is None:
            return
        now = self.ctx.clock()
        rows = tuple(r.at(now) for r in page.rows)
        moved = [r.run_id for r, old in zip(rows, page.rows, strict=True) if r.status is not old.status]
        if moved:
            page = self._page = replace(page, rows=rows)
        self._show(page, "live")
        if moved:
            self.refresh_data()

    def on_screen_suspend(self) -> None:
        # Covered by the detail: no looks (each one makes Textual resend the
        # screen on top); counted afresh when shown again. (RunActions'
        # handler of the resume, which re-reads a stale screen, runs too.)
        for timer in (self._workers_timer, self._liveness_timer):
            if timer is not None:
                timer.pause()

    def on_screen_resume(self) -> None:
        for timer in (self._workers_timer, self._liveness_timer):
            if timer is not None:
                timer.resume()

    @work(thread=True, exclusive=True, exit_on_error=False, group="workers")
    def _count_workers(self) -> None:
        try:
            alive = service.workers_alive(self.ctx.engine)
        except PhasegateError:
            return  # the page's own read says what is wrong with the store
        self.post_message(self.WorkersCounted(alive))

    def on_runs_screen_workers_counted(self, message: WorkersCounted) -> None:
        self.query_one(CountsBar).set_workers(message.alive)

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        if width and width != self._width:
            self._width = width
            table = self.query_one(RunsTable)
            table.set_columns(width)
            if self._page is not None:
                self._show(self._page, "live")

    _page: service.ListedPage | None = None

    # -- reading --------------------------------------------------------------

    @property
    def order(self) -> str:
        """The sort order as `Engine.runs` takes it ("-" prefix: descending)."""
        order = SORTS[self.sort_index][0]
        if self.descending:
            order = order[1:] if order.startswith("-") else "-" + order
        return order

    def load(self, cursor: str = "keep", where: service.Where = "reload", *, with_selected: bool = False) -> None:
        """Read a page: `where` says which, from the page shown (keyset paging:
        the next page starts after the last row read, not at an offset).
        `with_selected`: read the run under the cursor in the same snapshot
        (a refresh: one read of the store, whose keys agree with its row)."""
        self._generation += 1
        page = self._page
        anchor: tuple[Any, ...] | None = None
        offset = self.page_offset
        if where == "next" and page is not None:
            anchor, offset = page.last_key, page.offset + page.fetched
        elif where in ("previous", "reload") and page is not None:
            anchor = page.first_key
        if where == "reload" and self.page_offset == 0:
            where = "first"  # the top of the list: a new arrival there is read too
        selected = self._selected if with_selected else None
        if selected is not None:
            # The page's answer is the newest read of the selection: one
            # already under way for it is dropped when it arrives.
            self._selection_generation += 1
        request = _Request(where, anchor, offset, selected, self._selection_generation)
        self._read(request, self.filter_index, self.text, self.order, cursor, self._generation)

    def refresh_data(self) -> None:
        """Read the page again, with the run under the cursor: ONE read of
        the store (`Engine.runs_page`). "live": rows keep their places; only
        an operator's key re-sorts."""
        self.load("live", with_selected=True)

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs")
    def _read(self, request: _Request, filter_index: int, text: str, order: str, cursor: str, generation: int) -> None:
        try:
            page = service.read_page(
                self.ctx.engine,
                limit=self.page_size,
                filter_index=filter_index,
                text=text,
                order=order,
                where=request.where,
                anchor=request.anchor,
                offset=request.offset,
                selected=request.selected,
            )
        except PhasegateError as exc:
            self.failed(exc)
            return
        self.post_message(self.PageLoaded(page, cursor, generation, request.selection_generation))

    def on_runs_screen_page_loaded(self, message: PageLoaded) -> None:
        if message.generation != self._generation:
            return  # a read the operator has since moved past (threads cannot be cancelled mid-query)
        self._page = message.page
        self.page_offset = message.page.offset
        self._show(message.page, message.cursor)
        if message.page.selected is not None:
            self._take_selection(message.page.selected, message.page.allowed, message.selection_generation)

    def _arrange(self, rows: list[RunSummary], cursor: str) -> list[RunSummary]:
        """The rows in the order to show them. A live refresh keeps the rows
        already shown where they are (an operator's `g j j w` must reach the
        run they aimed at) and adds new ones at the end; anything else shows
        the store's order."""
        if cursor != "live" or not self._shown:
            self.out_of_order = 0
            return rows
        by_id = {r.run_id: r for r in rows}
        known = set(self._shown)
        arranged = [by_id[i] for i in self._shown if i in by_id] + [r for r in rows if r.run_id not in known]
        fresh = {r.run_id: i for i, r in enumerate(rows)}
        self.out_of_order = len(arranged) - _longest_rising([fresh[r.run_id] for r in arranged])
        return arranged

    def _note_stops(self, rows: list[RunSummary], live: bool) -> None:
        """Remember the runs that came to need attention since last shown (a
        run first seen in a live refresh counts, one first seen by paging not)."""
        for r in rows:
            before = self._attention.get(r.run_id)
            if r.needs_attention and (before is False or (before is None and live and self._attention)):
                self.new_stops[r.run_id] = None
            elif not r.needs_attention:
                self.new_stops.pop(r.run_id, None)
            self._attention[r.run_id] = r.needs_attention
        if self._selected is not None:
            self.new_stops.pop(self._selected, None)

    def _show_header(self) -> None:
        self.query_one(CountsBar).set_notice(self._notice())

    def action_new_stop(self) -> None:
        """Move the cursor to the newest run that stopped since the operator looked (or say where it is)."""
        if not self.new_stops:
            self.notify("no run stopped since you looked", title="new stop", markup=False, timeout=3)
            return
        table = self.query_one(RunsTable)
        rid = next(reversed(self.new_stops))
        row = table.index_of(rid)
        if row is None:
            del self.new_stops[rid]
            self.notify(
                safe(f"{rid} stopped; it is not on this page or filter (Esc, f or / finds it)"),
                title="new stop",
                markup=False,
                timeout=6,
            )
            self._show_header()
            return
        table.move_cursor(row=row, animate=False)

    def _show(self, page: service.ListedPage, cursor: str) -> None:
        table = self.query_one(RunsTable)
        keep_id = self._selected
        keep_row, scroll_y = table.cursor_row, table.scroll_y
        rows = self._arrange(list(page.rows), cursor)
        self._note_stops(rows, cursor == "live")
        self._shown = [r.run_id for r in rows]
        waiting = {rid: safe(service.waiting_words(ds)) for rid, ds in page.proposals.items()}
        table.show(rows, self.ctx.clock(), page.claims, waiting)
        table.has_previous = page.has_previous
        table.has_next = page.has_next
        if cursor == "first":
            row = 0
        elif cursor == "last":
            row = max(table.row_count - 1, 0)
        else:
            found = table.index_of(keep_id) if keep_id is not None else None
            row = found if found is not None else min(keep_row, max(table.row_count - 1, 0))
        if table.row_count:
            table.move_cursor(row=row, animate=False, scroll=False)
            if cursor in ("keep", "live"):
                table.scroll_to(y=scroll_y, animate=False, immediate=True)
            table.move_cursor(row=row, animate=False, scroll=True)
        else:
            self._select(None)
        label = service.STATUS_FILTERS[self.filter_index][0]
        sort_label = SORTS[self.sort_index][1] + (" (reversed)" if self.descending else "")
        first = page.offset + 1 if page.rows else 0
        shown = f"rows {first}-{page.offset + page.fetched} of {page.total}"
        no_match = not page.rows and bool(self.text or self.filter_index)
        if no_match:
            shown = NO_MATCH
        # The table shrinks to its header and the line below it says so.
        if table.has_class("-empty") != no_match:
            table.set_class(no_match, "-empty")
            self.query_one("#nomatch", Static).display = no_match
        if self.out_of_order:
            shown += f"  {self.out_of_order} out of order: o re-sorts"
        self.query_one(CountsBar).show(
            page.counts,
            filter_label=label,
            sort_label=sort_label,
            text=self.text,
            shown=shown,
            notice=self._notice(),
            workers=page.workers,
        )
        if not page.rows:
            self._why_shown = Text("no runs match" if (self.text or self.filter_index) else "no runs yet")
            self.query_one("#why", Static).update(self._why_shown, layout=False)
        elif self._selected is not None:
            self._show_why(self._selected)

    def _notice(self) -> str:
        said = []
        if self.new_stops:
            # Until the operator looks: a new stop may land off-screen.
            said.append(f"{len(self.new_stops)} new stop{'s' if len(self.new_stops) != 1 else ''}: n jumps")
        if self.ctx.read_only:
            said.append("READ-ONLY")
        elif self.marked:
            said.append(f"{len(self.marked)} marked")
        return "  ".join(said)

    # -- marking ----------------------------------------------------------------

    def action_mark(self) -> None:
        """Mark or unmark the run under the cursor: a decision key then decides every marked run."""
        if self.ctx.read_only:
            self.notify(
                "mark: read-only (this console was opened with --read-only); marks are for decisions",
                title="mark",
                severity="warning",
                markup=False,
                timeout=4,
            )
            return
        rid = self._selected
        if rid is None:
            return
        if rid in self.marked:
            del self.marked[rid]
        else:
            self.marked[rid] = None
        self._marks_changed()

    def _marks_changed(self) -> None:
        self.query_one(RunsTable).marked = set(self.marked)
        # A live show: only the id cells whose mark changed repaint.
        if self._page is not None:
            self._show(self._page, "live")
        self.refresh_bindings()

    def clear_marks(self) -> None:
        """Unmark every run."""
        if self.marked:
            self.marked = {}
            self._marks_changed()

    def _marked_to_decide(self) -> bool:
        """Whether any marked run may need a decision: one that needs attention,
        or one not on this page (its state is not known here; the modal says)."""
        shown = {r.run_id: r for r in self._page.rows} if self._page is not None else {}
        return any(rid not in shown or shown[rid].needs_attention for rid in self.marked)

    def action_fits(self, name: str) -> bool:
        """With marks, whether the decision `name` may go to the marked runs; else as for one run."""
        if self.marked:
            return not self.ctx.read_only and name in groups.GROUP_ACTIONS and self._marked_to_decide()
        return super().action_fits(name)

    def why_not(self, name: str) -> str:
        """One line: why the action `name` is not offered now (marks included)."""
        if self.marked and name not in groups.GROUP_ACTIONS:
            return f"{name} is for one run at a time; esc unmarks the {len(self.marked)} marked run(s)"
        if self.marked and not self._marked_to_decide():
            return f"none of the {len(self.marked)} marked run(s) needs a decision (completed or running); esc unmarks"
        return super().why_not(name)

    def action_decide(self, name: str) -> None:
        """Open the decision `name`'s modal: for the marked runs as a group, else for the run under the cursor."""
        if not self.marked:
            super().action_decide(name)
            return
        if not self.action_fits(name):
            return
        runs = tuple(self.marked)
        self.groups.start(name, runs, None, f"{len(runs)} marked run(s)")

    def on_group_decider_ready(self, message: GroupDecider.Ready) -> None:
        self.groups.open(message.request)

    def on_group_decider_done(self, message: GroupDecider.Done) -> None:
        self.clear_marks()

    @on(DataTable.RowHighlighted, "#runs")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._select(str(event.row_key.value) if event.row_key is not None else None)

    def _select(self, run_id: str | None) -> None:
        self._selected = run_id
        if run_id is None:
            self.set_target(None, [])
            return
        if self.new_stops.pop(run_id, False) is None:
            self._show_header()  # looked at: no longer new
        self._show_why(run_id)
        # On a move the footer keeps the keys it shows while the new run is
        # read; they act on nothing until it is (`acts_on`), and the footer
        # is redrawn only if that run's keys differ (not twice per j).
        self._read_selection(run_id)

    _why_shown: Text | None = None

    def _show_why(self, run_id: str) -> None:
        """The selected run's reason under the table (after a move, or when
        a refresh changed it), sent only when its text changed."""
        page = self._page
        summary = next((r for r in page.rows if r.run_id == run_id), None) if page else None
        if summary is None:
            return
        line = Text()
        line.append(safe(run_id), style="bold")
        line.append(": ")
        held = page.claims.get(run_id) if page else None
        waits = service.waiting_words(page.proposals.get(run_id, [])) if page else ""
        if waits:
            line.append(safe(waits) + "; ")
        if held is not None:
            line.append(held.said(self.ctx.clock()) + "; ")
        reason = summary_reason(summary, self.ctx.clock())
        line.append(hashes(safe(reason or f"{summary.status.value}; nothing to decide")))
        if line == self._why_shown:
            return
        self._why_shown = line
        # Fixed height: no layout pass (it would repaint the table's scrollbar on every j).
        self.query_one("#why", Static).update(line, layout=False)

    def acts_on(self, view: RunView) -> bool:
        """Whether `view` is the run under the cursor (not one the cursor has left while it was read)."""
        return view.run_id == self._selected

    def _read_selection(self, run_id: str) -> None:
        self._selection_generation += 1
        self._read_run(run_id, self._selection_generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="selection")
    def _read_run(self, run_id: str, generation: int) -> None:
        engine = self.ctx.engine
        try:
            view = engine.status(run_id)
            allowed = service.allowed(engine, view)
        except PhasegateError:
            view, allowed = None, []
        self.post_message(self.SelectionLoaded(view, allowed, generation))

    def on_runs_screen_selection_loaded(self, message: SelectionLoaded) -> None:
        self._take_selection(message.view, message.allowed, message.generation)

    def _take_selection(self, view: RunView | None, allowed: list[str], generation: int) -> None:
        """The keys act on `view` if it answers the newest read of the
        selection and the cursor is still on it."""
        if generation != self._selection_generation:
            return
        if view is not None and view.run_id == self._selected:
            self.set_target(view, allowed)

    # -- paging, filtering, sorting ---------------------------------------------

    @on(RunsTable.PageRequested)
    def _page_requested(self, event: RunsTable.PageRequested) -> None:
        where: service.Where
        if event.where == "next":
            where, cursor = "next", "first"
        elif event.where == "previous":
            where, cursor = "previous", "last"
        elif event.where == "first":
            self.page_offset = 0
            where, cursor = "first", "first"
        else:
            where, cursor = "last", "last"
        self.load(cursor, where)

    @on(DataTable.RowSelected, "#runs")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        """Open the detail of the run under the cursor."""
        if self._selected is not None:
            self.app.push_screen(DetailScreen(self.ctx, self._selected))

    def action_filter(self) -> None:
        """Show the text filter and focus it."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.text = event.value.strip()
        self.page_offset = 0
        self.load("first", "first")

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not self.text:
            event.input.display = False
        self.query_one(RunsTable).focus()

    def action_clear_filter(self) -> None:
        """Esc: clear the text filter, or, with none, the marks."""
        box = self.query_one("#filter", Input)
        if box.value or box.display:
            box.value = ""
            box.display = False
            self.query_one(RunsTable).focus()
        else:
            self.clear_marks()

    def action_resort(self) -> None:
        """Read the same page again in the store's order (a live refresh keeps rows where they were)."""
        self.load("keep")  # the same page, read again in the store's order

    def action_cycle_status(self) -> None:
        """The next status filter, from the first page."""
        self.filter_index = (self.filter_index + 1) % len(service.STATUS_FILTERS)
        self.page_offset = 0
        self.load("first", "first")

    def action_cycle_sort(self) -> None:
        """The next sort column, ascending, from the first page."""
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.descending = False
        self.page_offset = 0
        self.load("first", "first")

    def action_reverse_sort(self) -> None:
        """Reverse the sort, from the first page."""
        self.descending = not self.descending
        self.page_offset = 0
        self.load("first", "first")

    @on(DataTable.HeaderSelected, "#runs")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        order = next(o for k, _l, _w, o in COLUMNS if k == key)
        index = next(i for i, (o, _l) in enumerate(SORTS) if o == order)
        if index == self.sort_index:
            self.descending = not self.descending
        else:
            self.sort_index, self.descending = index, False
        self.page_offset = 0
        self.load("first", "first")


@dataclass(frozen=True)
class _Request:
    """Which page a read asks for (service.read_page's `where`, `anchor`, `offset`)."""

    where: service.Where
    anchor: tuple[Any, ...] | None
    offset: int
    selected: str | None = None
    """The run to read in full with the page (a refresh's), or None."""
    selection_generation: int = 0
    """The selection read the page's answer stands for."""


def _longest_rising(values: list[int]) -> int:
    """The length of the longest increasing subsequence: the rows already in
    their sorted order relative to each other (the rest are out of order)."""
    tails: list[int] = []
    for v in values:
        i = bisect_left(tails, v)
        if i == len(tails):
            tails.append(v)
        else:
            tails[i] = v
    return len(tails)
