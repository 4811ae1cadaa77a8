"""Repaint a widget only when what it shows changed, and without a layout
pass when its height stayed the same: over a slow link, a live run's detail
re-read every second would otherwise resend the whole screen each time
(21 KB/s at 80x24 before this)."""

from __future__ import annotations

from rich.console import Console, RenderableType
from textual.widgets import Static

_console = Console(width=80, color_system=None, force_terminal=False, legacy_windows=False)


def lines(renderable: RenderableType, width: int) -> tuple[tuple[tuple[str, str], ...], ...]:
    """What `renderable` draws at `width` columns: its lines, each as (text,
    style) pieces. Two renderables that draw the same are equal here."""
    options = _console.options.update_width(max(1, width))
    return tuple(
        tuple((seg.text, str(seg.style or "")) for seg in line if not seg.control)
        for line in _console.render_lines(renderable, options, pad=False)
    )


class Painter:
    """Remembers what each widget last drew."""

    def __init__(self) -> None:
        self._drawn: dict[int, tuple[tuple[tuple[str, str], ...], ...]] = {}

    def put(self, widget: Static, renderable: RenderableType) -> None:
        """Draw `renderable` in `widget` unless it would draw the same lines as last time (nothing is sent then)."""
        width = widget.content_size.width or widget.app.size.width
        drawn = lines(renderable, width)
        before = self._drawn.get(id(widget))
        if drawn == before:
            return  # nothing changed: nothing sent
        self._drawn[id(widget)] = drawn
        # The same height: the rest of the screen stays where it is, so no layout pass.
        widget.update(renderable, layout=before is None or len(before) != len(drawn))

    def forget(self) -> None:
        """After a resize: everything is drawn anew."""
        self._drawn.clear()


__all__ = ["Painter", "lines"]
