"""One run: its frontier, what it carries, and why it stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from phasegate import PhasegateError, RunView
from phasegate.ops import safe

from .. import panels, service
from .._format import age_now
from ..context import ConsoleContext
from ..widgets import InfoPanel, KeyBar, PhaseStrip
from ..widgets.repaint import Painter
from ._run_actions import RunActions

PANELS: tuple[tuple[str, str], ...] = (
    ("question", "question for a person"),
    ("messages", "messages"),
    ("integrity", "integrity failures"),
    ("environment", "environment"),
    ("code", "code changes"),
    ("effects", "effects"),
    ("error", "error and notes"),
    ("outputs", "carried outputs"),
    ("prune", "prune candidates"),
    ("decisions", "decision log"),
)


#: Which panel explains each reason a run is stopped: it is moved up, right
#: under the phase strip, so at 80x24 the operator sees the why first.
FIRST_PANEL: dict[str, str] = {
    "integrity": "integrity",
    "env_mismatch": "environment",
    "in_doubt_effect": "effects",
    "below_floor": "outputs",
    "failed": "error",
    "completed": "prune",
    "waiting": "question",
    "paused": "question",
}


class DetailScreen(RunActions):
    """The detail of one run; Esc goes back to the list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="detail.back"),
        Binding("j", "scroll('down')", "Down", show=False, id="detail.down"),
        Binding("k", "scroll('up')", "Up", show=False, id="detail.up"),
        Binding("g", "scroll('home')", "Top", show=False, id="detail.top"),
        Binding("G", "scroll('end')", "Bottom", show=False, id="detail.bottom"),
    ]

    @dataclass
    class Loaded(Message):
        """The run was read."""

        view: RunView | None
        """The run, or None when it could not be read."""
        allowed: list[str]
        """The actions that fit it (read with it)."""
        generation: int
        """Which read it answers; an older one arriving late is dropped."""
        error: str | None = None
        """Why it could not be read, or None."""

    def __init__(self, ctx: ConsoleContext, run_id: str) -> None:
        super().__init__(ctx)
        self.run_id = run_id
        """The run shown (fixed for the life of the screen)."""
        self._painter = Painter()

    def compose(self) -> ComposeResult:
        yield Static(Text("reading ") + Text(safe(self.run_id)), id="header")
        with VerticalScroll(id="detail"):
            yield Static(id="summary")
            yield PhaseStrip(id="strip")
            for key, title in PANELS:
                yield InfoPanel(title, id=f"panel-{key}")
        # No palette key (? Help names it): the footer keeps to 80 columns.
        yield KeyBar()

    LIVENESS_EVERY: ClassVar[float] = 2.0
    """Seconds between looks at the run's lease (see `RunsScreen.LIVENESS_EVERY`)."""

    def on_mount(self) -> None:
        self.query_one("#detail").focus()
        self.refresh_data()
        self._liveness_timer = self.set_interval(self.LIVENESS_EVERY, self._relive)

    _liveness_timer: Timer | None = None

    def on_screen_suspend(self) -> None:
        if self._liveness_timer is not None:
            self._liveness_timer.pause()

    def on_screen_resume(self) -> None:
        if self._liveness_timer is not None:
            self._liveness_timer.resume()

    def _relive(self) -> None:
        """The run's liveness judged again from the lease it was read with (a
        pid check, no store read); the holder's heartbeat age and the
        checkpoint's age tick. A status that moved is read again from the
        store: a holder's death also puts its effect in flight in doubt."""
        v = self.run_view
        if v is None:
            return
        fresh = v.at(self.ctx.clock())
        if fresh is not v:
            self.refresh_data()
            return
        self._paint_times(v)

    def _paint_times(self, v: RunView) -> None:
        now = self.ctx.clock()
        put = self._painter.put
        put(self.query_one("#header", Static), panels.header(v, age_now(now)))
        put(self.query_one("#summary", Static), panels.summary(v, age_now(now), exact=now))

    _generation = 0

    def refresh_data(self) -> None:
        """Read the run again (another process may have changed it); an older read answering late is dropped."""
        self._generation += 1
        self._read(self.run_id, self._generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail")
    def _read(self, run_id: str, generation: int) -> None:
        engine = self.ctx.engine
        try:
            view = engine.status(run_id)
            allowed = service.allowed(engine, view)
        except PhasegateError as exc:
            self.post_message(self.Loaded(None, [], generation, exc.message))
            return
        self.post_message(self.Loaded(view, allowed, generation))

    def on_detail_screen_loaded(self, message: Loaded) -> None:
        if message.generation != self._generation:
            return  # superseded by a newer read
        if message.view is None:
            self.query_one("#header", Static).update(Text(safe(message.error or "not found")))
            self.set_target(None, [])
            return
        v = message.view
        put = self._painter.put
        # Ages in 10-second steps, as the list's: a ticking age would resend the line every refresh.
        self._paint_times(v)
        strip = self.query_one(PhaseStrip)
        put(strip, strip.text(v.phases, v.frontier))
        for key, _title in PANELS:
            renderable, empty = getattr(panels, key)(v)
            panel = self.query_one(f"#panel-{key}", InfoPanel)
            panel.set_class(empty, "-empty")
            put(panel, renderable)
        self._order_panels(v)
        self.set_target(v, message.allowed)

    def _order_panels(self, v: RunView) -> None:
        reasons = [str(b.get("kind")) for b in v.blocked] or [v.status.value]
        first = [FIRST_PANEL[r] for r in reasons if r in FIRST_PANEL]
        order = list(dict.fromkeys(first + [key for key, _t in PANELS]))
        box = self.query_one("#detail", VerticalScroll)
        shown = [w.id for w in box.children if isinstance(w, InfoPanel)]
        if shown == [f"panel-{key}" for key in order]:
            return  # already in this order: moving them would lay the screen out again
        anchor: Widget = self.query_one(PhaseStrip)
        for key in order:
            panel = self.query_one(f"#panel-{key}", InfoPanel)
            box.move_child(panel, after=anchor)
            anchor = panel

    def action_back(self) -> None:
        """Back to the list."""
        self.app.pop_screen()

    def action_scroll(self, where: str) -> None:
        """Scroll "down", "up", "home" or "end", at once (keys typed ahead over SSH each move from where the last
        left)."""
        box = self.query_one("#detail", VerticalScroll)
        # immediate: keys typed ahead (over SSH they arrive together) each move
        # from where the last one left, not from the last painted position.
        {"down": box.scroll_down, "up": box.scroll_up, "home": box.scroll_home, "end": box.scroll_end}[where](
            animate=False, immediate=True
        )
