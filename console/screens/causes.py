"""The causes: the runs that need attention, grouped by why they stopped
(`phasegate status --by-cause`), with their counts. Enter shows a cause's
runs; a decision key decides every run of the highlighted cause at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from phasegate import Cause, PhasegateError
from phasegate.ops import safe

from .. import groups
from .._format import plain
from ..actions import BY_KEY, BY_NAME
from ..context import ConsoleContext
from ..widgets import KeyBar
from ..widgets.refill import refill, selected_key
from ._answering import Answerer
from ._group_actions import GroupDecider
from ._run_actions import RunActions
from .detail import DetailScreen

#: The decision keys a cause takes: the run actions' keys, prune aside.
GROUP_SPECS = tuple(BY_NAME[n] for n in groups.GROUP_ACTIONS)


class CauseActions(Screen[None]):
    """A screen with a current cause that the decision keys act on."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Help first, so the footer shows it whatever else is offered at 80 columns.
        Binding("question_mark", "app.help", "Help", id="app.help"),
        Binding("escape", "back", "Back", id="causes.back"),
        # A question cause: one answer for all its runs, from the answer form.
        Binding("i", "answer_cause", "Answer", id="causes.answer"),
        *(Binding(s.key, f"group('{s.name}')", s.word, id=f"causes.{s.name}") for s in GROUP_SPECS),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        """The engine, read-only and the clock."""
        self.cause: Cause | None = None
        """The cause the decision keys act on, as last read."""
        self.groups = GroupDecider(self, ctx)
        """Builds and writes one decision for every run of the cause."""
        self.answerer = Answerer(self, ctx, failed=RunActions.ActionFailed, decided=RunActions.Decided)
        """Opens the answer form for a question cause, and writes one answer for all its runs."""

    def answer_fits(self) -> bool:
        """Whether `i` may answer the cause now: a question every run of it waits on, and not read-only."""
        cause = self.cause
        return not self.ctx.read_only and cause is not None and "answer" in cause.allowed_actions

    def action_answer_cause(self) -> None:
        """Open the answer form for the cause's question (one answer, every run)."""
        cause = self.cause
        if cause is not None and self.answer_fits():
            self.answerer.start(cause=(cause.cause, cause.runs))

    def on_answerer_ready(self, message: Answerer.Ready) -> None:
        self.answerer.open(message.request)

    def group_fits(self, name: str) -> bool:
        """Whether the decision `name` fits every run of the cause now (and the console may write)."""
        cause = self.cause
        return not self.ctx.read_only and cause is not None and name in cause.allowed_actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False hides the binding; its key then reaches `on_key`, which says why.
        """Textual's guard: a decision key that does not fit the cause is hidden (and `on_key` says why)."""
        if action == "group":
            return bool(parameters) and self.group_fits(str(parameters[0]))
        if action == "answer_cause":
            return self.answer_fits()
        return True

    def action_group(self, name: str) -> None:
        """Open the group modal of the decision `name` for every run of the cause."""
        cause = self.cause
        if cause is None or not self.group_fits(name):
            return
        what = f"{len(cause.runs)} run(s) of cause {cause.cause} ({cause.summary})"
        self.groups.start(name, cause.runs, cause.cause, what)

    def on_key(self, event: events.Key) -> None:
        """A decision key that does not fit says why, in one line."""
        if event.key == "i" and not self.answer_fits():
            event.stop()
            why = "read-only" if self.ctx.read_only else "this cause is not a question its runs wait on"
            self.notify(f"answer: {why}", title="answer", severity="warning", markup=False, timeout=4)
            return
        spec = BY_KEY.get(event.key)
        if spec is None or spec.name not in groups.GROUP_ACTIONS or self.group_fits(spec.name):
            return
        event.stop()
        if self.ctx.read_only:
            why = f"{spec.label}: read-only (this console was opened with --read-only)"
        elif self.cause is None:
            why = f"{spec.label}: no cause selected"
        else:
            fits = ", ".join(a.value for a in self.cause.allowed_actions) or "nothing"
            why = f"{spec.label} does not fit every run of this cause (what fits all of them: {fits})"
        self.notify(why, title=spec.label, severity="warning", markup=False, timeout=4)

    def on_group_decider_ready(self, message: GroupDecider.Ready) -> None:
        self.groups.open(message.request)

    def action_back(self) -> None:
        """Back to the screen underneath."""
        self.app.pop_screen()


