"""Every screen's keys and each action's command-line twin. Binding ids
(to rebind a key) are in each class's BINDINGS, not on the operator's screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from ..actions import ACTIONS
from ..widgets.runs_table import RunsTable
from ._run_actions import RunActions
from .action_modal import ActionModal
from .answer_modal import AnswerModal
from .causes import CauseRunsScreen, CausesScreen
from .copy_modal import CopyModal
from .detail import DetailScreen
from .group_modal import GroupModal
from .runs import RunsScreen

NOTES = (
    "Actions are offered only where they fit why the run is stopped; --read-only offers none.",
    "Marks: !! blocked  ~~ interrupted  || stalled (alive, past its lease)  XX failed  => decided (waits to be carried out)"
    "  >> running  ok completed  << reset.",
    "?? waiting for an answer (i answers it)  .. waiting on a timer or a rate limit (a worker wakes it)  == paused  -- cancelled.",
    "p pauses a run (a running one stops at its next step) or unpauses a paused one; on a finished run it prunes.",
    "A running run's holder (host:pid) and its heartbeat's age are in its detail; the list re-checks every 2 s.",
    "n jumps to a run that stopped since you looked (the header counts them).",
    "Frontier 2/4 charge +3: two of four phases done, three steps done in charge.",
    "The screen refreshes by itself when another process changes the store.",
    "space marks runs in the list; a decision key then decides every marked run at once (one confirmation).",
)


def _declared(cls: type[DOMNode]) -> list[Binding]:
    """A class's bindings as it declares them, merged the way Textual merges
    them (a subclass's binding for a key replaces its base's), read from the
    public `BINDINGS` rather than Textual's private map."""
    keys: dict[str, list[Binding]] = {}
    for base in reversed(cls.__mro__):
        own: dict[str, list[Binding]] = {}
        for b in Binding.make_bindings(vars(base).get("BINDINGS", ())):
            own.setdefault(b.key, []).append(b)
        keys.update(own)
    return [b for bindings in keys.values() for b in bindings]


#: Keys Textual's widgets give that an operator uses, listed beside ours.
PAGING = (("pageup/pagedown", "a page up or down"), ("home/end", "first or last"))


def rows(classes: tuple[type[DOMNode], ...], display: Callable[[Binding], str]) -> list[tuple[str, str]]:
    """(key, what it does) for the bindings of `classes` that say what they do."""
    out: list[tuple[str, str]] = []
    for cls in classes:
        for b in _declared(cls):
            row = (display(b), b.description or b.action)
            # Ours have ids; Textual's own (focus, cursor left/right...) are not listed.
            if b.id and b.description and row not in out:
                out.append(row)
    return out


#: Said beside a heading (the key column is too narrow for it at 80 columns).
HEADING_NOTES: dict[str, str] = {
    "on a run": "in the list and in the detail",
    "in the copy list": "opened with y",
    "in the answer form": "opened with i",
}


class HelpScreen(ModalScreen[None]):
    """Every screen's keys (wherever it was opened), and each action's
    command-line twin. Scrolls with the keys that move the lists."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("question_mark", "close", "Close", show=False, id="help.close_help"),
        Binding("q", "close", "Close", show=False, id="help.close_q"),
        Binding("j", "scroll('down')", "Down", show=False, id="help.down"),
        Binding("k", "scroll('up')", "Up", show=False, id="help.up"),
        Binding("g", "scroll('home')", "Top", show=False, id="help.top"),
        Binding("G", "scroll('end')", "Bottom", show=False, id="help.bottom"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under
        """The screen help was opened from (its keys are listed first)."""

    def _sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        show = self.app.get_key_display
        shared = rows((RunActions,), show)
        listed = [
            ("the runs list", [r for r in rows((RunsScreen, RunsTable), show) if r not in shared] + list(PAGING)),
            ("one run's detail", [r for r in rows((DetailScreen,), show) if r not in shared] + list(PAGING[:1])),
            ("on a run", shared),
            ("in a confirmation", [("enter", "confirm"), *rows((ActionModal,), show)]),
            (
                "in the answer form",
                [
                    ("tab/shift+tab", "the next or previous field"),
                    ("space", "tick or untick a true/false field"),
                    ("enter", "in a text field: answer (checked first); on a choice: its list"),
                    *rows((AnswerModal,), show),
                ],
            ),
            ("in the copy list", [("enter", "copy it (OSC 52)"), *rows((CopyModal,), show)]),
            ("the causes (C) and a cause's runs", rows((CausesScreen, CauseRunsScreen), show)),
            ("in a confirmation for many runs", [("enter", "confirm"), *rows((GroupModal,), show)]),
            ("everywhere", rows((type(self.app),), show)),
        ]
        # The keys of the screen help was opened from first.
        first = {DetailScreen: 1, CausesScreen: 5, CauseRunsScreen: 5}.get(type(self.under), 0)
        if first:
            listed.insert(0, listed.pop(first))
        return listed

    def compose(self) -> ComposeResult:
        t = Table(box=None, expand=True, header_style="bold", padding=(0, 1), show_header=False)
        t.add_column("key", no_wrap=True, width=18)
        t.add_column("does", ratio=1)
        for heading, keys in self._sections():
            t.add_row(Text(heading, style="bold"), Text(HEADING_NOTES.get(heading, ""), style="dim"))
            for key, does in keys:
                t.add_row(Text("  " + key), Text(does))
        twins = Table(box=None, expand=True, header_style="bold", padding=(0, 1))
        twins.add_column("action")
        twins.add_column("on the command line")
        for spec in ACTIONS:
            twins.add_row(Text(f"{spec.key}  {spec.label}"), Text(spec.cli))
        twins.add_row(Text("e  resume now"), Text("phasegate resume RUN"))
        twins.add_row(Text("y  copy id/hash"), Text("phasegate status RUN --json (every hash whole)"))
        twins.add_row(Text("C  causes"), Text("phasegate status --by-cause"))
        twins.add_row(Text("a decision on a cause"), Text("phasegate decide --cause CAUSE ACTION --reason ..."))
        with VerticalScroll(id="help"):
            yield Static(Text("Keys (Esc closes; j/k, PgUp/PgDn scroll)", style="bold"))
            yield Static(t)
            yield Static(Text("Every action has a command-line twin", style="bold"))
            yield Static(twins)
            yield Static(Text("\n".join(NOTES)))

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_scroll(self, where: str) -> None:
        """Scroll "down", "up", "home" or "end", at once (keys typed ahead each move)."""
        box = self.query_one("#help", VerticalScroll)
        {"down": box.scroll_down, "up": box.scroll_up, "home": box.scroll_home, "end": box.scroll_end}[where](
            animate=False, immediate=True
        )

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
