"""What the single-run and the group confirmation modals share: a list of
choices moved with up/down (a phase, an effect, or none), a reason field that
holds the focus, Enter to confirm and a line that says what is wrong.

A base screen rather than a helper object: these are Textual handlers (`on`,
`action_*`) that must live on the screen. Each modal says what a choice looks
like (`_show_choice`) and what confirming records (`action_confirm`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from rich.text import Text
from textual import on
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static

from .._format import tone

R = TypeVar("R")


class Choosable(Protocol):
    """A modal's request: its choices, what is chosen among them, the default."""

    @property
    def choices(self) -> Sequence[Any]:
        """The options, each with what choosing it would do."""
        ...

    @property
    def choose(self) -> str:
        """What the operator picks among them ("phase", "effect"); empty when there is one."""
        ...

    @property
    def default(self) -> int:
        """The index of the option selected first."""
        ...


class ChoosingModal(ModalScreen[R]):
    """A confirmation modal over a request with choices (see the module)."""

    def __init__(self, request: Choosable) -> None:
        super().__init__()
        self.index = request.default
        """The index of the choice selected now."""
        self._choosable = request

    def on_mount(self) -> None:
        for box in self.query(Input):
            box.cursor_blink = False  # no animation; stable snapshots
        if self._choosable.choose:
            self.query_one("#choices", OptionList).highlighted = self.index
        self._show_choice()
        self.query_one(self.first_field(), Input).focus()

    def first_field(self) -> str:
        """The field the focus starts in (the reason, unless a modal says otherwise)."""
        return "#reason"

    def _show_choice(self) -> None:
        raise NotImplementedError

    def action_confirm(self) -> None:
        """Check the entries and dismiss with what was confirmed (each modal says how)."""
        raise NotImplementedError

    def action_choose(self, delta: int) -> None:
        """Select the choice `delta` places away (wrapping), when there is a choice."""
        if not self._choosable.choose:
            return
        self.index = (self.index + delta) % len(self._choosable.choices)
        self.query_one("#choices", OptionList).highlighted = self.index
        self._show_choice()

    @on(OptionList.OptionHighlighted, "#choices")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index is not None and event.option_index != self.index:
            self.index = event.option_index
            self._show_choice()

    @on(OptionList.OptionSelected, "#choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one(self.first_field(), Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.action_confirm()

    def _problem(self, text: str, focus: str) -> None:
        self.query_one("#problem", Static).update(Text(text, style=tone("bold red")))
        self.query_one(focus, Input).focus()
