"""The confirmation modal of one decision for many runs: what it does to
each run (or why it does not fit it), one reason for all, and a confirmation
that names the number of runs. For a reset or a retry the operator types that
number. Enter confirms, Esc cancels; the key that opened the modal types into
the reason field, so it can never confirm by itself."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from phasegate.ops import safe

from .._format import tone
from ..groups import GroupChoice, GroupRequest, GroupResult
from ._choosing import ChoosingModal


def describe(choice: GroupChoice) -> Text:
    """One line a run: what the decision does to it, or why it does not fit."""
    text = Text()
    for i, line in enumerate(choice.lines):
        if i:
            text.append("\n")
        text.append(safe(line.run_id), style="bold")
        if line.unfit is None:
            text.append(": " + safe(line.summary or ""))
        else:
            text.append(": does not fit, left alone: ", style=tone("bold red"))
            text.append(safe(line.unfit))
    return text


def runs_word(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


class GroupModal(ChoosingModal[GroupResult | None]):
    """Confirm one decision for a group of runs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="group.cancel"),
        Binding("up", "choose(-1)", "Previous choice", show=False, id="group.choice_up"),
        Binding("down", "choose(1)", "Next choice", show=False, id="group.choice_down"),
    ]

    def __init__(self, request: GroupRequest) -> None:
        super().__init__(request)
        self.request = request
        """What to confirm; read from the store before the modal opened."""

    def first_field(self) -> str:
        # The result first, where one is asked: it is what the operator looked up.
        """The field focused first: the result where one is asked, else the reason."""
        return "#result" if self.request.ask_result else "#reason"

    @property
    def choice(self) -> GroupChoice:
        """The option chosen now."""
        return self.request.choices[self.index]

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="dialog") as box:
            box.border_title = f"{req.spec.label} for many runs ({req.spec.key})"
            title = Text(f"{req.spec.label}: ", style="bold")
            title.append(safe(req.what))
            yield Static(title, id="modal-title")
            if req.choose:
                yield Label(f"choose the {req.choose} (up/down):")
                options = [Option(Text(safe(c.label)), id=str(i)) for i, c in enumerate(req.choices)]
                yield OptionList(*options, id="choices")
            with VerticalScroll(id="group-preview"):
                yield Static(id="preview")
            yield Static(id="count")
            if req.proposal:
                yield Static(Text(safe(req.proposal), style="bold reverse"), id="proposal")
            if req.ask_result:
                yield Label("result: the JSON the outside system returned, the same for every run (null if none):")
                yield Input(placeholder="JSON", id="result")
            yield Label("reason (one for every run, kept in each decision):")
            yield Input(placeholder="why, in your words", id="reason")
            if req.typed_why:
                yield Label(id="typed-label")
                yield Input(placeholder="number of runs", id="typed")
            yield Static(id="problem")
            yield Static(id="hint")

    def _show_choice(self) -> None:
        req, choice = self.request, self.choice
        n, unfit = len(choice.fitting), len(choice.lines) - len(choice.fitting)
        self.query_one("#preview", Static).update(describe(choice))
        count = Text(f"records {req.spec.name} for {runs_word(n)} in one transaction", style="bold")
        if unfit:
            count.append(f"; {runs_word(unfit)} that it does not fit {'is' if unfit == 1 else 'are'} left alone")
        self.query_one("#count", Static).update(count)
        if req.typed_why:
            self.query_one("#typed-label", Label).update(f"{req.typed_why}: type {n} (the number of runs) to confirm")
        twin = (
            f"phasegate decide --cause {req.cause} {req.spec.name}"
            if req.cause
            else f"phasegate decide RUN {req.spec.name}"
        )
        if not n:
            hint = f"nothing to confirm: {req.spec.label} fits none of these runs   Esc closes"
        else:
            verb = "propose" if req.proposal else req.spec.name
            hint = f"Enter: {verb} {runs_word(n)}   Esc cancel   or: {twin} --reason ..."
        self.query_one("#hint", Static).update(Text(hint, style="dim"))

    def action_confirm(self) -> None:
        """Check the entries (a reason, the number of runs typed where asked) and dismiss with the runs the
        option fits."""
        req, choice = self.request, self.choice
        runs = choice.fitting
        if not runs:
            self._problem(f"! {req.spec.label} fits none of these runs", "#reason")
            return
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self._problem("! a reason is required", "#reason")
            return
        if req.typed_why and self.query_one("#typed", Input).value.strip() != str(len(runs)):
            self._problem(f"! type {len(runs)}, the number of runs, to confirm the {req.spec.label}", "#typed")
            return
        result_json: str | None = None
        if req.ask_result:
            result_json = self.query_one("#result", Input).value.strip()
            if not result_json:
                self._problem("! the effect's result is required, as JSON (null if it returned nothing)", "#result")
                return
            try:
                json.loads(result_json)
            except ValueError as exc:
                self._problem(f"! the result is not JSON: {exc}", "#result")
                return
        self.dismiss(GroupResult(req.spec, req.cause, runs, reason, choice.value, result_json))

    def action_cancel(self) -> None:
        """Dismiss with nothing decided."""
        self.dismiss(None)