class CausesScreen(CauseActions):
    """Every cause, the largest first; Enter shows its runs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Runs", id="causes.open"),
        Binding("j", "cursor('down')", "Down", show=False, id="causes.down"),
        Binding("k", "cursor('up')", "Up", show=False, id="causes.up"),
    ]

    AUTO_FOCUS = "#causes"

    @dataclass
    class Loaded(Message):
        """The causes were read."""

        causes: list[Cause]
        """Every cause, the largest first."""
        generation: int
        """Which read it answers; an older one arriving late is dropped."""
        proposed: dict[str, tuple[str, ...]] = field(default_factory=dict)
        """What AI assistants proposed on each cause's runs, a line each, by cause id."""

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(ctx)
        self._causes: list[Cause] = []
        self._proposed: dict[str, tuple[str, ...]] = {}
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Static(Text("causes: the runs that need attention, grouped by why they stopped"), id="header")
        table: DataTable[Text] = DataTable(id="causes", cursor_type="row", zebra_stripes=False)
        yield table
        yield Static(id="why")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#causes", DataTable)
        width = self.app.size.width
        table.add_column("runs", width=5, key="runs")
        table.add_column("kind", width=15, key="kind")
        table.add_column("why they stopped", width=max(10, width - 5 - 15 - 8 - 1), key="summary")
        self.load()

    def refresh_data(self) -> None:
        """Read the causes again (another process may have changed them)."""
        self.load()

    def load(self) -> None:
        """Read the causes, off the UI thread; an older read answering late is dropped."""
        self._generation += 1
        self._read(self._generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="causes")
    def _read(self, generation: int) -> None:
        try:
            causes = groups.read_causes(self.ctx.engine)
            proposed = groups.assistant_proposals(self.ctx.engine, causes)
        except PhasegateError as exc:
            self.app.post_message(RunActions.ActionFailed(exc.title, exc.message))
            return
        self.post_message(self.Loaded(causes, generation, proposed))

    def on_causes_screen_loaded(self, message: Loaded) -> None:
        if message.generation != self._generation:
            return
        table = self.query_one("#causes", DataTable)
        self._causes = message.causes
        self._proposed = message.proposed
        refill(
            table,
            [
                (c.cause, (Text(str(len(c.runs)), justify="right"), plain(c.kind.value), self._summary(c)))
                for c in message.causes
            ],
        )
        self._select(selected_key(table))
        total = sum(len(c.runs) for c in message.causes)
        head = f"causes: {len(message.causes)}, {total} run(s) need attention"
        if self.ctx.read_only:
            head += "   READ-ONLY: no actions"
        self.query_one("#header", Static).update(Text(head))

    def _summary(self, c: Cause) -> Text:
        """A cause's summary cell, marked when an AI assistant proposed something on its runs."""
        if c.cause in self._proposed:
            return plain(f"[AI proposal] {c.summary}")
        return plain(c.summary)

    @on(DataTable.RowHighlighted, "#causes")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._select(str(event.row_key.value) if event.row_key is not None else None)

    def _select(self, cause_id: str | None) -> None:
        cause = next((c for c in self._causes if c.cause == cause_id), None)
        before = self.cause
        self.cause = cause
        why = self.query_one("#why", Static)
        if cause is None:
            why.update(Text("no runs need attention" if not self._causes else ""))
        else:
            text = Text()
            text.append(cause.cause, style="bold")
            text.append("  " + safe(cause.summary))
            shown = ", ".join(safe(r) for r in cause.runs[:6]) + (" ..." if len(cause.runs) > 6 else "")
            text.append(f"\nruns: {shown}")
            fits = ", ".join(a.value for a in cause.allowed_actions) or "nothing fits every run"
            text.append(f"\nfits all of them: {fits}")
            for line in self._proposed.get(cause.cause, ()):
                # A word, not a colour: an AI assistant's proposal waits for a person's second.
                text.append("\nproposed by an AI assistant, waiting for a person's second: ", style="bold")
                text.append(safe(line))
            why.update(text)
        if before is None or cause is None or before.allowed_actions != cause.allowed_actions:
            self.refresh_bindings()

    @on(DataTable.RowSelected, "#causes")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        """Show the runs of the cause under the cursor."""
        if self.cause is not None:
            self.app.push_screen(CauseRunsScreen(self.ctx, self.cause))

    def action_cursor(self, where: str) -> None:
        """Move the cursor "down" or "up" (j and k)."""
        table = self.query_one("#causes", DataTable)
        table.action_cursor_down() if where == "down" else table.action_cursor_up()


