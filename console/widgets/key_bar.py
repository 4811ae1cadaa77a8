"""The footer: the keys the screen offers now, on one line that keeps to the
terminal's width with `? Help` first.

Textual's Footer rebuilds itself from a widget per key whenever the offered
keys change (a cursor move onto a run with other actions), and sends the
line twice over: about 2 KB per `j` over a slow link. This is one line of
text, repainted only when its text changes."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget


class KeyBar(Widget):
    """One line: each shown binding's key and description."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keybar--key"}

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-description-foreground;
    }
    KeyBar > .keybar--key {
        color: $footer-key-foreground;
        text-style: bold;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._line = Text()
        self._spots: list[tuple[int, int, str, DOMNode]] = []
        """(first cell, end cell, action, namespace) of each key shown, for a click."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self._draw)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        if not self.is_attached:
            return  # its screen was closed before this draw came round
        try:
            key_style = self.get_component_rich_style("keybar--key", partial=True)
        except KeyError:
            return  # being removed: its styles are already gone
        line, spots, seen = Text(no_wrap=True, overflow="ellipsis"), [], set()
        for node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            if line:
                line.append(" ")
            start = line.cell_len
            line.append(self.app.get_key_display(binding), style=key_style)
            line.append(f" {binding.description}")
            spots.append((start, line.cell_len, binding.action, node))
        self._spots = spots
        if line.plain == self._line.plain and line.spans == self._line.spans:
            return  # the same keys: nothing to send
        self._line = line
        self.refresh()

    def render(self) -> Text:
        return self._line

    async def on_click(self, event: events.Click) -> None:
        for start, end, action, node in self._spots:
            if start <= event.x < end:
                await self.app.run_action(action, node)
                return
