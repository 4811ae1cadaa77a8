"""The copy action (`y`): the selected run's id and every hash it carries,
whole, one a line; Enter copies the highlighted one to the terminal's
clipboard with OSC 52 (which travels over SSH), and nothing else in the
console ever sends OSC 52. The values are shown in full, so a terminal
without OSC 52 (or `PHASEGATE_CONSOLE_OSC52=off`) still lets the operator
select one by hand."""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from phasegate import RunView
from phasegate.ops import safe

from .._format import hashes

_WHOLE_DIGEST = re.compile(r"(?:sha256:)?(?=[0-9a-f]*[a-f])[0-9a-f]{16,}")
"""A stored value that is a digest as a whole (as `_format.hashes` shortens)."""


#: The field that names an item of a list in `--json`, the first found:
#: `env[tax_rates].current`, not `env[2].current`.
_NAMED_BY = ("probe", "name", "phase", "kind")


def _item_name(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for k in _NAMED_BY:
            if isinstance(item.get(k), str) and item[k]:
                return safe(item[k])
    return str(index)


def copy_choices(view: RunView) -> list[tuple[str, str]]:
    """(what, value): the run id, each effect's key (the value looked up in
    the outside system; those in doubt first), then each distinct hash in the
    run's `--json`, named by where it sits there (a probe by its name)."""
    out: list[tuple[str, str]] = [("run id", view.run_id)]
    for e in sorted(view.effects, key=lambda e: e.state != "in_doubt"):
        state = {"in_doubt": "IN DOUBT", "intent": "in flight", "done": "done"}.get(e.state, str(e.state))
        out.append((f"effect key of {e.name} ({state})", e.key))
    seen: set[str] = set()

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}.{k}" if where else str(k))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{where}[{_item_name(v, i)}]")
        elif isinstance(value, str) and _WHOLE_DIGEST.fullmatch(value) and value not in seen:
            seen.add(value)
            out.append((where, value))

    walk(view.to_json(), "")
    return out


def osc52_on() -> bool:
    """OSC 52 is sent unless PHASEGATE_CONSOLE_OSC52 says off (a terminal
    that shows the sequence instead of obeying it)."""
    return os.environ.get("PHASEGATE_CONSOLE_OSC52", "on").strip().lower() not in ("0", "off", "no", "false")


class CopyModal(ModalScreen[tuple[str, str] | None]):
    """Choose what to copy; Enter copies, Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="copy.cancel"),
        Binding("j", "move(1)", "Down", show=False, id="copy.down"),
        Binding("k", "move(-1)", "Up", show=False, id="copy.up"),
    ]

    def __init__(self, run_id: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.run_id = run_id
        """The run whose id and hashes are offered."""
        self.choices = choices
        """What may be copied: (label, the whole text) pairs."""

    def compose(self) -> ComposeResult:
        with Vertical(id="copy-dialog") as box:
            box.border_title = "copy (y): Enter sends it to the terminal's clipboard (OSC 52), Esc closes"
            yield Static(Text("copy from ") + Text(safe(self.run_id), style="bold"))
            options = []
            for i, (what, value) in enumerate(self.choices):
                label = Text(safe(what), style="dim")
                label.append("\n")
                label.append(safe(value))  # whole, on a line of its own
                options.append(Option(label, id=str(i)))
            yield OptionList(*options, id="copy-choices")
            yield Static(id="copy-note")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def action_move(self, step: int) -> None:
        """Move the highlight one item: down for a positive `step` (j), else up (k)."""
        box = self.query_one(OptionList)
        if step > 0:
            box.action_cursor_down()
        else:
            box.action_cursor_up()

    @on(OptionList.OptionSelected, "#copy-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        what, value = self.choices[int(event.option.id or 0)]
        if osc52_on():
            # OSC 52: the terminal (local, or at the far end of SSH) puts it on its clipboard.
            self.app.copy_to_clipboard(value)
            # Nobody can know whether the terminal kept it (tmux may drop it):
            # said as sent, with the value whole to select by hand.
            self.notify(
                f"{safe(what)} sent to the terminal's clipboard (OSC 52); if it did not arrive, it is: {safe(value)}",
                title="copy",
                markup=False,
                timeout=12,
            )
            self.dismiss((what, value))
            return
        # No clipboard: the value stays on screen, whole on one line, to select by hand.
        note = Text("OSC 52 is off (PHASEGATE_CONSOLE_OSC52): not copied; select it by hand:\n", style="bold")
        note.append(safe(value))
        self.query_one("#copy-note", Static).update(note)
        self.notify(f"{safe(what)}: {hashes(safe(value))}", title="not copied: OSC 52 is off", markup=False, timeout=8)

    def action_cancel(self) -> None:
        """Close with nothing copied."""
        self.dismiss(None)