class CauseRunsScreen(CauseActions):
    """The runs of one cause; Enter opens one, a decision key decides them all."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="cause_runs.open"),
        Binding("j", "cursor('down')", "Down", show=False, id="cause_runs.down"),
        Binding("k", "cursor('up')", "Up", show=False, id="cause_runs.up"),
    ]

    AUTO_FOCUS = "#cause-runs"

    @dataclass
    class Loaded(Message):
        """The cause was read again."""

        cause: Cause | None
        """The cause now, or None when no run needs attention for it."""

    def __init__(self, ctx: ConsoleContext, cause: Cause) -> None:
        super().__init__(ctx)
        self.cause = cause
        """The cause as last read (None: no run needs attention for it now)."""
        self.cause_id = cause.cause
        """The cause shown (fixed for the life of the screen)."""

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        table: DataTable[Text] = DataTable(id="cause-runs", cursor_type="row", zebra_stripes=False)
        yield table
        yield Static(id="why")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#cause-runs", DataTable).add_column("run id", key="run_id")
        self._show(self.cause)

    def _show(self, cause: Cause | None) -> None:
        table = self.query_one("#cause-runs", DataTable)
        header = self.query_one("#header", Static)
        # The run under the cursor stays under it across refreshes (a worker's
        # heartbeat refreshes the screen): Enter opens the run aimed at.
        refill(table, [(rid, (plain(rid),)) for rid in (cause.runs if cause is not None else ())])
        if cause is None:
            header.update(Text(f"cause {self.cause_id}: no run needs attention for it now (decided?)"))
            self.query_one("#why", Static).update(Text(""))
            return
        header.update(Text(f"cause {cause.cause}: {len(cause.runs)} run(s) ({cause.kind.value})"))
        fits = ", ".join(a.value for a in cause.allowed_actions) or "nothing fits every run"
        why = Text(safe(cause.summary), style="bold")
        why.append(f"\nfits all of them: {fits}\na decision key decides every run of this cause; Enter opens one")
        self.query_one("#why", Static).update(why)

    def refresh_data(self) -> None:
        """Read the cause again (its runs change as they are decided)."""
        self._read()

    @work(thread=True, exclusive=True, exit_on_error=False, group="cause-runs")
    def _read(self) -> None:
        try:
            cause = next((c for c in groups.read_causes(self.ctx.engine) if c.cause == self.cause_id), None)
        except PhasegateError as exc:
            self.app.post_message(RunActions.ActionFailed(exc.title, exc.message))
            return
        self.post_message(self.Loaded(cause))

    def on_cause_runs_screen_loaded(self, message: Loaded) -> None:
        self.cause = message.cause
        self._show(message.cause)
        self.refresh_bindings()

    def action_open(self) -> None:
        """Open the detail of the run under the cursor."""
        table = self.query_one("#cause-runs", DataTable)
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
            self.app.push_screen(DetailScreen(self.ctx, str(key.value)))

    @on(DataTable.RowSelected, "#cause-runs")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_cursor(self, where: str) -> None:
        """Move the cursor "down" or "up" (j and k)."""
        table = self.query_one("#cause-runs", DataTable)
        table.action_cursor_down() if where == "down" else table.action_cursor_up()
