"""The confirmation modal of an action: what will happen, a reason, for a
confirmation the effect's result as JSON, and for a reset the run id typed out. Enter confirms, Esc cancels; the key that opened
the modal types into the reason field, so it can never confirm by itself."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from phasegate.ops import safe

from ..actions import ActionRequest, ActionResult, Choice
from ._choosing import ChoosingModal


def describe(choice: Choice) -> Text:
    text = Text(safe(choice.summary))
    for heading, items in choice.sections:
        text.append("\n")
        text.append(f"{heading}: ", style="bold")
        text.append(safe("; ".join(items)))
    return text


class ActionModal(ChoosingModal[ActionResult | None]):
    """Confirm one action on one run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="modal.cancel"),
        Binding("up", "choose(-1)", "Previous choice", show=False, id="modal.choice_up"),
        Binding("down", "choose(1)", "Next choice", show=False, id="modal.choice_down"),
    ]

    def __init__(self, request: ActionRequest) -> None:
        super().__init__(request)
        self.request = request
        """What to confirm; read from the store before the modal opened."""

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="dialog") as box:
            title = Text(f"{req.spec.label}: ", style="bold")
            title.append(safe(req.run_id))  # literal and escaped, whatever it contains
            box.border_title = f"{req.spec.label} ({req.spec.key})"
            yield Static(title, id="modal-title")
            if req.choose:
                yield Label(f"choose the {req.choose} (up/down):")
                options = [Option(Text(safe(c.label)), id=str(i)) for i, c in enumerate(req.choices)]
                yield OptionList(*options, id="choices")
            yield Static(id="preview")
            if req.proposal:
                # Before Enter, not in the notice after it: the policy makes it a proposal.
                yield Static(Text(safe(req.proposal), style="bold reverse"), id="proposal")
            if req.ask_result:
                # Labels that stay when typing starts (a placeholder vanishes,
                # and the reason went into the result field).
                yield Label("result: the JSON the outside system returned (null if none):", id="result-label")
                yield Static(id="template")
                yield Input(req.result_hint, placeholder="JSON", id="result")
            yield Label("reason (kept in the decision log):", id="reason-label")
            yield Input(placeholder="why, in your words", id="reason")
            if req.type_run_id:
                yield Label(f"{req.typed_why}: type the run id to confirm")
                yield Input(placeholder="run id", id="typed")
            yield Static(id="problem")
            confirm = "Enter propose" if req.proposal else "Enter confirm"
            yield Static(Text(f"{confirm}   Esc cancel   or: {req.spec.cli}", style="dim"), id="hint")

    def first_field(self) -> str:
        # The result first, where one is asked: it is what the operator looked up.
        """The field focused first: the result where one is asked (what the operator looked up), else the reason."""
        return "#result" if self.request.ask_result else "#reason"

    _template_shown = ""

    def _show_choice(self) -> None:
        if not self.request.choices:
            return
        choice = self.request.choices[self.index]
        self.query_one("#preview", Static).update(describe(choice))
        if self.request.ask_result and not self.request.result_hint:
            self._offer_template(choice)

    def _offer_template(self, choice: Choice) -> None:
        """A sibling's recorded result in the field, as the shape to edit (left
        alone once the operator typed something of their own), and whose it is."""
        box = self.query_one("#result", Input)
        note = self.query_one("#template", Static)
        if choice.template:
            said = Text("template: what ", style="italic")
            said.append(safe(choice.template_from), style="bold")
            said.append(" recorded; edit it to what this effect returned", style="italic")
            note.update(said)
        else:
            note.update(Text("no sibling effect recorded a result to start from", style="italic dim"))
        if box.value in ("", self._template_shown):
            box.value = choice.template
            self._template_shown = choice.template

    def action_confirm(self) -> None:
        """Check the entries (a reason, the run id typed where asked, a result that is JSON) and dismiss with
        what was confirmed."""
        req = self.request
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self._problem("! a reason is required", "#reason")
            return
        if req.type_run_id and self.query_one("#typed", Input).value != req.run_id:
            self._problem(f"! type the run id exactly to confirm the {req.spec.label}", "#typed")
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
        chosen = req.choices[self.index] if req.choices else None
        choice = chosen.value if chosen else None
        expect_env = chosen.expect_env if chosen else None
        self.dismiss(
            ActionResult(
                req.spec,
                req.run_id,
                reason,
                choice,
                result_json=result_json,
                expect_env=expect_env,
                override_claim=req.override_claim,
            )
        )

    def action_cancel(self) -> None:
        """Dismiss with nothing decided."""
        self.dismiss(None)
