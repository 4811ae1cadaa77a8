"""The operations console: a Textual app over the engine's public API."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.timer import Timer

from phasegate import Engine, ExitCode, RunView
from phasegate.ops import safe

from . import live, service
from ._format import set_monochrome
from .actions import ACTIONS
from .deciding import WORKER_WILL
from .palette import ConsoleCommands
from .screens._run_actions import RunActions
from .screens.causes import CausesScreen
from .screens.detail import DetailScreen
from .screens.help import HelpScreen
from .screens.runs import RunsScreen


class ConsoleApp(App[int]):
    """Triage paused and failed runs, live. It is the screens' context
    (`ConsoleContext`: engine, read-only, clock), handed to each screen."""

    CSS_PATH: ClassVar[str] = "console.tcss"
    TITLE = "phasegate console"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = {ConsoleCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        # Listed in help and the palette; the footer keeps to 80 columns.
        Binding("C", "causes", "Causes (runs grouped by why they stopped)", show=False, id="app.causes"),
        # Declaring a palette binding stops Textual adding its ctrl+p one: both are declared.
        Binding("ctrl+p", "command_palette", "Commands", show=False, priority=True, id="app.palette"),
        Binding("colon", "command_palette", "Commands", show=False, id="app.palette_colon"),
    ]

    @dataclass
    class DataChanged(Message):
        """Another connection committed to the store (or this console decided)."""

        source: str
        """"files", "poll" or "decision": what noticed it."""

    def __init__(
        self,
        engine: Engine,
        *,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        live_events: bool = True,
        poll_interval: float = 2.0,
        page_size: int = 200,
        start: service.StartAt | None = None,
    ) -> None:
        # NO_COLOR means no colour codes at all: with ANSI colours Textual
        # strips them (NoColor) instead of sending 256-colour greys
        # (Monochrome); the cursor is then reverse video (console.tcss).
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") is not None else None)
        self.start = start or service.StartAt()
        """Where the console opens (a deep link: one run, or the list filtered)."""
        self.engine = engine
        """The store, reached only through the engine's public API."""
        self.read_only = read_only
        """True when the console offers no action at all (`--read-only`): it only shows."""
        self.clock = clock
        """Injectable so "time since the last checkpoint" is stable in snapshots."""
        self.live_events = live_events
        """Watch the store's files for commits (False: poll only, every `poll_interval`)."""
        self.poll_interval = poll_interval
        """Seconds between looks for a commit by another process (0: no live refresh)."""
        self.page_size = page_size
        """Rows the runs list reads per page."""
        self._stop_live = threading.Event()
        self._awaiting = {}
        # No animation by default: over SSH it costs bandwidth and reads badly.
        self.animation_level = "none"
        """"none": no animation by default (over SSH it costs bandwidth and reads badly)."""
        if read_only:
            self.sub_title = "read-only"
            """"read-only" in the header when the console only shows."""
        set_monochrome(self.no_color)

    def on_mount(self) -> None:
        # A 16-colour terminal gets the ANSI theme, so its own palette is used
        # instead of approximated true colours; PHASEGATE_CONSOLE_THEME overrides.
        theme = os.environ.get("PHASEGATE_CONSOLE_THEME")
        if theme is None and not self.is_headless and self.console.color_system in ("standard", "windows"):
            theme = "ansi-dark"
        if theme in self.available_themes:
            self.theme = theme

        runs = RunsScreen(self, page_size=self.page_size)
        runs.filter_index, runs.text = self.start.filter_index, self.start.text
        self.push_screen(runs)
        if self.start.run_id is not None:
            self.push_screen(DetailScreen(self, self.start.run_id))
        if self.poll_interval > 0:
            self._watch_store()

    def on_unmount(self) -> None:
        self._stop_live.set()

    # -- live -----------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="live")
    def _watch_store(self) -> None:
        live.watch_store(
            self.engine.db_file,
            self.engine.data_version,
            lambda source: self.post_message(self.DataChanged(source)),
            self._stop_live,
            poll=self.poll_interval,
            use_events=self.live_events,
        )

    REFRESH_EVERY: ClassVar[float] = 1.0
    """At most one refresh a second while a busy store commits continuously:
    the first change shows at once, later ones are folded into one."""
    _last_refresh = float("-inf")
    _refresh_timer: Timer | None = None

    def on_console_app_data_changed(self, message: DataChanged) -> None:
        wait = self._last_refresh + self.REFRESH_EVERY - time.monotonic()
        if message.source == "decision" or wait <= 0:
            # The operator's own decision shows at once, whatever is scheduled.
            if self._refresh_timer is not None:
                self._refresh_timer.stop()
            self._refresh_screens()
        elif self._refresh_timer is None:
            # One scheduled refresh reads the newest state for every change until then.
            self._refresh_timer = self.set_timer(wait, self._refresh_screens)

    def _refresh_screens(self) -> None:
        self._refresh_timer = None
        self._last_refresh = time.monotonic()
        # The screens that can be seen refresh in place: the top one, and
        # under a modal (which stays open) the screen it covers. A screen
        # hidden under another is only marked stale and re-reads when it is
        # shown again: repainting it would make Textual resend the whole
        # screen on top (a live run's detail over the list: 21 KB/s).
        seen = True
        for screen in reversed(self.screen_stack):
            if isinstance(screen, RunActions) and not seen:
                screen.stale = True
            else:
                refresh = getattr(screen, "refresh_data", None)
                if refresh is not None:
                    refresh()
            if not isinstance(screen, ModalScreen):
                seen = False

    # -- what the screens report --------------------------------------------------

    def on_run_actions_decided(self, message: RunActions.Decided) -> None:
        text = safe(message.text)
        self.notify(text, title=message.title, markup=False)
        if message.run_id and WORKER_WILL in message.text:
            self._awaiting[message.run_id] = text
        self.post_message(self.DataChanged("decision"))

    _awaiting: dict[str, str]

    def seen(self, view: RunView) -> None:
        """A screen read this run: a notice that a worker would carry out a decision on it is withdrawn once it
        has, and the operator is told."""
        said = self._awaiting.get(view.run_id)
        if said is None or view.pending_decisions:
            return
        # Carried out: "a worker ... carries it out" is no longer true, so it goes.
        del self._awaiting[view.run_id]
        for note in list(self._notifications):
            if note.message == said:
                self._unnotify(note)
        self.notify(
            f"{safe(view.run_id)}: the decision was carried out; the run is {view.status.value} now",
            title="carried out",
            markup=False,
            timeout=6,
        )

    def on_run_actions_resumed(self, message: RunActions.Resumed) -> None:
        self.notify(
            f"phasegate resume {safe(message.run_id)} started (pid {message.pid}); a notice says how it ends;"
            f" its log: {safe(message.log)}",
            title="resuming",
            markup=False,
            timeout=10,
        )

    def on_run_actions_resume_ended(self, message: RunActions.ResumeEnded) -> None:
        # How it ended, in its own words: "my fix did not work" must never be
        # concluded from a notice that only said it started.
        end = message.ended
        meaning: dict[int, str] = {
            ExitCode.OK: "completed",
            ExitCode.FAILED: "the run failed",
            ExitCode.USAGE: "refused",
            ExitCode.BLOCKED: "the run is blocked for an operator",
            ExitCode.HELD: "held by another process, or it lost its lease",
            ExitCode.WAITING: "the run waits (an answer, a time) or is paused",
            ExitCode.CANCELLED: "the run is cancelled",
            ExitCode.INTERRUPTED: "interrupted",
        }
        if end.code < 0:
            how = f"killed by signal {-end.code}"
        else:
            how = f"exited {end.code} ({meaning.get(end.code, 'unexpected')})"
        ok = end.code in (ExitCode.OK, ExitCode.BLOCKED, ExitCode.WAITING)
        self.notify(
            f"phasegate resume {safe(end.run_id)} (pid {end.pid}) {how}: {end.last_line}\nits log: {safe(str(end.log))}",
            title="resume ended" if ok else "resume FAILED",
            severity="information" if end.code == ExitCode.OK else ("warning" if ok else "error"),
            markup=False,
            timeout=10 if ok else 30,
        )
        self.post_message(self.DataChanged("decision"))

    def on_run_actions_action_failed(self, message: RunActions.ActionFailed) -> None:
        self.notify(safe(message.text), title=message.title, severity="error", markup=False, timeout=10)

    def action_causes(self) -> None:
        """Open the causes screen: the runs that need attention, grouped by why they stopped."""
        if not isinstance(self.screen, CausesScreen):
            self.push_screen(CausesScreen(self))

    def action_help(self) -> None:
        """Open the help over the current screen: every key binding."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    # -- command palette --------------------------------------------------------

    PALETTE_HIDDEN: ClassVar[frozenset[str]] = frozenset({"Theme", "Screenshot", "Maximize", "Minimize"})
    """Textual's own entries that are not operations (looks, not triage)."""

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # The operations first: ctrl+p (or :) then Enter acts on the run.
        """The palette's commands: the operations on the screen's run first, then the screen's own, then
        Textual's (without its looks)."""
        if isinstance(screen, RunActions):
            actor: RunActions = screen
            for spec in ACTIONS:
                if actor.action_fits(spec.name):
                    yield SystemCommand(
                        f"run: {spec.label}",
                        f"{spec.help} ({spec.key}; or {spec.cli})",
                        partial(actor.action_decide, spec.name),
                    )
            if actor.resume_fits():
                yield SystemCommand("run: resume now", "start phasegate resume for this run (e)", actor.action_resume)
            if actor.run_view is not None:
                yield SystemCommand(
                    "copy: run id or hash", "the run id or a hash, whole, by OSC 52 (y)", actor.action_copy
                )
        for title, help_text, action in getattr(screen, "PALETTE", ()):
            yield SystemCommand(title, help_text, partial(screen.run_action, action))
        yield SystemCommand(
            "console: causes", "the runs that need attention, grouped by why they stopped (C)", self.action_causes
        )
        yield SystemCommand("console: help", "every key binding (?)", self.action_help)
        for command in super().get_system_commands(screen):
            if command.title not in self.PALETTE_HIDDEN:
                yield command
