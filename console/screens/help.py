"""Every binding, with its id (to rebind it) and its command-line twin."""

from __future__ import annotations

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

NOTES = (
    "Actions are offered only where they fit why the run is stopped; --read-only offers none.",
    "Marks: !! blocked  ~~ interrupted  XX failed  => decided (waits to be carried out)  >> running  ok completed  << reset.",
    "Frontier 2/4 charge +3: two of four phases done, three steps done in charge.",
    "The screen refreshes by itself when another process changes the store.",
)


def _declared(node: DOMNode) -> list[Binding]:
    """A node's bindings as its classes declare them, merged the way Textual
    merges them (a subclass's binding for a key replaces its base's), read
    from the public `BINDINGS` rather than Textual's private map."""
    keys: dict[str, list[Binding]] = {}
    for base in reversed(type(node).__mro__):
        own: dict[str, list[Binding]] = {}
        for b in Binding.make_bindings(vars(base).get("BINDINGS", ())):
            own.setdefault(b.key, []).append(b)
        keys.update(own)
    return [b for bindings in keys.values() for b in bindings]


def _bindings_of(screen: Screen[object]) -> list[Binding]:
    seen: list[Binding] = []
    nodes = [screen.app, screen, *screen.query("*")]
    for node in nodes:
        for b in _declared(node):
            if b.id and all(b.id != s.id for s in seen):
                seen.append(b)
    return seen


class HelpScreen(ModalScreen[None]):
    """The key bindings of the screen it was opened from."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("question_mark", "close", "Close", show=False, id="help.close_help"),
        Binding("q", "close", "Close", show=False, id="help.close_q"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        t = Table(box=None, expand=True, header_style="bold", padding=(0, 1))
        t.add_column("key", no_wrap=True)
        t.add_column("does")
        t.add_column("binding id", no_wrap=True)
        for b in _bindings_of(self.under):
            t.add_row(Text(self.app.get_key_display(b)), Text(b.description or b.action), Text(b.id or "", style="dim"))
        twins = Table(box=None, expand=True, header_style="bold", padding=(0, 1))
        twins.add_column("action")
        twins.add_column("on the command line")
        for spec in ACTIONS:
            twins.add_row(Text(f"{spec.key}  {spec.label}"), Text(spec.cli))
        with VerticalScroll(id="help"):
            yield Static(Text("Keys (Esc closes)", style="bold"))
            yield Static(t)
            yield Static(Text("Every action has a command-line twin", style="bold"))
            yield Static(twins)
            yield Static(Text("\n".join(NOTES)))

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_close(self) -> None:
        self.dismiss(None)
